package main_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/filestore"
)

// seen is the state of the forget tests' layers: what the user said.
type seen struct {
	Said []string `json:"said"`
}

// scopedLayer remembers every user message in its scope's state.
func scopedLayer(id string, slot int, scope core.Scope) core.Layer[seen] {
	return core.Layer[seen]{
		ID: id, Slot: slot, Scope: scope, Placement: core.PlacementLive,
		Hooks: core.Hooks[seen]{
			Init: func(_ context.Context, p core.InitParams) (seen, error) {
				var s seen
				if p.Stored != nil {
					err := json.Unmarshal(p.Stored, &s)
					return s, err
				}
				return s, nil
			},
			Recall: func(_ context.Context, p core.RecallParams[seen]) (core.Recall[seen], error) {
				return core.Text[seen]("<" + id + ">" + strings.Join(p.State.Said, "; ") + "</" + id + ">")
			},
			OnItemAppend: func(_ context.Context, p core.ItemAppendParams[seen]) (*seen, error) {
				if p.Item.Role != core.RoleUser {
					return nil, nil
				}
				next := seen{Said: append(slices.Clone(p.State.Said), p.Item.Text())}
				return &next, nil
			},
		},
	}
}

// converse runs a real session of resource on thread against st, with a
// resource-, a thread- and a global-scoped layer that all persist state,
// and the last assembly recorded.
func converse(t *testing.T, st storage.Store, resource, thread, said string) {
	t.Helper()
	ctx := context.Background()
	rt, err := core.NewRuntime(core.Config{
		Layers: []core.AnyLayer{
			scopedLayer("profile", 100, core.ScopeResource),
			scopedLayer("notes", 110, core.ScopeThread),
			scopedLayer("census", 120, core.ScopeGlobal),
		},
		Store: st, RecordAssemblies: true,
		System: []core.Item{core.SystemMessage("You are a careful assistant.")},
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: thread, ResourceID: resource})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, core.UserMessage(said)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Assemble(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, core.AssistantMessage("Noted.")); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
}

func listKeys(t *testing.T, st storage.Store, scope, id string) []string {
	t.Helper()
	keys, err := st.(storage.Lister).Keys(context.Background(), scope, id)
	if err != nil {
		t.Fatalf("Keys(%s, %s): %v", scope, id, err)
	}
	out := []string{}
	for _, k := range keys {
		out = append(out, k.String())
	}
	return out
}

// stateKey is a state key in memctl's JSON output.
type stateKey struct {
	Scope   string `json:"scope"`
	ScopeID string `json:"scope_id"`
	Layer   string `json:"layer"`
	Name    string `json:"name"`
}

func (k stateKey) String() string { return k.Scope + "/" + k.ScopeID + "/" + k.Layer + "/" + k.Name }

// rmResult is rm's --json result.
type rmResult struct {
	Deleted      int        `json:"deleted"`
	IDs          []string   `json:"ids"`
	StateDeleted int        `json:"state_deleted"`
	StateKeys    []stateKey `json:"state_keys"`
	StateError   string     `json:"state_error"`
}

func keyStrings(keys []stateKey) []string {
	out := []string{}
	for _, k := range keys {
		out = append(out, k.String())
	}
	slices.Sort(out)
	return out
}

// dryRunStateKeys returns the state keys of a dry run's JSON lines.
func dryRunStateKeys(t *testing.T, out string) (records int, keys []stateKey) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var line struct {
			ID       string    `json:"id"`
			StateKey *stateKey `json:"state_key"`
		}
		if err := dec.Decode(&line); err != nil {
			t.Fatalf("decode %q: %v", out, err)
		}
		switch {
		case line.StateKey != nil:
			keys = append(keys, *line.StateKey)
		case line.ID != "":
			records++
		default:
			t.Fatalf("dry run line is neither a record nor a state key: %s", out)
		}
	}
	return records, keys
}

// TestRemoveResourceState: the right to be forgotten reaches the layer
// state the runtime persisted for the resource and its threads, in an
// embedded store's state directory, and nothing of anyone else's.
func TestRemoveResourceState(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	ctx := context.Background()
	env, err := embedded.Open(ctx, store, embedded.Options{Embedder: hashing.New(64)})
	if err != nil {
		t.Fatal(err)
	}
	converse(t, env.State, "alice", "ta", "I am allergic to peanuts")
	converse(t, env.State, "bob", "tb", "I live in Oslo")
	converse(t, env.State, "alice", "tshared", "Bob and I share this thread")
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	m := []string{"--store", store, "--embedder", "hash:64"}
	e.ok(append(m, "add", "-l", "semantic", "-t", "ta", "-r", "alice", "peanuts")...)
	e.ok(append(m, "add", "-l", "semantic", "-t", "tb", "-r", "bob", "Oslo")...)
	// A thread two resources share is not alice's alone: it stays.
	e.ok(append(m, "add", "-l", "semantic", "-t", "tshared", "-r", "alice", "shared a")...)
	e.ok(append(m, "add", "-l", "semantic", "-t", "tshared", "-r", "bob", "shared b")...)

	st, err := filestore.Open(filepath.Join(store, "state"), filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	aliceKeys := []string{"resource/alice/profile/state", "thread/ta/_strata/last_assembly", "thread/ta/notes/state"}
	kept := map[[2]string][]string{
		{"resource", "bob"}:    {"resource/bob/profile/state"},
		{"thread", "tb"}:       {"thread/tb/_strata/last_assembly", "thread/tb/notes/state"},
		{"thread", "tshared"}:  {"thread/tshared/_strata/last_assembly", "thread/tshared/notes/state"},
		{"global", ""}:         {"global//census/state"},
		{"resource", "nobody"}: {},
	}
	checkKept := func() {
		t.Helper()
		for sc, want := range kept {
			if got := listKeys(t, st, sc[0], sc[1]); !slices.Equal(got, want) {
				t.Errorf("keys of %s/%s = %v, want %v", sc[0], sc[1], got, want)
			}
		}
	}
	if got := append(listKeys(t, st, "resource", "alice"), listKeys(t, st, "thread", "ta")...); !slices.Equal(got, aliceKeys) {
		t.Fatalf("the sessions wrote %v for alice, want %v", got, aliceKeys)
	}
	checkKept()

	// The dry run lists the state keys after the records and deletes nothing.
	dry := e.ok(append(m, "rm", "--resource", "alice", "--dry-run", "--json")...)
	n, planned := dryRunStateKeys(t, dry.stdout)
	if n != 2 || !slices.Equal(keyStrings(planned), aliceKeys) {
		t.Errorf("dry run: %d records, state keys %v; want 2 and %v", n, keyStrings(planned), aliceKeys)
	}
	if !strings.Contains(dry.stderr, "would delete 2 memories from") || !strings.Contains(dry.stderr, "and 3 state keys from "+filepath.Join(store, "state")) {
		t.Errorf("dry run stderr: %s", dry.stderr)
	}
	text := e.ok(append(m, "rm", "--resource", "alice", "--dry-run")...).stdout
	for _, want := range []string{"State keys in " + filepath.Join(store, "state"), "SCOPE ID", "resource  alice", "_strata", "last_assembly", "notes"} {
		if !strings.Contains(text, want) {
			t.Errorf("dry run table lacks %q:\n%s", want, text)
		}
	}
	if got := listKeys(t, st, "resource", "alice"); len(got) != 1 {
		t.Fatalf("the dry run deleted state: %v", got)
	}
	// More than one thing to delete wants a confirmation.
	e.fails(2, "2 memories and 3 state keys", append(m, "rm", "--resource", "alice")...)

	var res rmResult
	decodeJSON(t, e.ok(append(m, "rm", "--resource", "alice", "--yes", "--json")...).stdout, &res)
	if res.Deleted != 2 || res.StateDeleted != 3 || !slices.Equal(keyStrings(res.StateKeys), aliceKeys) {
		t.Errorf("rm --json = %+v, want 2 records and the state keys %v", res, aliceKeys)
	}
	for _, sc := range [][2]string{{"resource", "alice"}, {"thread", "ta"}} {
		if got := listKeys(t, st, sc[0], sc[1]); len(got) != 0 {
			t.Errorf("alice's state survived: %v", got)
		}
	}
	checkKept()
	e.fails(3, "no recorded assembly", "--store", store, "inspect", "ta")
	e.ok("--store", store, "inspect", "tb")
	// Forgotten means a new session of alice starts from nothing.
	if _, err := st.Get(ctx, storage.Key{Scope: "resource", ScopeID: "alice", Layer: "profile", Name: "state"}); err == nil {
		t.Error("alice's profile state is still readable")
	}
	// Nothing left of alice: a second rm deletes nothing, and says so.
	if r := e.ok(append(m, "rm", "--resource", "alice", "--yes")...); !strings.Contains(r.stderr, "nothing deleted") {
		t.Errorf("second rm: %s %s", r.stdout, r.stderr)
	}

	// Narrowed by another filter, rm clears only the recorded assemblies
	// of the threads, not the layers' state.
	var narrow rmResult
	decodeJSON(t, e.ok(append(m, "rm", "--resource", "bob", "--layer", "semantic", "--yes", "--json")...).stdout, &narrow)
	// (tshared is bob's alone now that alice's record on it is gone.)
	wantNarrow := []string{"thread/tb/_strata/last_assembly", "thread/tshared/_strata/last_assembly"}
	if narrow.Deleted != 2 || narrow.StateDeleted != 2 || !slices.Equal(keyStrings(narrow.StateKeys), wantNarrow) {
		t.Errorf("rm --resource bob --layer semantic = %+v, want 2 records and the state keys %v", narrow, wantNarrow)
	}
	kept[[2]string{"thread", "tb"}] = []string{"thread/tb/notes/state"}
	kept[[2]string{"thread", "tshared"}] = []string{"thread/tshared/notes/state"}
	checkKept()
}

// TestRemoveResourceStateElsewhere: a store whose state store memctl does
// not know, --state naming it, and a state store that cannot be reached.
func TestRemoveResourceStateElsewhere(t *testing.T) {
	e := newEnv(t)
	stateDir := filepath.Join(e.dir, "state")
	st, err := filestore.Open(stateDir, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	converse(t, st, "alice", "ta", "I am allergic to peanuts")
	converse(t, st, "bob", "tb", "I live in Oslo")

	// A bare chromem collection records no state store.
	coll := "chromem://" + filepath.Join(e.dir, "coll") + "?collection=memories"
	m := []string{"--store", coll, "--embedder", "hash:64"}
	add := func(res, thread string) {
		e.ok(append(m, "add", "-l", "semantic", "-t", thread, "-r", res, "hello from "+res)...)
	}
	add("alice", "ta")
	var skipped rmResult
	r := e.ok(append(m, "rm", "--resource", "alice", "--yes", "--json")...)
	decodeJSON(t, r.stdout, &skipped)
	if skipped.Deleted != 1 || skipped.StateDeleted != 0 || !strings.Contains(skipped.StateError, "does not know the state store") {
		t.Errorf("rm --json without a known state store: %+v", skipped)
	}
	if !strings.Contains(r.stderr, "warning") || !strings.Contains(r.stderr, "is not deleted") || !strings.Contains(r.stderr, "--state") {
		t.Errorf("rm without a known state store did not say so: %q", r.stderr)
	}
	if got := listKeys(t, st, "resource", "alice"); len(got) != 1 {
		t.Fatalf("state changed without a state store: %v", got)
	}

	// An unreachable state store: the records go, the command fails.
	add("alice", "ta")
	r = e.fails(1, "deleted 1 memory, but the runtime's layer state of resource \"alice\" is not deleted",
		append(m, "rm", "--resource", "alice", "--yes", "--state", "postgres://strata@127.0.0.1:1/none", "--timeout", "5s")...)
	if r.stdout != "deleted 1 memory\n" {
		t.Errorf("rm with an unreachable state store printed %q", r.stdout)
	}
	if n := len(jsonLines(t, e.ok(append(m, "ls", "--json", "--all")...).stdout)); n != 0 {
		t.Errorf("%d records left after rm with an unreachable state store", n)
	}
	e.fails(3, "no state store", append(m, "rm", "--resource", "alice", "--yes", "--state", filepath.Join(e.dir, "nowhere"))...)

	// --state names it.
	add("alice", "ta")
	var res rmResult
	decodeJSON(t, e.ok(append(m, "rm", "--resource", "alice", "--yes", "--json", "--state", stateDir)...).stdout, &res)
	if res.Deleted != 1 || res.StateDeleted != 3 {
		t.Errorf("rm --state: %+v", res)
	}
	for _, sc := range [][2]string{{"resource", "alice"}, {"thread", "ta"}} {
		if got := listKeys(t, st, sc[0], sc[1]); len(got) != 0 {
			t.Errorf("alice's state survived rm --state: %v", got)
		}
	}
	if got := listKeys(t, st, "resource", "bob"); len(got) != 1 {
		t.Errorf("bob's state: %v", got)
	}
}
