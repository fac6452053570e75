package semantic_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
)

// TestLayerSearchMatchesSession checks that Layer.Search of a
// resource-scoped layer ranks as State.Search of the session its scope
// names: with no thread, as a session of a new thread of the resource (no
// latest messages); with a thread, as a session of that thread (with its
// latest messages). The resource's latest messages here make "Anna" a
// speaker of the conversation (a third "Anna:" message), which moves the
// ranking: a search of the resource that counted them would rank as the
// session of their thread does, not as a new thread's.
func TestLayerSearchMatchesSession(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	l := newLayer(t, store, semantic.Options{Common: memory.Common{Scope: core.ScopeResource}})
	rt := newRuntime(t, l)
	old := start(t, rt, "old", "u1")
	talk(t, old, clk,
		"Anna: the ferry leaves at nine from pier two", "The ferry to the island is cheaper on Sundays",
		"I lost my ferry ticket once", "Ben: ferry crossings can be rough in winter",
		"I sat on the upper deck of the ferry", "The ferry cafe sells good coffee")
	if err := old.Complete(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	latest := start(t, rt, "latest", "u1")
	talk(t, latest, clk, "Anna: see you at the market", "Sure, at noon by the fountain")
	if err := latest.Complete(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	const q = "What did Anna say about the ferry?"
	// A ranking: the hits' texts and scores, best first.
	ids := func(hs []semantic.Hit, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(hs))
		for i, h := range hs {
			out[i] = fmt.Sprintf("%s (%s, %v)", h.Text, h.ID, h.Score)
		}
		return out
	}
	opts := semantic.SearchOptions{K: 20}
	session := func(thread string) []string {
		s := start(t, rt, thread, "u1")
		defer s.Close(ctx)
		return ids(state(t, s, l.ID).Search(ctx, q, opts))
	}
	fresh, ofLatest := session("new"), session("latest")
	if slices.Equal(fresh, ofLatest) {
		t.Fatalf("the latest messages do not move the ranking: the test checks nothing")
	}
	if got := ids(l.Search(ctx, vectorstore.Scope{Resource: "u1"}, q, opts)); !slices.Equal(got, fresh) {
		t.Errorf("Layer.Search of the resource:\n%q\nwant State.Search of a new thread:\n%q", got, fresh)
	}
	if got := ids(l.Search(ctx, vectorstore.Scope{Thread: "new", Resource: "u1"}, q, opts)); !slices.Equal(got, fresh) {
		t.Errorf("Layer.Search of a new thread:\n%q\nwant State.Search of a new thread:\n%q", got, fresh)
	}
	if got := ids(l.Search(ctx, vectorstore.Scope{Thread: "latest", Resource: "u1"}, q, opts)); !slices.Equal(got, ofLatest) {
		t.Errorf("Layer.Search of the thread:\n%q\nwant State.Search of a session of it:\n%q", got, ofLatest)
	}
}
