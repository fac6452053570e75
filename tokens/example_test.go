package tokens_test

import (
	"fmt"

	"github.com/stratamem/strata/tokens"
)

func Example() {
	tok := tokens.Estimate()
	fmt.Println(tok.Name(), tok.Count("hello world"))

	// A Cache answers repeated texts without counting them again.
	cached := tokens.NewCache(tok, 0)
	cached.Count("The quick brown fox jumps over the lazy dog.")
	cached.Count("The quick brown fox jumps over the lazy dog.")
	hits, misses := cached.Stats()
	fmt.Println(hits, misses)
	// Output:
	// estimate 3
	// 1 1
}
