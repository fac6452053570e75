package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratamem/strata/storage/postgres"
)

// noSecret fails when memctl printed any of the secrets.
func noSecret(t *testing.T, r result, args []string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(r.stdout+r.stderr, s) {
			t.Errorf("memctl %s printed the credential %q:\nstdout: %s\nstderr: %s", strings.Join(args, " "), s, r.stdout, r.stderr)
		}
	}
}

// TestCredentialsNotPrinted: store URLs that cannot be opened or parsed
// are named without their password, API key or token.
func TestCredentialsNotPrinted(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.dir, "data")
	e.ok("--store", dir, "--embedder", "hash:8", "add", "-l", "scratchpad", "--scope", "global", "--key", "k", "v")
	secrets := []string{"SECRETPW", "SECRETKEY", "SECRETTOK"}
	for _, c := range []struct {
		code int
		args []string
	}{
		// url.Parse fails: only the scheme is shown.
		{2, []string{"--store", "postgres://u:SECRETPW@h:5432/db%zz?password=SECRETPW", "ls"}},
		{2, []string{"--store", dir, "migrate", "--to", "qdrant://h:6334/%zz?api_key=SECRETKEY"}},
		{2, []string{"--store", "file://u:SECRETPW@host/x", "ls"}},
		// Unreachable servers, the credentials in the userinfo and in
		// query parameters.
		{1, []string{"--store", "postgres://u:SECRETPW@127.0.0.1:1/db?password=SECRETPW&sslpassword=SECRETPW&sslmode=disable", "--timeout", "3s", "ls"}},
		{1, []string{"--store", "qdrant://127.0.0.1:1?collection=m&api_key=SECRETKEY", "--timeout", "3s", "stats"}},
		{2, []string{"--store", "qdrant://127.0.0.1:1?collection=m&API_KEY=SECRETKEY", "--timeout", "3s", "--embedder", "hash:8", "import", "-"}},
		// A parameter the postgres driver does not know is a usage
		// error, named without its value.
		{2, []string{"migrate", "--from", dir, "--to", "postgres://u@127.0.0.1:1/db?Token=SECRETTOK&sslmode=disable", "--timeout", "3s"}},
		{1, []string{"migrate", "--from", "postgres://u:SECRETPW@127.0.0.1:1/db?sslmode=disable", "--to", filepath.Join(e.dir, "x"), "--timeout", "3s"}},
		{2, []string{"--store", "postgres://u:SECRETPW@127.0.0.1:1/x?password=SECRETPW", "reindex", "hash:8"}},
		{2, []string{"--store", "postgres://u:SECRETPW@127.0.0.1:1/db?apikey=SECRETKEY&sslmode=disable", "--timeout", "3s", "rm", "--resource", "alice", "--yes"}},
		{1, []string{"--store", "postgres://u:SECRETPW@127.0.0.1:1/db?password=SECRETPW&sslmode=disable", "--timeout", "3s", "rm", "--resource", "alice", "--yes"}},
	} {
		r := e.input(`{"id":"a","text":"x"}` + "\n").run(c.args...)
		if r.code != c.code {
			t.Errorf("memctl %s: exit %d, want %d\nstderr: %s", strings.Join(c.args, " "), r.code, c.code, r.stderr)
		}
		noSecret(t, r, c.args, secrets...)
	}
}

// withSecrets puts a password in the userinfo and credentials in the query
// of a postgres URL; the test server trusts every client, so they are
// accepted and ignored.
func withSecrets(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "SECRETPW1")
	q := u.RawQuery
	u.RawQuery = q + "&password=SECRETPW2&sslpassword=SECRETPW3"
	return u.String()
}

// TestCredentialsRedactedPostgres: every command that names a working
// postgres store (import, migrate, reindex, stats, rm and its state
// store) hides the credentials of its URL.
func TestCredentialsRedactedPostgres(t *testing.T) {
	dsn := pgDSN(t)
	e := newEnv(t)
	secrets := []string{"SECRETPW1", "SECRETPW2", "SECRETPW3"}
	a := filepath.Join(e.dir, "a")
	seed(t, e, a)
	file := filepath.Join(e.dir, "m.jsonl")
	e.ok("--store", a, "export", file)
	pg, pg2 := withSecrets(t, pgCollection(t, dsn)), withSecrets(t, pgCollection(t, dsn))
	pgm := []string{"--store", pg, "--embedder", "hash:64"}
	var outs []string
	run := func(code int, args ...string) {
		t.Helper()
		r := e.run(args...)
		if r.code != code {
			t.Fatalf("memctl %s: exit %d, want %d\nstderr: %s", strings.Join(args, " "), r.code, code, r.stderr)
		}
		noSecret(t, r, args, secrets...)
		outs = append(outs, r.stdout+r.stderr)
	}
	run(3, "--store", pg, "ls")
	run(0, "migrate", "--from", a, "--to", pg, "--layer", "entity")
	run(0, "--store", pg, "import", file)
	run(0, append(pgm, "stats")...)
	run(0, append(pgm, "--json", "stats")...)
	run(0, append(pgm, "reindex", "hash:32", "--to", pg2)...)
	run(3, "--store", pg, "rm", "no-such-id")
	// rm --resource names the state store too: the store's database.
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	alice, ta := "alice-"+hex.EncodeToString(b), "ta-"+hex.EncodeToString(b)
	t.Cleanup(func() {
		keys, _ := st.Keys(ctx, "global", "")
		for _, k := range keys {
			if en, err := st.Get(ctx, k); err == nil && k.Layer == "census" {
				_ = st.Delete(ctx, k, en.Revision)
			}
		}
	})
	converse(t, st, alice, ta, "I am allergic to peanuts")
	run(0, append(pgm, "add", "-l", "semantic", "-t", ta, "-r", alice, "peanuts")...)
	run(0, "--store", pg, "rm", "--resource", alice, "--dry-run")
	if !strings.Contains(outs[len(outs)-1], "State keys in postgres://postgres:xxxxx@") {
		t.Errorf("the dry run does not name the state store: %s", outs[len(outs)-1])
	}
	run(0, "--store", pg, "rm", "--resource", alice, "--yes")
	run(0, "--store", pg, "--json", "rm", "--resource", "alice", "--yes")
	// The URLs are still named, with the credentials masked.
	joined := strings.Join(outs, "\n")
	if !strings.Contains(joined, "postgres:xxxxx@") || !strings.Contains(joined, "password=xxxxx") || !strings.Contains(joined, "sslpassword=xxxxx") {
		t.Errorf("the store is not named with masked credentials:\n%s", joined)
	}
}
