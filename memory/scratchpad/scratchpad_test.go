package scratchpad_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/vectorstore"
)

var t0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

// start runs a session with anchoring off, so every view shows the
// layer's fresh output in one band.
func start(t *testing.T, l *scratchpad.Layer, thread string) *core.Session {
	t.Helper()
	return memtest.Session(t, core.Config{Layers: []core.AnyLayer{l}, Cache: core.CacheConfig{Disabled: true}}, core.RunOptions{ThreadID: thread, ResourceID: "user-1"})
}

// rendered is the layer's block in a fresh view, "" when it rendered
// nothing.
func rendered(t *testing.T, s *core.Session) string {
	t.Helper()
	return memtest.Tagged(t, s, "<scratchpad>")
}

func call(id, args string) core.Item { return core.FunctionCall(id, "scratchpad/update", args) }

func snapshot(t *testing.T, s *core.Session) map[string]string {
	t.Helper()
	st, ok := core.State[scratchpad.State](s, "scratchpad")
	if !ok {
		t.Fatal("no scratchpad state")
	}
	return st.Snapshot()
}

func countNotes(t *testing.T, store *memory.Store) int {
	t.Helper()
	n, err := store.Records.Count(context.Background(), vectorstore.Filter{Layer: "scratchpad", Kind: scratchpad.KindNote})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestUpdateRendersAndPersistsRecords(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	s := start(t, memtest.Layer(t, scratchpad.New, store, scratchpad.Options{}), "thread-1")
	if got := rendered(t, s); got != "" {
		t.Fatalf("empty scratchpad rendered %q", got)
	}
	if err := s.Append(ctx, core.UserMessage("plan the migration")); err != nil {
		t.Fatal(err)
	}
	c := call("c1", `{"set": {"plan": "1. dump <db>\n2. restore", "owner": "Ada"}}`)
	if err := s.Record(ctx, c); err != nil {
		t.Fatal(err)
	}
	out, err := s.ExecuteTool(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	want := `ok: set "owner", "plan"; the scratchpad holds 2 keys.`
	if out.Output != want || out.CallID != "c1" {
		t.Fatalf("output = %+v, want %q", out, want)
	}
	got := rendered(t, s)
	wantBlock := "<scratchpad>\n\"owner\": \"Ada\"\n\"plan\": \"1. dump <db>\\n2. restore\"\n</scratchpad>"
	if got != wantBlock {
		t.Fatalf("rendered\n%s\nwant\n%s", got, wantBlock)
	}

	recs, _, err := store.Records.List(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Layer: "scratchpad"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	for _, r := range recs {
		if r.Kind != "note" || r.Scope.Thread != "thread-1" || !r.CreatedAt.Equal(t0) || r.Metadata["key"] == "" ||
			r.Text != r.Metadata["key"]+": "+snapshot(t, s)[r.Metadata["key"]] {
			t.Fatalf("record %+v", r)
		}
	}
	full, err := store.Records.Get(ctx, recs[0].ID)
	if err != nil || len(full.Vector) != memtest.Dimension {
		t.Fatalf("record not embedded: %v", err)
	}

	// Merge and delete in one call; deleting an absent key is reported.
	clock.Advance(time.Minute)
	c2 := call("c2", `{"set": {"owner": "Ada", "status": "dumping"}, "delete": ["plan", "nope"]}`)
	out, _ = s.ExecuteTool(ctx, c2)
	want = `ok: set "status"; unchanged "owner"; deleted "plan"; not present (nothing to delete) "nope"; the scratchpad holds 2 keys.`
	if out.Output != want {
		t.Fatalf("output = %q, want %q", out.Output, want)
	}
	if snap := snapshot(t, s); !reflect.DeepEqual(snap, map[string]string{"owner": "Ada", "status": "dumping"}) {
		t.Fatalf("state = %v", snap)
	}
	if n := countNotes(t, store); n != 2 {
		t.Fatalf("%d records after delete, want 2", n)
	}
	// The unchanged key was not rewritten.
	st, _ := core.State[scratchpad.State](s, "scratchpad")
	if u, _ := st.Updated("owner"); !u.Equal(t0) {
		t.Fatalf("unchanged key rewritten at %v", u)
	}
	if u, _ := st.Updated("status"); !u.Equal(t0.Add(time.Minute)) {
		t.Fatalf("status updated at %v", u)
	}
}

func TestRoutedCallIsTheOnlyWritePath(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	s := start(t, memtest.Layer(t, scratchpad.New, store, scratchpad.Options{}), "thread-1")

	// Recording the model's call applies nothing: a steering layer has not
	// been asked yet.
	c := call("c1", `{"set": {"step": "one"}}`)
	if err := s.Record(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, s); len(got) != 0 {
		t.Fatalf("Record applied the call: %v", got)
	}
	if n := countNotes(t, store); n != 0 {
		t.Fatalf("Record wrote %d records", n)
	}
	// Routing it applies it and answers with the result.
	clock.Advance(time.Hour)
	want := `ok: set "step"; the scratchpad holds 1 key.`
	out, err := s.ExecuteTool(ctx, c)
	if err != nil || out.Output != want || out.CallID != "c1" {
		t.Fatalf("routed output %+v, %v", out, err)
	}
	if got := snapshot(t, s); got["step"] != "one" {
		t.Fatalf("routed call not applied: %v", got)
	}
	if err := s.Append(ctx, out); err != nil {
		t.Fatal(err)
	}
	// A replay of the call id gets the first output and writes nothing.
	clock.Advance(time.Hour)
	out, err = s.ExecuteTool(ctx, call("c1", `{"set": {"step": "replayed"}}`))
	if err != nil || out.Output != want {
		t.Fatalf("replayed output %q, %v", out.Output, err)
	}
	st, _ := core.State[scratchpad.State](s, "scratchpad")
	if v, _ := st.Get("step"); v != "one" {
		t.Fatalf("replay applied: step = %q", v)
	}
	if u, _ := st.Updated("step"); !u.Equal(t0.Add(time.Hour)) {
		t.Fatalf("replay rewrote the key at %v", u)
	}
	rec, _, err := store.Records.List(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Layer: "scratchpad"}})
	if err != nil || len(rec) != 1 || !rec[0].CreatedAt.Equal(t0.Add(time.Hour)) || rec[0].Text != "step: one" {
		t.Fatalf("records %v %v", rec, err)
	}

	// A rejected call: recording it leaves no diagnostic (nothing ran),
	// routing it gives the model the reason.
	bad := call("c4", `{"set": {"step": 4}}`)
	if err := s.Record(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if diags := s.Diagnostics(); len(diags) != 0 {
		t.Fatalf("diagnostics %+v", diags)
	}
	out, err = s.ExecuteTool(ctx, bad)
	if err != nil || out.Output != `error: invalid arguments for scratchpad/update: set["step"]: the value must be a string, got a number` {
		t.Fatalf("rejected output %q, %v", out.Output, err)
	}
}

// The usual host loop: Record the model's items, ask BeforeToolCall, then
// ExecuteTool what is allowed. A denied write leaves the notes unchanged.
func TestSteeringDenialLeavesNotesUnchanged(t *testing.T) {
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	// A policy layer denies every call touching the "secret" key.
	rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{memtest.Deny("secret", "no secrets in notes"), memtest.Layer(t, scratchpad.New, store, scratchpad.Options{})},
		Cache: core.CacheConfig{Disabled: true}})
	s := memtest.Start(t, rt, core.RunOptions{ThreadID: "thread-1"})
	if out := memtest.Turn(t, s, call("c1", `{"set": {"plan": "ship it"}}`)); out.Output != `ok: set "plan"; the scratchpad holds 1 key.` {
		t.Fatalf("allowed output %q", out.Output)
	}
	out := memtest.Turn(t, s, call("c2", `{"set": {"secret": "hunter2"}, "delete": ["plan"]}`))
	if out.Output != "Call to scratchpad/update denied by policy: no secrets in notes" {
		t.Fatalf("denied output %q", out.Output)
	}
	if got := snapshot(t, s); !reflect.DeepEqual(got, map[string]string{"plan": "ship it"}) {
		t.Fatalf("denied call changed the notes: %v", got)
	}
	if n := countNotes(t, store); n != 1 {
		t.Fatalf("%d records after the denied call, want 1", n)
	}
	if got := rendered(t, s); got != "<scratchpad>\n\"plan\": \"ship it\"\n</scratchpad>" {
		t.Fatalf("rendered %q", got)
	}
}

func TestBadArgumentsRejectedStateUnchanged(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	l := memtest.Layer(t, scratchpad.New, store, scratchpad.Options{MaxKeys: 3})
	s := start(t, l, "thread-1")
	if _, err := s.ExecuteTool(ctx, call("seed", `{"set": {"a": "1", "b": "2"}}`)); err != nil {
		t.Fatal(err)
	}
	manyKeys := map[string]string{}
	for i := 0; i < 101; i++ {
		manyKeys[fmt.Sprint("k", i)] = "v"
	}
	many, _ := json.Marshal(map[string]any{"set": manyKeys})
	huge, _ := json.Marshal(map[string]any{"set": map[string]string{"big": strings.Repeat("x", 8<<10+1)}})
	cases := []struct{ name, args, want string }{
		{"invalid JSON", `{"set": {"a": }`, "arguments must be a JSON object (invalid JSON"},
		{"not an object", `["a"]`, "arguments must be a JSON object (got an array)"},
		{"trailing data", `{"set": {"a": "x"}} {}`, "trailing data"},
		{"trailing brace", `{"set": {"a": "x"}}}`, "trailing data"},
		{"trailing bracket", `{"set": {"a": "x"}}]`, "trailing data"},
		{"unknown field", `{"put": {"a": "x"}}`, `unknown field "put"`},
		{"flat keys", `{"a": "x"}`, `unknown field "a": use {"set"`},
		{"set not an object", `{"set": ["a"]}`, `"set" must be an object`},
		{"value a number", `{"set": {"a": 1}}`, `set["a"]: the value must be a string, got a number`},
		{"value an object", `{"set": {"a": {"b": "c"}}}`, `got an object`},
		{"delete a string", `{"delete": "a"}`, `"delete" must be an array of keys (strings), got a string`},
		{"delete of numbers", `{"delete": [1]}`, "delete[0]: must be a string, got a number"},
		{"empty key", `{"set": {"  ": "x"}}`, "set: empty key"},
		{"control char key", `{"set": {"a\nb": "x"}}`, "control character"},
		{"long key", `{"set": {"` + strings.Repeat("k", 257) + `": "x"}}`, "the limit is 256"},
		{"value over 8 KiB", string(huge), `set["big"]: the value is 8193 bytes, the limit is 8192`},
		{"NUL in value", `{"set": {"a": "x\u0000y"}}`, "NUL"},
		{"both set and deleted", `{"set": {"a": "x"}, "delete": ["a"]}`, `key "a" is both set and deleted`},
		{"nothing to do", `{}`, "nothing to do"},
		{"empty arguments", ``, "nothing to do"},
		{"over 100 keys", string(many), "101 keys in one call, the limit is 100"},
		{"over MaxKeys", `{"set": {"c": "3", "d": "4"}}`, "would hold 4 keys, the limit is 3"},
		{"arguments over 1 MiB", `{"set": {"a": "` + strings.Repeat("x", 1<<20) + `"}}`, "the limit is 1048576"},
	}
	before := snapshot(t, s)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := s.ExecuteTool(ctx, call(fmt.Sprint("bad", i), tc.args))
			if err != nil {
				t.Fatalf("CallFunction error: %v", err)
			}
			if !strings.HasPrefix(out.Output, "error: invalid arguments for scratchpad/update: ") || !strings.Contains(out.Output, tc.want) {
				t.Fatalf("output %q, want it to contain %q", out.Output, tc.want)
			}
			if got := snapshot(t, s); !reflect.DeepEqual(got, before) {
				t.Fatalf("state changed: %v", got)
			}
			if n := countNotes(t, store); n != 2 {
				t.Fatalf("%d records, want 2", n)
			}
			// The same call through the function directly: typed errors.
			st, _ := core.State[scratchpad.State](s, "scratchpad")
			r, err := l.Functions[0].Call(ctx, core.CallParams[scratchpad.State]{
				Run: s.Run(), State: st, Call: call("direct", tc.args)})
			var ae *core.ArgumentError
			if !errors.As(err, &ae) || ae.Function != "scratchpad/update" || !errors.Is(err, scratchpad.ErrInvalidUpdate) || r.State != nil {
				t.Fatalf("direct call: %v (%T), state %v", err, err, r.State)
			}
		})
	}
	for _, d := range s.Diagnostics() {
		if d.Kind != core.KindRejected {
			t.Fatalf("diagnostic %+v", d)
		}
	}
}

func TestBudgetKeepsRecentKeys(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	l := memtest.Layer(t, scratchpad.New, store, scratchpad.Options{Common: memory.Common{Budget: core.Fixed(60)}})
	s := start(t, l, "thread-1")
	for i := 0; i < 20; i++ {
		clock.Advance(time.Second)
		args := fmt.Sprintf(`{"set": {"key%02d": "value number %d of the scratchpad"}}`, i, i)
		if _, err := s.ExecuteTool(ctx, call(fmt.Sprint("c", i), args)); err != nil {
			t.Fatal(err)
		}
	}
	got := rendered(t, s) // fails on an over-budget diagnostic
	v := s.LastUsage().Layer("scratchpad")
	if v.Tokens > 60 || v.Truncated != 0 || v.Tokens == 0 {
		t.Fatalf("usage %+v", v)
	}
	if !strings.Contains(got, `"key19"`) || strings.Contains(got, `"key00"`) || !strings.Contains(got, "older notes not shown for space") {
		t.Fatalf("rendered %q", got)
	}
	// Shown keys are sorted.
	var keys []string
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, `"`) {
			keys = append(keys, line[:strings.Index(line, ":")])
		}
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Fatalf("keys not sorted: %v", keys)
		}
	}
	if again := rendered(t, s); again != got {
		t.Fatal("same state rendered different bytes")
	}
}

func TestRenderDeltaPublishesOnlyChangedKeys(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	l := memtest.Layer(t, scratchpad.New, store, scratchpad.Options{})
	l.Placement = core.PlacementAnchor
	s := memtest.Session(t, core.Config{Layers: []core.AnyLayer{l}}, core.RunOptions{ThreadID: "thread-1"})
	var set []string
	for i := 0; i < 10; i++ {
		set = append(set, fmt.Sprintf(`"k%d": "a long enough value for key %d"`, i, i))
	}
	if _, err := s.ExecuteTool(ctx, call("c1", `{"set": {`+strings.Join(set, ",")+`}}`)); err != nil {
		t.Fatal(err)
	}
	v1, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pinned := v1.Band(core.BandAnchor)
	if _, err := s.ExecuteTool(ctx, call("c2", `{"set": {"k3": "changed"}, "delete": ["k7"]}`)); err != nil {
		t.Fatal(err)
	}
	v2, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v2.Band(core.BandAnchor), pinned) {
		t.Fatal("pinned block moved")
	}
	upd := v2.Updates()
	if len(upd) != 1 {
		t.Fatalf("updates %v", upd)
	}
	want := "<update layer=\"scratchpad\" action=\"replace\">\nScratchpad changes (keys not listed here are unchanged):\n\"k3\": \"changed\"\ndeleted: \"k7\"\n</update>"
	if !strings.Contains(upd[0].Text(), want) {
		t.Fatalf("update\n%s\nwant it to contain\n%s", upd[0].Text(), want)
	}
	if strings.Contains(upd[0].Text(), `"k1"`) {
		t.Fatal("unchanged key republished")
	}
}

func TestSurvivesReopenAndSeesOutsideEdits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, dir, clock)
	s := start(t, memtest.Layer(t, scratchpad.New, store, scratchpad.Options{}), "thread-1")
	if _, err := s.ExecuteTool(ctx, call("c1", `{"set": {"goal": "ship v2", "todo": "write docs"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	if err := store.Records.Close(); err != nil {
		t.Fatal(err)
	}

	reopened := memtest.NewStore(t, dir, clock)
	// An edit made from outside (as memctl would) is what the next run
	// sees.
	recs, _, err := reopened.Records.List(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Layer: "scratchpad", Metadata: map[string]string{"key": "todo"}}, WithVectors: true})
	if err != nil || len(recs) != 1 {
		t.Fatalf("list: %v %v", recs, err)
	}
	recs[0].Text = "todo: write more docs"
	if err := reopened.Records.Upsert(ctx, recs[0]); err != nil {
		t.Fatal(err)
	}
	s2 := start(t, memtest.Layer(t, scratchpad.New, reopened, scratchpad.Options{}), "thread-1")
	want := "<scratchpad>\n\"goal\": \"ship v2\"\n\"todo\": \"write more docs\"\n</scratchpad>"
	if got := rendered(t, s2); got != want {
		t.Fatalf("after reopen\n%s\nwant\n%s", got, want)
	}
	// Another thread sees nothing of it.
	if got := rendered(t, start(t, memtest.Layer(t, scratchpad.New, reopened, scratchpad.Options{}), "thread-2")); got != "" {
		t.Fatalf("other thread sees %q", got)
	}
}

func TestConfigErrors(t *testing.T) {
	store := memtest.NewStore(t, "", nil)
	memtest.ConfigErrors(t, func(o scratchpad.Options) error { _, err := scratchpad.New(store, o); return err }, []memtest.ConfigCase[scratchpad.Options]{
		{Opts: scratchpad.Options{Common: memory.Common{Scope: core.ScopeExecution}}, Field: "Scope"},
		{Opts: scratchpad.Options{Common: memory.Common{Scope: "galaxy"}}, Field: "Scope"},
		{Opts: scratchpad.Options{MaxKeys: -1}, Field: "MaxKeys"},
		{Opts: scratchpad.Options{Common: memory.Common{ID: "a/b"}}, Field: "ID"},
		{Opts: scratchpad.Options{Common: memory.Common{Budget: core.Range(10, 5)}}, Field: "Budget.Max"},
	})
	if _, err := scratchpad.New(nil, scratchpad.Options{}); !errors.Is(err, memory.ErrInvalidStore) {
		t.Errorf("nil store: %v", err)
	}
	l, err := scratchpad.New(store, scratchpad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.ID != "scratchpad" || l.Slot != core.SlotScratchpad || l.Scope != core.ScopeThread || l.Placement != core.PlacementAuto ||
		l.Budget != core.Range(100, 1000) || len(l.Functions) != 1 || l.Functions[0].Spec.Name != "update" || !json.Valid(l.Functions[0].Spec.Parameters) {
		t.Fatalf("defaults: %+v", l)
	}
}

func TestTwoSessionsOnOneThreadBothPersist(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	l := memtest.Layer(t, scratchpad.New, store, scratchpad.Options{})
	rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{l}})
	a, _ := rt.Start(ctx, core.RunOptions{ThreadID: "shared"})
	b, _ := rt.Start(ctx, core.RunOptions{ThreadID: "shared"})
	// Interleaved writes: each session's scoped-state write conflicts with
	// the other's; the layer's Merge resolves it and no write is lost.
	for i, s := range []*core.Session{a, b, a, b} {
		out, err := s.ExecuteTool(ctx, call(fmt.Sprint("c", i), fmt.Sprintf(`{"set": {"k%d": "v"}}`, i)))
		if err != nil || strings.HasPrefix(out.Output, "error") {
			t.Fatalf("write %d: %q %v", i, out.Output, err)
		}
	}
	for _, s := range []*core.Session{a, b} {
		for _, d := range s.Diagnostics() {
			t.Errorf("diagnostic %+v", d)
		}
	}
	c, _ := rt.Start(ctx, core.RunOptions{ThreadID: "shared"})
	if got := snapshot(t, c); len(got) != 4 {
		t.Fatalf("next run sees %v", got)
	}
}
