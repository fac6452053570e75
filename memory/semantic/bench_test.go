package semantic_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/semantic"
)

// BenchmarkSearch ranks a 2,000-message thread (hashing embedder, so the
// figure is the layer's own cost: BM25, the vector queries on the
// embedded store, fusion) in each mode.
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	clk := newClock()
	store := memtest.NewStore(b, "", clk)
	l, err := semantic.New(store, semantic.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}})
	s, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t", ResourceID: "r"})
	topics := []string{"garden", "flights", "dentist", "kitchen", "budget", "running", "kitten", "mortgage"}
	for i := range 1000 {
		t := topics[i%len(topics)]
		_ = s.Append(ctx, core.UserMessage(fmt.Sprintf("message %d: news about the %s and item %d", i, t, i%37)))
		_ = s.Record(ctx, core.AssistantMessage(fmt.Sprintf("reply %d: noted about the %s", i, t)))
	}
	_ = s.Complete(ctx, "ok")
	s, _ = rt.Start(ctx, core.RunOptions{ThreadID: "t", ResourceID: "r"})
	st, _ := core.State[semantic.State](s, "semantic")
	for _, mode := range []semantic.Mode{semantic.ModeLexical, semantic.ModeDense, semantic.ModeHybrid} {
		b.Run(string(mode), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := st.Search(ctx, fmt.Sprintf("what about the kitchen item %d", i%37), semantic.SearchOptions{K: 10, Mode: mode}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
