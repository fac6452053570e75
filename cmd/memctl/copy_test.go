package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDistanceMismatchRefused: vectors of a dot-product collection are not
// written into an embedded directory (always cosine, which would store
// them normalised): import, migrate and reindex --to refuse before
// writing anything, exit 1.
func TestDistanceMismatchRefused(t *testing.T) {
	e := newEnv(t)
	dot := "chromem://" + filepath.Join(e.dir, "dot") + "?collection=m&distance=dot"
	e.ok("--store", dot, "--embedder", "hash:8", "add", "-l", "scratchpad", "--scope", "global", "--key", "k", "some value")
	exp := filepath.Join(e.dir, "dot.jsonl")
	e.ok("--store", dot, "--embedder", "hash:8", "export", exp)
	// A vector that is not of unit length: cosine storage would change it.
	raw, err := os.ReadFile(exp)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.SplitN(string(raw), "\n", 2)[0], `"distance":"dot"`) {
		t.Fatalf("export header: %s", raw)
	}
	raw = append(raw, []byte(`{"id":"x1","layer":"scratchpad","kind":"note","text":"k2: v","metadata":{"key":"k2","scope":"global"},"vector":[3,0,0,0,0,0,0,4]}`+"\n")...)
	if err := os.WriteFile(exp, raw, 0o644); err != nil {
		t.Fatal(err)
	}

	fresh := filepath.Join(e.dir, "fresh")
	e.fails(1, "distance", "--store", fresh, "import", exp)
	if _, err := os.Stat(fresh); err == nil {
		t.Error("the refused import created the store")
	}
	cos := filepath.Join(e.dir, "cos")
	e.ok("--store", cos, "--embedder", "hash:8", "add", "-l", "scratchpad", "--scope", "global", "--key", "c", "x")
	before := e.ok("--store", cos, "export").stdout
	e.fails(1, "distance dot", "--store", cos, "import", exp)
	e.fails(1, "distance", "migrate", "--from", dot, "--to", cos, "--embedder", "hash:8")
	e.fails(1, "distance", "migrate", "--from", dot, "--to", fresh, "--embedder", "hash:8")
	e.fails(1, "distance", "--store", dot, "reindex", "hash:16", "--to", fresh)
	if _, err := os.Stat(fresh); err == nil {
		t.Error("a refused migrate or reindex created the store")
	}
	if after := e.ok("--store", cos, "export").stdout; after != before {
		t.Errorf("a refused import changed the store:\n%s\nvs\n%s", after, before)
	}
	// A URL store with another distance is refused the same way.
	cosURL := "chromem://" + filepath.Join(e.dir, "cosurl") + "?collection=m"
	e.ok("--store", cosURL, "--embedder", "hash:8", "add", "-l", "scratchpad", "--scope", "global", "--key", "c", "x")
	e.fails(1, "distance", "--store", cosURL, "--embedder", "hash:8", "import", exp)

	// Same distance: the vectors arrive as they are.
	dot2 := "chromem://" + filepath.Join(e.dir, "dot2") + "?collection=m"
	e.ok("--store", dot2, "import", exp)
	var r record
	decodeJSON(t, e.ok("--store", dot2, "--embedder", "hash:8", "show", "x1", "--json", "--vectors").stdout, &r)
	if len(r.Vector) != 8 || r.Vector[0] != 3 || r.Vector[7] != 4 {
		t.Errorf("vector after a dot import: %v", r.Vector)
	}
	// Without vectors the distance does not matter: they are re-embedded.
	novec := e.ok("--store", dot, "--embedder", "hash:8", "export", "--no-vectors").stdout
	if strings.Contains(novec, "distance") {
		t.Errorf("an export without vectors names a distance: %s", novec)
	}
	e.input(novec).ok("--store", fresh, "import")
}

// TestReindexToVerifies: reindex --to checks its own verification, and
// records of the target that the source no longer holds are reported (exit
// 1), deleted only with --prune.
func TestReindexToVerifies(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	seedMany(t, e, store, 30)
	to := "chromem://" + filepath.Join(e.dir, "next") + "?collection=m"
	if out := e.ok("--store", store, "reindex", "hash:32", "--to", to).stdout; !strings.Contains(out, "30 records, 30 written, 0 already there, verified 30/30 (target holds 30)") {
		t.Fatalf("reindex --to: %s", out)
	}
	// Deleted from the source since: the target's copies are reported.
	e.ok("--store", store, "rm", "obs-0001", "obs-0002", "obs-0003", "--yes")
	r := e.fails(1, "--prune", "--store", store, "reindex", "hash:32", "--to", to)
	for _, want := range []string{"verification failed", "3 records", `"obs-0001"`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("reindex with extra target records: %q does not say %q", r.stderr, want)
		}
	}
	var res struct {
		Source, Written, Skipped, Removed, Extra, Verified, Target int
	}
	r = e.run("--store", store, "--json", "reindex", "hash:32", "--to", to)
	decodeJSON(t, r.stdout, &res)
	if r.code != 1 || res.Source != 27 || res.Extra != 3 || res.Target != 30 || res.Verified != 27 || res.Skipped != 27 {
		t.Errorf("reindex --json with extra records: exit %d, %+v", r.code, res)
	}
	if n := len(jsonLines(t, e.ok("--store", to, "ls", "--json", "--all").stdout)); n != 30 {
		t.Fatalf("without --prune the target lost records: %d left", n)
	}
	res = struct{ Source, Written, Skipped, Removed, Extra, Verified, Target int }{}
	decodeJSON(t, e.ok("--store", store, "--json", "reindex", "hash:32", "--to", to, "--prune").stdout, &res)
	if res.Removed != 3 || res.Extra != 0 || res.Target != 27 || res.Verified != 27 {
		t.Errorf("reindex --prune: %+v", res)
	}
	e.fails(2, "--prune", "--store", store, "reindex", "hash:32", "--prune")

	// Nothing to do: --json still prints the result.
	e.ok("--store", store, "reindex", "hash:32")
	var up struct {
		Source, Verified, Target int
		UpToDate                 bool `json:"up_to_date"`
	}
	r = e.ok("--store", store, "--json", "reindex", "hash:32")
	decodeJSON(t, r.stdout, &up)
	if up.Source != 27 || up.Target != 27 || up.Verified != 27 || !up.UpToDate || !strings.Contains(r.stderr, "nothing to do") {
		t.Errorf("reindex --json with nothing to do: %q %+v (stderr %q)", r.stdout, up, r.stderr)
	}
}
