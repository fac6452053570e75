package environment_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

// tenantKey is a layer's state key in a scope.
func tenantKey(scope, id string) storage.Key {
	return storage.Key{Scope: scope, ScopeID: id, Layer: "notes", Name: "state"}
}

// seedTenants writes two tenants' records and state: alice's thread main
// (bound to her, with a legacy record and legacy state), a thread shared
// with bob (its legacy data is nobody's to erase), a thread "ghost" of
// alice's that only her state names, and bob's own.
func seedTenants(t *testing.T, env *environment.Env, st storage.Store, n func(string) string) {
	t.Helper()
	ctx := context.Background()
	rec := func(id, resource, thread string) vectorstore.Record {
		vs, err := env.Memory.Embedder.Embed(ctx, []string{"text of " + id})
		if err != nil {
			t.Fatal(err)
		}
		if resource != "" {
			resource = n(resource)
		}
		return vectorstore.Record{ID: id, Layer: "notes", Kind: "note", Text: "text of " + id, Vector: vs[0],
			Scope: vectorstore.Scope{Resource: resource, Thread: n(thread)}}
	}
	if err := env.Records().Upsert(ctx,
		rec("a1", "alice", "main"), rec("a2", "alice", "main"), rec("l1", "", "main"),
		rec("a3", "alice", "shared"), rec("b1", "bob", "shared"), rec("l2", "", "shared"),
		rec("b2", "bob", "bobs")); err != nil {
		t.Fatal(err)
	}
	for _, k := range []storage.Key{
		tenantKey("resource", n("alice")), tenantKey("resource", n("bob")),
		tenantKey("thread", storage.ThreadScopeID(n("alice"), n("main"))),
		tenantKey("thread", storage.ThreadScopeID(n("alice"), n("ghost"))),
		tenantKey("thread", storage.ThreadScopeID(n("bob"), n("bobs"))),
		tenantKey("thread", n("main")), tenantKey("thread", n("shared")),
	} {
		if _, err := st.Put(ctx, k, []byte(`{}`), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Put(ctx, inspect.ThreadBindingKey(n("main")), []byte(strconv.Quote(n("alice"))), 0); err != nil {
		t.Fatal(err)
	}
}

func ids(t *testing.T, env *environment.Env) []string {
	t.Helper()
	var out []string
	for r, err := range env.Records().All(context.Background(), vectorstore.ListOptions{Limit: 1000}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r.ID)
	}
	slices.Sort(out)
	return out
}

func stateLeft(t *testing.T, st storage.Store, k storage.Key) bool {
	t.Helper()
	_, err := st.Get(context.Background(), k)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// testForget forgets alice in env, whose state store is st. The names
// carry tag: a database's state store is shared by every test using it.
func testForget(t *testing.T, env *environment.Env, st storage.Store, tag string) {
	ctx := context.Background()
	n := func(s string) string { return s + tag }
	seedTenants(t, env, st, n)
	opts := environment.ForgetOptions{Filter: vectorstore.Filter{Resource: n("alice")}, State: st, StateName: "state", DryRun: true}
	dry, err := env.Forget(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	wantLeft := []environment.ForgetLeft{{Thread: n("shared"), Records: 1, StateKeys: 1, Why: environment.LeftShared,
		Reason: `the thread is also used by resource ` + strconv.Quote(n("bob")) + `, so they may be another user's`}}
	if !slices.Equal(dry.NotErased, wantLeft) {
		t.Errorf("dry run leaves %+v, want %+v", dry.NotErased, wantLeft)
	}
	if got := slices.Sorted(slices.Values(dry.IDs)); !slices.Equal(got, []string{"a1", "a2", "a3", "l1"}) {
		t.Errorf("dry run deletes %v", got)
	}
	// resource/alice, thread alice+main, legacy main, its binding, alice+ghost.
	if len(dry.StateKeys) != 5 {
		t.Errorf("dry run deletes state keys %v", dry.StateKeys)
	}
	if got := ids(t, env); len(got) != 7 {
		t.Fatalf("the dry run deleted: %v left", got)
	}

	opts.DryRun = false
	rep, err := env.Forget(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.IDs) != 4 || len(rep.StateKeys) != 5 || !slices.Equal(rep.NotErased, wantLeft) {
		t.Errorf("report %+v", rep)
	}
	// The legacy record goes before the records carrying alice.
	if i, j := slices.Index(rep.IDs, "l1"), slices.Index(rep.IDs, "a1"); i < 0 || j < 0 || i > j {
		t.Errorf("deletion order %v", rep.IDs)
	}
	if got := ids(t, env); !slices.Equal(got, []string{"b1", "b2", "l2"}) {
		t.Errorf("left records %v", got)
	}
	for k, want := range map[storage.Key]bool{
		tenantKey("resource", n("alice")): false, tenantKey("resource", n("bob")): true,
		tenantKey("thread", storage.ThreadScopeID(n("alice"), n("main"))):  false,
		tenantKey("thread", storage.ThreadScopeID(n("alice"), n("ghost"))): false,
		tenantKey("thread", storage.ThreadScopeID(n("bob"), n("bobs"))):    true,
		tenantKey("thread", n("main")):                                     false,
		inspect.ThreadBindingKey(n("main")):                                false,
		tenantKey("thread", n("shared")):                                   true,
	} {
		if got := stateLeft(t, st, k); got != want {
			t.Errorf("state key %+v left %v, want %v", k, got, want)
		}
	}

	// Again: nothing of alice's is left to delete.
	rep, err = env.Forget(ctx, opts)
	if err != nil || len(rep.IDs) != 0 || len(rep.StateKeys) != 0 {
		t.Errorf("second run: %+v, %v", rep, err)
	}

	// The legacy data of the shared thread, explicitly.
	rep, err = env.Forget(ctx, environment.ForgetOptions{Filter: vectorstore.Filter{Thread: n("shared")}, Legacy: true, State: st})
	if err != nil || !slices.Equal(rep.IDs, []string{"l2"}) || len(rep.StateKeys) != 1 {
		t.Errorf("legacy: %+v, %v", rep, err)
	}
	if got := ids(t, env); !slices.Equal(got, []string{"b1", "b2"}) {
		t.Errorf("left records %v", got)
	}
}

func TestForgetDirectory(t *testing.T) {
	ctx := context.Background()
	env, err := environment.Open(ctx, filepath.Join(t.TempDir(), "data"), environment.Options{Embedder: hashing.New(16)})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	testForget(t, env, env.State, "")
}

func TestForgetPostgres(t *testing.T) {
	base, _, _ := pgURL(t)
	ctx := context.Background()
	env, err := environment.Open(ctx, withCollection(base, "memories"), environment.Options{Embedder: hashing.New(16)})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if env.State == nil {
		t.Fatal("no state store")
	}
	testForget(t, env, env.State, fmt.Sprintf("-%08x", rand.Uint32()))
}

func TestForgetRefusesWithoutState(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	full, err := environment.Open(ctx, dir, environment.Options{Embedder: hashing.New(16)})
	if err != nil {
		t.Fatal(err)
	}
	seedTenants(t, full, full.State, func(s string) string { return s })
	if err := full.Close(); err != nil {
		t.Fatal(err)
	}
	env, err := environment.Open(ctx, dir, environment.Options{NoState: true})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	flt := vectorstore.Filter{Resource: "alice"}
	_, err = env.Forget(ctx, environment.ForgetOptions{Filter: flt})
	var se *environment.ForgetStateError
	if !errors.As(err, &se) || !errors.Is(err, environment.ErrNoStateStore) {
		t.Fatalf("without a state store: %v", err)
	}
	if got := ids(t, env); len(got) != 7 {
		t.Fatalf("deleted without the state: %v left", got)
	}
	boom := errors.New("unreachable")
	_, err = env.Forget(ctx, environment.ForgetOptions{Filter: flt,
		OpenState: func(context.Context) (storage.Store, string, error) { return nil, "", boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("a failing state store: %v", err)
	}
	// RecordsOnly deletes the records and says what state it leaves;
	// without the bindings, main's legacy record is alice's because all
	// of main's records are hers.
	p, err := env.PlanForget(ctx, environment.ForgetOptions{Filter: flt, RecordsOnly: true})
	if err != nil || p.StateErr != nil || p.StateLeft == "" {
		t.Fatalf("records only: %+v, %v", p, err)
	}
	if _, err := p.Execute(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ids(t, env); !slices.Equal(got, []string{"b1", "b2", "l2"}) {
		t.Errorf("left records %v", got)
	}
}

func TestForgetByID(t *testing.T) {
	ctx := context.Background()
	env, err := environment.Open(ctx, filepath.Join(t.TempDir(), "data"), environment.Options{Embedder: hashing.New(16)})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	seedTenants(t, env, env.State, func(s string) string { return s })
	p, err := env.PlanForget(ctx, environment.ForgetOptions{IDs: []string{"a1", "nope", "a1"}})
	if err != nil || p.Total != 1 || !slices.Equal(p.Missing, []string{"nope"}) || len(p.Keys) != 0 {
		t.Fatalf("plan %+v, %v", p, err)
	}
	if rep, err := p.Execute(ctx); err != nil || !slices.Equal(rep.IDs, []string{"a1"}) {
		t.Fatalf("execute %+v, %v", rep, err)
	}
	if _, err := env.Forget(ctx, environment.ForgetOptions{}); !errors.Is(err, vectorstore.ErrInvalidArgument) {
		t.Errorf("nothing selected: %v", err)
	}
}

// TestForgetNarrowedTakesEveryAssembly: a deletion narrowed by a filter
// besides the resource keeps the layers' state but erases every recorded
// assembly of the threads it touches (the last view, the plan index, each
// plan record and chunk of recorded log items), under the tenancy key and
// under the thread id alone, not only the last view.
func TestForgetNarrowedTakesEveryAssembly(t *testing.T) {
	ctx := context.Background()
	env, err := environment.Open(ctx, filepath.Join(t.TempDir(), "data"), environment.Options{Embedder: hashing.New(16)})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	st := env.State
	seedTenants(t, env, st, func(s string) string { return s })
	assemblies := func(scopeID string) []storage.Key {
		ks := []storage.Key{inspect.LastAssemblyKey(storage.SplitThreadScopeID(scopeID))}
		for _, name := range []string{"assemblies", "assembly-0000000001", "assembly-0000000002", "assemblylog-0000000000"} {
			ks = append(ks, storage.Key{Scope: "thread", ScopeID: scopeID, Layer: "_strata", Name: name})
		}
		return ks
	}
	var planted []storage.Key
	for _, id := range []string{storage.ThreadScopeID("alice", "main"), "main", storage.ThreadScopeID("bob", "bobs")} {
		for _, k := range assemblies(id) {
			if !inspect.IsAssemblyKey(k) {
				t.Fatalf("%v is not an assembly key: the test plants the wrong names", k)
			}
			if _, err := st.Put(ctx, k, []byte(`{}`), 0); err != nil {
				t.Fatal(err)
			}
			planted = append(planted, k)
		}
	}
	rep, err := env.Forget(ctx, environment.ForgetOptions{Filter: vectorstore.Filter{Resource: "alice", Layer: "notes"}, State: st})
	if err != nil {
		t.Fatal(err)
	}
	// alice's thread main under both keys: 5 assembly keys each. The
	// shared thread's legacy scope is not alice's to erase.
	if len(rep.StateKeys) != 10 {
		t.Errorf("deleted state keys %v, want the 10 assembly keys of alice's main", rep.StateKeys)
	}
	for _, k := range planted {
		want := k.ScopeID == storage.ThreadScopeID("bob", "bobs")
		if got := stateLeft(t, st, k); got != want {
			t.Errorf("assembly key %v left %v, want %v", k, got, want)
		}
	}
	// The layers' state and the binding stay: the deletion was narrowed.
	for _, k := range []storage.Key{tenantKey("thread", storage.ThreadScopeID("alice", "main")), tenantKey("resource", "alice"),
		tenantKey("thread", "main"), inspect.ThreadBindingKey("main")} {
		if !stateLeft(t, st, k) {
			t.Errorf("state key %v deleted by a narrowed deletion", k)
		}
	}
}
