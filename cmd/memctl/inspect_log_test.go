package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/server"
	"github.com/stratamem/strata/storage"
)

// runTrimmedSession runs tool turns with large, many-line outputs on a
// small window, TailTrim clearing and Compaction folding, every assembly
// recorded; it returns the run's log.
func runTrimmedSession(t *testing.T, st storage.Store, thread string) []core.Item {
	t.Helper()
	ctx := context.Background()
	rt, err := core.NewRuntime(core.Config{Store: st, RecordAssemblies: true, AssemblyRetention: -1,
		System:     []core.Item{core.SystemMessage("be brief")},
		Compaction: &core.CompactionConfig{Window: 4000, Threshold: 0.3, Keep: 4},
		TailTrim:   &core.TailTrimConfig{Threshold: 0.2, Horizon: 400, MinTokens: 32}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{RunID: "r1", ThreadID: thread, ResourceID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for n := range 20 {
		id := fmt.Sprintf("call_%d", n)
		if err := s.Append(ctx, core.UserMessage(fmt.Sprintf("step %d: read the next file", n))); err != nil {
			t.Fatal(err)
		}
		if err := s.Record(ctx, core.FunctionCall(id, "read", fmt.Sprintf(`{"path":"f%d.go"}`, n))); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, core.FunctionCallOutput(id, fmt.Sprintf("package f%d\n", n)+strings.Repeat(fmt.Sprintf("// line of f%d.go\n", n), 60))); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Assemble(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Record(ctx, core.AssistantMessage(fmt.Sprintf("File %d read.", n))); err != nil {
			t.Fatal(err)
		}
	}
	return append([]core.Item(nil), s.Items()...)
}

// inspect --turn N lists the outputs the turn showed cleared and its
// compaction event; --items prints the cleared body and the summary as
// the run logged them, from the store and through a server.
func TestInspectClearedAndFolded(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	ctx := context.Background()
	e.ok("--store", store, "--embedder", "hash:64", "add", "-l", "observations", "-t", "t1", "-r", "alice", "User reads files")
	env, err := embedded.Open(ctx, store, embedded.Options{Embedder: hashing.New(64)})
	if err != nil {
		t.Fatal(err)
	}
	log := runTrimmedSession(t, env.State, "t1")
	// The newest turn that both cleared and folded.
	var rec *inspect.Plan
	list, err := inspect.ListAssemblies(ctx, env.State, "alice", "t1")
	if err != nil {
		t.Fatal(err)
	}
	for i := len(list) - 1; i >= 0 && rec == nil; i-- {
		r, err := inspect.ReadAssembly(ctx, env.State, "alice", "t1", list[i].Turn)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.ClearedOutputs) > 0 && r.Compaction != nil && r.Compaction.Event != "" {
			rec = r
		}
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	if rec == nil || rec.Turn == 0 {
		t.Fatalf("no turn after the first both cleared outputs and compacted: %+v", list)
	}
	turn := fmt.Sprint(rec.Turn)
	c := rec.ClearedOutputs[len(rec.ClearedOutputs)-1]
	idx, err := inspect.ParseLogRef(c.Ref)
	if err != nil {
		t.Fatal(err)
	}
	body := log[idx].Output
	if log[idx].CallID != c.CallID || !strings.Contains(body, "\n// line of") {
		t.Fatalf("%s is %+v in the log, want %s's output", c.Ref, log[idx], c.CallID)
	}

	out := e.ok("--store", store, "inspect", "t1", "--turn", turn).stdout
	for _, want := range []string{"Cleared outputs: ", "CALL ID", "TOKENS", "REF",
		fmt.Sprintf("Compaction: boundary at log item %d, event %s", rec.Compaction.Boundary, rec.Compaction.Event)} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect --turn %s lacks %q:\n%s", turn, want, out)
		}
	}
	for _, co := range rec.ClearedOutputs {
		if !containsRow(out, co.CallID, fmt.Sprint(co.Tokens), co.Ref) {
			t.Errorf("inspect --turn %s lacks the row of %s %d %s:\n%s", turn, co.CallID, co.Tokens, co.Ref, out)
		}
	}
	// The view shows the marker; --items prints the body, line by line.
	if marker := fmt.Sprintf("output %s: %s ref=%s", c.CallID, core.ClearedMarker, c.Ref); !strings.Contains(out, marker) {
		t.Errorf("inspect --turn %s lacks %q:\n%s", turn, marker, out)
	}
	for _, sel := range []string{c.Ref, fmt.Sprint(idx), fmt.Sprintf("%d-%d", idx, idx)} {
		got := e.ok("--store", store, "inspect", "t1", "--turn", turn, "--items", sel).stdout
		want := fmt.Sprintf("log:%d output %s\n    %s\n", idx, c.CallID, strings.ReplaceAll(strings.TrimRight(body, "\n"), "\n", "\n    "))
		if !strings.Contains(got, want) || strings.Contains(got, core.ClearedMarker) {
			t.Fatalf("inspect --items %s:\n%s\nwant it to hold:\n%s", sel, got, want)
		}
	}
	var js struct {
		ThreadID string `json:"thread_id"`
		Turn     int    `json:"turn"`
		From     int    `json:"from"`
		To       int    `json:"to"`
		LogLen   int    `json:"log_len"`
		Items    []struct {
			Ref    string `json:"ref"`
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Output string `json:"output"`
		} `json:"items"`
	}
	raw := e.ok("--store", store, "--json", "inspect", "t1", "--turn", turn, "--items", fmt.Sprintf("%d-%d", idx-1, idx)).stdout
	if err := json.Unmarshal([]byte(raw), &js); err != nil {
		t.Fatal(err)
	}
	if js.ThreadID != "t1" || js.Turn != rec.Turn || js.From != idx-1 || js.To != idx+1 || js.LogLen != rec.Stored.Log.Len || len(js.Items) != 2 ||
		js.Items[1].Ref != c.Ref || js.Items[1].Type != "function_call_output" || js.Items[1].CallID != c.CallID || js.Items[1].Output != body ||
		js.Items[0].Type != "function_call" {
		t.Fatalf("inspect --items --json: %s", raw)
	}
	// The compaction event prints its summary.
	ev := e.ok("--store", store, "inspect", "t1", "--turn", turn, "--items", rec.Compaction.Event).stdout
	if !strings.Contains(ev, fmt.Sprintf("compaction through log item %d", rec.Compaction.Boundary)) || !strings.Contains(ev, "step 0") {
		t.Errorf("inspect --items %s:\n%s", rec.Compaction.Event, ev)
	}
	// --turn --json carries the cleared rows and the event.
	var plan inspect.Plan
	if err := json.Unmarshal([]byte(e.ok("--store", store, "--json", "inspect", "t1", "--turn", turn).stdout), &plan); err != nil ||
		len(plan.ClearedOutputs) != len(rec.ClearedOutputs) || plan.Compaction == nil || plan.Compaction.Event != rec.Compaction.Event {
		t.Fatalf("inspect --turn --json: %v %+v", err, plan.Compaction)
	}
	// Without --turn, the newest turn's run; past its log, or malformed.
	if got := e.ok("--store", store, "inspect", "t1", "--items", c.Ref).stdout; !strings.Contains(got, "// line of") {
		t.Errorf("inspect --items without --turn:\n%s", got)
	}
	n := rec.Stored.Log.Len
	e.fails(3, fmt.Sprintf("logged items 0-%d", n-1), "--store", store, "inspect", "t1", "--turn", turn, "--items", fmt.Sprintf("%d-%d", n-1, n))
	e.fails(2, "want A-B", "--store", store, "inspect", "t1", "--items", "log:x")
	e.fails(2, "ends before it starts", "--store", store, "inspect", "t1", "--items", "5-3")
	e.fails(2, "exclude", "--store", store, "inspect", "t1", "--list", "--items", "1")

	// Through a server: the record from /v1/assembly, the log from the
	// thread's state.
	renv, err := environment.Open(ctx, store, environment.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer renv.Close()
	ks, err := server.NewKeyring(server.Key{Name: "alice", Secret: "alice-secret-0123456789", Resources: []string{"alice"}},
		server.Key{Name: "bob", Secret: "bob-secret-0123456789", Resources: []string{"bob"}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(renv, server.Options{Keys: ks, Rate: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer func() { _ = srv.Shutdown(ctx) }()
	alice := e.with("STRATA_API_KEY=alice-secret-0123456789")
	m := []string{"--server", hs.URL}
	if got := alice.ok(append(m, "inspect", "t1", "--turn", turn)...).stdout; !strings.Contains(got, "Cleared outputs: ") || !containsRow(got, c.CallID, fmt.Sprint(c.Tokens), c.Ref) {
		t.Errorf("inspect --turn through the server:\n%s", got)
	}
	got := alice.ok(append(m, "--json", "inspect", "t1", "--turn", turn, "--items", fmt.Sprintf("%d-%d", idx-1, idx))...).stdout
	if got != raw {
		t.Errorf("inspect --items --json through the server:\n%s\nwant\n%s", got, raw)
	}
	alice.fails(3, "logged items", append(m, "inspect", "t1", "--turn", turn, "--items", fmt.Sprint(n))...)
	bob := e.with("STRATA_API_KEY=bob-secret-0123456789")
	bob.fails(1, "forbidden", append(m, "inspect", "t1", "-r", "alice", "--turn", turn, "--items", c.Ref)...)
}

// containsRow reports whether a line of out holds the fields in order.
func containsRow(out string, fields ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+len(fields) <= len(f); i++ {
			if slices.Equal(f[i:i+len(fields)], fields) {
				return true
			}
		}
	}
	return false
}
