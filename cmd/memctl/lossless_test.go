package main_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/storage"
)

// todoState is the state of the test's todo layer.
type todoState struct {
	Items []string `json:"items"`
}

// runStatefulSession runs two turns of a real session on thread of
// resource alice with a thread-scoped layer that keeps a todo list in its
// state and a resource-scoped one that counts the turns, with
// RecordAssemblies on: the runtime writes layer state, the thread's
// binding and its recorded assemblies in st.
func runStatefulSession(t *testing.T, st storage.Store, thread string) {
	t.Helper()
	ctx := context.Background()
	todo := core.Layer[todoState]{
		ID: "todo", Slot: 60, Scope: core.ScopeThread, Placement: core.PlacementLive, Budget: core.Fixed(64),
		Hooks: core.Hooks[todoState]{Recall: func(_ context.Context, p core.RecallParams[todoState]) (core.Recall[todoState], error) {
			next := todoState{Items: append(slices.Clone(p.State.Items), "item of turn "+string(rune('0'+p.Turn)))}
			return core.Recall[todoState]{Items: []core.Item{core.DeveloperMessage("<todo>" + strings.Join(next.Items, "; ") + "</todo>")}, State: &next}, nil
		}},
	}
	turns := core.Layer[int]{
		ID: "turns", Slot: 70, Scope: core.ScopeResource, Placement: core.PlacementLive, Budget: core.Fixed(16),
		Hooks: core.Hooks[int]{Recall: func(_ context.Context, p core.RecallParams[int]) (core.Recall[int], error) {
			n := p.State + 1
			return core.Recall[int]{Items: []core.Item{core.DeveloperMessage("<turns/>")}, State: &n}, nil
		}},
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{todo, turns}, Store: st, RecordAssemblies: true, AssemblyRetention: 50,
		System: []core.Item{core.SystemMessage("You are a careful assistant.")}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: thread, ResourceID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"Hello", "What is on my list?"} {
		if err := s.Append(ctx, core.UserMessage(msg)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Assemble(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Record(ctx, core.AssistantMessage("Noted: "+msg)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
}

// stateEntry is a line of memctl state ls --json.
type stateEntry struct {
	Scope    string `json:"scope"`
	ScopeID  string `json:"scope_id"`
	Resource string `json:"resource"`
	Thread   string `json:"thread"`
	Layer    string `json:"layer"`
	Name     string `json:"name"`
	Revision int64  `json:"revision"`
	Bytes    int    `json:"bytes"`
	Assembly bool   `json:"assembly"`
}

// stateOf lists the state of a store through memctl, keyed by scope,
// scope id, layer and name, with each value's bytes (memctl state show).
func stateOf(t *testing.T, e *env, args ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(e.ok(append(args, "state", "ls", "--json")...).stdout))
	for dec.More() {
		var s stateEntry
		if err := dec.Decode(&s); err != nil {
			t.Fatal(err)
		}
		show := append(slices.Clone(args), "state", "show", s.Layer, s.Name, "--json", "--scope", s.Scope)
		if s.Thread != "" {
			show = append(show, "-t", s.Thread)
		}
		if s.Resource != "" {
			show = append(show, "-r", s.Resource)
		}
		var v struct {
			Value       json.RawMessage `json:"value"`
			ValueBase64 string          `json:"value_base64"`
		}
		decodeJSON(t, e.ok(show...).stdout, &v)
		raw, err := base64.StdEncoding.DecodeString(v.ValueBase64)
		if err != nil || v.Value != nil && !json.Valid(v.Value) {
			t.Fatalf("state show --json of %+v: %v %s", s, err, v.Value)
		}
		out[s.Scope+"/"+s.ScopeID+"/"+s.Layer+"/"+s.Name] = string(raw)
	}
	return out
}

// seedLive writes records and a real session's state into an embedded
// store, on thread.
func seedLive(t *testing.T, e *env, store, thread string) {
	t.Helper()
	e.ok("--store", store, "--embedder", "hash:64", "add", "-l", "observations", "-t", thread, "-r", "alice", "User is vegetarian")
	e.ok("--store", store, "--embedder", "hash:64", "add", "-l", "scratchpad", "--scope", "global", "--key", "motto", "be kind")
	env, err := embedded.Open(context.Background(), store, embedded.Options{Embedder: hashing.New(64)})
	if err != nil {
		t.Fatal(err)
	}
	runStatefulSession(t, env.State, thread)
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
}

func countAssemblies(t *testing.T, state map[string]string) int {
	t.Helper()
	n := 0
	for k := range state {
		if strings.Contains(k, "/_strata/") && !strings.HasSuffix(k, "/_strata/resource") {
			n++
		}
	}
	return n
}

// TestExportImportCarriesState: export writes the runtime's state (the
// layers' state, the thread binding, every recorded assembly) after the
// records and import writes it back byte for byte: the imported store
// has the same state, inspect reads the imported thread, and a re-import
// changes nothing.
func TestExportImportCarriesState(t *testing.T) {
	e := newEnv(t)
	a, b := filepath.Join(e.dir, "a"), filepath.Join(e.dir, "b")
	seedLive(t, e, a, "main")
	want := stateOf(t, e, "--store", a)
	if len(want) < 5 || countAssemblies(t, want) < 3 {
		t.Fatalf("the session wrote too little state to test with: %v", want)
	}
	if !strings.Contains(want["thread/alice\x1fmain/todo/state"], "item of turn 1") {
		t.Fatalf("todo state: %q", want["thread/alice\x1fmain/todo/state"])
	}
	file := filepath.Join(e.dir, "m.jsonl")
	r := e.ok("--store", a, "export", file)
	if !strings.Contains(r.stderr, "exported 2 memories and ") || !strings.Contains(r.stderr, "recorded assemblies") {
		t.Errorf("export: %s", r.stderr)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if !strings.HasPrefix(lines[0], `{"memctl_export":2,`) || strings.Count(string(raw), `{"state":`) != len(want) {
		t.Errorf("export holds %d state lines, want %d; header %s", strings.Count(string(raw), `{"state":`), len(want), lines[0])
	}
	out := e.ok("--store", b, "import", file).stdout
	if !strings.Contains(out, "2 added") || !strings.Contains(out, "layer state in "+filepath.Join(b, "state")+": ") {
		t.Errorf("import: %s", out)
	}
	if got := stateOf(t, e, "--store", b); !mapsEqual(got, want) {
		t.Errorf("imported state differs:\n got %v\nwant %v", got, want)
	}
	if out := e.ok("--store", b, "inspect", "main").stdout; !strings.Contains(out, "Thread main of resource alice") || !strings.Contains(out, "item of turn") {
		t.Errorf("inspect of the imported thread:\n%s", out)
	}
	if out := e.ok("--store", b, "inspect", "main", "--list").stdout; !strings.Contains(out, "TURN") {
		t.Errorf("inspect --list of the imported thread:\n%s", out)
	}
	var again map[string]int
	decodeJSON(t, e.ok("--store", b, "--json", "import", file).stdout, &again)
	if again["added"] != 0 || again["updated"] != 0 || again["state_added"] != 0 || again["state_updated"] != 0 || again["state_unchanged"] != len(want) {
		t.Errorf("re-import is not a no-op: %v", again)
	}

	// --no-state and --no-assemblies.
	c := filepath.Join(e.dir, "c")
	e.ok("--store", c, "import", "--no-assemblies", file)
	got := stateOf(t, e, "--store", c)
	if countAssemblies(t, got) != 0 || len(got) != len(want)-countAssemblies(t, want) {
		t.Errorf("--no-assemblies imported %v", got)
	}
	d := filepath.Join(e.dir, "d")
	if out := e.ok("--store", d, "import", "--no-state", file).stdout; !strings.Contains(out, "state values left out") {
		t.Errorf("import --no-state: %s", out)
	}
	if got := e.ok("--store", d, "state", "ls", "--json").stdout; got != "" {
		t.Errorf("--no-state imported %s", got)
	}
	// A filtered export has no state, and says so.
	r = e.ok("--store", a, "export", "-t", "main")
	if strings.Contains(r.stdout, `{"state":`) || !strings.Contains(r.stderr, "no layer state exported") {
		t.Errorf("filtered export: %s / %s", r.stdout, r.stderr)
	}
	// State lines for a store with no state store: refused before anything
	// is written.
	bare := "chromem://" + filepath.Join(e.dir, "bare") + "?collection=memories"
	e.fails(2, "--no-state to import the records only", "--store", bare, "import", file)
	if got := e.ok("--store", bare, "ls", "--json").stdout; got != "" {
		t.Errorf("the refused import wrote records: %s", got)
	}
	// One state key on two lines is refused like one id.
	dup := string(raw) + lines[len(lines)-1] + "\n"
	e.input(dup).fails(1, "state key", "--store", filepath.Join(e.dir, "e"), "import")
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// pgSchema returns the test database's URL with a fresh schema for both
// the collection and the state table (search_path), dropped at the end:
// the state store of a database is shared by every collection in it.
func pgSchema(t *testing.T, dsn string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "memctl_state_" + hex.EncodeToString(b)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer pool.Close()
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
		_, _ = pool.Exec(context.Background(), "DELETE FROM strata_schema_migrations WHERE component LIKE $1", "%"+schema+"%")
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("collection", "memories")
	q.Set("schema", schema)
	q.Set("search_path", schema+",public")
	u.RawQuery = q.Encode()
	return u.String()
}

// TestMigrateCarriesState: migrate moves the layer state and the recorded
// assemblies with the records, embedded -> postgres -> embedded, verifies
// them, and a re-run writes nothing; a target without a state store is
// refused before anything is written.
func TestMigrateCarriesState(t *testing.T) {
	dsn := pgDSN(t)
	e := newEnv(t)
	a := filepath.Join(e.dir, "a")
	seedLive(t, e, a, "main")
	want := stateOf(t, e, "--store", a)
	pg := pgSchema(t, dsn)

	out := e.ok("--store", a, "migrate", "--to", pg).stdout
	n := len(want)
	if !strings.Contains(out, "verified 2/2") || !strings.Contains(out, "layer state: ") || !strings.Contains(out, " written, 0 already there, verified ") {
		t.Errorf("migrate: %s", out)
	}
	var res struct {
		Source   int `json:"source"`
		Verified int `json:"verified"`
		State    *struct {
			Keys, Assemblies, Written, Skipped, Verified int
		} `json:"state"`
	}
	decodeJSON(t, e.ok("--store", a, "--json", "migrate", "--to", pg).stdout, &res)
	if res.State == nil || res.State.Keys != n || res.State.Written != 0 || res.State.Skipped != n || res.State.Verified != n ||
		res.State.Assemblies != countAssemblies(t, want) {
		t.Errorf("re-run of migrate: %+v %+v", res, res.State)
	}
	if got := stateOf(t, e, "--store", pg); !mapsEqual(got, want) {
		t.Errorf("state in postgres differs:\n got %v\nwant %v", got, want)
	}
	if out := e.ok("--store", pg, "inspect", "main").stdout; !strings.Contains(out, "Thread main of resource alice") {
		t.Errorf("inspect on postgres after migrate:\n%s", out)
	}
	// And back to a new embedded directory.
	back := filepath.Join(e.dir, "back")
	if out := e.ok("--store", pg, "migrate", "--to", back).stdout; !strings.Contains(out, "verified 2/2") || !strings.Contains(out, "layer state:") {
		t.Errorf("migrate back: %s", out)
	}
	if got := stateOf(t, e, "--store", back); !mapsEqual(got, want) {
		t.Errorf("state after the round trip differs:\n got %v\nwant %v", got, want)
	}
	// A target that keeps no state: refused, nothing migrated.
	bare := "chromem://" + filepath.Join(e.dir, "bare") + "?collection=memories"
	e.fails(2, "--to-state", "--store", a, "migrate", "--to", bare)
	if got := e.ok("--store", bare, "ls", "--json").stdout; got != "" {
		t.Errorf("the refused migrate wrote records: %s", got)
	}
	// --to-state names one.
	side := filepath.Join(e.dir, "side-state")
	if out := e.ok("--store", a, "migrate", "--to", bare, "--to-state", side).stdout; !strings.Contains(out, "layer state:") {
		t.Errorf("migrate --to-state: %s", out)
	}
	if got := stateOf(t, e, "--store", bare, "--state", side); !mapsEqual(got, want) {
		t.Errorf("state in --to-state differs:\n got %v\nwant %v", got, want)
	}
}

// TestTablesFit80Columns: every table fits an 80-column terminal by
// default, shortening text and leaving columns out; --wide shows every
// column whole.
func TestTablesFit80Columns(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	seed(t, e, store)
	seedLive(t, e, store, "t1")
	long := strings.Repeat("a long memory text that goes on ", 6)
	e.ok("--store", store, "--embedder", "hash:64", "add", "-l", "scratchpad", "-t", "a-rather-long-thread-name", "-r", "a-rather-long-resource", "--key", "k", long)
	m := []string{"--store", store}
	for _, args := range [][]string{
		{"ls"}, {"ls", "-A"}, {"search", "memory"}, {"state", "ls"}, {"inspect", "t1"}, {"inspect", "t1", "--list"},
		{"rm", "--resource", "alice", "--dry-run"},
		{"--embedder", "hash:64", "add", "-l", "scratchpad", "-t", "a-rather-long-thread-name", "--key", "k2", long},
	} {
		out := e.ok(append(m, args...)...).stdout
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if w := textWidth(l); w > 80 {
				t.Errorf("memctl %s: a line of %d columns: %q", strings.Join(args, " "), w, l)
			}
		}
	}
	wide := e.ok(append(m, "ls", "-w")...).stdout
	if !strings.Contains(wide, "KIND") || !strings.Contains(wide, "CREATED") || !strings.Contains(wide, strings.TrimSpace(long)) ||
		!strings.Contains(wide, "thread=a-rather-long-thread-name resource=a-rather-long-resource") {
		t.Errorf("ls -w does not show every column whole:\n%s", wide)
	}
	if out := e.ok(append(m, "inspect", "t1", "--wide")...).stdout; !strings.Contains(out, "PLACEMENT") || !strings.Contains(out, "SLOT") {
		t.Errorf("inspect --wide lacks columns:\n%s", out)
	}
}
