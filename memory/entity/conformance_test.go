package entity_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/layertest"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/vectorstore"
)

func TestConformance(t *testing.T) {
	call := func(id, callID, marker string) core.Item {
		args, _ := json.Marshal(map[string]any{"entities": []map[string]any{{"name": marker, "type": "concept", "note": "a " + marker}}})
		return core.FunctionCall(callID, id+"/update", string(args))
	}
	layertest.Run(t, layertest.Adapter{
		New: func(t testing.TB, store *memory.Store, id string, scope core.Scope) core.AnyLayer {
			return memtest.Layer(t, entity.New, store, entity.Options{Common: memory.Common{ID: id, Scope: scope}})
		},
		Scopes:  entity.Format.Scopes(),
		Call:    call,
		Child:   layertest.ChildReachesParent,
		Renders: true,
		Stored:  layertest.Listed((*entity.Layer).List, func(e entity.Entity) string { return e.Name }),
	})
}

func TestGoAPI(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", nil)
	l := memtest.Layer(t, entity.New, store, entity.Options{Common: memory.Common{Scope: core.ScopeResource}})
	sc := vectorstore.Scope{Resource: "u1"}
	prio := 3
	out, err := l.Put(ctx, sc, entity.Update{Name: "Ada  Lovelace", Type: entity.Person, Notes: []string{"mathematician"}, Priority: &prio})
	if err != nil || out == "" {
		t.Fatalf("Put: %q, %v", out, err)
	}
	if _, err := l.Put(ctx, sc, entity.Update{Name: "ada lovelace", Type: entity.Person, Notes: []string{"wrote the first program"}}); err != nil {
		t.Fatal(err)
	}
	ents, err := l.List(ctx, sc)
	if err != nil || len(ents) != 1 || ents[0].Name != "Ada Lovelace" || len(ents[0].Notes) != 2 || ents[0].Priority != 3 || ents[0].Mentions != 2 {
		t.Fatalf("List: %+v, %v", ents, err)
	}
	// The model's rules: an empty name or an unknown type is refused.
	if _, err := l.Put(ctx, sc, entity.Update{Name: " ", Type: entity.Person}); !errors.Is(err, entity.ErrInvalidUpdate) {
		t.Errorf("empty name: %v", err)
	}
	if _, err := l.Put(ctx, sc, entity.Update{Name: "X", Type: "alien"}); !errors.Is(err, entity.ErrInvalidUpdate) {
		t.Errorf("unknown type: %v", err)
	}
	eleven := 11
	if _, err := l.Put(ctx, sc, entity.Update{Name: "X", Type: entity.Person}, entity.Update{Name: "Y", Type: entity.Place, Priority: &eleven}); err == nil ||
		!strings.Contains(err.Error(), "entities[1].priority: must be a whole number from 0 to 10, got 11") {
		t.Errorf("priority 11: %v", err)
	}
	if _, err := l.Put(ctx, sc, entity.Update{Name: "X", Type: entity.Person, Notes: []string{"bell\a"}}); err == nil ||
		!strings.Contains(err.Error(), "entities[0].notes[0]: contains the control character U+0007") {
		t.Errorf("control character: %v", err)
	}
	if _, err := l.List(ctx, vectorstore.Scope{Thread: "t1"}); !errors.Is(err, memory.ErrScope) {
		t.Errorf("no resource: %v", err)
	}
	if n, err := l.Delete(ctx, sc, ents[0], entity.Entity{Name: "nobody", Type: entity.Person}); n != 1 || err != nil {
		t.Fatalf("Delete: %d, %v", n, err)
	}
	if ents, _ := l.List(ctx, sc); len(ents) != 0 {
		t.Fatalf("after Delete: %+v", ents)
	}
}
