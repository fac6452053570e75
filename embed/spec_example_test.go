package embed_test

import (
	"context"
	"fmt"

	"github.com/stratamem/strata/embed"
	_ "github.com/stratamem/strata/embed/hashing" // registers hash:DIM
)

func ExampleOpen() {
	e, err := embed.Open(context.Background(), "hash:64", nil)
	fmt.Println(e.Model(), e.Dimension(), err)
	// Output: hash-64 64 <nil>
}

func ExampleParseSpec() {
	// A flag value and the model id a store records name the same
	// embedder.
	a, _ := embed.ParseSpec("hash:64")
	b, _ := embed.ParseSpec("hash-64")
	fmt.Println(a == b, a.ID(), a.String())

	// A lazy embedder declares its identity; the model is loaded on the
	// first Embed.
	l := embed.NewLazy(a, 0, nil)
	fmt.Println(l.Model(), l.Dimension(), l.Loaded())
	vs, err := l.Embed(context.Background(), []string{"hello"})
	fmt.Println(len(vs[0]), err, l.Loaded())

	_, err = embed.ParseSpec("word2vec")
	fmt.Println(err)
	// Output:
	// true hash-64 hash:64
	// hash-64 64 false
	// 64 <nil> true
	// invalid embedder "word2vec": want uselite, hash:DIM, openai:MODEL or ollama:MODEL
}
