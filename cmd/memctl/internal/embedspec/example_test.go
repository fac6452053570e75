package embedspec_test

import (
	"context"
	"fmt"

	"github.com/stratamem/strata/cmd/memctl/internal/embedspec"
)

func Example() {
	// A flag value and the model id recorded in strata.json name the same
	// embedder.
	a, _ := embedspec.Parse("hash:64")
	b, _ := embedspec.Parse("hash-64")
	fmt.Println(a == b, a.ID(), a.String())

	// A lazy embedder declares its identity; the model is loaded on the
	// first Embed.
	l := embedspec.NewLazy(a, 0)
	fmt.Println(l.Model(), l.Dimension(), l.Loaded())
	vs, err := l.Embed(context.Background(), []string{"hello"})
	fmt.Println(len(vs[0]), err, l.Loaded())

	_, err = embedspec.Parse("word2vec")
	fmt.Println(err)
	// Output:
	// true hash-64 hash:64
	// hash-64 64 false
	// 64 <nil> true
	// invalid embedder "word2vec": want uselite, hash:DIM, openai:MODEL or ollama:MODEL
}
