package observations_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/tokens"
	"github.com/stratamem/strata/vectorstore"
)

// BenchmarkRender renders 500 observations into a 2,000-token budget: the
// work of one recall.
func BenchmarkRender(b *testing.B) {
	obs := make([]observations.Observation, 500)
	for i := range obs {
		obs[i] = observations.Observation{ID: fmt.Sprint(i), Text: fmt.Sprintf("User mentioned fact number %d about their project", i),
			Importance: 1 + i%5, LastSeen: t0.Add(time.Duration(i) * time.Minute)}
	}
	tok := tokens.Estimate()
	b.ReportAllocs()
	for b.Loop() {
		_ = observations.Render(obs, 2000, tok)
	}
}

// BenchmarkAdd writes one new observation into a scope of 200 on the
// embedded store with the hashing embedder: embed, exact-id lookup,
// top-1 query, upsert.
func BenchmarkAdd(b *testing.B) {
	ctx := context.Background()
	store := memtest.NewStore(b, "", nil)
	l, err := observations.New(store, observations.Options{})
	if err != nil {
		b.Fatal(err)
	}
	scope := vectorstore.Scope{Thread: "bench"}
	for i := 0; i < 200; i++ {
		if _, err := l.Put(ctx, scope, observations.Observation{Text: fmt.Sprintf("User has hobby number %d of many", i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := l.Put(ctx, scope, observations.Observation{Text: fmt.Sprintf("User visited city %d last summer", i)}); err != nil {
			b.Fatal(err)
		}
	}
}
