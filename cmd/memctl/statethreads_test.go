package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/filestore"
	"github.com/stratamem/strata/storage/postgres"
)

// stateOnly names the resources and threads of a state-only scenario: ta
// and tb carry records of alice and bob, quiet (alice's) and bquiet (bob's)
// only state, written by real sessions, and stray holds state of alice's
// under its tenancy key and legacy state, with no binding and no record;
// alice also has state under the tenancy key of an empty thread id, which
// no session writes.
type stateOnly struct {
	alice, bob, ta, quiet, stray, tb, bquiet string
}

func newStateOnly(sfx string) stateOnly {
	return stateOnly{alice: "alice" + sfx, bob: "bob" + sfx, ta: "ta" + sfx, quiet: "quiet" + sfx,
		stray: "stray" + sfx, tb: "tb" + sfx, bquiet: "bquiet" + sfx}
}

// scopes are every scope the scenario writes, for listings and cleanup.
func (so stateOnly) scopes() [][2]string {
	out := [][2]string{{"resource", so.alice}, {"resource", so.bob}, {"thread", storage.ThreadScopeID(so.alice, "")}}
	for _, th := range []string{so.ta, so.quiet, so.stray, so.tb, so.bquiet} {
		for _, res := range []string{"", so.alice, so.bob} {
			out = append(out, [2]string{"thread", storage.ThreadScopeID(res, th)})
		}
	}
	return out
}

// write runs the sessions and writes the stray state.
func (so stateOnly) write(t *testing.T, st storage.Store) {
	t.Helper()
	converse(t, st, so.alice, so.ta, "I am allergic to peanuts")
	converse(t, st, so.alice, so.quiet, "Nobody writes this down but the layers")
	converse(t, st, so.bob, so.tb, "I live in Oslo")
	converse(t, st, so.bob, so.bquiet, "Bob's quiet thread")
	for _, k := range []storage.Key{
		{Scope: "thread", ScopeID: storage.ThreadScopeID(so.alice, so.stray), Layer: "notes", Name: "state"},
		{Scope: "thread", ScopeID: so.stray, Layer: "notes", Name: "state"},
		{Scope: "thread", ScopeID: storage.ThreadScopeID(so.alice, ""), Layer: "notes", Name: "state"},
	} {
		if _, err := st.Put(context.Background(), k, []byte(`{"said":["stray"]}`), 0); err != nil {
			t.Fatal(err)
		}
	}
}

// keys lists every key of the scenario's scopes, sorted.
func (so stateOnly) keys(t *testing.T, st storage.Store) []string {
	t.Helper()
	var out []string
	for _, sc := range so.scopes() {
		out = append(out, listKeys(t, st, sc[0], sc[1])...)
	}
	slices.Sort(out)
	return out
}

// check runs rm --resource alice over the scenario: m names memctl's
// record store, st is its state store (open), which rm names stateLoc.
// The threads alice has state on but no record go too (quiet: its tenancy
// scope, its binding; stray: its tenancy scope, while its legacy state,
// which nothing ties to alice, is reported; the odd scope of alice's
// empty thread), and their tenancy scopes go after their bindings; bob's
// threads, with or without records, stay.
func (so stateOnly) check(t *testing.T, e *env, m []string, stateLoc string, st storage.Store) {
	t.Helper()
	e.ok(append(m, "add", "-l", "semantic", "-t", so.ta, "-r", so.alice, "peanuts")...)
	e.ok(append(m, "add", "-l", "semantic", "-t", so.tb, "-r", so.bob, "Oslo")...)
	before := so.keys(t, st)
	aliceGone := append(sessionKeys(so.alice, so.ta),
		tk(so.alice, so.quiet, "_strata", assemblies), tk(so.alice, so.quiet, "notes", "state"), tk("", so.quiet, "_strata", "resource"),
		tk(so.alice, so.stray, "notes", "state"), tk(so.alice, "", "notes", "state"))
	slices.Sort(aliceGone)
	for _, k := range aliceGone {
		if !slices.Contains(before, k) {
			t.Fatalf("the scenario did not write %q: %q", k, before)
		}
	}
	var wantLeft []string
	for _, k := range before {
		if !slices.Contains(aliceGone, k) {
			wantLeft = append(wantLeft, k)
		}
	}
	bobQuiet := []string{tk(so.bob, so.bquiet, "_strata", assemblies), tk(so.bob, so.bquiet, "notes", "state"), tk("", so.bquiet, "_strata", "resource")}
	for _, k := range append(bobQuiet, tk("", so.stray, "notes", "state")) {
		if !slices.Contains(wantLeft, k) {
			t.Fatalf("the scenario did not write %q: %q", k, before)
		}
	}

	// The dry run lists the state of the threads without records too.
	dry := e.ok(append(m, "rm", "--resource", so.alice, "--dry-run", "--json")...)
	n, planned, left := dryRunLines(t, dry.stdout)
	if n != 1 || !slices.Equal(keyStrings(planned), aliceGone) {
		t.Errorf("dry run: %d records, state keys\n%q; want 1 and\n%q", n, keyStrings(planned), aliceGone)
	}
	if len(left) != 1 || left[0].Thread != so.stray || left[0].Records != 0 || left[0].StateKeys != 1 ||
		!strings.Contains(left[0].Reason, "no run bound the thread to resource") {
		t.Errorf("dry run leaves %+v, want the legacy state of %s", left, so.stray)
	}
	want := fmt.Sprintf("and %d state keys from %s", len(planned), stateLoc)
	if !strings.Contains(dry.stderr, "would delete 1 memory from") || !strings.Contains(dry.stderr, want) {
		t.Errorf("dry run stderr lacks %q: %s", want, dry.stderr)
	}
	text := e.ok(append(m, "rm", "--resource", so.alice, "--dry-run")...).stdout
	for _, want := range []string{so.alice + `\x1f` + so.quiet, so.alice + `\x1f` + so.stray} {
		if !strings.Contains(text, want) {
			t.Errorf("dry run table lacks %q:\n%s", want, text)
		}
	}
	if got := so.keys(t, st); !slices.Equal(got, before) {
		t.Fatalf("the dry run deleted state: %q", got)
	}

	var res rmResult
	r := e.ok(append(m, "rm", "--resource", so.alice, "--yes", "--json")...)
	decodeJSON(t, r.stdout, &res)
	if res.Deleted != 1 || res.StateDeleted != len(res.StateKeys) || !slices.Equal(keyStrings(res.StateKeys), aliceGone) {
		t.Errorf("rm --json = %+v, want 1 record and the state keys %q", res, aliceGone)
	}
	// The binding of quiet goes before its tenancy scope, which is what
	// finds the thread again should the run fail in between.
	order := make([]string, len(res.StateKeys))
	for i, k := range res.StateKeys {
		order[i] = k.String()
	}
	binding := slices.Index(order, tk("", so.quiet, "_strata", "resource"))
	for _, k := range []string{tk(so.alice, so.quiet, "_strata", assemblies), tk(so.alice, so.quiet, "notes", "state")} {
		if i := slices.Index(order, k); i < binding {
			t.Errorf("rm deleted %q before the binding %s: %q", k, so.quiet, order)
		}
	}
	if len(res.NotErased) != 1 || res.NotErased[0].Thread != so.stray || res.NotErased[0].StateKeys != 1 {
		t.Errorf("rm --json not erased: %+v", res.NotErased)
	}
	if !strings.Contains(r.stderr, `not erased: thread "`+so.stray+`": 1 state key under the thread id alone`) {
		t.Errorf("rm stderr: %s", r.stderr)
	}
	if got := so.keys(t, st); !slices.Equal(got, wantLeft) {
		t.Errorf("state left\n%q, want\n%q", got, wantLeft)
	}
	ids, err := st.(storage.ScopeLister).ScopeIDs(context.Background(), "thread", storage.ThreadScopeID(so.alice, ""))
	if err != nil || len(ids) != 0 {
		t.Errorf("threads of %s left in the state store: %q, %v", so.alice, ids, err)
	}
	if got := keysOf(t, st, so.bob, so.tb); !slices.Equal(got, sessionKeys(so.bob, so.tb)) {
		t.Errorf("bob's state = %q, want %q", got, sessionKeys(so.bob, so.tb))
	}
	left2 := jsonLines(t, e.ok(append(m, "ls", "--json", "--all")...).stdout)
	if len(left2) != 1 || left2[0].Scope["resource"] != so.bob {
		t.Errorf("records left: %+v", left2)
	}
	// Nothing of alice's is left to find.
	if r := e.ok(append(m, "rm", "--resource", so.alice, "--yes")...); !strings.Contains(r.stderr, "nothing deleted") {
		t.Errorf("second rm: %s %s", r.stdout, r.stderr)
	}
}

// TestRemoveResourceStateOnlyThreads: rm --resource finds the threads of
// the resource through the state store as well as through the records, so
// a thread on which the resource's sessions kept layer state but left no
// record is erased too, in an embedded store's state directory.
func TestRemoveResourceStateOnlyThreads(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	env, err := embedded.Open(context.Background(), store, embedded.Options{Embedder: hashing.New(64)})
	if err != nil {
		t.Fatal(err)
	}
	so := newStateOnly("")
	so.write(t, env.State)
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(store, "state")
	st, err := filestore.Open(stateDir, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	so.check(t, e, []string{"--store", store, "--embedder", "hash:64"}, stateDir, st)
}

// TestRemoveResourceStateOnlyThreadsPostgres: the same with a postgres
// store, whose state table the database shares: unique names keep runs
// apart.
func TestRemoveResourceStateOnlyThreadsPostgres(t *testing.T) {
	dsn := pgDSN(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	so := newStateOnly("-" + hex.EncodeToString(b))
	t.Cleanup(func() {
		for _, sc := range so.scopes() {
			keys, _ := st.Keys(ctx, sc[0], sc[1])
			for _, k := range keys {
				if en, err := st.Get(ctx, k); err == nil {
					_ = st.Delete(ctx, k, en.Revision)
				}
			}
		}
	})
	so.write(t, st)
	pg := pgCollection(t, dsn)
	so.check(t, newEnv(t), []string{"--store", pg, "--embedder", "hash:64"}, "postgres://", st)
}
