package cachebench_test

import (
	"context"
	"testing"

	"github.com/stratamem/strata/benchmarks/internal/cachebench"
	"github.com/stratamem/strata/cachesim"
	"github.com/stratamem/strata/core"
)

// compatible says which of the runtime's causes explain each of the
// simulator's own miss reasons.
var compatible = map[cachesim.MissReason][]core.MissCause{
	cachesim.MissChanged:      {core.CauseChanged},
	cachesim.MissExpired:      {core.CauseExpired},
	cachesim.MissBelowMinimum: {core.CauseBelowMinimum},
	cachesim.MissLookback:     {core.CauseLookback},
}

// Every miss the simulator reports on the benchmark's workloads is
// attributed by the runtime to a cause, and to the one the simulator
// itself gives.
func TestMissAttributionMatchesSimulator(t *testing.T) {
	ctx := context.Background()
	total := 0
	defer func() {
		if total == 0 && !t.Failed() {
			t.Error("no workload missed: the attribution was not exercised")
		}
	}()
	for _, w := range cachebench.Workloads() {
		t.Run(w.Name, func(t *testing.T) {
			misses := map[cachesim.MissReason]int{}
			_, err := cachebench.Run(ctx, w, cachebench.Options{
				Turns:      testTurns(),
				Strategies: []cachebench.Strategy{cachebench.Anchored},
				Providers:  []cachebench.Provider{cachebench.Anthropic},
				Tokenizer:  tokenizer(t),
				OnMiss: func(sim cachesim.MissReason, a *core.MissAttribution) {
					if sim == cachesim.MissFirst {
						return
					}
					misses[sim]++
					total++
					if a == nil {
						t.Errorf("the simulator missed (%s), the runtime attributed nothing", sim)
						return
					}
					for _, c := range compatible[sim] {
						if a.Cause == c {
							return
						}
					}
					t.Errorf("the simulator missed (%s), the runtime says %+v", sim, *a)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("misses by the simulator's reason: %v", misses)
		})
	}
}
