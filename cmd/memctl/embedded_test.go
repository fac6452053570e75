package main_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/memory/temporal"
)

// seed adds one memory of every layer to the store of e and returns e.
func seed(t *testing.T, e *env, store string) {
	t.Helper()
	m := []string{"--store", store, "--embedder", "hash:64"}
	add := func(args ...string) { e.ok(append(append([]string{"add"}, m...), args...)...) }
	add("-l", "observations", "-t", "t1", "--importance", "4", "User is vegetarian")
	add("-l", "temporal", "-t", "t1", "--subject", "user", "--predicate", "lives in", "--value", "Berlin", "--when", "2026-03-01")
	add("-l", "temporal", "-t", "t1", "--subject", "user", "--predicate", "lives in", "--value", "Paris", "--when", "2026-06-01")
	add("-l", "entity", "-t", "t1", "-r", "alice", "--name", "Ada Lovelace", "--type", "person", "mathematician")
	add("-l", "scratchpad", "-t", "t1", "-r", "alice", "--key", "plan", "ship v2 on Friday")
	add("-l", "episodic", "-r", "alice", "--run", "r42", "Helped Alice plan a trip to Lisbon")
	add("-l", "semantic", "-t", "t1", "-r", "alice", "--role", "user", "My cat is called Miso")
}

func TestLifecycleEmbedded(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	seed(t, e, store)
	m := []string{"--store", store}

	all := jsonLines(t, e.ok(append(m, "ls", "--json", "--all")...).stdout)
	if len(all) != 7 {
		t.Fatalf("ls: %d records, want 7: %v", len(all), ids(all))
	}
	layers := map[string]int{}
	for _, r := range all {
		layers[r.Layer]++
		if r.Vector != nil {
			t.Errorf("ls --json printed a vector without --vectors")
		}
	}
	if layers["temporal"] != 2 || layers["semantic"] != 1 || layers["entity"] != 1 {
		t.Errorf("layers %v", layers)
	}

	// Filters, text match, paging and sorting.
	got := jsonLines(t, e.ok(append(m, "ls", "--json", "--layer", "temporal")...).stdout)
	if len(got) != 2 {
		t.Fatalf("--layer temporal: %v", ids(got))
	}
	var berlin record
	for _, r := range got {
		if strings.Contains(r.Text, "Berlin") {
			berlin = r
		}
	}
	if berlin.To.IsZero() {
		t.Errorf("the Berlin fact should have been closed by the Paris one: %+v", berlin)
	}
	if got := jsonLines(t, e.ok(append(m, "ls", "--json", "--match", "LISBON")...).stdout); len(got) != 1 || got[0].Layer != "episodic" {
		t.Errorf("--match LISBON: %+v", got)
	}
	if got := jsonLines(t, e.ok(append(m, "ls", "--json", "--resource", "alice", "--kind", "note")...).stdout); len(got) != 1 {
		t.Errorf("--resource alice --kind note: %+v", got)
	}
	if got := jsonLines(t, e.ok(append(m, "ls", "--json", "--valid-at", "2026-04-01", "--layer", "temporal")...).stdout); len(got) != 1 || !strings.Contains(got[0].Text, "Berlin") {
		t.Errorf("--valid-at 2026-04-01: %+v", got)
	}
	page := e.ok(append(m, "ls", "--json", "-n", "3")...)
	first := jsonLines(t, page.stdout)
	tok := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(page.stderr), "more records: --page-token"))
	if len(first) != 3 || tok == "" {
		t.Fatalf("page 1: %d records, stderr %q", len(first), page.stderr)
	}
	rest := jsonLines(t, e.ok(append(m, "ls", "--json", "-n", "10", "--page-token", tok)...).stdout)
	if len(rest) != 4 || rest[0].ID == first[2].ID {
		t.Errorf("page 2: %v after %v", ids(rest), ids(first))
	}
	e.fails(2, "page-token", append(m, "ls", "--page-token", "garbage")...)
	byID := jsonLines(t, e.ok(append(m, "ls", "--json", "--sort", "-id")...).stdout)
	for i := 1; i < len(byID); i++ {
		if byID[i-1].ID < byID[i].ID {
			t.Fatalf("--sort -id not descending: %v", ids(byID))
		}
	}
	table := e.ok(append(m, "ls")...).stdout
	if !strings.HasPrefix(table, "ID") || !strings.Contains(table, "obs-") {
		t.Errorf("table:\n%s", table)
	}
	if wide := e.ok(append(m, "ls", "-w")...).stdout; !strings.Contains(wide, "observations") || !strings.Contains(wide, "CREATED") {
		t.Errorf("ls -w:\n%s", wide)
	}

	// show, in full and as JSON.
	id := berlin.ID
	out := e.ok(append(m, "show", id)...).stdout
	for _, want := range []string{"Layer:", "temporal", "Valid:", "Metadata:", "subject_key", "64 values"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	msg := jsonLines(t, e.ok(append(m, "ls", "--json", "--layer", "semantic")...).stdout)[0]
	if out := e.ok(append(m, "show", msg.ID)...).stdout; !strings.Contains(out, "Sources:") || !strings.Contains(out, "item memctl-") {
		t.Errorf("show of a message lacks its source item:\n%s", out)
	}
	var shown record
	decodeJSON(t, e.ok(append(m, "show", id, "--json", "--vectors")...).stdout, &shown)
	if shown.ID != id || len(shown.Vector) != 64 {
		t.Errorf("show --json: %+v", shown)
	}

	// search: the store remembers its embedder (strata.json).
	hits := jsonLines(t, e.ok(append(m, "search", "is the user vegetarian", "--json", "-n", "2")...).stdout)
	if len(hits) == 0 || hits[0].Layer != "observations" || hits[0].Score <= 0 {
		t.Errorf("search: %+v", hits)
	}
	if hits := jsonLines(t, e.ok(append(m, "search", "vegetarian", "--json", "--layer", "entity")...).stdout); len(hits) != 1 || hits[0].Layer != "entity" {
		t.Errorf("search --layer entity: %+v", hits)
	}

	// stats.
	var st struct {
		Records   int            `json:"records"`
		ByLayer   map[string]int `json:"by_layer"`
		ByScope   map[string]int `json:"by_scope"`
		Embedder  string         `json:"embedder"`
		Dimension int            `json:"dimension"`
		Source    string         `json:"store_source"`
		Disk      int64          `json:"disk_bytes"`
	}
	decodeJSON(t, e.ok(append(m, "stats", "--json")...).stdout, &st)
	if st.Records != 7 || st.ByLayer["temporal"] != 2 || st.Embedder != "hash-64" || st.Dimension != 64 || st.Disk == 0 ||
		st.Source != "--store flag" || st.ByScope["resource"] != 1 || st.ByScope["thread"] != 6 {
		t.Errorf("stats: %+v", st)
	}
	if out := e.ok(append(m, "stats")...).stdout; !strings.Contains(out, "chosen by") || !strings.Contains(out, "hash-64") {
		t.Errorf("stats table:\n%s", out)
	}
}

func TestEditValidatesAsTheLayer(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	seed(t, e, store)
	m := []string{"--store", store}
	find := func(layer string) record {
		t.Helper()
		rs := jsonLines(t, e.ok(append(m, "ls", "--json", "--layer", layer, "--vectors")...).stdout)
		if len(rs) == 0 {
			t.Fatalf("no %s record", layer)
		}
		return rs[len(rs)-1]
	}
	obs := find("observations")
	e.ok(append(m, "edit", obs.ID, "--text", "User is vegan", "--meta", "importance=5")...)
	after := find("observations")
	if after.Text != "User is vegan" || after.Metadata["importance"] != "5" || after.Created != obs.Created {
		t.Errorf("edit: %+v", after)
	}
	same := true
	for i := range after.Vector {
		same = same && after.Vector[i] == obs.Vector[i]
	}
	if same {
		t.Error("the text changed but the vector did not: not re-embedded")
	}
	// Rules: each a usage error naming the field, nothing written.
	e.fails(2, "importance", append(m, "edit", obs.ID, "--meta", "importance=9")...)
	e.fails(2, "8192", append(m, "edit", obs.ID, "--text", strings.Repeat("x", 9000))...)
	e.fails(2, "text: empty", append(m, "edit", obs.ID, "--text", "  ")...)
	e.fails(2, "kind", append(m, "edit", obs.ID, "--kind", "note")...)
	e.fails(2, "give a thread (with its resource, if any) or a resource", append(m, "edit", obs.ID, "--thread", "")...)
	ent := find("entity")
	e.fails(2, "metadata.type", append(m, "edit", ent.ID, "--meta", "type=robot")...)
	e.fails(2, "scope", append(m, "edit", ent.ID, "--meta", "scope=global")...)
	// An entity's notes: the text prefix is kept.
	e.ok(append(m, "edit", ent.ID, "--text", "wrote the first program")...)
	if got := find("entity").Text; got != "Ada Lovelace (person): wrote the first program" {
		t.Errorf("entity text %q", got)
	}
	// A temporal fact: the text is derived; the value is edited.
	fact := find("temporal")
	e.fails(2, "derived", append(m, "edit", fact.ID, "--text", "user lives in: Rome")...)
	e.ok(append(m, "edit", fact.ID, "--meta", "value=Rome", "--valid-to", "2027-01-01")...)
	var f2 record
	decodeJSON(t, e.ok(append(m, "show", fact.ID, "--json")...).stdout, &f2)
	if f2.Text != "user lives in: Rome" || f2.To.Year() != 2027 {
		t.Errorf("fact after edit: %+v", f2)
	}
	e.fails(2, "valid_to", append(m, "edit", fact.ID, "--valid-to", "2000-01-01")...)
	// --file replaces the editable fields.
	note := find("scratchpad")
	e.input(`{"layer":"scratchpad","kind":"note","scope":{"thread":"t1","resource":"alice"},"text":"ship v3","metadata":{"key":"plan","scope":"thread"}}`).
		ok(append(m, "edit", note.ID, "--file", "-")...)
	if got := find("scratchpad").Text; got != "plan: ship v3" {
		t.Errorf("scratchpad text %q", got)
	}
	e.input(`{"txt": "typo"}`).fails(2, "editable fields", append(m, "edit", note.ID, "--file", "-")...)
	// No change flags and no terminal: a usage error, not an editor.
	e.fails(2, "nothing to change", append(m, "edit", note.ID)...)
	e.fails(3, "no memory", append(m, "edit", "no-such-id", "--text", "x")...)
	// An editor, as kubectl edit: on a terminal with no change flags,
	// $EDITOR is run on the JSON (here a sed script stands in for a
	// person).
	script, err := execLookPath("script")
	if err != nil {
		t.Skip("no script(1) to give memctl a terminal")
	}
	editor := filepath.Join(e.dir, "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/ship v3/ship v4 on Monday/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	runUnderPTY(t, e.with("EDITOR="+editor), script, bin+" --store "+store+" edit "+note.ID)
	if got := find("scratchpad").Text; got != "plan: ship v4 on Monday" {
		t.Errorf("after $EDITOR: %q", got)
	}
}

func TestAddRefusesWhatTheLayerWouldNotRead(t *testing.T) {
	e := newEnv(t)
	m := []string{"--store", filepath.Join(e.dir, "data"), "--embedder", "hash:64"}
	cases := []struct {
		want string
		args []string
	}{
		{"--layer is required", []string{"add", "text"}},
		{"unknown layer", []string{"add", "-l", "memories", "text"}},
		{"--name and --type", []string{"add", "-l", "entity", "-t", "t1", "notes"}},
		{"type", []string{"add", "-l", "entity", "-t", "t1", "--name", "X", "--type", "robot", "notes"}},
		{"--key", []string{"add", "-l", "scratchpad", "-t", "t1", "value"}},
		{"importance", []string{"add", "-l", "observations", "-t", "t1", "--importance", "7", "x"}},
		// No scope is not global: a global memory is asked for.
		{"give the memory's scope: --thread T", []string{"add", "-l", "observations", "x"}},
		{"or --scope global", []string{"add", "-l", "scratchpad", "--key", "k", "x"}},
		{"--scope global: layer observations can be thread or resource-scoped only", []string{"add", "-l", "observations", "--scope", "global", "x"}},
		{"subject", []string{"add", "-l", "temporal", "-t", "t1", "--predicate", "p", "--value", "v"}},
		{"--key does not apply", []string{"add", "-l", "observations", "-t", "t1", "--key", "k", "x"}},
		{"no text", []string{"add", "-l", "episodic", "-r", "alice"}},
		{"8192", []string{"add", "-l", "semantic", "-t", "t1", strings.Repeat("y", 9000)}},
		{"role", []string{"add", "-l", "semantic", "-t", "t1", "--role", "robot", "hi"}},
		// A resource-scoped semantic layer's message is in a thread.
		{"give --thread too", []string{"add", "-l", "semantic", "-r", "alice", "--scope", "resource", "hi"}},
		{"give --resource and --thread", []string{"add", "-l", "semantic", "-t", "t1", "--scope", "resource", "hi"}},
		{"kind", []string{"add", "-l", "episodic", "-r", "alice", "--kind", "fact", "x"}},
		{"derived", []string{"add", "-l", "semantic", "-t", "t1", "--kind", "context", "x"}},
	}
	for _, c := range cases {
		e.fails(2, c.want, append(m, c.args...)...)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "data", "records")); err == nil {
		// The store may have been created by an add that failed in the
		// layer; it must hold nothing.
		if out := e.ok("--store", filepath.Join(e.dir, "data"), "ls", "--json").stdout; out != "" {
			t.Errorf("failed adds wrote: %s", out)
		}
	}
}

// TestAddScopes: a thread of a resource is named by both ids, for every
// layer, and a resource-scoped semantic layer's message is added with its
// thread and resource.
func TestAddScopes(t *testing.T) {
	e := newEnv(t)
	m := []string{"--store", filepath.Join(e.dir, "data"), "--embedder", "hash:64"}
	for _, args := range [][]string{
		{"-l", "semantic", "-t", "t1", "-r", "alice", "--scope", "resource", "I moved to Berlin"},
		{"-l", "semantic", "-t", "t1", "-r", "alice", "I like tea"},
		{"-l", "observations", "-t", "t1", "-r", "alice", "User is vegetarian"},
		{"-l", "temporal", "-t", "t1", "-r", "alice", "--subject", "user", "--predicate", "lives in", "--value", "Berlin"},
		{"-l", "scratchpad", "-t", "t1", "-r", "alice", "--key", "plan", "ship"},
	} {
		e.ok(append(append(m, "add"), args...)...)
	}
	recs := jsonLines(t, e.ok(append(m, "ls", "--json", "--all")...).stdout)
	if len(recs) != 5 {
		t.Fatalf("ls: %d records, want 5: %+v", len(recs), recs)
	}
	for _, r := range recs {
		if r.Scope["thread"] != "t1" || r.Scope["resource"] != "alice" {
			t.Errorf("%s record %s: scope %v, want thread t1 of resource alice", r.Layer, r.ID, r.Scope)
		}
	}
	// Filtered by both, as the runtime keys the thread.
	if got := jsonLines(t, e.ok(append(m, "ls", "--json", "-t", "t1", "-r", "alice")...).stdout); len(got) != 5 {
		t.Errorf("ls -t t1 -r alice: %d records", len(got))
	}
	if got := e.ok(append(m, "ls", "--json", "-t", "t1", "-r", "bob")...).stdout; got != "" {
		t.Errorf("ls -t t1 -r bob: %s", got)
	}
}

// TestLayersReadBack runs each memory layer over a store memctl wrote:
// what memctl adds is what the layers render.
func TestLayersReadBack(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	seed(t, e, store)
	ctx := context.Background()
	env, err := embedded.Open(ctx, store, embedded.Options{Embedder: hashing.New(64)})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	ms := env.Memory
	ent, err := entity.New(ms, entity.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pad, err := scratchpad.New(ms, scratchpad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eps, err := episodic.New(ms, episodic.Options{})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := observations.New(ms, observations.Options{DisableExtraction: true})
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := temporal.New(ms, temporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sem, err := semantic.New(ms, semantic.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{ent, pad, eps, obs, tmp, sem}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t1", ResourceID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	if err := s.Append(ctx, core.UserMessage("What is my cat called?")); err != nil {
		t.Fatal(err)
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, it := range v.Items() {
		text.WriteString(it.Text())
		text.WriteString("\n")
	}
	for layer, want := range map[string]string{
		"entity": "mathematician", "scratchpad": "ship v2 on Friday", "episodic": "Lisbon",
		"observations": "vegetarian", "temporal": "Paris", "semantic": "Miso",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("layer %s did not render %q from memctl's record; view:\n%s\ndiagnostics: %v", layer, want, text.String(), s.Diagnostics())
		}
	}
	if strings.Contains(text.String(), "lives in: Berlin") && !strings.Contains(text.String(), "Paris") {
		t.Errorf("temporal rendered the closed fact as current")
	}
}

func TestRemoveResource(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	m := []string{"--store", store, "--embedder", "hash:64"}
	for _, who := range []struct{ res, thread string }{{"alice", "ta"}, {"bob", "tb"}} {
		e.ok(append(m, "add", "-l", "semantic", "-t", who.thread, "-r", who.res, "hello from "+who.res)...)
		e.ok(append(m, "add", "-l", "entity", "-t", who.thread, "-r", who.res, "--name", who.res, "--type", "person", "a user")...)
		e.ok(append(m, "add", "-l", "episodic", "-r", who.res, "--run", "r-"+who.res, "episode of "+who.res)...)
		// Thread-only records: the resource is known only through the thread.
		e.ok(append(m, "add", "-l", "observations", "-t", who.thread, who.res+" likes tea")...)
		e.ok(append(m, "add", "-l", "temporal", "-t", who.thread, "--subject", "user", "--predicate", "name", "--value", who.res)...)
	}
	e.ok(append(m, "add", "-l", "scratchpad", "--scope", "global", "--key", "motto", "global note")...)
	before := jsonLines(t, e.ok(append(m, "ls", "--json", "--all")...).stdout)
	if len(before) != 11 {
		t.Fatalf("%d records", len(before))
	}
	dry := e.ok(append(m, "rm", "--resource", "alice", "--dry-run", "--json")...)
	planned := jsonLines(t, dry.stdout)
	if len(planned) != 5 || !strings.Contains(dry.stderr, "would delete 5 memories") {
		t.Fatalf("dry run: %v\n%s", ids(planned), dry.stderr)
	}
	if n := len(jsonLines(t, e.ok(append(m, "ls", "--json", "--all")...).stdout)); n != 11 {
		t.Fatalf("dry run deleted: %d left", n)
	}
	// Bulk deletion wants a confirmation; stdin is not a terminal here.
	e.fails(2, "--yes", append(m, "rm", "--resource", "alice")...)
	if script, err := execLookPath("script"); err == nil {
		// On a terminal it asks; anything but y keeps everything.
		out := runUnderPTY(t, e.input("n\n"), script, bin+" --store "+store+" rm --resource alice")
		if !strings.Contains(out, "Delete 5 memories") || !strings.Contains(out, "aborted") {
			t.Errorf("confirmation: %q", out)
		}
		if n := len(jsonLines(t, e.ok(append(m, "ls", "--json", "--all")...).stdout)); n != 11 {
			t.Fatalf("declined rm deleted: %d left", n)
		}
	}
	out := e.ok(append(m, "rm", "--resource", "alice", "--yes")...)
	if !strings.Contains(out.stdout, "deleted 5 memories") {
		t.Errorf("rm: %s %s", out.stdout, out.stderr)
	}
	left := jsonLines(t, e.ok(append(m, "ls", "--json", "--all")...).stdout)
	if len(left) != 6 {
		t.Fatalf("left %v", ids(left))
	}
	for _, r := range left {
		if strings.Contains(r.Text, "alice") || r.Scope["resource"] == "alice" || r.Scope["thread"] == "ta" {
			t.Errorf("alice's memory survived: %+v", r)
		}
	}
	// One id; a missing id is "not found"; malformed ids are usage errors.
	e.ok(append(m, "rm", left[0].ID)...)
	e.fails(3, "no memory", append(m, "rm", left[0].ID)...)
	e.fails(2, "malformed id", append(m, "rm", strings.Repeat("x", 600))...)
	e.fails(2, "nothing to delete", append(m, "rm")...)
	e.fails(2, "not both", append(m, "rm", "x", "--layer", "entity")...)
}

func TestExportImportEmbedded(t *testing.T) {
	e := newEnv(t)
	a, b := filepath.Join(e.dir, "a"), filepath.Join(e.dir, "b")
	seed(t, e, a)
	exp := e.ok("--store", a, "export").stdout
	lines := strings.Split(strings.TrimSpace(exp), "\n")
	if len(lines) != 8 || !strings.HasPrefix(lines[0], `{"memctl_export":2,"embedder":"hash-64","dimension":64`) {
		t.Fatalf("export:\n%s", exp)
	}
	file := filepath.Join(e.dir, "m.jsonl")
	e.ok("--store", a, "export", file)
	raw, err := os.ReadFile(file)
	if err != nil || string(raw) != exp {
		t.Fatalf("export to a file differs from stdout: %v", err)
	}
	// Into a new store: created with the header's embedder.
	out := e.ok("--store", b, "import", file).stdout
	if !strings.Contains(out, "7 added") {
		t.Errorf("import: %s", out)
	}
	meta, err := embedded.ReadMeta(b)
	if err != nil || meta.Embedder != "hash-64" || meta.Dimension != 64 {
		t.Errorf("new store meta %+v %v", meta, err)
	}
	if got := e.ok("--store", b, "export").stdout; got != exp {
		t.Errorf("round trip differs:\n%s\nvs\n%s", got, exp)
	}
	// Idempotent.
	out = e.ok("--store", b, "import", file).stdout
	if !strings.Contains(out, "0 added, 0 updated, 7 unchanged") {
		t.Errorf("re-import: %s", out)
	}
	if got := e.ok("--store", b, "export").stdout; got != exp {
		t.Error("re-import changed the store")
	}
	// A line without vector or created_at: embedded, and re-importing it
	// changes nothing.
	extra := `{"id":"hand-1","layer":"observations","kind":"observation","scope":{"thread":"t9"},"text":"hand written"}` + "\n"
	e.input(extra).ok("--store", b, "import")
	var first record
	decodeJSON(t, e.ok("--store", b, "show", "hand-1", "--json", "--vectors").stdout, &first)
	if len(first.Vector) != 64 || first.Created.IsZero() {
		t.Fatalf("hand-written record: %+v", first)
	}
	out = e.input(extra).ok("--store", b, "import").stdout
	if !strings.Contains(out, "1 unchanged") {
		t.Errorf("re-import of a record without vector: %s", out)
	}
	// Filters export a subset.
	sub := e.ok("--store", a, "export", "--layer", "temporal", "--no-header").stdout
	if n := strings.Count(sub, "\n"); n != 2 || strings.Contains(sub, "memctl_export") {
		t.Errorf("filtered export: %s", sub)
	}
}

func TestImportBadLines(t *testing.T) {
	e := newEnv(t)
	a := filepath.Join(e.dir, "a")
	seed(t, e, a)
	lines := strings.Split(strings.TrimSpace(e.ok("--store", a, "export").stdout), "\n")
	// header, 2 good records, garbage, 1 good, a record of the wrong
	// dimension, 1 good.
	bad := []string{lines[0], lines[1], lines[2], `{"id": "x", "text": broken`, lines[3],
		`{"id":"short","text":"t","vector":[1,0],"created_at":"2026-01-01T00:00:00Z"}`, lines[4]}
	file := filepath.Join(e.dir, "bad.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(bad, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := filepath.Join(e.dir, "stop")
	e.fails(1, "line 4", "--store", stop, "import", file)
	if got := jsonLines(t, e.ok("--store", stop, "ls", "--json", "--all").stdout); len(got) != 2 {
		t.Errorf("stop mode imported %d records, want the 2 before line 4", len(got))
	}
	goOn := filepath.Join(e.dir, "keep")
	r := e.run("--store", goOn, "import", "--keep-going", file)
	errLines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code != 1 || len(errLines) != 3 || !strings.Contains(errLines[0], "line 4") ||
		!strings.Contains(errLines[1], "line 6") || !strings.Contains(errLines[1], "DIMENSION_MISMATCH") {
		t.Errorf("keep going: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "4 added") || !strings.Contains(r.stdout, "2 bad lines") {
		t.Errorf("keep going: %s", r.stdout)
	}
	if got := jsonLines(t, e.ok("--store", goOn, "ls", "--json", "--all").stdout); len(got) != 4 {
		t.Errorf("keep going imported %d records, want 4", len(got))
	}
	for _, s := range []string{r.stderr, r.stdout} {
		if strings.Contains(s, "goroutine") || strings.Contains(s, "panic") {
			t.Errorf("trace in output: %s", s)
		}
	}
	// A header of another dimension: nothing is imported.
	other := filepath.Join(e.dir, "other")
	e.ok("--store", other, "--embedder", "hash:32", "add", "-l", "observations", "-t", "t1", "x")
	e.fails(1, "dimension", "--store", other, "import", file)
	e.fails(3, "no file", "--store", other, "import", filepath.Join(e.dir, "missing.jsonl"))
}

func TestMigrateEmbedded(t *testing.T) {
	e := newEnv(t)
	a, b := filepath.Join(e.dir, "a"), filepath.Join(e.dir, "b")
	seed(t, e, a)
	// A subset first, then everything: the second run resumes.
	out := e.ok("migrate", "--from", a, "--to", b, "--layer", "temporal").stdout
	if !strings.Contains(out, "2 records, 2 written") || !strings.Contains(out, "verified 2/2") {
		t.Errorf("migrate subset: %s", out)
	}
	out = e.ok("--store", a, "migrate", "--to", b).stdout
	if !strings.Contains(out, "7 records, 5 written, 2 already there, verified 7/7 (target holds 7)") {
		t.Errorf("migrate: %s", out)
	}
	if e.ok("--store", a, "export").stdout != e.ok("--store", b, "export").stdout {
		t.Error("migrated store differs")
	}
	e.fails(2, "--to is required", "migrate", "--from", a)
	e.fails(2, "same store", "migrate", "--from", a, "--to", a)
}

func TestConfigPrecedence(t *testing.T) {
	e := newEnv(t)
	def := filepath.Join(e.dir, ".strata", "data")
	cfgStore, envStore, flagStore := filepath.Join(e.dir, "cfg"), filepath.Join(e.dir, "env"), filepath.Join(e.dir, "flag")
	for _, s := range []string{def, cfgStore, envStore, flagStore} {
		e.ok("--store", s, "--embedder", "hash:16", "add", "-l", "scratchpad", "--scope", "global", "--key", "where", filepath.Base(s))
	}
	source := func(e *env, args ...string) (string, string) {
		var st struct {
			Store  string `json:"store"`
			Source string `json:"store_source"`
		}
		decodeJSON(t, e.ok(append([]string{"stats", "--json"}, args...)...).stdout, &st)
		return st.Store, st.Source
	}
	if s, src := source(e); s != filepath.Join(".strata", "data") || !strings.HasPrefix(src, "default") {
		t.Errorf("default: %s (%s)", s, src)
	}
	cfgDir := filepath.Join(e.dir, "home", ".config", "strata")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "memctl.json"), []byte(`{"store": "`+cfgStore+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, src := source(e); s != cfgStore || !strings.HasPrefix(src, "config file") {
		t.Errorf("config: %s (%s)", s, src)
	}
	withEnv := e.with("STRATA_STORE=" + envStore)
	if s, src := source(withEnv); s != envStore || src != "$STRATA_STORE" {
		t.Errorf("env: %s (%s)", s, src)
	}
	if s, src := source(withEnv, "--store", flagStore); s != flagStore || src != "--store flag" {
		t.Errorf("flag: %s (%s)", s, src)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "memctl.json"), []byte(`{"stor": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	e.fails(2, "unknown field", "stats")
}

// TestProgress: quiet when stderr is not a terminal (every other test
// checks stderr too), drawn on a terminal.
func TestProgress(t *testing.T) {
	e := newEnv(t)
	a := filepath.Join(e.dir, "a")
	seed(t, e, a)
	file := filepath.Join(e.dir, "m.jsonl")
	e.ok("--store", a, "export", file)
	r := e.ok("--store", filepath.Join(e.dir, "b"), "import", file)
	if strings.ContainsAny(r.stderr, "\r\x1b") || strings.Contains(r.stderr, "import [") {
		t.Errorf("progress drawn on a pipe: %q", r.stderr)
	}
	script, err := execLookPath("script")
	if err != nil {
		t.Skip("no script(1) to give memctl a terminal")
	}
	cmd := bin + " --store " + filepath.Join(e.dir, "c") + " import " + file
	out := runUnderPTY(t, e, script, cmd)
	if !strings.Contains(out, "\r") || !strings.Contains(out, "import [") {
		t.Errorf("no progress on a terminal: %q", out)
	}
	out = runUnderPTY(t, e, script, cmd+" --no-progress")
	if strings.Contains(out, "import [") {
		t.Errorf("progress despite --no-progress: %q", out)
	}
}
