package main_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/embedded"
)

// TestDefaultModel runs memctl with no --embedder: a new store is embedded
// with the offline default model, and search finds by meaning.
func TestDefaultModel(t *testing.T) {
	dir, err := uselite.DefaultDir()
	if errors.Is(err, uselite.ErrModelNotFound) {
		if os.Getenv("STRATA_REQUIRE_MODEL") == "1" {
			t.Fatalf("default model missing and STRATA_REQUIRE_MODEL=1: %v", err)
		}
		t.Skip("default model not installed (make model)")
	}
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t).with("STRATA_MODEL_DIR=" + dir)
	store := filepath.Join(e.dir, "data")
	for _, text := range []string{
		"User is vegetarian and never eats meat",
		"The quarterly report is due on Friday",
		"Alice's daughter plays the violin",
		"The staging server runs out of disk every Monday",
	} {
		e.ok("--store", store, "add", "-l", "observations", "-r", "alice", text)
	}
	meta, err := embedded.ReadMeta(store)
	if err != nil || meta.Embedder != uselite.ModelID {
		t.Fatalf("new store meta %+v %v", meta, err)
	}
	for query, want := range map[string]string{
		"what food should I avoid serving":   "vegetarian",
		"which musical instrument":           "violin",
		"when is the financial summary late": "quarterly report",
	} {
		hits := jsonLines(t, e.ok("--store", store, "search", query, "--json", "-n", "1").stdout)
		if len(hits) != 1 || !strings.Contains(hits[0].Text, want) {
			t.Errorf("search %q: %+v, want the memory about %q", query, hits, want)
		}
	}
	// The model's near-duplicate merge, through memctl add.
	out := e.ok("--store", store, "add", "-l", "observations", "-r", "alice", "--json", "User is vegetarian and never eats meat.").stdout
	if r := jsonLines(t, out); len(r) != 1 || r[0].Action == "added" {
		t.Errorf("a restated observation was added again: %s", out)
	}
}
