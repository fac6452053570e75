package cachebench_test

import (
	"context"
	"fmt"

	"github.com/stratamem/strata/benchmarks/internal/cachebench"
)

// Run one workload for a few turns on the simulated Anthropic cache and
// compare strata's anchored assembly with the single band and the optimum.
func Example() {
	w, err := cachebench.WorkloadByName("steady-assistant")
	if err != nil {
		panic(err)
	}
	res, err := cachebench.Run(context.Background(), w, cachebench.Options{
		Turns:      20,
		Strategies: []cachebench.Strategy{cachebench.Anchored, cachebench.SingleBand, cachebench.Optimum},
		Providers:  []cachebench.Provider{cachebench.Anthropic},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Turns, "turns,", res.Requests, "requests")
	for _, s := range res.Series {
		fmt.Printf("%-12s hit ratio %.2f\n", s.Strategy, s.Totals.HitRatio())
	}
	// Output:
	// 20 turns, 26 requests
	// anchored     hit ratio 0.90
	// single-band  hit ratio 0.00
	// optimum      hit ratio 0.92
}
