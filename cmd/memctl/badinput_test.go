package main_test

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestBadInput(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	e.ok("--store", store, "--embedder", "hash:64", "add", "-l", "scratchpad", "--scope", "global", "--key", "k", "v")
	m := []string{"--store", store}
	cases := []struct {
		code int
		want string
		args []string
	}{
		{2, "unknown flag: --bogus", []string{"ls", "--bogus"}},
		{2, "unknown shorthand flag", []string{"ls", "-Z"}},
		{2, `unknown command "lss"`, []string{"lss"}},
		{2, "did you mean", []string{"lss"}},
		{2, "invalid argument", []string{"ls", "--limit", "many"}},
		{2, "--limit must be", []string{"ls", "--limit", "0"}},
		{2, "--sort", []string{"ls", "--sort", "size"}},
		{2, "--since", []string{"ls", "--since", "last tuesday"}},
		{2, "--until must be after", []string{"ls", "--since", "2026-02-01", "--until", "2026-01-01"}},
		{2, "want KEY=VALUE", []string{"ls", "--meta", "scope"}},
		{2, "invalid key", []string{"ls", "--meta", "a.b=c"}},
		{2, "takes one ID", []string{"show"}},
		{2, "malformed id", []string{"show", strings.Repeat("a", 513)}},
		{2, "not valid UTF-8", []string{"show", "\xff\xfe"}},
		{2, "empty id", []string{"show", ""}},
		{3, "no memory with id", []string{"show", "note-0000"}},
		{2, "invalid embedder", []string{"--embedder", "bert", "search", "x"}},
		{2, "hash", []string{"--embedder", "hash:0", "search", "x"}},
		{2, "empty search text", []string{"search", "  "}},
		{1, "hash-64", []string{"--embedder", "hash:32", "search", "x"}},
		{2, "--timeout must be positive", []string{"--timeout", "0s", "ls"}},
		{2, "unknown store scheme", []string{"--store", "mysql://db/x", "ls"}},
		{2, "is a file", []string{"--store", filepath.Join(store, "strata.json"), "ls"}},
		{3, "no store", []string{"--store", filepath.Join(e.dir, "nothing-here"), "ls"}},
		{2, "server store", []string{"--store", "postgres://u@127.0.0.1:1/x", "reindex", "hash:8"}},
		{2, "no arguments", []string{"stats", "extra"}},
		{2, "--batch", []string{"import", "--batch", "0"}},
	}
	for _, c := range cases {
		args := c.args
		if !strings.HasPrefix(strings.Join(args, " "), "--store") {
			args = append(append([]string{}, m...), args...)
		}
		e.fails(c.code, c.want, args...)
	}
}

// TestUnreachableStores: a server that is not there is a one-line error,
// exit 1, within --timeout.
func TestUnreachableStores(t *testing.T) {
	e := newEnv(t)
	e.fails(1, "open store", "--store", "postgres://nobody@127.0.0.1:1/strata?sslmode=disable", "--timeout", "5s", "ls")
	e.fails(1, "qdrant", "--store", "qdrant://127.0.0.1:1?collection=memories", "--timeout", "3s", "ls")
	e.fails(2, "unknown qdrant URL parameter", "--store", "qdrant://127.0.0.1:1?colection=memories", "ls")
}

func TestHelpAndCompletion(t *testing.T) {
	e := newEnv(t)
	out := e.ok("--help").stdout
	for _, want := range []string{"Exit status: 0 ok, 1 runtime error", "STRATA_STORE", "ls", "inspect", "reindex", "completion"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	for _, cmd := range []string{"ls", "show", "search", "add", "edit", "rm", "export", "import", "stats", "reindex", "migrate", "inspect", "bench"} {
		if out := e.ok(cmd, "--help").stdout; !strings.Contains(out, "Exit status") || !strings.Contains(out, "Usage:") {
			t.Errorf("%s --help:\n%s", cmd, out)
		}
	}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if out := e.ok("completion", shell).stdout; len(out) < 200 || !strings.Contains(out, "memctl") {
			t.Errorf("completion %s: %d bytes", shell, len(out))
		}
	}
	// Dynamic completion: flag values and record ids from the store.
	if out := e.ok("__complete", "ls", "--layer", "").stdout; !strings.Contains(out, "observations") || !strings.Contains(out, "temporal") {
		t.Errorf("--layer completion:\n%s", out)
	}
	store := filepath.Join(e.dir, "data")
	e.ok("--store", store, "--embedder", "hash:8", "add", "-l", "scratchpad", "--scope", "global", "--key", "k", "v")
	if out := e.ok("--store", store, "__complete", "show", "note-").stdout; !strings.Contains(out, "note-") {
		t.Errorf("id completion:\n%s", out)
	}
}

func TestBench(t *testing.T) {
	e := newEnv(t)
	out := e.ok("bench", "--sizes", "200", "--text-sizes", "none", "--queries", "10", "--duration", "20ms", "--backends", "chromem").stdout
	if !strings.Contains(out, "chromem  clustered-200") || !strings.Contains(out, "RECALL") {
		t.Errorf("bench:\n%s", out)
	}
	e.fails(2, "unknown backend", "bench", "--sizes", "200", "--text-sizes", "none", "--backends", "faiss")
	e.fails(2, "bad size", "bench", "--sizes", "lots")
}

// TestVersion: memctl version names the module and its version, in JSON
// with snake_case keys too.
func TestVersion(t *testing.T) {
	e := newEnv(t)
	if out := e.ok("version").stdout; !strings.HasPrefix(out, "memctl ") || !strings.Contains(out, "github.com/stratamem/strata") || !strings.Contains(out, "go1.") {
		t.Errorf("version: %q", out)
	}
	var v map[string]any
	decodeJSON(t, e.ok("version", "--json").stdout, &v)
	for _, k := range []string{"version", "module", "go_version", "platform"} {
		if s, _ := v[k].(string); s == "" {
			t.Errorf("version --json lacks %q: %v", k, v)
		}
	}
	e.fails(2, "no arguments", "version", "x")
}

// TestBenchJSON: bench --json has snake_case keys with the unit in the
// name, and --markdown prints the full report.
func TestBenchJSON(t *testing.T) {
	e := newEnv(t)
	args := []string{"bench", "--sizes", "200", "--text-sizes", "none", "--queries", "10", "--duration", "20ms", "--backends", "chromem"}
	out := e.ok(append(args, "--json")...).stdout
	var row map[string]any
	decodeJSON(t, strings.Split(strings.TrimSpace(out), "\n")[0], &row)
	for _, k := range []string{"backend", "dataset", "size", "ingest_per_sec", "p50_ms", "p99_ms", "throughput", "recall"} {
		if _, ok := row[k]; !ok {
			t.Errorf("bench --json lacks %q: %s", k, out)
		}
	}
	for k := range row {
		if k != strings.ToLower(k) {
			t.Errorf("bench --json key %q is not snake_case", k)
		}
	}
	if md := e.ok(append(args, "--markdown")...).stdout; !strings.Contains(md, "| chromem | clustered-200 |") || !strings.Contains(md, "recall@10") {
		t.Errorf("bench --markdown:\n%s", md)
	}
}
