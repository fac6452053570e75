package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/layertest"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
)

func TestConformance(t *testing.T) {
	call := func(id, callID, marker string) core.Item {
		args, _ := json.Marshal(map[string]any{"facts": []map[string]any{{"subject": "user", "predicate": "pet " + marker, "value": marker}}})
		return core.FunctionCall(callID, id+"/record", string(args))
	}
	layertest.Run(t, layertest.Adapter{
		New: func(t testing.TB, store *memory.Store, id string, scope core.Scope) core.AnyLayer {
			return memtest.Layer(t, temporal.New, store, temporal.Options{Common: memory.Common{ID: id, Scope: scope}})
		},
		Scopes:          temporal.Format.Scopes(),
		Call:            call,
		PersistsCallIDs: true,
		Child:           layertest.ChildReachesParent,
		Renders:         true,
		Stored:          layertest.Listed((*temporal.Layer).List, func(f temporal.Fact) string { return f.Subject + " · " + f.Predicate + ": " + f.Value }),
	})
}

func TestGoAPI(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", nil)
	l := memtest.Layer(t, temporal.New, store, temporal.Options{})
	sc := vectorstore.Scope{Thread: "t1", Resource: "u1"}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	res, err := l.Put(ctx, sc, t0, temporal.Input{Subject: "user", Predicate: "lives in", Value: "Berlin"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Put(ctx, sc, t0.AddDate(0, 1, 0), temporal.Input{Subject: "user", Predicate: "lives in", Value: "Lisbon"}); err != nil {
		t.Fatal(err)
	}
	facts, err := l.List(ctx, sc)
	if err != nil || len(facts) != 2 || facts[0].ValidTo.IsZero() {
		t.Fatalf("List: %+v, %v (%+v)", facts, err, res)
	}
	if n, err := l.Delete(ctx, sc, facts[1].ID, "absent"); n != 1 || err != nil {
		t.Fatalf("Delete: %d, %v", n, err)
	}
	// The superseded fact keeps its validity.
	if facts, _ := l.List(ctx, sc); len(facts) != 1 || facts[0].Value != "Berlin" || facts[0].ValidTo.IsZero() {
		t.Fatalf("after Delete: %+v", facts)
	}
	if _, err := l.List(ctx, vectorstore.Scope{Resource: "u1"}); !errors.Is(err, memory.ErrScope) {
		t.Errorf("no thread: %v", err)
	}
}
