package embed_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/hashing"
)

func Example() {
	// Any Embedder works here: uselite.Default() in production, an
	// openai/ollama client for a server, hashing.New in unit tests.
	var e embed.Embedder = hashing.New(64)
	vecs, err := e.Embed(context.Background(), []string{"red apple", "red apple pie"})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %d vectors of %d\n", e.Model(), len(vecs), e.Dimension())

	_, err = e.Embed(context.Background(), []string{"fine", "   "})
	fmt.Println(errors.Is(err, embed.ErrEmptyInput), err)
	// Output:
	// hash-64: 2 vectors of 64
	// true embed: empty input: text 1 is empty or whitespace
}
