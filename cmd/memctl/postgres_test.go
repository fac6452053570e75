package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/postgres"
	"github.com/stratamem/strata/vectorstore/pgvector"
)

// pgDSN returns the test database, or skips (fails with
// STRATA_REQUIRE_PG=1).
func pgDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("STRATA_TEST_PG_DSN")
	if dsn == "" {
		if os.Getenv("STRATA_REQUIRE_PG") == "1" {
			t.Fatal("STRATA_TEST_PG_DSN is not set and STRATA_REQUIRE_PG=1 (run: bash scripts/pg.sh up)")
		}
		t.Skip("STRATA_TEST_PG_DSN not set (bash scripts/pg.sh up prints it)")
	}
	return dsn
}

// pgCollection returns the URL of a fresh collection, dropped at the end.
func pgCollection(t *testing.T, dsn string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "memctl_test_" + hex.EncodeToString(b)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("collection", name)
	u.RawQuery = q.Encode()
	t.Cleanup(func() {
		ctx := context.Background()
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer pool.Close()
		_ = pgvector.DropCollection(ctx, pool, "", name)
	})
	return u.String()
}

func TestPostgres(t *testing.T) {
	dsn := pgDSN(t)
	e := newEnv(t)
	a := filepath.Join(e.dir, "a")
	seed(t, e, a)
	exp := e.ok("--store", a, "export").stdout
	file := filepath.Join(e.dir, "m.jsonl")
	e.ok("--store", a, "export", file)
	pg := pgCollection(t, dsn)

	// Read commands on a collection that does not exist yet.
	e.fails(3, "no collection", "--store", pg, "ls")

	// export (embedded) -> import (postgres) -> export: identical.
	if out := e.ok("--store", pg, "import", file).stdout; !strings.Contains(out, "7 added") {
		t.Fatalf("import into postgres: %s", out)
	}
	if out := e.ok("--store", pg, "import", file).stdout; !strings.Contains(out, "0 added, 0 updated, 7 unchanged") {
		t.Errorf("re-import into postgres is not a no-op: %s", out)
	}
	pgm := []string{"--store", pg, "--embedder", "hash:64"}
	// (--no-state: the database's state store is every test's)
	if got := e.ok(append(pgm, "export", "--no-state")...).stdout; got != exp {
		t.Errorf("postgres export differs from the embedded one:\n%s\nvs\n%s", got, exp)
	}
	// The collection recorded the embedder it was created with (the
	// import's header): export names it without --embedder.
	if got := e.ok("--store", pg, "export", "--no-state").stdout; !strings.HasPrefix(got, `{"memctl_export":2,"embedder":"hash-64","dimension":64`) {
		t.Errorf("header does not name the recorded embedder: %s", strings.SplitN(got, "\n", 2)[0])
	}

	// Read, search and write on postgres.
	if n := len(jsonLines(t, e.ok("--store", pg, "ls", "--json", "--all").stdout)); n != 7 {
		t.Errorf("ls: %d", n)
	}
	hits := jsonLines(t, e.ok(append(pgm, "search", "is the user vegetarian", "--json", "-n", "1")...).stdout)
	if len(hits) != 1 || hits[0].Layer != "observations" {
		t.Errorf("search on postgres: %+v", hits)
	}
	e.fails(1, "dimension", "--store", pg, "--embedder", "hash:32", "search", "x")
	e.ok(append(pgm, "add", "-l", "temporal", "-t", "t1", "--subject", "user", "--predicate", "lives in", "--value", "Oslo", "--when", "2026-09-01")...)
	cur := jsonLines(t, e.ok("--store", pg, "ls", "--json", "--layer", "temporal", "--valid-at", "2026-10-01").stdout)
	if len(cur) != 1 || !strings.Contains(cur[0].Text, "Oslo") {
		t.Errorf("temporal add on postgres: %+v", cur)
	}
	e.ok(append(pgm, "edit", cur[0].ID, "--meta", "value=Bergen")...)
	var edited record
	decodeJSON(t, e.ok("--store", pg, "show", cur[0].ID, "--json").stdout, &edited)
	if edited.Text != "user lives in: Bergen" {
		t.Errorf("edit on postgres: %+v", edited)
	}

	// postgres -> embedded: strata.json gets the recorded embedder.
	c := filepath.Join(e.dir, "c")
	out := e.ok("--store", pg, "migrate", "--to", c).stdout
	if !strings.Contains(out, "8 records, 8 written") || !strings.Contains(out, "verified 8/8") {
		t.Errorf("migrate postgres -> embedded: %s", out)
	}
	if e.ok("--store", c, "export").stdout != e.ok(append(pgm, "export")...).stdout {
		t.Error("migrated embedded store differs from postgres")
	}
	// embedded -> postgres, resumable.
	pg2 := pgCollection(t, dsn)
	e.ok("migrate", "--from", a, "--to", pg2, "--layer", "entity")
	if out := e.ok("migrate", "--from", a, "--to", pg2).stdout; !strings.Contains(out, "7 records, 6 written, 1 already there, verified 7/7 (target holds 7)") {
		t.Errorf("migrate embedded -> postgres: %s", out)
	}

	// Dimension mismatch and bad lines against postgres.
	other := filepath.Join(e.dir, "other")
	e.ok("--store", other, "--embedder", "hash:32", "add", "-l", "scratchpad", "--scope", "global", "--key", "k", "v")
	e.ok("--store", other, "export", filepath.Join(e.dir, "32.jsonl"))
	e.fails(1, "dimension", "--store", pg, "import", filepath.Join(e.dir, "32.jsonl"))
	e.input("{\"id\":\"z\",\"text\":\"zz\"}\nnot json\n").fails(1, "line 2", "--store", pg, "--embedder", "hash:64", "import")

	// The right to be forgotten on postgres.
	e.ok("--store", pg, "rm", "--resource", "alice", "--yes")
	for _, r := range jsonLines(t, e.ok("--store", pg, "ls", "--json", "--all").stdout) {
		if r.Scope["resource"] == "alice" || r.Scope["thread"] == "t1" {
			t.Errorf("alice's memory survived on postgres: %+v", r)
		}
	}
}

// TestInspectPostgres: inspect reads the recorded assembly from the
// database of a postgres store.
func TestInspectPostgres(t *testing.T) {
	dsn := pgDSN(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	thread := "memctl-inspect-" + hex.EncodeToString(b)
	recordTurn(t, st, thread)
	t.Cleanup(func() {
		// The database's state store outlives the test: remove what the
		// session wrote, whatever keys the runtime chose.
		keys, _ := st.Keys(ctx, "thread", storage.ThreadScopeID("alice", thread))
		for _, key := range append(keys, bindingKeyForTest(thread)) {
			if en, err := st.Get(ctx, key); err == nil {
				_ = st.Delete(ctx, key, en.Revision)
			}
		}
	})
	e := newEnv(t)
	out := e.ok("--store", pgCollection(t, dsn), "inspect", thread).stdout
	if !strings.Contains(out, "Thread "+thread) || !strings.Contains(out, "[anchor]") {
		t.Errorf("inspect on postgres:\n%s", out)
	}
}

// TestRemoveResourceStatePostgres: with a postgres store, rm --resource
// deletes the resource's layer state from the database's state table too,
// and nothing of another resource.
func TestRemoveResourceStatePostgres(t *testing.T) {
	dsn := pgDSN(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The state table is shared by the database: unique names keep runs apart.
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	sfx := hex.EncodeToString(b)
	alice, bob, ta, tb := "alice-"+sfx, "bob-"+sfx, "ta-"+sfx, "tb-"+sfx
	t.Cleanup(func() {
		for _, sc := range [][2]string{{"resource", alice}, {"resource", bob}, {"thread", ta}, {"thread", tb},
			{"thread", storage.ThreadScopeID(alice, ta)}, {"thread", storage.ThreadScopeID(bob, tb)}, {"global", ""}} {
			keys, _ := st.Keys(ctx, sc[0], sc[1])
			for _, k := range keys {
				if sc[0] == "global" && k.Layer != "census" {
					continue
				}
				if en, err := st.Get(ctx, k); err == nil {
					_ = st.Delete(ctx, k, en.Revision)
				}
			}
		}
	})
	converse(t, st, alice, ta, "I am allergic to peanuts")
	converse(t, st, bob, tb, "I live in Oslo")

	e := newEnv(t)
	pg := pgCollection(t, dsn)
	m := []string{"--store", pg, "--embedder", "hash:64"}
	e.ok(append(m, "add", "-l", "semantic", "-t", ta, "-r", alice, "peanuts")...)
	e.ok(append(m, "add", "-l", "observations", "-t", ta, "likes tea")...)
	e.ok(append(m, "add", "-l", "semantic", "-t", tb, "-r", bob, "Oslo")...)

	aliceKeys, bobKeys := sessionKeys(alice, ta), sessionKeys(bob, tb)
	keysOf := func(res, thread string) []string { return keysOf(t, st, res, thread) }
	if got := keysOf(alice, ta); !slices.Equal(got, aliceKeys) {
		t.Fatalf("the session wrote %v for alice, want %v", got, aliceKeys)
	}

	n, planned := dryRunStateKeys(t, e.ok(append(m, "rm", "--resource", alice, "--dry-run", "--json")...).stdout)
	if n != 2 || !slices.Equal(keyStrings(planned), aliceKeys) {
		t.Errorf("dry run: %d records, state keys %v; want 2 and %v", n, keyStrings(planned), aliceKeys)
	}
	if got := keysOf(alice, ta); len(got) != 4 {
		t.Fatalf("the dry run deleted state: %v", got)
	}
	var res rmResult
	decodeJSON(t, e.ok(append(m, "rm", "--resource", alice, "--yes", "--json")...).stdout, &res)
	if res.Deleted != 2 || res.StateDeleted != len(res.StateKeys) || !slices.Equal(keyStrings(res.StateKeys), aliceKeys) {
		t.Errorf("rm --json = %+v, want 2 records and the state keys %v", res, aliceKeys)
	}
	if got := keysOf(alice, ta); len(got) != 0 {
		t.Errorf("alice's state survived on postgres: %v", got)
	}
	if got := keysOf(bob, tb); !slices.Equal(got, bobKeys) {
		t.Errorf("bob's state = %v, want %v", got, bobKeys)
	}
	if _, err := st.Get(ctx, storage.Key{Scope: "global", Layer: "census", Name: "state"}); err != nil {
		t.Errorf("global state: %v", err)
	}
	left := jsonLines(t, e.ok("--store", pg, "ls", "--json", "--all").stdout)
	if len(left) != 1 || left[0].Scope["resource"] != bob {
		t.Errorf("records left: %+v", left)
	}
}
