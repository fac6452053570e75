package main_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/filestore"
	"github.com/stratamem/strata/vectorstore"
)

// tenancyStore writes, straight through the vector store and state store
// APIs and with the runtime's key scheme, a store where carol and dave both
// call a thread "main":
//
//   - main: records of carol and of dave (thread and resource), three
//     legacy records (no resource) and legacy state (thread id alone);
//     unbound, so whose the legacy data is cannot be told;
//   - solo: carol's, with a legacy record and legacy state, unbound: all
//     its records are carol's, so its legacy data is hers;
//   - cb: bound to carol, though dave has a record on it, with a legacy
//     record and legacy state: carol's by the binding;
//   - dv: bound to dave, with a record of carol's and legacy data: dave's;
//   - the state of both resources, of their threads under both ids, their
//     recorded assemblies, and a global layer's.
//
// It returns the store directory and its state store, open.
func tenancyStore(t *testing.T, e *env) (string, storage.Store) {
	t.Helper()
	store := filepath.Join(e.dir, "data")
	ctx := context.Background()
	emb := hashing.New(64)
	env, err := embedded.Open(ctx, store, embedded.Options{Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	type rec struct{ id, thread, resource, text string }
	recs := []rec{
		{"carol-main", "main", "carol", "carol's main"},
		{"carol-profile", "", "carol", "carol is vegetarian"},
		{"carol-solo", "solo", "carol", "carol's solo"},
		{"legacy-solo", "solo", "", "legacy of solo"},
		{"carol-cb", "cb", "carol", "carol's cb"},
		{"dave-cb", "cb", "dave", "dave wrote on cb"},
		{"legacy-cb", "cb", "", "legacy of cb"},
		{"carol-dv", "dv", "carol", "carol wrote on dv"},
		{"dave-dv", "dv", "dave", "dave's dv"},
		{"legacy-dv", "dv", "", "legacy of dv"},
		{"dave-main", "main", "dave", "dave's main"},
		{"dave-profile", "", "dave", "dave lives in Oslo"},
		{"legacy-main-1", "main", "", "legacy of main 1"},
		{"legacy-main-2", "main", "", "legacy of main 2"},
		{"legacy-main-3", "main", "", "legacy of main 3"},
	}
	for _, r := range recs {
		vs, err := emb.Embed(ctx, []string{r.text})
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Memory.Records.Upsert(ctx, vectorstore.Record{ID: r.id, Layer: "observations", Kind: "observation",
			Scope: vectorstore.Scope{Thread: r.thread, Resource: r.resource}, Text: r.text, Vector: vs[0],
			Metadata: map[string]string{"importance": "3"}}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(scope, scopeID, layer, name string, v any) {
		t.Helper()
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.State.Put(ctx, storage.Key{Scope: scope, ScopeID: scopeID, Layer: layer, Name: name}, raw, 0); err != nil {
			t.Fatal(err)
		}
	}
	assembly := func(resource, thread string) inspect.AssemblyRecord {
		return inspect.AssemblyRecord{RunID: "run-of-" + resource + "-" + thread, ThreadID: thread, ResourceID: resource, Turn: 1, PrefixHash: "h",
			Bands: []inspect.RecordedBand{{Band: "history", Tokens: 3, Items: []core.Item{core.UserMessage(resource + " said hi on " + thread)}}}}
	}
	for _, res := range []string{"carol", "dave"} {
		put("resource", res, "profile", "state", res+"'s profile")
		put("thread", storage.ThreadScopeID(res, "main"), "notes", "state", res+"'s notes on main")
		put("thread", storage.ThreadScopeID(res, "main"), "_strata", "last_assembly", assembly(res, "main"))
	}
	put("thread", "main", "notes", "state", "legacy notes on main")
	put("thread", storage.ThreadScopeID("carol", "solo"), "notes", "state", "carol's notes on solo")
	put("thread", "solo", "notes", "state", "legacy notes on solo")
	put("thread", "cb", "_strata", "resource", "carol")
	put("thread", "cb", "notes", "state", "stale legacy notes on cb")
	put("thread", "cb", "_strata", "last_assembly", assembly("", "cb"))
	put("thread", storage.ThreadScopeID("carol", "cb"), "notes", "state", "carol's notes on cb")
	put("thread", "dv", "_strata", "resource", "dave")
	put("thread", "dv", "notes", "state", "legacy notes on dv")
	put("thread", storage.ThreadScopeID("dave", "dv"), "notes", "state", "dave's notes on dv")
	put("thread", storage.ThreadScopeID("carol", "dv"), "notes", "state", "carol's notes on dv")
	put("global", "", "census", "state", "everyone")
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := filestore.Open(filepath.Join(store, "state"), filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return store, st
}

// allKeys lists every key of the scopes the tenancy store uses.
func allKeys(t *testing.T, st storage.Store) []string {
	t.Helper()
	var out []string
	out = append(out, listKeys(t, st, "resource", "carol")...)
	out = append(out, listKeys(t, st, "resource", "dave")...)
	out = append(out, listKeys(t, st, "global", "")...)
	for _, th := range []string{"main", "solo", "cb", "dv"} {
		for _, res := range []string{"", "carol", "dave"} {
			out = append(out, listKeys(t, st, "thread", storage.ThreadScopeID(res, th))...)
		}
	}
	slices.Sort(out)
	return out
}

func recordIDs(t *testing.T, e *env, store string) []string {
	t.Helper()
	out := ids(jsonLines(t, e.ok("--store", store, "ls", "--json", "--all").stdout))
	slices.Sort(out)
	return out
}

// TestTenancyRemoveResource: two resources share the thread id "main".
// rm --resource carol leaves nothing of carol's (records, state under her
// threads' keys, the legacy data of the threads that are hers, their
// bindings), leaves everything of dave's, and reports the legacy data it
// cannot attribute to carol, with the command that erases it.
func TestTenancyRemoveResource(t *testing.T) {
	e := newEnv(t)
	store, st := tenancyStore(t, e)
	m := []string{"--store", store}
	before := allKeys(t, st)

	// --thread with --resource: dave's main only, under dave's keys.
	r := e.ok(append(m, "rm", "-r", "dave", "-t", "main", "--dry-run", "--json")...)
	n, keys, left := dryRunLines(t, r.stdout)
	wantKeys := []string{tk("dave", "main", "_strata", assemblies), tk("dave", "main", "notes", "state")}
	if n != 1 || !slices.Equal(keyStrings(keys), wantKeys) {
		t.Errorf("rm -r dave -t main --dry-run: %d records, keys %q; want 1 and %q", n, keyStrings(keys), wantKeys)
	}
	if len(left) != 1 || left[0].Thread != "main" || left[0].Records != 3 || left[0].StateKeys != 1 || !strings.Contains(left[0].Reason, `resource "carol"`) {
		t.Errorf("rm -r dave -t main --dry-run leaves %+v", left)
	}
	if got := allKeys(t, st); !slices.Equal(got, before) {
		t.Fatalf("the dry run deleted state")
	}

	// inspect finds each resource's main, and names what is missing.
	if out := e.ok(append(m, "inspect", "main", "--resource", "carol")...).stdout; !strings.Contains(out, "carol said hi on main") ||
		!strings.Contains(out, "Thread main of resource carol") {
		t.Errorf("inspect main --resource carol:\n%s", out)
	}
	if out := e.ok(append(m, "inspect", "main", "-r", "dave")...).stdout; !strings.Contains(out, "dave said hi on main") {
		t.Errorf("inspect main -r dave:\n%s", out)
	}
	e.fails(3, "give --resource", append(m, "inspect", "main")...)
	// A thread bound to carol: her assembly, recorded before tenancy.
	if out := e.ok(append(m, "inspect", "cb")...).stdout; !strings.Contains(out, " said hi on cb") || !strings.Contains(out, "of resource carol") {
		t.Errorf("inspect cb:\n%s", out)
	}
	e.fails(3, `belongs to resource "carol"`, append(m, "inspect", "cb", "-r", "dave")...)

	// The dry run says what it would leave, and why.
	r = e.ok(append(m, "rm", "--resource", "carol", "--dry-run")...)
	for _, want := range []string{`not erased: thread "main": 3 memories without a resource`, `not erased: thread "dv"`,
		"would delete 7 memories from " + store + " and 10 state keys from " + filepath.Join(store, "state")} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("rm --resource carol --dry-run stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	for _, want := range []string{"legacy-solo", "legacy-cb", `carol\x1fmain`, `carol\x1fdv`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("rm --resource carol --dry-run stdout lacks %q:\n%s", want, r.stdout)
		}
	}

	// The right to be forgotten.
	r = e.ok(append(m, "rm", "--resource", "carol", "--yes", "--json")...)
	var res rmResult
	decodeJSON(t, r.stdout, &res)
	wantIDs := []string{"carol-cb", "carol-dv", "carol-main", "carol-profile", "carol-solo", "legacy-cb", "legacy-solo"}
	gotIDs := slices.Clone(res.IDs)
	slices.Sort(gotIDs)
	if !slices.Equal(gotIDs, wantIDs) || res.Deleted != len(wantIDs) {
		t.Errorf("rm --resource carol deleted %q, want %q", gotIDs, wantIDs)
	}
	wantGone := []string{
		"resource/carol/profile/state",
		tk("carol", "main", "_strata", assemblies), tk("carol", "main", "notes", "state"),
		tk("carol", "solo", "notes", "state"), tk("", "solo", "notes", "state"),
		tk("carol", "cb", "notes", "state"), tk("", "cb", "_strata", assemblies), tk("", "cb", "_strata", "resource"), tk("", "cb", "notes", "state"),
		tk("carol", "dv", "notes", "state"),
	}
	slices.Sort(wantGone)
	if got := keyStrings(res.StateKeys); !slices.Equal(got, wantGone) || res.StateDeleted != len(wantGone) {
		t.Errorf("rm --resource carol deleted the state keys\n%q, want\n%q", got, wantGone)
	}
	var wantLeft []string
	for _, k := range before {
		if !slices.Contains(wantGone, k) {
			wantLeft = append(wantLeft, k)
		}
	}
	if got := allKeys(t, st); !slices.Equal(got, wantLeft) {
		t.Errorf("state left\n%q, want\n%q", got, wantLeft)
	}
	for _, k := range allKeys(t, st) {
		if strings.Contains(k, "carol") {
			t.Errorf("carol's state survived: %q", k)
		}
	}
	wantRecs := []string{"dave-cb", "dave-dv", "dave-main", "dave-profile", "legacy-dv", "legacy-main-1", "legacy-main-2", "legacy-main-3"}
	if got := recordIDs(t, e, store); !slices.Equal(got, wantRecs) {
		t.Errorf("records left %q, want %q", got, wantRecs)
	}

	// What it could not erase, and why, in the JSON and on stderr.
	byThread := map[string]notErased{}
	for _, l := range res.NotErased {
		byThread[l.Thread] = l
	}
	if l := byThread["main"]; l.Records != 3 || l.StateKeys != 1 || !strings.Contains(l.Reason, `also used by resource "dave"`) ||
		!strings.Contains(l.Hint, "memctl rm --thread main --legacy") {
		t.Errorf("not erased of main: %+v", l)
	}
	if l := byThread["dv"]; l.Records != 1 || l.StateKeys != 1 || !strings.Contains(l.Reason, `belongs to resource "dave"`) {
		t.Errorf("not erased of dv: %+v", l)
	}
	if len(res.NotErased) != 2 {
		t.Errorf("not erased: %+v", res.NotErased)
	}
	for _, want := range []string{
		`memctl: not erased: thread "main": 3 memories without a resource and 1 state key under the thread id alone (written before tenancy): ` +
			`the thread is also used by resource "dave", so they may be another user's; check them (memctl ls -t main), then erase them with: memctl rm --thread main --legacy`,
		`memctl: not erased: thread "dv": 1 memory without a resource and 1 state key under the thread id alone`,
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("rm stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	// Nothing of carol's is left to find.
	if r := e.ok(append(m, "rm", "--resource", "carol", "--yes")...); !strings.Contains(r.stderr, "nothing deleted") {
		t.Errorf("second rm --resource carol: %s %s", r.stdout, r.stderr)
	}

	// The legacy data of main, as the hint says: dave's main is untouched.
	r = e.ok(append(m, "rm", "--thread", "main", "--legacy", "--yes", "--json")...)
	var leg rmResult
	decodeJSON(t, r.stdout, &leg)
	slices.Sort(leg.IDs)
	if want := []string{"legacy-main-1", "legacy-main-2", "legacy-main-3"}; !slices.Equal(leg.IDs, want) ||
		!slices.Equal(keyStrings(leg.StateKeys), []string{tk("", "main", "notes", "state")}) {
		t.Errorf("rm --thread main --legacy = %+v", leg)
	}
	wantRecs = []string{"dave-cb", "dave-dv", "dave-main", "dave-profile", "legacy-dv"}
	if got := recordIDs(t, e, store); !slices.Equal(got, wantRecs) {
		t.Errorf("records left %q, want %q", got, wantRecs)
	}
	// The binding of a thread to a resource is not legacy data.
	r = e.ok(append(m, "rm", "--thread", "dv", "--legacy", "--yes", "--json")...)
	decodeJSON(t, r.stdout, &leg)
	if !slices.Equal(leg.IDs, []string{"legacy-dv"}) || !slices.Equal(keyStrings(leg.StateKeys), []string{tk("", "dv", "notes", "state")}) {
		t.Errorf("rm --thread dv --legacy = %+v", leg)
	}
	if got := listKeys(t, st, "thread", "dv"); !slices.Equal(got, []string{tk("", "dv", "_strata", "resource")}) {
		t.Errorf("dv's legacy scope after rm --legacy: %q", got)
	}
	e.fails(2, "--legacy needs --thread", append(m, "rm", "--legacy", "--layer", "observations")...)
	e.fails(2, "without --resource", append(m, "rm", "--legacy", "-t", "main", "-r", "dave")...)
}
