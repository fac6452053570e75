package observations_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/layertest"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/vectorstore"
)

func TestConformance(t *testing.T) {
	call := func(id, callID, marker string) core.Item {
		args, _ := json.Marshal(map[string]any{"observations": []map[string]any{{"text": "The user keeps a " + marker}}})
		return core.FunctionCall(callID, id+"/record", string(args))
	}
	layertest.Run(t, layertest.Adapter{
		New: func(t testing.TB, store *memory.Store, id string, scope core.Scope) core.AnyLayer {
			return memtest.Layer(t, observations.New, store, observations.Options{Common: memory.Common{ID: id, Scope: scope}, DisableExtraction: true})
		},
		Scopes:          observations.Format.Scopes(),
		Call:            call,
		PersistsCallIDs: true,
		Child:           layertest.ChildReachesParent,
		Renders:         true,
		Stored:          layertest.Listed((*observations.Layer).List, func(o observations.Observation) string { return o.Text }),
	})
}

func TestGoAPI(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", nil)
	l := memtest.Layer(t, observations.New, store, observations.Options{})
	sc := vectorstore.Scope{Thread: "t1", Resource: "u1"}
	res, err := l.Put(ctx, sc, observations.Observation{Text: "User is allergic to peanuts", Importance: 5}, observations.Observation{Text: "User likes tea"})
	if err != nil || res.Added != 2 {
		t.Fatalf("Put: %+v, %v", res, err)
	}
	if n, err := l.Delete(ctx, sc, res.IDs[1], "absent"); n != 1 || err != nil {
		t.Fatalf("Delete: %d, %v", n, err)
	}
	obs, err := l.List(ctx, sc)
	if err != nil || len(obs) != 1 || obs[0].Text != "User is allergic to peanuts" {
		t.Fatalf("List: %+v, %v", obs, err)
	}
	if _, err := l.Delete(ctx, vectorstore.Scope{Resource: "u1"}, res.IDs[0]); !errors.Is(err, memory.ErrScope) {
		t.Errorf("no thread: %v", err)
	}
}
