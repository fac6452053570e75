package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A store whose log lost acknowledged frames fails with CORRUPT and says
// how to recover; salvage --dry-run reports, salvage asks (refuses without
// a terminal or --yes), salvage --yes keeps the intact records and the
// damaged log, and the store opens again.
func TestSalvageDamagedStore(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.dir, "s")
	url := "chromem://" + dir + "?collection=m"
	for _, k := range []string{"a", "b", "c"} {
		e.ok("--store", url, "--embedder", "hash:8", "add", "-l", "scratchpad", "--scope", "global", "--key", k, "value "+k)
	}
	log := filepath.Join(dir, "m", "records.log")
	st, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	// A bit flip in the last acknowledged frame.
	raw, _ := os.ReadFile(log)
	raw[len(raw)-3] ^= 0x40
	if err := os.WriteFile(log, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.fails(1, "CORRUPT", "--store", url, "--embedder", "hash:8", "ls")
	if !strings.Contains(r.stderr, "salvage") {
		t.Fatalf("the CORRUPT error does not say how to recover: %s", r.stderr)
	}
	if out := e.ok("--store", url, "salvage", "--dry-run").stdout; !strings.Contains(out, "would keep 2 records") {
		t.Fatalf("dry run: %s", out)
	}
	e.fails(2, "--yes", "--store", url, "salvage")
	if out := e.ok("--store", url, "salvage", "--yes").stdout; !strings.Contains(out, "kept 2 records") || !strings.Contains(out, "damaged") {
		t.Fatalf("salvage: %s", out)
	}
	kept, _ := filepath.Glob(filepath.Join(dir, "m", "records.log.damaged-*"))
	if len(kept) != 1 {
		t.Fatalf("damaged log not kept: %v", kept)
	}
	if fi, err := os.Stat(kept[0]); err != nil || fi.Size() != st.Size() {
		t.Fatalf("kept log %v %v, want %d bytes", fi, err, st.Size())
	}
	if out := e.ok("--store", url, "--embedder", "hash:8", "ls").stdout; !strings.Contains(out, "value a") || !strings.Contains(out, "value b") {
		t.Fatalf("after salvage: %s", out)
	}
	if out := e.ok("--store", url, "salvage").stdout; !strings.Contains(out, "healthy") {
		t.Fatalf("second salvage: %s", out)
	}
}
