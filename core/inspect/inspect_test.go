package inspect_test

import (
	"context"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/storage"
)

// The record core writes and the one inspect reads are two declarations
// of one JSON form: every field must come back.
func TestLastAssemblyReadsWhatTheRuntimeWrote(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemory()
	notes := core.Layer[int]{ID: "notes", Scope: core.ScopeExecution, Functions: []core.Function[int]{{Spec: core.ToolSpec{Name: "add"}}},
		Hooks: core.Hooks[int]{Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
			return core.Text[int]("a note")
		}}}
	rt, err := core.NewRuntime(core.Config{Store: store, RecordAssemblies: true, Layers: []core.AnyLayer{notes},
		System: []core.Item{core.SystemMessage("be brief")}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{RunID: "r1", ThreadID: "t1", ResourceID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, core.UserMessage("hi")); err != nil {
		t.Fatal(err)
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := inspect.LastAssembly(ctx, store, "u1", "t1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.RunID != "r1" || rec.ThreadID != "t1" || rec.ResourceID != "u1" || rec.Turn != v.Usage.Turn || rec.PrefixHash != v.PrefixHash {
		t.Fatalf("record %+v", rec)
	}
	if len(rec.Tools) != 1 || rec.Tools[0] != "notes/add" || rec.Usage == nil || rec.Usage.Layer("notes") == nil {
		t.Fatalf("tools %v usage %+v", rec.Tools, rec.Usage)
	}
	var items int
	for _, b := range rec.Bands {
		items += len(b.Items)
		if b.Band == "" || b.Tokens <= 0 {
			t.Fatalf("band %+v", b)
		}
	}
	if items != v.Len() {
		t.Fatalf("%d recorded items, the view has %d", items, v.Len())
	}
	if owner, ok, err := inspect.ThreadOwner(ctx, store, "t1"); err != nil || !ok || owner != "u1" {
		t.Fatalf("owner %q %v %v", owner, ok, err)
	}
	// Every key the recording wrote is an assembly key, in the thread's
	// scope.
	ks, err := store.Keys(ctx, "thread", storage.ThreadScopeID("u1", "t1"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range ks {
		if inspect.IsAssemblyKey(k) {
			n++
		}
	}
	if n < 3 { // index, record, log chunk (and parts)
		t.Fatalf("%d assembly keys among %v", n, ks)
	}
	if _, err := store.Get(ctx, inspect.ThreadBindingKey("t1")); err != nil {
		t.Fatal(err)
	}
}
