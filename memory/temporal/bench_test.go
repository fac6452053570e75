package temporal_test

import (
	"context"
	"fmt"
	"github.com/stratamem/strata/tokens"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
)

// BenchmarkRender renders a ledger of 500 facts (250 chains of two) into
// a 2,000-token budget: the work of one recall.
func BenchmarkRender(b *testing.B) {
	ctx := context.Background()
	store := memtest.NewStore(b, "", &memtest.Clock{T: t0})
	l, err := temporal.New(store, temporal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	scope := vectorstore.Scope{Thread: "bench"}
	var in []temporal.Input
	for i := 0; i < 250; i++ {
		in = append(in,
			temporal.Input{Subject: fmt.Sprint("person ", i), Predicate: "city", Value: "Paris", When: fmt.Sprintf("%d days ago", 400-i)},
			temporal.Input{Subject: fmt.Sprint("person ", i), Predicate: "city", Value: "Berlin", When: fmt.Sprintf("%d days ago", 100-i%100)})
	}
	if _, err := l.Put(ctx, scope, t0, in[:100]...); err != nil {
		b.Fatal(err)
	}
	for k := 100; k < len(in); k += 100 {
		if _, err := l.Put(ctx, scope, t0, in[k:min(k+100, len(in))]...); err != nil {
			b.Fatal(err)
		}
	}
	facts, err := l.List(ctx, scope)
	if err != nil || len(facts) != 500 {
		b.Fatalf("%d facts, %v", len(facts), err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Render(facts, t0, 2000, tokens.Estimate())
	}
}

// BenchmarkRecord records one fact that supersedes another through the
// provided function on the embedded store: chain read (with a metadata
// filter), embed, upsert of the new and the closed record.
func BenchmarkRecord(b *testing.B) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(b, "", clock)
	l, err := temporal.New(store, temporal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s := memtest.Session(b, core.Config{Layers: []core.AnyLayer{l}}, core.RunOptions{ThreadID: "bench"})
	// 100 chains; each iteration supersedes the current fact of one, so
	// chains grow by one fact per 100 iterations.
	for k := 0; k < 100; k++ {
		if _, err := s.ExecuteTool(ctx, recordCall(fmt.Sprint("seed", k), fact{"user", fmt.Sprint("attr ", k), "initial", ""})); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		clock.Advance(1e9)
		out, err := s.ExecuteTool(ctx, recordCall(fmt.Sprint("c", i), fact{"user", fmt.Sprint("attr ", i%100), fmt.Sprint("state ", i), ""}))
		if err != nil || out.Output[:8] != "Recorded" {
			b.Fatal(err, out.Output)
		}
	}
}
