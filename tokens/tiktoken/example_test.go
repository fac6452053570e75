package tiktoken_test

import (
	"fmt"

	"github.com/stratamem/strata/tokens"
	"github.com/stratamem/strata/tokens/tiktoken"
)

func Example() {
	tok, err := tiktoken.ForModel("gpt-4o-mini")
	if err != nil {
		panic(err)
	}
	fmt.Println(tok.Name(), tok.Count("hello world"))

	// Special-token text is counted as plain text, never rejected.
	fmt.Println(tok.Count("<|endoftext|>"))

	// A Cache answers repeated texts without re-encoding them.
	cached := tokens.NewCache(tok, 0)
	cached.Count("The quick brown fox jumps over the lazy dog.")
	cached.Count("The quick brown fox jumps over the lazy dog.")
	hits, misses := cached.Stats()
	fmt.Println(hits, misses)

	fmt.Println(tokens.Estimate().Count("hello world"))
	// Output:
	// o200k_base 2
	// 7
	// 1 1
	// 3
}
