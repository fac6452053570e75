package main_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

// Terminal sequences a prompt-injected model could plant in a memory: an
// OSC that retitles the window, a CSI that clears the screen, the 8-bit
// CSI, a carriage return that hides what came before, DEL and a
// right-to-left override.
const (
	osc      = "\x1b]0;pwned\x07"
	clear    = "\x1b[2J"
	planted  = "User likes tea" + osc + clear + "\u009b31m\rfake\x7f\u202eevil"
	plantedE = `User likes tea\x1b]0;pwned\x07\x1b[2J\u009b31m\rfake\x7f\u202eevil`
	// A table cell puts the text on one line: white space, the carriage
	// return included, folds to one space.
	plantedCell = `User likes tea\x1b]0;pwned\x07\x1b[2J\u009b31m fake\x7f\u202eevil`
)

// raw reports the terminal controls s holds: every C0 control but newline
// (and tab, when a text block keeps its tabs), DEL, C1 and the
// bidirectional overrides.
func raw(s string, tabs ...bool) []rune {
	var out []rune
	for _, r := range s {
		switch {
		case r == '\n', r == '\t' && len(tabs) > 0 && tabs[0]:
		case r < 0x20, r >= 0x7f && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			out = append(out, r)
		}
	}
	return out
}

// TestNoTerminalEscapes: records whose text, metadata, scope and id hold
// terminal sequences, written straight into the store, are printed by
// every human-readable command with the sequences escaped, visibly, and by
// --json and export exactly (JSON escapes, no raw control).
func TestNoTerminalEscapes(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	ctx := context.Background()
	emb := hashing.New(64)
	env, err := embedded.Open(ctx, store, embedded.Options{Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := emb.Embed(ctx, []string{planted, "User likes tea"})
	if err != nil {
		t.Fatal(err)
	}
	recs := []vectorstore.Record{
		{ID: "obs-planted", Layer: "observations", Kind: "observation", Scope: vectorstore.Scope{Thread: "t1" + clear, Resource: "alice"},
			Text: planted, Vector: vs[0], Metadata: map[string]string{"importance": "3", "note": osc + "x" + clear, "sources": `["` + osc + `"]`}},
		{ID: "id" + clear, Layer: "temporal" + osc, Kind: "fact\u009b", Scope: vectorstore.Scope{Thread: "t1"},
			Text: "User likes tea\tand\ncoffee" + osc, Vector: vs[1], Metadata: map[string]string{"subject": "user" + clear}},
	}
	if err := env.Memory.Records.Upsert(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	// A recorded assembly quoting the planted text, for inspect.
	rec := inspect.AssemblyRecord{RunID: "run" + osc, ThreadID: "t1", Turn: 1, PrefixHash: "h",
		Bands: []inspect.RecordedBand{{Band: "history", Tokens: 9, Items: []core.Item{core.UserMessage(planted)}}}}
	raw0, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.State.Put(ctx, storage.Key{Scope: "thread", ScopeID: "t1", Layer: "_strata", Name: "last_assembly"}, raw0, 0); err != nil {
		t.Fatal(err)
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}

	m := []string{"--store", store}
	human := [][]string{
		{"ls"}, {"ls", "--wide"}, {"ls", "--sort", "id"},
		{"show", "obs-planted"}, {"show", "id" + clear},
		{"search", "tea"}, {"search", "tea", "--wide"},
		{"stats"},
		{"inspect", "t1"}, {"inspect", "t1", "--full"},
		{"rm", "--layer", "observations", "--dry-run"},
		{"rm", "--resource", "alice", "--dry-run", "--wide"},
	}
	outputs := map[string]string{}
	for _, args := range human {
		r := e.ok(append(m, args...)...)
		name := strings.Join(args, " ")
		outputs[name] = r.stdout
		// A text block (show, inspect --full) keeps its tabs; a table
		// never prints one.
		block := args[0] == "show" || name == "inspect t1 --full"
		for _, out := range []string{r.stdout, r.stderr} {
			if bad := raw(out, block); len(bad) > 0 {
				t.Errorf("memctl %q printed raw controls %q:\n%q", name, bad, out)
			}
		}
	}
	// The escapes are visible, so the operator sees what was planted.
	for name, want := range map[string]string{
		"ls --wide":                            plantedCell,
		"show obs-planted":                     plantedE,
		"search tea --wide":                    plantedCell,
		"inspect t1 --full":                    plantedE,
		"show id" + clear:                      `coffee\x1b]0;pwned\x07`,
		"stats":                                `temporal\x1b]0;pwned\x07`,
		"ls":                                   `id\x1b[2J`,
		"rm --resource alice --dry-run --wide": `t1\x1b[2J`,
	} {
		if !strings.Contains(outputs[name], want) {
			t.Errorf("memctl %q does not show %q:\n%s", name, want, outputs[name])
		}
	}
	if out := outputs["show obs-planted"]; !strings.Contains(out, `note`) || !strings.Contains(out, `\x1b]0;pwned\x07x\x1b[2J`) {
		t.Errorf("show does not escape the metadata:\n%s", out)
	}
	// show keeps a text's lines and tabs: they are its layout.
	if out := outputs["show id"+clear]; !strings.Contains(out, "User likes tea\tand\n  coffee") {
		t.Errorf("show changed the text's layout:\n%q", out)
	}

	// Errors that quote an id or a value are escaped too.
	for _, args := range [][]string{{"show", "missing" + osc}, {"edit", "missing" + clear, "--text", "x"}, {"ls", "--sort", "\x1b[31m"},
		{"--store", filepath.Join(e.dir, "no"+clear), "ls"}} {
		r := e.run(append(m, args...)...)
		if r.code == 0 || len(raw(r.stderr)) > 0 {
			t.Errorf("memctl %q: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}

	// Machine-readable output is exact, and holds no raw control either.
	for _, args := range [][]string{{"ls", "--json"}, {"search", "tea", "--json"}, {"export"}} {
		out := e.ok(append(m, args...)...).stdout
		if bad := raw(out); len(bad) > 0 {
			t.Errorf("memctl %q printed raw controls %q", args, bad)
		}
		got := map[string]record{}
		for _, r := range jsonLines(t, out) {
			got[r.ID] = r
		}
		if r := got["obs-planted"]; r.Text != planted || r.Metadata["note"] != osc+"x"+clear || r.Scope["thread"] != "t1"+clear {
			t.Errorf("memctl %q changed the record: %+v", args, r)
		}
		if r := got["id"+clear]; r.Layer != "temporal"+osc || r.Kind != "fact\u009b" {
			t.Errorf("memctl %q changed the record: %+v", args, r)
		}
	}
	var shown record
	decodeJSON(t, e.ok(append(m, "show", "obs-planted", "--json")...).stdout, &shown)
	if shown.Text != planted {
		t.Errorf("show --json text %q, want %q", shown.Text, planted)
	}
	var insp inspect.AssemblyRecord
	out := e.ok(append(m, "inspect", "t1", "--json")...).stdout
	decodeJSON(t, out, &insp)
	if bad := raw(out); len(bad) > 0 || insp.RunID != "run"+osc || insp.Bands[0].Items[0].Text() != planted {
		t.Errorf("inspect --json: raw %q, %+v", bad, insp)
	}
}
