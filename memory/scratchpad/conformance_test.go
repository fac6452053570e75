package scratchpad_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/layertest"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/vectorstore"
)

func TestConformance(t *testing.T) {
	call := func(id, callID, marker string) core.Item {
		args, _ := json.Marshal(map[string]any{"set": map[string]string{"note " + callID: marker}})
		return core.FunctionCall(callID, id+"/update", string(args))
	}
	layertest.Run(t, layertest.Adapter{
		New: func(t testing.TB, store *memory.Store, id string, scope core.Scope) core.AnyLayer {
			return memtest.Layer(t, scratchpad.New, store, scratchpad.Options{Common: memory.Common{ID: id, Scope: scope}})
		},
		Scopes:  scratchpad.Format.Scopes(),
		Call:    call,
		Child:   layertest.ChildReachesParent,
		Renders: true,
		Stored:  layertest.Listed((*scratchpad.Layer).List, func(n scratchpad.Note) string { return n.Key + ": " + n.Value }),
	})
}

func TestGoAPI(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", nil)
	l := memtest.Layer(t, scratchpad.New, store, scratchpad.Options{})
	sc := vectorstore.Scope{Thread: "t1", Resource: "u1"}
	if _, err := l.Put(ctx, sc, map[string]string{"plan": "read", "todo": "fix"}); err != nil {
		t.Fatal(err)
	}
	notes, err := l.List(ctx, sc)
	if err != nil || len(notes) != 2 || notes[0].Key != "plan" || notes[0].Value != "read" || notes[1].Key != "todo" {
		t.Fatalf("List: %+v, %v", notes, err)
	}
	if _, err := l.Put(ctx, sc, map[string]string{" ": "x"}); !errors.Is(err, scratchpad.ErrInvalidUpdate) {
		t.Errorf("empty key: %v", err)
	}
	if _, err := l.Put(ctx, sc, nil); !errors.Is(err, scratchpad.ErrInvalidUpdate) {
		t.Errorf("nothing to set: %v", err)
	}
	if n, err := l.Delete(ctx, sc, "plan", "absent"); n != 1 || err != nil {
		t.Fatalf("Delete: %d, %v", n, err)
	}
	if notes, _ := l.List(ctx, sc); len(notes) != 1 || notes[0].Key != "todo" {
		t.Fatalf("after Delete: %+v", notes)
	}
	// Another thread of the resource holds nothing.
	if notes, _ := l.List(ctx, vectorstore.Scope{Thread: "t2", Resource: "u1"}); len(notes) != 0 {
		t.Fatalf("other thread: %+v", notes)
	}
	if _, err := l.List(ctx, vectorstore.Scope{Resource: "u1"}); !errors.Is(err, memory.ErrScope) {
		t.Errorf("no thread: %v", err)
	}
}
