package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/internal/procinfo"
	"github.com/stratamem/strata/vectorstore"
)

// TestLiveStore: while a process (here the test itself, standing for an
// agent) holds an embedded store and writes to it, memctl's read commands
// read a snapshot of it, which holds at least every write acknowledged
// before they started, and its writing commands fail naming the holder
// (pid and command) and what to do; the state store is read and written
// beside the holder.
func TestLiveStore(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	seedLive(t, e, store, "main")
	ctx := context.Background()
	env, err := embedded.Open(ctx, store, embedded.Options{Embedder: hashing.New(64)})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	var acked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			text := fmt.Sprintf("live write %d", i)
			vs, err := env.Memory.Embedder.Embed(ctx, []string{text})
			if err == nil {
				err = env.Memory.Records.Upsert(ctx, vectorstore.Record{ID: fmt.Sprintf("live-%05d", i), Layer: "observations",
					Kind: "observation", Scope: vectorstore.Scope{Thread: "main", Resource: "alice"}, Text: text, Vector: vs[0]})
			}
			if err != nil {
				t.Error(err)
				return
			}
			acked.Add(1)
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	holder := "process " + strconv.Itoa(os.Getpid()) + " (" + procinfo.Field("/proc/self/status", "Name")
	for round := range 3 {
		before := acked.Load()
		r := e.ok("--store", store, "ls", "--all", "--json")
		if !strings.Contains(r.stderr, "is open in "+holder) || !strings.Contains(r.stderr, "reading a snapshot") {
			t.Errorf("ls on a held store: stderr %q", r.stderr)
		}
		live := 0
		for _, rec := range jsonLines(t, r.stdout) {
			if strings.HasPrefix(rec.ID, "live-") {
				live++
			}
		}
		if int64(live) < before {
			t.Errorf("round %d: the snapshot holds %d live writes, %d were acknowledged before it", round, live, before)
		}
	}
	if out := e.ok("--store", store, "search", "live write").stdout; !strings.Contains(out, "live write") {
		t.Errorf("search on a held store:\n%s", out)
	}
	var st map[string]any
	decodeJSON(t, e.ok("--store", store, "stats", "--json").stdout, &st)
	if src, _ := st["embedder_source"].(string); !strings.Contains(src, filepath.Join(store, "strata.json")) {
		t.Errorf("stats names the snapshot, not the store: %v", st["embedder_source"])
	}
	if out := e.ok("--store", store, "export").stdout; !strings.Contains(out, `"live-00000"`) || !strings.Contains(out, `{"state":`) {
		t.Errorf("export of a held store lacks records or state")
	}
	// Writing commands fail, naming the holder.
	for _, args := range [][]string{
		{"--embedder", "hash:64", "add", "-l", "observations", "-t", "t9", "x"},
		{"rm", "live-00000"},
		{"edit", "live-00000", "--text", "changed"},
	} {
		// (not e.fails: the holder's command line, the test binary's,
		// holds -test.paniconexit0)
		r := e.run(append([]string{"--store", store}, args...)...)
		if msg := strings.TrimSpace(r.stderr); r.code != 1 || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "memctl: store ") ||
			!strings.Contains(msg, "is open in "+holder) || !strings.Contains(msg, "read a snapshot of it meanwhile") {
			t.Errorf("memctl %v: exit %d, stderr %s", args, r.code, r.stderr)
		}
	}
	// The state store is read and written beside the holder.
	if out := e.ok("--store", store, "state", "ls").stdout; !strings.Contains(out, "todo") {
		t.Errorf("state ls on a held store:\n%s", out)
	}
	e.input(`{"items":["edited beside the agent"]}`).ok("--store", store, "state", "edit", "todo", "-t", "main", "-r", "alice", "--file", "-")
	if out := e.ok("--store", store, "inspect", "main").stdout; !strings.Contains(out, "Thread main") {
		t.Errorf("inspect on a held store:\n%s", out)
	}
	// Nothing of the live directory was touched by the snapshots.
	entries, err := os.ReadDir(filepath.Join(store, "records", embedded.Collection))
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range entries {
		if strings.Contains(de.Name(), "torn") || strings.Contains(de.Name(), "damaged") {
			t.Errorf("the live collection holds %s", de.Name())
		}
	}
}

// TestStateCommands: state ls, show, edit and rm, with their
// compare-and-swap and their refusals.
func TestStateCommands(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	seedLive(t, e, store, "main")
	m := []string{"--store", store}
	key := []string{"todo", "-t", "main", "-r", "alice"}

	out := e.ok(append(m, "state", "ls")...).stdout
	for _, want := range []string{"SCOPE", "RESOURCE", "THREAD", "todo", "turns", "_strata", "assembl", "resource"} {
		if !strings.Contains(out, want) {
			t.Errorf("state ls lacks %q:\n%s", want, out)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if textWidth(l) > 80 {
			t.Errorf("state ls is wider than 80 columns: %q", l)
		}
	}
	if out := e.ok(append(m, "state", "ls", "--no-assemblies", "-r", "alice")...).stdout; strings.Contains(out, "assembl") || !strings.Contains(out, "turns") {
		t.Errorf("state ls --no-assemblies -r alice:\n%s", out)
	}
	if out := e.ok(append(m, "state", "ls", "-l", "turns")...).stdout; strings.Contains(out, "todo") || !strings.Contains(out, "turns") {
		t.Errorf("state ls -l turns:\n%s", out)
	}
	show := e.ok(append(append(m, "state", "show"), key...)...).stdout
	for _, want := range []string{"Key:", "todo/state of thread \"main\" of resource \"alice\"", "Revision:", "\"items\": [", "item of turn 1"} {
		if !strings.Contains(show, want) {
			t.Errorf("state show lacks %q:\n%s", want, show)
		}
	}
	var j struct {
		Revision int64           `json:"revision"`
		Value    json.RawMessage `json:"value"`
		Thread   string          `json:"thread"`
		Resource string          `json:"resource"`
	}
	decodeJSON(t, e.ok(append(append(m, "--json", "state", "show"), key...)...).stdout, &j)
	if j.Revision == 0 || j.Thread != "main" || j.Resource != "alice" || !strings.Contains(string(j.Value), "item of turn 1") {
		t.Errorf("state show --json: %+v", j)
	}
	// edit --file: a compare-and-swap; a stale --if-revision writes nothing.
	edit := append(append(m, "state", "edit"), key...)
	stale := strconv.FormatInt(j.Revision-1, 10)
	e.input(`{"items":["stale"]}`).fails(1, "revision conflict", append(edit, "--file", "-", "--if-revision", stale)...)
	e.input("not json").fails(2, "must stay JSON", append(edit, "--file", "-")...)
	if out := e.input(`{"items": ["buy milk"]}`).ok(append(edit, "--file", "-")...).stdout; !strings.Contains(out, "updated (revision") {
		t.Errorf("state edit: %s", out)
	}
	if out := e.input(`{ "items" : [ "buy milk" ] }`).ok(append(edit, "--file", "-")...).stdout; !strings.Contains(out, "unchanged") {
		t.Errorf("state edit of the same JSON: %s", out)
	}
	decodeJSON(t, e.ok(append(append(m, "--json", "state", "show"), key...)...).stdout, &j)
	if string(j.Value) != `{"items":["buy milk"]}` {
		t.Errorf("after edit: %s", j.Value)
	}
	// The runtime's keys.
	e.fails(2, "not editable", append(m, "state", "edit", "_strata", "last_assembly", "-t", "main", "-r", "alice", "--file", "-")...)
	e.fails(2, "--force", append(m, "state", "rm", "_strata", "resource", "-t", "main")...)
	// Scope and key errors.
	e.fails(2, "name the key's scope", append(m, "state", "show", "todo")...)
	e.fails(3, "no state todo/nope", append(m, "state", "show", "todo", "nope", "-t", "main", "-r", "alice")...)
	e.fails(2, "--scope resource needs --resource and no --thread", append(m, "state", "show", "turns", "--scope", "resource", "-t", "x", "-r", "alice")...)
	// rm: dry run, stale revision, then for real.
	rm := append(append(m, "state", "rm"), key...)
	if out := e.ok(append(rm, "--dry-run")...).stdout; !strings.Contains(out, "would be deleted") {
		t.Errorf("state rm --dry-run: %s", out)
	}
	e.fails(1, "nothing deleted", append(rm, "--if-revision", "1")...)
	if out := e.ok(rm...).stdout; !strings.Contains(out, "deleted") {
		t.Errorf("state rm: %s", out)
	}
	e.fails(3, "no state", append(append(m, "state", "show"), key...)...)
	// A recorded assembly can go without --force.
	var asm *stateEntry
	dec := json.NewDecoder(strings.NewReader(e.ok(append(m, "--json", "state", "ls", "-t", "main", "-r", "alice")...).stdout))
	for dec.More() {
		var s stateEntry
		if err := dec.Decode(&s); err != nil {
			t.Fatal(err)
		}
		if s.Assembly && asm == nil {
			asm = &s
		}
	}
	if asm == nil {
		t.Fatal("state ls --json marks no key as a recorded assembly")
	}
	e.ok(append(m, "state", "rm", "_strata", asm.Name, "-t", "main", "-r", "alice")...)
	e.fails(3, "no state", append(m, "state", "show", "_strata", asm.Name, "-t", "main", "-r", "alice")...)
	e.fails(2, "--state", "--store", "qdrant://127.0.0.1:1", "state", "ls")
}

// TestEditorKeepsNoLock: memctl edit and memctl state edit close the store
// while $EDITOR runs, so another process (here a second memctl run by the
// editor, standing for an agent) can open it and write meanwhile; the
// edit is then a compare-and-swap that fails and keeps the other write.
func TestEditorKeepsNoLock(t *testing.T) {
	script, err := execLookPath("script")
	if err != nil {
		t.Skip("no script(1) to give memctl a terminal")
	}
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	seedLive(t, e, store, "main")
	var obs []record
	for _, r := range jsonLines(t, e.ok("--store", store, "ls", "--json", "-l", "observations").stdout) {
		obs = append(obs, r)
	}
	if len(obs) != 1 {
		t.Fatalf("observations: %v", ids(obs))
	}
	id := obs[0].ID
	writeScript := func(name, body string) string {
		p := filepath.Join(e.dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The editor writes the record through another memctl first, then
	// edits the file it was given.
	editor := writeScript("editor.sh", fmt.Sprintf("%s --store %s edit %s --text 'written meanwhile' >/dev/null || exit 1\nsed -i 's/vegetarian/vegan/' \"$1\"\n",
		bin, store, id))
	out := runUnderPTY(t, e.with("EDITOR="+editor), script, bin+" --store "+store+" edit "+id)
	if !strings.Contains(out, "changed in") || !strings.Contains(out, "nothing written") {
		t.Errorf("edit while the record was written meanwhile:\n%s", out)
	}
	var r record
	decodeJSON(t, e.ok("--store", store, "show", id, "--json").stdout, &r)
	if r.Text != "written meanwhile" {
		t.Errorf("the write made while the editor ran is lost: %q", r.Text)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "meanwhile.json"), []byte(`{"items":["meanwhile"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stateEditor := writeScript("state-editor.sh", fmt.Sprintf("%s --store %s state edit todo -t main -r alice --file %s >/dev/null || exit 1\nsed -i 's/item of turn 0/edited/' \"$1\"\n",
		bin, store, filepath.Join(e.dir, "meanwhile.json")))
	out = runUnderPTY(t, e.with("EDITOR="+stateEditor), script, bin+" --store "+store+" state edit todo -t main -r alice")
	if !strings.Contains(out, "changed in") || !strings.Contains(out, "nothing written") {
		t.Errorf("state edit while the value was written meanwhile:\n%s", out)
	}
	if got := e.ok("--store", store, "--json", "state", "show", "todo", "-t", "main", "-r", "alice").stdout; !strings.Contains(got, "meanwhile") {
		t.Errorf("the state written while the editor ran is lost: %s", got)
	}
	// Without a write meanwhile the editor's change lands.
	plain := writeScript("plain.sh", "sed -i 's/meanwhile/from the editor/' \"$1\"\n")
	runUnderPTY(t, e.with("EDITOR="+plain), script, bin+" --store "+store+" state edit todo -t main -r alice")
	if got := e.ok("--store", store, "--json", "state", "show", "todo", "-t", "main", "-r", "alice").stdout; !strings.Contains(got, "from the editor") {
		t.Errorf("state edit in $EDITOR: %s", got)
	}
}

// textWidth is the number of runes of s (memctl's tables hold no wide
// characters here).
func textWidth(s string) int { return utf8.RuneCountInString(s) }
