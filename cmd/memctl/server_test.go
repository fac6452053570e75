package main_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/server"
)

// TestThroughServer: with --server, memctl reads and changes a store that
// a strata server holds (here in the test process, standing for strata
// serve beside a running agent): ls, show, search, state, inspect and rm
// go through the server's API with the key in $STRATA_API_KEY, which the
// server binds to a resource; the commands with no route say so.
func TestThroughServer(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	seedLive(t, e, store, "main")
	ctx := context.Background()
	env, err := environment.Open(ctx, store, environment.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	keys, err := server.NewKeyring(server.Key{Name: "alice", Secret: "alice-secret-0123456789", Resources: []string{"alice"}},
		server.Key{Name: "bob", Secret: "bob-secret-0123456789", Resources: []string{"bob"}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(env, server.Options{Keys: keys, Rate: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer func() { _ = srv.Shutdown(ctx) }()

	alice := e.with("STRATA_API_KEY=alice-secret-0123456789")
	m := []string{"--server", hs.URL}
	recs := jsonLines(t, alice.ok(append(m, "ls", "-r", "alice", "--json")...).stdout)
	if len(recs) != 1 || recs[0].Text != "User is vegetarian" {
		t.Fatalf("ls through the server: %+v", recs)
	}
	id := recs[0].ID
	if out := alice.ok(append(m, "show", id)...).stdout; !strings.Contains(out, "User is vegetarian") || !strings.Contains(out, "thread=main resource=alice") {
		t.Errorf("show through the server:\n%s", out)
	}
	if out := alice.ok(append(m, "search", "vegetarian", "-r", "alice")...).stdout; !strings.Contains(out, id) {
		t.Errorf("search through the server:\n%s", out)
	}
	if out := alice.ok(append(m, "state", "ls", "-r", "alice")...).stdout; !strings.Contains(out, "todo") || !strings.Contains(out, "turns") {
		t.Errorf("state ls through the server:\n%s", out)
	}
	key := []string{"todo", "-t", "main", "-r", "alice"}
	if out := alice.ok(append(append(m, "state", "show"), key...)...).stdout; !strings.Contains(out, "item of turn 1") {
		t.Errorf("state show through the server:\n%s", out)
	}
	alice.input(`{"items":["through the server"]}`).ok(append(append(append(m, "state", "edit"), key...), "--file", "-")...)
	alice.input(`{"items":["stale"]}`).fails(1, "conflict", append(append(append(m, "state", "edit"), key...), "--file", "-", "--if-revision", "1")...)
	if got := e.ok("--store", store, "--json", "state", "show", "todo", "-t", "main", "-r", "alice").stdout; !strings.Contains(got, "through the server") {
		t.Errorf("state edit through the server did not land: %s", got)
	}
	if out := alice.ok(append(m, "inspect", "main", "-r", "alice")...).stdout; !strings.Contains(out, "Thread main of resource alice") {
		t.Errorf("inspect through the server:\n%s", out)
	}
	// The key is bound to alice: bob's key sees nothing of hers.
	bob := e.with("STRATA_API_KEY=bob-secret-0123456789")
	bob.fails(1, "forbidden", append(m, "ls", "-r", "alice")...)
	bob.fails(3, "not found", append(m, "show", id)...)
	e.fails(1, "STRATA_API_KEY", append(m, "ls", "-r", "alice")...)
	// Commands with no route, and --store with --server.
	alice.fails(2, "writes records in bulk", append(m, "import", "-")...)
	alice.fails(2, "exclude each other", append(m, "--store", store, "ls")...)
	alice.fails(2, "--server", "--server", "ftp://x", "ls")
	// rm by id.
	if out := alice.ok(append(m, "rm", id)...).stdout; !strings.Contains(out, "deleted 1 memory") {
		t.Errorf("rm through the server: %s", out)
	}
	alice.fails(3, "no memory", append(m, "show", id)...)
}
