package hashing_test

import (
	"context"
	"fmt"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/hashing"
)

// The hashing embedder is for tests: identical words give identical vectors,
// and unrelated texts only overlap through hash collisions.
func Example() {
	e := hashing.New(128)
	v, err := e.Embed(context.Background(), []string{
		"deploy the billing service",
		"Deploy the billing service!",
		"lunch on friday",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Model(), len(v[0]))
	fmt.Printf("same words: %.2f\n", embed.Cosine(v[0], v[1]))
	fmt.Printf("no shared words: %.2f\n", embed.Cosine(v[0], v[2]))
	// Output:
	// hash-128 128
	// same words: 1.00
	// no shared words: 0.17
}
