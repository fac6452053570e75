package main_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/exportfmt"
	"github.com/stratamem/strata/server"
	"github.com/stratamem/strata/vectorstore"
)

// serveStore serves the embedded store at store with three keys (alice's,
// bob's and an admin's) and returns its URL; cleanup shuts it down.
func serveStore(t *testing.T, store string) string {
	t.Helper()
	return serveStoreWith(t, store, server.Options{Rate: -1})
}

// serveStoreWith is serveStore with opts (the keys are serveStore's).
func serveStoreWith(t *testing.T, store string, opts server.Options) string {
	t.Helper()
	ctx := context.Background()
	env, err := environment.Open(ctx, store, environment.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := server.NewKeyring(server.Key{Name: "alice", Secret: "alice-secret-0123456789", Resources: []string{"alice"}},
		server.Key{Name: "bob", Secret: "bob-secret-0123456789", Resources: []string{"bob"}},
		server.Key{Name: "ops", Secret: "ops-secret-0123456789", Resources: []string{server.AllResources}})
	if err != nil {
		t.Fatal(err)
	}
	opts.Keys = keys
	srv, err := server.New(env, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := env.Close(); err != nil {
			t.Error(err)
		}
	})
	return hs.URL
}

// TestRemoteAddEdit: add and edit run through --server: the server
// writes through the layers, embeds the text (a search through the
// server finds it), and refuses records of a resource the key is not
// bound to, global ones, and moves out of the key's resources.
func TestRemoteAddEdit(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	seedLive(t, e, store, "main")
	e.ok("--store", store, "--embedder", "hash:64", "add", "-l", "observations", "-t", "main", "-r", "bob", "Bob likes chess")
	m := []string{"--server", serveStore(t, store)}
	alice := e.with("STRATA_API_KEY=alice-secret-0123456789")
	bob := e.with("STRATA_API_KEY=bob-secret-0123456789")

	added := jsonLines(t, alice.ok(append(m, "--json", "add", "-l", "observations", "-t", "main", "-r", "alice", "User drinks rooibos tea")...).stdout)
	if len(added) != 1 || added[0].Action != "added" || added[0].Layer != "observations" {
		t.Fatalf("add through the server: %+v", added)
	}
	id := added[0].ID
	if out := alice.ok(append(m, "search", "rooibos tea", "-r", "alice")...).stdout; !strings.Contains(out, id) {
		t.Errorf("the server did not embed the added memory: search:\n%s", out)
	}
	// The other layer paths: an episode record, a temporal fact, an
	// entity and a note.
	alice.ok(append(m, "add", "-l", "episodic", "-r", "alice", "--scope", "resource", "--run", "r1", "Helped plan the trip")...)
	if out := alice.ok(append(m, "add", "-l", "entity", "-t", "main", "-r", "alice", "--scope", "thread", "--name", "Ada", "--type", "person", "mathematician")...).stdout; !strings.Contains(out, "added") {
		t.Errorf("entity add: %s", out)
	}
	alice.ok(append(m, "add", "-l", "scratchpad", "-t", "main", "-r", "alice", "--scope", "thread", "--key", "plan", "ship on Friday")...)
	alice.fails(2, "no text", append(m, "add", "-l", "observations", "-t", "main", "-r", "alice", " ")...)
	// An add to another resource, or a global one, is refused by the
	// server whatever the flags say.
	alice.fails(1, "forbidden", append(m, "add", "-l", "observations", "-t", "main", "-r", "bob", "planted in bob's memory")...)
	alice.fails(1, "forbidden", append(m, "add", "-l", "scratchpad", "--scope", "global", "--key", "k", "global note")...)
	if out := bob.ok(append(m, "ls", "-r", "bob", "--json")...).stdout; strings.Contains(out, "planted") {
		t.Errorf("alice's key wrote into bob's memories:\n%s", out)
	}

	// edit: re-embedded by the server.
	if out := alice.ok(append(m, "edit", id, "--text", "User drinks green tea")...).stdout; !strings.Contains(out, "re-embedded") {
		t.Errorf("edit through the server:\n%s", out)
	}
	var r record
	decodeJSON(t, alice.ok(append(m, "show", id, "--json")...).stdout, &r)
	if r.Text != "User drinks green tea" {
		t.Errorf("edited text: %q", r.Text)
	}
	if out := alice.ok(append(m, "search", "green tea", "-r", "alice", "--limit", "1")...).stdout; !strings.Contains(out, id) {
		t.Errorf("the edited text was not re-embedded: search:\n%s", out)
	}
	alice.input(`{"layer":"observations","kind":"observation","scope":{"thread":"main","resource":"alice"},"text":"from a file","metadata":{"importance":"4"}}`).
		ok(append(m, "edit", id, "--file", "-")...)
	decodeJSON(t, alice.ok(append(m, "show", id, "--json")...).stdout, &r)
	if r.Text != "from a file" {
		t.Errorf("edit --file through the server: %+v", r)
	}
	// Bob's key cannot see, so cannot edit, alice's memory; alice's
	// cannot move it to bob nor edit bob's.
	bob.fails(3, "not found", append(m, "edit", id, "--text", "hijacked")...)
	alice.fails(1, "forbidden", append(m, "edit", id, "--resource", "bob")...)
	bobs := jsonLines(t, bob.ok(append(m, "ls", "-r", "bob", "--json")...).stdout)
	if len(bobs) != 1 {
		t.Fatalf("bob's memories: %+v", bobs)
	}
	alice.fails(3, "not found", append(m, "edit", bobs[0].ID, "--text", "hijacked")...)
	decodeJSON(t, alice.ok(append(m, "show", id, "--json")...).stdout, &r)
	if r.Text != "from a file" || r.Scope["resource"] != "alice" {
		t.Errorf("a refused edit changed the memory: %+v", r)
	}
	// A record the layer would not read back is refused: usage status.
	alice.fails(2, "", append(m, "edit", id, "--kind", "episode")...)
}

// TestRemoteEditConflict: a write made through the server while $EDITOR
// is open wins; the edit exits 1 with nothing written.
func TestRemoteEditConflict(t *testing.T) {
	script, err := execLookPath("script")
	if err != nil {
		t.Skip("no script(1) to give memctl a terminal")
	}
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	seedLive(t, e, store, "main")
	url := serveStore(t, store)
	alice := e.with("STRATA_API_KEY=alice-secret-0123456789")
	recs := jsonLines(t, alice.ok("--server", url, "ls", "-r", "alice", "-l", "observations", "--json").stdout)
	if len(recs) != 1 {
		t.Fatalf("observations: %+v", recs)
	}
	id := recs[0].ID
	editor := filepath.Join(e.dir, "editor.sh")
	body := fmt.Sprintf("#!/bin/sh\n%s --server %s edit %s --text 'written meanwhile' >/dev/null || exit 1\nsed -i 's/vegetarian/vegan/' \"$1\"\n", bin, url, id)
	if err := os.WriteFile(editor, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	out := runUnderPTY(t, alice.with("EDITOR="+editor), script, bin+" --server "+url+" edit "+id+"; echo exit=$?")
	if !strings.Contains(out, "changed on") || !strings.Contains(out, "nothing written") || !strings.Contains(out, "exit=1") {
		t.Errorf("edit while the record was written meanwhile:\n%s", out)
	}
	var r record
	decodeJSON(t, alice.ok("--server", url, "show", id, "--json").stdout, &r)
	if r.Text != "written meanwhile" {
		t.Errorf("the write made while the editor ran is lost: %q", r.Text)
	}
	// Without a write meanwhile the editor's change lands.
	plain := filepath.Join(e.dir, "plain.sh")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\nsed -i 's/written meanwhile/from the editor/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out = runUnderPTY(t, alice.with("EDITOR="+plain), script, bin+" --server "+url+" edit "+id+"; echo exit=$?")
	decodeJSON(t, alice.ok("--server", url, "show", id, "--json").stdout, &r)
	if r.Text != "from the editor" || !strings.Contains(out, "exit=0") {
		t.Errorf("edit in $EDITOR through the server: %q\n%s", r.Text, out)
	}
}

// TestRemoteStatsExport: stats and export run through --server. The
// export of alice's resource imports into a new store with her records
// (vectors included) and her layer state byte for byte; the commands that
// need the store's files say why they cannot run remotely.
func TestRemoteStatsExport(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	seedLive(t, e, store, "main")
	e.ok("--store", store, "--embedder", "hash:64", "add", "-l", "observations", "-t", "main", "-r", "bob", "Bob likes chess")
	// A message added through a first server: the server rebuilds the
	// thread's lexical documents, which the export must carry.
	t.Run("seed", func(t *testing.T) {
		e.with("STRATA_API_KEY=alice-secret-0123456789").ok("--server", serveStore(t, store), "add", "-l", "semantic", "-t", "main", "-r", "alice", "--scope", "resource", "I moved to Berlin")
	})
	wantState := stateOf(t, e, "--store", store)
	wantRecs := jsonLines(t, e.ok("--store", store, "ls", "--all", "-r", "alice", "--json", "--vectors").stdout)
	localFile := filepath.Join(e.dir, "local.jsonl")
	e.ok("--store", store, "export", "-r", "alice", localFile)
	m := []string{"--server", serveStore(t, store)}
	alice := e.with("STRATA_API_KEY=alice-secret-0123456789")
	ops := e.with("STRATA_API_KEY=ops-secret-0123456789")

	var st struct {
		Store      string         `json:"store"`
		Records    int            `json:"records"`
		ByLayer    map[string]int `json:"by_layer"`
		ByScope    map[string]int `json:"by_scope"`
		Dimension  int            `json:"dimension"`
		DataBytes  int64          `json:"data_bytes"`
		Resources  int            `json:"resources"`
		Embeddings map[string]int `json:"embeddings"`
	}
	decodeJSON(t, alice.ok(append(m, "stats", "--json")...).stdout, &st)
	if st.Records != len(wantRecs) || st.ByLayer["observations"] != 1 || st.ByScope["thread"] == 0 || st.Dimension != 64 || st.DataBytes == 0 || st.Resources != 1 {
		t.Errorf("stats through the server (alice, %d records): %+v", len(wantRecs), st)
	}
	decodeJSON(t, ops.ok(append(m, "stats", "--json")...).stdout, &st)
	if all := jsonLines(t, e.ok("--store", store, "ls", "--all", "--json").stdout); st.Records != len(all) || st.Resources != 2 {
		t.Errorf("stats of the whole store through the server (%d records): %+v", len(all), st)
	}
	if out := alice.ok(append(m, "stats")...).stdout; !strings.Contains(out, "--server") || !strings.Contains(out, "By scope") {
		t.Errorf("stats table through the server:\n%s", out)
	}
	alice.fails(2, "--resource only", append(m, "stats", "--since", "1d")...)

	file := filepath.Join(e.dir, "alice.jsonl")
	alice.ok(append(m, "export", file)...)
	header, remoteRecs, states := readExport(t, file)
	if header == nil || header.Format != exportfmt.Version || header.Dimension != 64 {
		t.Errorf("header: %+v", header)
	}
	if len(remoteRecs) != len(wantRecs) || states == 0 {
		t.Fatalf("export through the server: %d records (want %d), %d state lines", len(remoteRecs), len(wantRecs), states)
	}
	// Record for record what a local export of the resource writes:
	// vectors, lexical documents, times and metadata.
	_, localRecs, _ := readExport(t, localFile)
	if !reflect.DeepEqual(remoteRecs, localRecs) {
		t.Errorf("the records exported through the server differ from a local export's:\n%+v\n%+v", remoteRecs, localRecs)
	}
	terms := 0
	for _, r := range remoteRecs {
		if len(r.Terms) > 0 {
			terms++
		}
	}
	if terms == 0 {
		t.Errorf("no exported record has a lexical document: the test compares too little")
	}
	b := filepath.Join(e.dir, "b")
	e.ok("--store", b, "--embedder", "hash:64", "import", file)
	got := jsonLines(t, e.ok("--store", b, "ls", "--all", "--json", "--vectors").stdout)
	byID := map[string]record{}
	for _, r := range got {
		byID[r.ID] = r
	}
	for _, w := range wantRecs {
		g, ok := byID[w.ID]
		if !ok || g.Text != w.Text || !slices.Equal(g.Vector, w.Vector) || !g.Created.Equal(w.Created) || !maps.Equal(g.Metadata, w.Metadata) {
			t.Errorf("record %s after export through the server and import: %+v, want %+v", w.ID, g, w)
		}
	}
	if len(got) != len(wantRecs) {
		t.Errorf("imported %d records, want %d", len(got), len(wantRecs))
	}
	// Alice's state arrives byte for byte; the global scope and the
	// binding of a thread id to its resource (a key of the bare thread
	// id, which names no resource) stay behind.
	gotState := stateOf(t, e, "--store", b)
	for k, v := range wantState {
		if strings.HasPrefix(k, "global/") || strings.HasSuffix(k, "/_strata/resource") {
			if _, ok := gotState[k]; ok {
				t.Errorf("global state %s exported through alice's key", k)
			}
			continue
		}
		if gotState[k] != v {
			t.Errorf("state %s after export through the server: %q, want %q", k, gotState[k], v)
		}
	}
	// Filtered: records only.
	if r := alice.ok(append(m, "export", "-l", "observations")...); strings.Count(r.stdout, "\n") != 2 || !strings.Contains(r.stderr, "no layer state") {
		t.Errorf("filtered export through the server:\n%s\n%s", r.stdout, r.stderr)
	}
	alice.fails(2, "takes --resource, --layer", append(m, "export", "--since", "1d")...)
	e.with("STRATA_API_KEY=bob-secret-0123456789").fails(1, "forbidden", append(m, "export", "-r", "alice")...)

	// What cannot run through the server says why.
	alice.fails(2, "writes records in bulk", append(m, "import", file)...)
	alice.fails(2, "re-embeds every record", append(m, "reindex", "hash:64")...)
	alice.fails(2, "damaged files", append(m, "salvage")...)
}

// readExport reads an export file: its header, records and the number of
// state lines.
func readExport(t *testing.T, path string) (*exportfmt.Header, []vectorstore.Record, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := exportfmt.NewReader(f)
	var h *exportfmt.Header
	var recs []vectorstore.Record
	states := 0
	for {
		it, err := rd.Next()
		if err == io.EOF {
			return h, recs, states
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case it.Header != nil:
			h = it.Header
		case it.Record != nil:
			recs = append(recs, *it.Record)
		case it.State != nil:
			states++
		}
	}
}

// TestRemoteRateLimit: a command that sends a request per page and state
// key waits out the key's rate limit (429, Retry-After) instead of
// failing half way.
func TestRemoteRateLimit(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	seedLive(t, e, store, "main")
	url := serveStoreWith(t, store, server.Options{Rate: 10, Burst: 2})
	alice := e.with("STRATA_API_KEY=alice-secret-0123456789")
	r := alice.ok("--server", url, "export")
	if n := strings.Count(r.stdout, "\n"); n < 5 {
		t.Errorf("export under a rate limit: %d lines\n%s", n, r.stderr)
	}
}
