package episodic_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/memory/memtest"
)

func benchRuntime(b *testing.B, mode episodic.Mode) *core.Runtime {
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(b, "", clock)
	l, err := episodic.New(store, episodic.Options{Mode: mode})
	if err != nil {
		b.Fatal(err)
	}
	rt := memtest.Runtime(b, core.Config{Layers: []core.AnyLayer{l}})
	ctx := context.Background()
	for i := 0; i < episodic.DefaultMaxEpisodes; i++ {
		clock.Advance(time.Hour)
		s, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t", ResourceID: "r"})
		_ = s.Append(ctx, core.UserMessage(fmt.Sprintf("request %d about topic %d", i, i%5)))
		_ = s.Record(ctx, core.AssistantMessage(fmt.Sprintf("answer %d", i)))
		if err := s.Complete(ctx, "ok"); err != nil {
			b.Fatal(err)
		}
	}
	return rt
}

// BenchmarkComplete measures storing one episode (extractive summary,
// embedding, upsert, eviction past 20) on the embedded store.
func BenchmarkComplete(b *testing.B) {
	rt := benchRuntime(b, episodic.Recency)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t", ResourceID: "r"})
		_ = s.Append(ctx, core.UserMessage(fmt.Sprint("benchmark request ", i)))
		_ = s.Record(ctx, core.AssistantMessage("done"))
		if err := s.Complete(ctx, "ok"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAssembleRelevance measures a turn whose user message is new:
// embed it, query 20 episodes, render.
func BenchmarkAssembleRelevance(b *testing.B) {
	rt := benchRuntime(b, episodic.Relevance)
	ctx := context.Background()
	s, _ := rt.Start(ctx, core.RunOptions{ThreadID: "q", ResourceID: "r"})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = s.Append(ctx, core.UserMessage(fmt.Sprint("what about topic ", i%5, " and item ", i)))
		if _, err := s.Assemble(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
