// Package layertest is the conformance suite of strata's memory layers:
// the contract every layer keeps, run against each through a small
// Adapter. The cases are:
//
//   - ScopeIsolation: concurrent sessions of different threads and
//     resources, in every scope the layer accepts, never see nor store
//     each other's memories;
//   - CASMerge: two sessions of one scope that both write and persist
//     their state keep both writes (the layer's Merge resolves the
//     compare-and-swap conflict), and call ids applied by either are not
//     applied again by a later session when the layer persists them;
//   - ReplayByCallID: a routed write call replayed with its call id is
//     answered with the first output and writes nothing more;
//   - ChildRuns: what a spawned child run writes either reaches the
//     parent (reloaded or shared when the child returns) or, for layers
//     that keep the parent's conversation only, is not persisted at all;
//   - DeletedStayDeleted: records deleted from the collection by someone
//     else (memctl) are not brought back by the layer's later writes.
//
// Each case is a subtest of Run, named as above, so a package runs one
// with go test -run 'TestConformance/CASMerge'.
package layertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

// Child says what happens to what a child run writes.
type Child int

const (
	// ChildReachesParent: the child's writes are stored and the parent
	// renders them once the child returned.
	ChildReachesParent Child = iota
	// ChildNotPersisted: a child's work is part of its parent's
	// conversation; the layer stores nothing for it.
	ChildNotPersisted
)

// Adapter drives one layer through the suite. A memory is named by a
// marker, a short lowercase word the adapter writes into the memory's
// text so that the suite can find it in what the layer lists and renders.
type Adapter struct {
	// New builds the layer with this id and scope on store.
	New func(t testing.TB, store *memory.Store, id string, scope core.Scope) core.AnyLayer
	// Scopes are the scopes the layer accepts, for ScopeIsolation.
	Scopes []core.Scope
	// Write makes session s (of layer id) write the memory marker, as the
	// model or the conversation does; call is a call id unique in the
	// test. Nil means the session routes Call.
	Write func(ctx context.Context, s *core.Session, id, call, marker string) error
	// Call, when not nil, is the routed function call that writes the
	// memory marker (with call id call): ReplayByCallID replays it. Nil
	// for a layer that has no write function.
	Call func(id, call, marker string) core.Item
	// PersistsCallIDs says the layer keeps applied call ids in its scoped
	// state, so a later session does not apply them again.
	PersistsCallIDs bool
	// WritesAtComplete says the layer stores a session's memories when
	// the run completes (episodic), not as they are written.
	WritesAtComplete bool
	// Child is what the layer does with a child run's writes.
	Child Child
	// Stored returns the texts of the memories the layer's Go API lists
	// in scope.
	Stored func(ctx context.Context, l core.AnyLayer, scope vectorstore.Scope) ([]string, error)
	// Renders says the layer's recall shows its memories whatever the
	// conversation (semantic recall shows what matches the latest user
	// message only, so it does not).
	Renders bool
}

// Listed is an Adapter.Stored for a layer of type L whose Go API lists
// its memories with list (a method expression: (*entity.Layer).List),
// each memory's text being text of it.
func Listed[L core.AnyLayer, T any](list func(L, context.Context, vectorstore.Scope) ([]T, error), text func(T) string) func(context.Context, core.AnyLayer, vectorstore.Scope) ([]string, error) {
	return func(ctx context.Context, l core.AnyLayer, scope vectorstore.Scope) ([]string, error) {
		items, err := list(l.(L), ctx, scope)
		var out []string
		for _, it := range items {
			out = append(out, text(it))
		}
		return out, err
	}
}

// Written returns the one record the layer of f's type (its default id)
// wrote to store, failing the test unless there is exactly one, f
// validates it, and f's RecordID is the id the layer gave it: f
// describes what its layer writes.
func Written(t testing.TB, store *memory.Store, f memory.RecordFormat) vectorstore.Record {
	t.Helper()
	recs := memtest.Records(t, store, vectorstore.Filter{Layer: f.Type()})
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if err := f.Validate(&r); err != nil {
		t.Errorf("the layer's record is invalid for Format: %v", err)
	}
	if id := f.RecordID(&r); id != r.ID {
		t.Errorf("Format.RecordID %q, the layer wrote %q", id, r.ID)
	}
	return r
}

// Run runs the conformance cases against the layer a drives.
func Run(t *testing.T, a Adapter) {
	if a.Write == nil {
		a.Write = func(ctx context.Context, s *core.Session, id, call, marker string) error {
			_, err := s.ExecuteTool(ctx, a.Call(id, call, marker))
			return err
		}
	}
	t.Run("ScopeIsolation", func(t *testing.T) { scopeIsolation(t, a) })
	t.Run("CASMerge", func(t *testing.T) { casMerge(t, a) })
	t.Run("ReplayByCallID", func(t *testing.T) { replayByCallID(t, a) })
	t.Run("ChildRuns", func(t *testing.T) { childRuns(t, a) })
	t.Run("DeletedStayDeleted", func(t *testing.T) { deletedStayDeleted(t, a) })
}

var t0 = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

func newStore(t *testing.T) *memory.Store {
	return memtest.NewStore(t, "", &memtest.Clock{T: t0})
}

func runtime(t *testing.T, l core.AnyLayer, st storage.Store) *core.Runtime {
	return memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{l}, Store: st, Cache: core.CacheConfig{Disabled: true}})
}

// stored returns the layer's memories of scope joined, failing the test
// on error.
func stored(t *testing.T, a Adapter, l core.AnyLayer, scope vectorstore.Scope) string {
	t.Helper()
	texts, err := a.Stored(context.Background(), l, scope)
	if err != nil {
		t.Fatalf("list %+v: %v", scope, err)
	}
	return strings.ToLower(strings.Join(texts, "\n"))
}

// shown assembles s and returns what the layer shows the model: the
// developer messages of the view (the runtime holds that one layer), its
// block and its updates, lowercased. A diagnostic is an error.
func shown(ctx context.Context, s *core.Session) (string, error) {
	v, err := s.Assemble(ctx)
	if err != nil {
		return "", err
	}
	for _, d := range v.Usage.Diagnostics {
		return "", fmt.Errorf("diagnostic: %+v", d)
	}
	var b strings.Builder
	for _, it := range v.Items() {
		if it.Role == core.RoleDeveloper {
			b.WriteString(strings.ToLower(it.Text()))
			b.WriteString("\n")
		}
	}
	return b.String(), nil
}

func mustShown(t *testing.T, s *core.Session) string {
	t.Helper()
	text, err := shown(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

func want(t *testing.T, what, text string, has, hasNot []string) {
	t.Helper()
	for _, m := range has {
		if !strings.Contains(text, m) {
			t.Errorf("%s lacks %q:\n%s", what, m, text)
		}
	}
	for _, m := range hasNot {
		if strings.Contains(text, m) {
			t.Errorf("%s has %q:\n%s", what, m, text)
		}
	}
}

func scopeOf(scope core.Scope, thread, resource string) vectorstore.Scope {
	switch scope {
	case core.ScopeResource:
		return vectorstore.Scope{Resource: resource}
	case core.ScopeGlobal:
		return vectorstore.Scope{}
	}
	return vectorstore.Scope{Thread: thread, Resource: resource}
}

func scopeIsolation(t *testing.T, a Adapter) {
	ctx := context.Background()
	for _, scope := range a.Scopes {
		if scope == core.ScopeGlobal {
			continue // one scope for everyone: nothing to isolate
		}
		t.Run(string(scope), func(t *testing.T) {
			store := newStore(t)
			id := "conf-" + string(scope)
			l := a.New(t, store, id, scope)
			rt := runtime(t, l, nil)
			who := []string{"alice", "bob"}
			markers := map[string][]string{"alice": {"aardvark", "anchovy"}, "bob": {"buffalo", "bison"}}
			memtest.Concurrently(t, who, func(name string) error {
				s, err := rt.Start(ctx, core.RunOptions{RunID: "run-" + name, ThreadID: "thread-" + name, ResourceID: "res-" + name})
				if err != nil {
					return err
				}
				for i, m := range markers[name] {
					if err := a.Write(ctx, s, id, fmt.Sprintf("%s-%d", name, i), m); err != nil {
						return err
					}
					text, err := shown(ctx, s)
					if err != nil {
						return err
					}
					other := markers[map[string]string{"alice": "bob", "bob": "alice"}[name]]
					for _, o := range other {
						if strings.Contains(text, o) {
							return fmt.Errorf("%s's session renders %q:\n%s", name, o, text)
						}
					}
				}
				return s.Complete(ctx, "done")
			})
			for _, name := range who {
				other := markers[map[string]string{"alice": "bob", "bob": "alice"}[name]]
				sc := scopeOf(scope, "thread-"+name, "res-"+name)
				want(t, name+"'s stored memories", stored(t, a, l, sc), markers[name], other)
				if a.Renders {
					s := memtest.Start(t, rt, core.RunOptions{ThreadID: "thread-" + name, ResourceID: "res-" + name})
					want(t, name+"'s fresh session", mustShown(t, s), markers[name], other)
				}
			}
		})
	}
}

func casMerge(t *testing.T, a Adapter) {
	ctx := context.Background()
	store := newStore(t)
	st := memtest.StateStore(t, t.TempDir())
	l := a.New(t, store, "conf", a.Scopes[0])
	rt := runtime(t, l, st)
	run := func(id string) core.RunOptions {
		return core.RunOptions{RunID: id, ThreadID: "thread-1", ResourceID: "res-1"}
	}
	s1 := memtest.Start(t, rt, run("run-1"))
	s2 := memtest.Start(t, rt, run("run-2"))
	if err := a.Write(ctx, s1, "conf", "c1", "kiwi"); err != nil {
		t.Fatal(err)
	}
	if err := a.Write(ctx, s2, "conf", "c2", "mango"); err != nil {
		t.Fatal(err)
	}
	// Both persist their state: the second save conflicts with the first
	// and is merged, not refused.
	for _, s := range []*core.Session{s1, s2} {
		if err := s.Complete(ctx, "done"); err != nil {
			t.Fatalf("Complete: %v", err)
		}
	}
	sc := scopeOf(a.Scopes[0], "thread-1", "res-1")
	before := stored(t, a, l, sc)
	want(t, "stored memories", before, []string{"kiwi", "mango"}, nil)
	if a.Renders {
		s := memtest.Start(t, rt, run("run-3"))
		want(t, "a later session", mustShown(t, s), []string{"kiwi", "mango"}, nil)
	}
	if a.Call == nil || !a.PersistsCallIDs {
		return
	}
	// The call ids of both sessions were kept: a later session answers
	// either replay without applying it.
	s := memtest.Start(t, rt, run("run-4"))
	for _, c := range []core.Item{a.Call("conf", "c1", "papaya"), a.Call("conf", "c2", "papaya")} {
		if _, err := s.ExecuteTool(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	want(t, "stored memories after the replays", stored(t, a, l, sc), []string{"kiwi", "mango"}, []string{"papaya"})
}

func replayByCallID(t *testing.T, a Adapter) {
	if a.Call == nil {
		t.Skip("the layer has no write function")
	}
	ctx := context.Background()
	store := newStore(t)
	l := a.New(t, store, "conf", a.Scopes[0])
	s := memtest.Start(t, runtime(t, l, nil), core.RunOptions{RunID: "run-1", ThreadID: "thread-1", ResourceID: "res-1"})
	first, err := s.ExecuteTool(ctx, a.Call("conf", "c1", "lemon"))
	if err != nil {
		t.Fatal(err)
	}
	n := len(memtest.Records(t, store, vectorstore.Filter{Layer: "conf"}))
	// The same call id with other arguments (a host retrying a call it
	// lost the answer to) is answered, not applied.
	again, err := s.ExecuteTool(ctx, a.Call("conf", "c1", "melon"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Output != first.Output {
		t.Errorf("replay answered %q, first %q", again.Output, first.Output)
	}
	if m := len(memtest.Records(t, store, vectorstore.Filter{Layer: "conf"})); m != n {
		t.Errorf("replay wrote: %d records, %d before", m, n)
	}
	want(t, "stored memories", stored(t, a, l, scopeOf(a.Scopes[0], "thread-1", "res-1")), []string{"lemon"}, []string{"melon"})
}

func childRuns(t *testing.T, a Adapter) {
	ctx := context.Background()
	store := newStore(t)
	l := a.New(t, store, "conf", a.Scopes[0])
	s := memtest.Start(t, runtime(t, l, nil), core.RunOptions{RunID: "run-1", ThreadID: "thread-1", ResourceID: "res-1"})
	if err := a.Write(ctx, s, "conf", "p1", "walnut"); err != nil {
		t.Fatal(err)
	}
	child, err := s.Spawn(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Write(ctx, child, "conf", "k1", "hazelnut"); err != nil {
		t.Fatal(err)
	}
	if err := s.Return(ctx, child, nil); err != nil {
		t.Fatal(err)
	}
	sc := scopeOf(a.Scopes[0], "thread-1", "res-1")
	switch a.Child {
	case ChildReachesParent:
		if a.Renders {
			want(t, "the parent after the child returned", mustShown(t, s), []string{"walnut", "hazelnut"}, nil)
		}
		if err := s.Complete(ctx, "done"); err != nil {
			t.Fatal(err)
		}
		want(t, "stored memories", stored(t, a, l, sc), []string{"walnut", "hazelnut"}, nil)
	case ChildNotPersisted:
		if err := s.Complete(ctx, "done"); err != nil {
			t.Fatal(err)
		}
		want(t, "stored memories", stored(t, a, l, sc), []string{"walnut"}, []string{"hazelnut"})
	}
}

// deleteMarked deletes the layer's records whose text holds marker, as
// memctl rm would.
func deleteMarked(t *testing.T, store *memory.Store, id, marker string) {
	t.Helper()
	var ids []string
	for _, r := range memtest.Records(t, store, vectorstore.Filter{Layer: id}) {
		if strings.Contains(strings.ToLower(r.Text), marker) {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		t.Fatalf("no record holds %q", marker)
	}
	if err := store.Records.Delete(context.Background(), ids...); err != nil {
		t.Fatal(err)
	}
}

func deletedStayDeleted(t *testing.T, a Adapter) {
	ctx := context.Background()
	store := newStore(t)
	l := a.New(t, store, "conf", a.Scopes[0])
	rt := runtime(t, l, nil)
	run := core.RunOptions{RunID: "run-1", ThreadID: "thread-1", ResourceID: "res-1"}
	sc := scopeOf(a.Scopes[0], "thread-1", "res-1")
	s := memtest.Start(t, rt, run)
	if err := a.Write(ctx, s, "conf", "c1", "cherry"); err != nil {
		t.Fatal(err)
	}
	if a.WritesAtComplete {
		if err := s.Complete(ctx, "done"); err != nil {
			t.Fatal(err)
		}
		run.RunID = "run-2"
		s = memtest.Start(t, rt, run)
	}
	if _, err := s.Assemble(ctx); err != nil {
		t.Fatal(err)
	}
	deleteMarked(t, store, "conf", "cherry")
	// The session that loaded it writes on: the deleted memory is not
	// written back, and a later session does not show it.
	for i, m := range []string{"plum", "grape"} {
		if err := a.Write(ctx, s, "conf", fmt.Sprint("c", i+2), m); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Assemble(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Complete(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	got := stored(t, a, l, sc)
	want(t, "stored memories", got, []string{"plum"}, []string{"cherry"})
	if a.Renders {
		run.RunID = "run-3"
		s := memtest.Start(t, rt, run)
		want(t, "a later session", mustShown(t, s), []string{"plum"}, []string{"cherry"})
	}
	if slices.Contains(strings.Fields(got), "cherry") {
		t.Errorf("deleted memory listed: %s", got)
	}
}
