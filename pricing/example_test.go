package pricing_test

import (
	"fmt"
	"time"

	"github.com/stratamem/strata/pricing"
)

// A host with a negotiated price overrides one model; everything else
// keeps the published rules.
func Example() {
	tab := pricing.Default().With(pricing.Model{Name: "claude-sonnet-4-5", Provider: pricing.Anthropic, InputPerMTok: 2.4})
	m, _ := tab.Lookup("claude-sonnet-4-5-20250929")
	// 30k tokens read, 2k written, 500 uncached.
	billed := m.Billed(30000, 2000, 500, pricing.TTL5m)
	fmt.Printf("%.0f base tokens, $%.4f, minimum prefix %d\n", billed, m.Dollars(billed), m.MinPrefix)
	fmt.Println("lifetime over a 30-minute pause:", m.BestTTL(3000, 30000, 30*time.Minute))
	// Output:
	// 6000 base tokens, $0.0144, minimum prefix 1024
	// lifetime over a 30-minute pause: 1h
}
