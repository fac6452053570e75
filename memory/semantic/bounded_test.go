package semantic_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
	"github.com/stratamem/strata/vectorstore/faulty"
)

// reading wraps a driver and counts the records its reads return, by
// resource: what a session reads of the store, whatever the calls.
type reading struct {
	driver.Collection
	mu  sync.Mutex
	got map[string]int // resource -> records returned
}

func (r *reading) count(recs ...driver.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range recs {
		r.got[x.Scope.Resource]++
	}
}

func (r *reading) reset() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.got
	r.got = map[string]int{}
	return g
}

func (r *reading) Get(ctx context.Context, id string) (driver.Record, bool, error) {
	x, ok, err := r.Collection.Get(ctx, id)
	if ok {
		r.count(x)
	}
	return x, ok, err
}

func (r *reading) List(ctx context.Context, q driver.ListQuery) ([]driver.Record, error) {
	recs, err := r.Collection.List(ctx, q)
	r.count(recs...)
	return recs, err
}

func (r *reading) Query(ctx context.Context, q driver.VectorQuery) ([]driver.Match, error) {
	ms, err := r.Collection.Query(ctx, q)
	for _, m := range ms {
		r.count(m.Record)
	}
	return ms, err
}

func (r *reading) SearchTerms(ctx context.Context, q driver.TermQuery) (driver.TermResult, error) {
	res, err := r.Collection.(driver.TermSearcher).SearchTerms(ctx, q)
	for _, m := range res.Matches {
		r.count(m.Record)
	}
	return res, err
}

// A session's cost is bounded by what a turn needs: Start reads a few
// records whatever the resource's history, an exchange reads a few more,
// and a search reads only its scope's records, a bounded number of them.
func TestCostBoundedByTurn(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	// faulty.WrapCollection hands out the driver under store.Records (the
	// portable type no longer does); no fault is injected.
	_, fc, err := faulty.WrapCollection(store.Records, nil)
	if err != nil {
		t.Fatal(err)
	}
	rd := &reading{Collection: fc.Driver(), got: map[string]int{}}
	col, err := vectorstore.NewCollection(rd, &vectorstore.Options{Dimension: memtest.Dimension})
	if err != nil {
		t.Fatal(err)
	}
	store.Records = col
	l := newLayer(t, store, semantic.Options{Common: memory.Common{Scope: core.ScopeResource}, Candidates: 20})
	rt := newRuntime(t, l)
	// Two users: u1 with 30 conversations of 20 messages, u2 with the
	// same words.
	for _, u := range []string{"u1", "u2"} {
		for c := range 30 {
			s := start(t, rt, fmt.Sprintf("%s-c%d", u, c), u)
			for m := range 10 {
				clk.Advance(time.Minute)
				talk(t, s, clk, fmt.Sprintf("day %d: the sailing trip %d with Anna", c, m), fmt.Sprintf("noted, trip %d of day %d", m, c))
			}
			if err := s.Complete(ctx, "ok"); err != nil {
				t.Fatal(err)
			}
		}
	}
	rd.reset()
	s := start(t, rt, "u1-new", "u1")
	if got := rd.reset(); got["u1"]+got["u2"] > 8 {
		t.Fatalf("Start read %v records; want at most 8 whatever the 600 messages of the resource", got)
	}
	talk(t, s, clk, "We booked the sailing trip", "Great, enjoy it")
	if got := rd.reset(); got["u1"]+got["u2"] > 8 {
		t.Fatalf("an exchange read %v records", got)
	}
	st := state(t, s, "semantic")
	hits, err := st.Search(ctx, "sailing trip with Anna", semantic.SearchOptions{K: 5})
	if err != nil || len(hits) != 5 {
		t.Fatalf("Search: %v %d hits", err, len(hits))
	}
	got := rd.reset()
	if got["u2"] != 0 {
		t.Fatalf("a search of u1 read %d records of u2", got["u2"])
	}
	// Each side's top Candidates (twice that for the vector side,
	// messages and contexts), then for every candidate (at most two
	// Candidates) its other half and both neighbours' two records: at
	// most 20 + 40 + 40*6 = 300, a bound set by Candidates, not by the
	// 600 messages and 600 contexts of the scope.
	if got["u1"] > 300 {
		t.Fatalf("a search read %d records of its scope", got["u1"])
	}
}
