package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
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

// assemblies stands, in the key lists these tests compare, for every
// recorded-assembly key of a thread (inspect.IsAssemblyKey): the runtime
// keeps a thread's assemblies (the last view, the plan records, their
// index and blobs) under keys of its own making, which rm erases as a
// whole and these tests do not spell out.
const assemblies = "<assemblies>"

// keyString names a key as the tests compare it: its assembly keys as
// one.
func keyString(k storage.Key) string {
	if inspect.IsAssemblyKey(k) {
		k.Name = assemblies
	}
	return k.String()
}

// sortedKeys sorts key names and drops repeats (the assembly keys of a
// thread, named alike by keyString).
func sortedKeys(out []string) []string {
	slices.Sort(out)
	return slices.Compact(out)
}

func listKeys(t *testing.T, st storage.Store, scope, id string) []string {
	t.Helper()
	keys, err := st.(storage.Lister).Keys(context.Background(), scope, id)
	if err != nil {
		t.Fatalf("Keys(%s, %s): %v", scope, id, err)
	}
	out := []string{}
	for _, k := range keys {
		out = append(out, keyString(k))
	}
	return sortedKeys(out)
}

// tk names a key of thread T of resource R ("" for the legacy scope, the
// thread id alone) as listKeys and keyStrings print it.
func tk(resource, thread, layer, name string) string {
	return "thread/" + storage.ThreadScopeID(resource, thread) + "/" + layer + "/" + name
}

// sessionKeys are the keys a converse session of resource on thread
// leaves in the state store besides the global census: the resource's
// profile, the thread's notes and assembly under both ids, and the
// thread's binding to the resource.
func sessionKeys(resource, thread string) []string {
	out := []string{"resource/" + resource + "/profile/state",
		tk(resource, thread, "_strata", assemblies), tk(resource, thread, "notes", "state"),
		tk("", thread, "_strata", "resource")}
	slices.Sort(out)
	return out
}

// keysOf lists the keys of resource and of its thread, under both scope
// ids, sorted.
func keysOf(t *testing.T, st storage.Store, resource, thread string) []string {
	t.Helper()
	out := append(listKeys(t, st, "resource", resource), listKeys(t, st, "thread", storage.ThreadScopeID(resource, thread))...)
	out = append(out, listKeys(t, st, "thread", thread)...)
	return sortedKeys(out)
}

// stateKey is a state key in memctl's JSON output.
type stateKey struct {
	Scope   string `json:"scope"`
	ScopeID string `json:"scope_id"`
	Layer   string `json:"layer"`
	Name    string `json:"name"`
}

func (k stateKey) String() string {
	return keyString(storage.Key{Scope: k.Scope, ScopeID: k.ScopeID, Layer: k.Layer, Name: k.Name})
}

// notErased is what rm reports it left of a thread's legacy data.
type notErased struct {
	Thread    string `json:"thread"`
	Records   int    `json:"records"`
	StateKeys int    `json:"state_keys"`
	Reason    string `json:"reason"`
	Hint      string `json:"hint"`
}

// rmResult is rm's --json result.
type rmResult struct {
	Deleted      int         `json:"deleted"`
	IDs          []string    `json:"ids"`
	StateDeleted int         `json:"state_deleted"`
	StateKeys    []stateKey  `json:"state_keys"`
	StateError   string      `json:"state_error"`
	NotErased    []notErased `json:"not_erased"`
}

func keyStrings(keys []stateKey) []string {
	out := []string{}
	for _, k := range keys {
		out = append(out, k.String())
	}
	return sortedKeys(out)
}

// dryRunStateKeys returns the state keys of a dry run's JSON lines.
func dryRunStateKeys(t *testing.T, out string) (records int, keys []stateKey) {
	t.Helper()
	records, keys, _ = dryRunLines(t, out)
	return records, keys
}

// dryRunLines decodes a dry run's JSON lines: records, state keys and
// what rm would leave.
func dryRunLines(t *testing.T, out string) (records int, keys []stateKey, left []notErased) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var line struct {
			ID        string     `json:"id"`
			StateKey  *stateKey  `json:"state_key"`
			NotErased *notErased `json:"not_erased"`
		}
		if err := dec.Decode(&line); err != nil {
			t.Fatalf("decode %q: %v", out, err)
		}
		switch {
		case line.StateKey != nil:
			keys = append(keys, *line.StateKey)
		case line.NotErased != nil:
			left = append(left, *line.NotErased)
		case line.ID != "":
			records++
		default:
			t.Fatalf("dry run line is neither a record, a state key nor a leftover: %s", out)
		}
	}
	return records, keys, left
}

// TestRemoveResourceState: the right to be forgotten reaches the layer
// state the runtime persisted for the resource and its threads, in an
// embedded store's state directory: under the keys of the resource's
// threads (resource and thread), the bindings of its threads included. It
// leaves bob's state, bob's record on the thread alice shares with him, and
// it never erases global state: the census layer is global and keeps
// alice's words (the application's to erase).
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
	// Records of two resources on one thread: bob's stays.
	e.ok(append(m, "add", "-l", "semantic", "-t", "tshared", "-r", "alice", "shared a")...)
	e.ok(append(m, "add", "-l", "semantic", "-t", "tshared", "-r", "bob", "shared b")...)

	st, err := filestore.Open(filepath.Join(store, "state"), filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	aliceKeys := append(sessionKeys("alice", "ta"), tk("alice", "tshared", "_strata", assemblies),
		tk("alice", "tshared", "notes", "state"), tk("", "tshared", "_strata", "resource"))
	slices.Sort(aliceKeys)
	aliceHas := func() []string {
		out := append(keysOf(t, st, "alice", "ta"), listKeys(t, st, "thread", storage.ThreadScopeID("alice", "tshared"))...)
		out = append(out, listKeys(t, st, "thread", "tshared")...)
		slices.Sort(out)
		return out
	}
	kept := map[[2]string][]string{
		{"resource", "bob"}:                                 {"resource/bob/profile/state"},
		{"thread", storage.ThreadScopeID("bob", "tb")}:      {tk("bob", "tb", "_strata", assemblies), tk("bob", "tb", "notes", "state")},
		{"thread", "tb"}:                                    {tk("", "tb", "_strata", "resource")},
		{"global", ""}:                                      {"global//census/state"},
		{"resource", "nobody"}:                              {},
		{"thread", storage.ThreadScopeID("bob", "tshared")}: {},
	}
	checkKept := func() {
		t.Helper()
		for sc, want := range kept {
			if got := listKeys(t, st, sc[0], sc[1]); !slices.Equal(got, want) {
				t.Errorf("keys of %s/%q = %q, want %q", sc[0], sc[1], got, want)
			}
		}
	}
	if got := aliceHas(); !slices.Equal(got, aliceKeys) {
		t.Fatalf("the sessions wrote %q for alice, want %q", got, aliceKeys)
	}
	checkKept()

	// The dry run lists the state keys after the records and deletes nothing.
	dry := e.ok(append(m, "rm", "--resource", "alice", "--dry-run", "--json")...)
	n, planned := dryRunStateKeys(t, dry.stdout)
	if n != 2 || !slices.Equal(keyStrings(planned), aliceKeys) {
		t.Errorf("dry run: %d records, state keys %q; want 2 and %q", n, keyStrings(planned), aliceKeys)
	}
	// (as many keys as the runtime keeps of the threads' assemblies)
	nkeys := strconv.Itoa(len(planned))
	if !strings.Contains(dry.stderr, "would delete 2 memories from") || !strings.Contains(dry.stderr, "and "+nkeys+" state keys from "+filepath.Join(store, "state")) {
		t.Errorf("dry run stderr: %s", dry.stderr)
	}
	text := e.ok(append(m, "rm", "--resource", "alice", "--dry-run")...).stdout
	for _, want := range []string{"State keys in " + filepath.Join(store, "state"), "SCOPE ID", "resource  alice", "_strata", "assembl", "notes",
		`alice\x1fta`, `alice\x1ftshared`} {
		if !strings.Contains(text, want) {
			t.Errorf("dry run table lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1f") {
		t.Errorf("dry run table prints the scope id separator raw:\n%q", text)
	}
	if got := listKeys(t, st, "resource", "alice"); len(got) != 1 {
		t.Fatalf("the dry run deleted state: %v", got)
	}
	// More than one thing to delete wants a confirmation.
	e.fails(2, "2 memories and "+nkeys+" state keys", append(m, "rm", "--resource", "alice")...)
	if script, err := execLookPath("script"); err == nil {
		// The question names where each goes from.
		out := runUnderPTY(t, e.input("n\n"), script, bin+" --store "+store+" rm --resource alice")
		want := "Delete 2 memories from " + store + " and " + nkeys + " state keys from " + filepath.Join(store, "state") + "?"
		if !strings.Contains(out, want) || !strings.Contains(out, "aborted") {
			t.Errorf("confirmation %q lacks %q", out, want)
		}
	}

	var res rmResult
	decodeJSON(t, e.ok(append(m, "rm", "--resource", "alice", "--yes", "--json")...).stdout, &res)
	if res.Deleted != 2 || res.StateDeleted != len(res.StateKeys) || !slices.Equal(keyStrings(res.StateKeys), aliceKeys) || len(res.NotErased) != 0 {
		t.Errorf("rm --json = %+v, want 2 records and the state keys %q", res, aliceKeys)
	}
	if got := aliceHas(); len(got) != 0 {
		t.Errorf("alice's state survived: %q", got)
	}
	checkKept()
	census, err := st.Get(ctx, storage.Key{Scope: "global", Layer: "census", Name: "state"})
	if err != nil || !strings.Contains(string(census.Value), "I am allergic to peanuts") {
		t.Errorf("global state after rm = %q, %v; want it untouched, alice's words included", census.Value, err)
	}
	e.fails(3, "no recorded assembly", "--store", store, "inspect", "ta")
	e.fails(3, "no recorded assembly", "--store", store, "inspect", "ta", "--resource", "alice")
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
	wantNarrow := []string{tk("bob", "tb", "_strata", assemblies)}
	if narrow.Deleted != 2 || narrow.StateDeleted != len(narrow.StateKeys) || !slices.Equal(keyStrings(narrow.StateKeys), wantNarrow) {
		t.Errorf("rm --resource bob --layer semantic = %+v, want 2 records and the state keys %q", narrow, wantNarrow)
	}
	kept[[2]string{"thread", storage.ThreadScopeID("bob", "tb")}] = []string{tk("bob", "tb", "notes", "state")}
	checkKept()
}

// TestRemoveResourceStateElsewhere: a store whose state store memctl does
// not know, a state store that cannot be reached, a mistyped --state, a
// damaged state file, and --state naming the right one. rm deletes nothing
// until it can delete the state too; after a refusal the same command
// with the right --state finishes, without anything re-added.
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
	aliceKeys := sessionKeys("alice", "ta")
	keysOf := func(res, thread string) []string { return keysOf(t, st, res, thread) }

	// A bare chromem collection records no state store.
	coll := "chromem://" + filepath.Join(e.dir, "coll") + "?collection=memories"
	m := []string{"--store", coll, "--embedder", "hash:64"}
	e.ok(append(m, "add", "-l", "semantic", "-t", "ta", "-r", "alice", "alice likes tea")...)
	// A thread-only record: only alice's record links ta to her.
	e.ok(append(m, "add", "-l", "observations", "-t", "ta", "prefers green tea")...)
	records := func() int {
		t.Helper()
		return len(jsonLines(t, e.ok(append(m, "ls", "--json", "--all")...).stdout))
	}
	intact := func(after string) {
		t.Helper()
		if n := records(); n != 2 {
			t.Errorf("after %s: %d records left, want both", after, n)
		}
		if got := keysOf("alice", "ta"); !slices.Equal(got, aliceKeys) {
			t.Errorf("after %s: alice's state %v, want %v", after, got, aliceKeys)
		}
	}
	rm := func(extra ...string) []string {
		return append(append(slices.Clone(m), "rm", "--resource", "alice", "--yes"), extra...)
	}

	e.fails(2, "pass --state DIR|postgres://... to delete it too, or --records-only", rm()...)
	intact("rm without a known state store")
	// The dry run lists the records and fails as the real run would.
	r := e.run(rm("--dry-run", "--json")...)
	if n, keys := dryRunStateKeys(t, r.stdout); r.code != 2 || n != 2 || len(keys) != 0 ||
		!strings.Contains(r.stderr, "would delete nothing (dry run): rm refuses to delete 2 memories from "+coll) || !strings.Contains(r.stderr, "--records-only") {
		t.Errorf("dry run without a known state store: exit %d, %d records\n%s%s", r.code, n, r.stdout, r.stderr)
	}

	// An unreachable state store: nothing deleted, exit 1, naming it.
	pgDown := "postgres://strata@127.0.0.1:1/none"
	r = e.fails(1, "nothing deleted", rm("--state", pgDown, "--timeout", "5s")...)
	if !strings.Contains(r.stderr, "state store "+pgDown) || !strings.Contains(r.stderr, "--records-only") || r.stdout != "" {
		t.Errorf("rm with an unreachable state store: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	intact("rm with an unreachable state store")
	if r := e.run(rm("--state", pgDown, "--timeout", "5s", "--dry-run")...); r.code != 1 || !strings.Contains(r.stderr, "would delete nothing") {
		t.Errorf("dry run with an unreachable state store: exit %d, %s", r.code, r.stderr)
	}

	// A mistyped --state: exit 1 as for any failing state store.
	nowhere := filepath.Join(e.dir, "nowhere")
	e.fails(1, "no state store at "+nowhere, rm("--state", nowhere)...)
	intact("rm with a mistyped --state")

	// A damaged hashed file: its key is unknown, so every listing fails.
	long := storage.Key{Scope: "global", Layer: "census", Name: strings.Repeat("n", 250)}
	if _, err := st.Put(context.Background(), long, []byte("{}"), 0); err != nil {
		t.Fatal(err)
	}
	hashed, err := filepath.Glob(filepath.Join(stateDir, "data", "h-*.kv"))
	if err != nil || len(hashed) != 1 {
		t.Fatalf("hashed files: %v, %v", hashed, err)
	}
	good, err := os.ReadFile(hashed[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hashed[0], append([]byte("XXXX"), good[4:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	r = e.fails(1, "listing the state in "+stateDir, rm("--state", stateDir)...)
	if !strings.Contains(r.stderr, filepath.Base(hashed[0])) {
		t.Errorf("rm over a damaged state file does not name it: %s", r.stderr)
	}
	if err := os.WriteFile(hashed[0], good, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := records(); n != 2 {
		t.Fatalf("after rm over a damaged state file: %d records left, want both", n)
	}

	// The right --state, nothing re-added: the records still link ta to
	// alice, so her thread's state goes too.
	var res rmResult
	decodeJSON(t, e.ok(rm("--json", "--state", stateDir)...).stdout, &res)
	if res.Deleted != 2 || res.StateDeleted != len(res.StateKeys) || !slices.Equal(keyStrings(res.StateKeys), aliceKeys) || res.StateError != "" {
		t.Errorf("rm --state after the refusals: %+v, want 2 records and %v", res, aliceKeys)
	}
	if got := keysOf("alice", "ta"); len(got) != 0 {
		t.Errorf("alice's state survived rm --state: %v", got)
	}
	if n := records(); n != 0 {
		t.Errorf("%d records left after rm --state", n)
	}
	if got := keysOf("bob", "tb"); !slices.Equal(got, sessionKeys("bob", "tb")) {
		t.Errorf("bob's state: %v", got)
	}
}

// TestRemoveResourceRecordsOnly: --records-only deletes the records with
// no state store known, or one that fails, and leaves the layer state,
// saying so.
func TestRemoveResourceRecordsOnly(t *testing.T) {
	e := newEnv(t)
	stateDir := filepath.Join(e.dir, "state")
	st, err := filestore.Open(stateDir, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	converse(t, st, "bob", "tb", "I live in Oslo")
	bobKeys := sessionKeys("bob", "tb")
	keysOf := func() []string { return keysOf(t, st, "bob", "tb") }
	coll := "chromem://" + filepath.Join(e.dir, "coll") + "?collection=memories"
	m := []string{"--store", coll, "--embedder", "hash:64"}
	add := func() {
		e.ok(append(m, "add", "-l", "semantic", "-t", "tb", "-r", "bob", "bob lives in Oslo")...)
		e.ok(append(m, "add", "-l", "observations", "-t", "tb", "rides a bike")...)
	}
	add()
	rm := append(slices.Clone(m), "rm", "--resource", "bob", "--records-only")

	dry := e.ok(append(rm, "--dry-run")...)
	if !strings.Contains(dry.stderr, "would delete 2 memories from") || !strings.Contains(dry.stderr, "--records-only") {
		t.Errorf("dry run --records-only: %s", dry.stderr)
	}
	var res rmResult
	r := e.ok(append(rm, "--yes", "--json")...)
	decodeJSON(t, r.stdout, &res)
	if res.Deleted != 2 || res.StateDeleted != 0 || len(res.StateKeys) != 0 || res.StateError != "" {
		t.Errorf("rm --records-only --json: %+v", res)
	}
	for _, want := range []string{"warning", "layer state of resource \"bob\" and of 1 thread is left", "\"tb\""} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("rm --records-only stderr lacks %q: %s", want, r.stderr)
		}
	}
	if n := len(jsonLines(t, e.ok(append(m, "ls", "--json", "--all")...).stdout)); n != 0 {
		t.Errorf("%d records left after rm --records-only", n)
	}
	if got := keysOf(); !slices.Equal(got, bobKeys) {
		t.Errorf("bob's state after rm --records-only = %v, want %v", got, bobKeys)
	}

	// A failing --state is not even opened.
	add()
	r = e.ok(append(rm, "--yes", "--state", "postgres://strata@127.0.0.1:1/none", "--timeout", "5s")...)
	if r.stdout != "deleted 2 memories\n" {
		t.Errorf("rm --records-only with an unreachable state store: %q %q", r.stdout, r.stderr)
	}
	if got := keysOf(); !slices.Equal(got, bobKeys) {
		t.Errorf("bob's state = %v, want %v", got, bobKeys)
	}
}
