package semantic_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/layertest"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
)

func TestConformance(t *testing.T) {
	layertest.Run(t, layertest.Adapter{
		New: func(t testing.TB, store *memory.Store, id string, scope core.Scope) core.AnyLayer {
			return memtest.Layer(t, semantic.New, store, semantic.Options{Common: memory.Common{ID: id, Scope: scope}})
		},
		Scopes: semantic.Format.Scopes(),
		// Every user message is a memory.
		Write: func(ctx context.Context, s *core.Session, _, _, marker string) error {
			return s.Append(ctx, core.UserMessage("I once saw a "+marker+" at the market."))
		},
		Child:  layertest.ChildNotPersisted,
		Stored: layertest.Listed((*semantic.Layer).List, func(h semantic.Hit) string { return h.Text }),
	})
}

func TestGoAPI(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", nil)
	l := memtest.Layer(t, semantic.New, store, semantic.Options{})
	sc := vectorstore.Scope{Thread: "t1", Resource: "u1"}
	if err := l.Put(ctx, sc, core.UserMessage("I booked flights to Lisbon for May."), core.AssistantMessage("Enjoy Lisbon!"),
		core.UserMessage("My sister Ada lives in Porto."), core.DeveloperMessage("not recorded")); err != nil {
		t.Fatal(err)
	}
	msgs, err := l.List(ctx, sc)
	if err != nil || len(msgs) != 3 || msgs[0].Role != core.RoleUser || msgs[2].Text != "My sister Ada lives in Porto." {
		t.Fatalf("List: %+v, %v", msgs, err)
	}
	hits, err := l.Search(ctx, sc, "flights to Lisbon", semantic.SearchOptions{K: 1})
	if err != nil || len(hits) != 1 || hits[0].ID != msgs[0].ID {
		t.Fatalf("Search: %+v, %v", hits, err)
	}
	if _, err := l.Search(ctx, sc, " ", semantic.SearchOptions{}); !errors.Is(err, semantic.ErrInvalidQuery) {
		t.Errorf("empty query: %v", err)
	}
	if _, err := l.Search(ctx, vectorstore.Scope{Resource: "u1"}, "Lisbon", semantic.SearchOptions{}); !errors.Is(err, memory.ErrScope) {
		t.Errorf("no thread: %v", err)
	}
	if hits, _ := l.Search(ctx, vectorstore.Scope{Thread: "t1", Resource: "u2"}, "Lisbon", semantic.SearchOptions{}); len(hits) != 0 {
		t.Errorf("another resource's thread: %+v", hits)
	}
	if n, err := l.Delete(ctx, sc, msgs[0].ID); n != 1 || err != nil {
		t.Fatalf("Delete: %d, %v", n, err)
	}
	if msgs, _ := l.List(ctx, sc); len(msgs) != 2 {
		t.Fatalf("after Delete: %+v", msgs)
	}
	// A session of the thread searches what Put recorded.
	s := memtest.Start(t, memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{l}}), core.RunOptions{ThreadID: "t1", ResourceID: "u1"})
	st, _ := core.State[semantic.State](s, l.ID)
	if n, err := st.Len(ctx); n != 2 || err != nil {
		t.Fatalf("session sees %d messages (%v)", n, err)
	}
}
