package inspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/anthropic"
	"github.com/stratamem/strata/storage"
)

// fakeMessages answers every Messages API request with "ok" and keeps the
// request bodies.
type fakeMessages struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (f *fakeMessages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, b)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",`+
		`"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":1}}`)
}

func (f *fakeMessages) last() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[len(f.bodies)-1]
}

// planRuntime is a runtime with anchored layers that drift (context
// updates), a live layer, a tool and a budget that cuts history.
func planRuntime(t testing.TB, store storage.Store, retention int) *core.Runtime {
	t.Helper()
	var turn int
	var mu sync.Mutex
	text := func(format string, every int) core.Hooks[int] {
		return core.Hooks[int]{Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
			mu.Lock()
			n := turn / every
			mu.Unlock()
			return core.Text[int](fmt.Sprintf(format, n))
		}}
	}
	layers := []core.AnyLayer{
		core.Layer[int]{ID: "profile", Slot: 10, Scope: core.ScopeExecution, Placement: core.PlacementAnchor, Hooks: text("<profile>static %d</profile>", 1<<30)},
		core.Layer[int]{ID: "notes", Slot: 20, Scope: core.ScopeExecution, Placement: core.PlacementAnchor, Hooks: text("<notes>version %d</notes>", 2),
			Functions: []core.Function[int]{{Spec: core.ToolSpec{Name: "add", Description: "add a note"}}}},
		core.Layer[int]{ID: "clock", Slot: 30, Scope: core.ScopeExecution, Placement: core.PlacementLive, Hooks: text("<clock>tick %d</clock>", 1)},
	}
	rt, err := core.NewRuntime(core.Config{Store: store, RecordAssemblies: true, AssemblyRetention: retention, Layers: layers,
		System: []core.Item{core.SystemMessage("be brief")},
		Policy: &core.Policy{TokenBudget: 700, ResponseReserve: 100}, LayerPool: 200,
		Tracer: func(ctx context.Context, _ core.RunInfo, n int) (context.Context, func(*core.Usage, error)) {
			mu.Lock()
			turn = n
			mu.Unlock()
			return ctx, func(*core.Usage, error) {}
		}})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// Every assembly is recorded; the record renders the same view again,
// and the Anthropic request built from it is the original's, byte for
// byte, over turns with pinned anchors, context updates and history cuts.
func TestAssemblyRecordsRenderTheViewAgain(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemory()
	f := &fakeMessages{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	m, err := anthropic.New(anthropic.Options{Model: "claude-sonnet-4-5", APIKey: "k", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rt := planRuntime(t, store, -1)
	s, err := rt.Start(ctx, core.RunOptions{RunID: "r1", ThreadID: "t1", ResourceID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	const turns = 14
	var wantViews [][]byte
	var wantBodies [][]byte
	var logs [][]core.Item
	var updates, cuts int
	for i := 0; i < turns; i++ {
		if err := s.Append(ctx, core.UserMessage(fmt.Sprintf("question %d: %s", i, bytes.Repeat([]byte("words "), 20)))); err != nil {
			t.Fatal(err)
		}
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Updates()) > 0 {
			updates++
		}
		if v.Usage.HistoryDropped > 0 {
			cuts++
		}
		wantViews = append(wantViews, viewBytes(t, v))
		logs = append(logs, append([]core.Item(nil), s.Items()...))
		if _, err := m.Respond(ctx, provider.Request{View: v, ThreadID: "t1", MaxOutputTokens: 64}); err != nil {
			t.Fatal(err)
		}
		wantBodies = append(wantBodies, f.last())
		s.ReportCache(core.CacheReport{Reported: true, ReadTokens: 100 + i, FirstRound: true})
		if err := s.Record(ctx, core.AssistantMessage(fmt.Sprintf("answer %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if updates == 0 || cuts == 0 {
		t.Fatalf("the session must publish updates (%d) and cut history (%d)", updates, cuts)
	}
	list, err := inspect.ListAssemblies(ctx, store, "u1", "t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != turns {
		t.Fatalf("%d records, want %d", len(list), turns)
	}
	for i, sum := range list {
		if sum.Turn != i || sum.RunTurn != i || sum.RunID != "r1" || sum.Items == 0 || sum.Tokens == 0 {
			t.Fatalf("summary %d: %+v", i, sum)
		}
		rec, err := inspect.ReadAssembly(ctx, store, "u1", "t1", i)
		if err != nil {
			t.Fatal(err)
		}
		v, err := rec.View()
		if err != nil {
			t.Fatal(err)
		}
		if got := viewBytes(t, v); !bytes.Equal(got, wantViews[i]) {
			t.Fatalf("turn %d: re-rendered view differs:\n got %s\nwant %s", i, got, wantViews[i])
		}
		if _, err := m.Respond(ctx, provider.Request{View: v, ThreadID: "t1", MaxOutputTokens: 64}); err != nil {
			t.Fatal(err)
		}
		// The adapter's cache diagnostics name the previous response, which
		// is the conversation's state, not the view's: compare without.
		if got := withoutDiagnostics(t, f.last()); !bytes.Equal(got, withoutDiagnostics(t, wantBodies[i])) {
			t.Fatalf("turn %d: re-rendered request differs:\n got %s\nwant %s", i, got, wantBodies[i])
		}
		// The history plan points into the run's log.
		h := v.Band(core.BandHistory)
		log := logs[i]
		inline := map[int]bool{}
		for _, p := range rec.History.Inline {
			inline[p] = true
		}
		pos := 0
		for _, sp := range rec.History.Spans {
			for k := sp.From; k < sp.To; k++ {
				for inline[pos] {
					pos++
				}
				a, _ := json.Marshal(log[k])
				b, _ := json.Marshal(h[pos])
				if !bytes.Equal(a, b) {
					t.Fatalf("turn %d: span item %d is not band item %d", i, k, pos)
				}
				pos++
			}
		}
		if rec.History.LogLen != len(log) || rec.History.Dropped != rec.Usage.HistoryDropped {
			t.Fatalf("turn %d: history plan %+v", i, rec.History)
		}
		if rec.Hashes.Prefix == "" || rec.Hashes.Anchor == "" || rec.Hashes.Dynamic == "" || rec.Usage.Layer("notes") == nil {
			t.Fatalf("turn %d: hashes %+v", i, rec.Hashes)
		}
		switch {
		case i < turns-1 && (rec.Cache == nil || rec.Cache.ReadTokens != 100+i):
			t.Fatalf("turn %d: cache report %+v", i, rec.Cache)
		case i == turns-1 && rec.Cache != nil:
			t.Fatalf("the newest turn has no report recorded yet, got %+v", rec.Cache)
		}
	}
	// The newest record is the last assembly, which stays readable in
	// its older form too.
	latest, err := inspect.LatestAssembly(ctx, store, "u1", "t1")
	if err != nil || latest.Turn != turns-1 {
		t.Fatalf("latest %v %v", latest, err)
	}
	if _, err := inspect.LastAssembly(ctx, store, "u1", "t1"); err != nil {
		t.Fatal(err)
	}

	// A second session of the thread counts on.
	s2, err := rt.Start(ctx, core.RunOptions{RunID: "r2", ThreadID: "t1", ResourceID: "u1", History: s.Items()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Assemble(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := inspect.ReadAssembly(ctx, store, "u1", "t1", turns)
	if err != nil || rec.RunID != "r2" || rec.RunTurn != 0 || rec.PrevCache != nil {
		t.Fatalf("record of the second run: %+v %v", rec, err)
	}
	if _, err := inspect.ReadAssembly(ctx, store, "u1", "t1", turns+1); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a turn not recorded: %v", err)
	}
}

// viewBytes is everything a provider adapter reads of a view.
func viewBytes(t testing.TB, v *core.View) []byte {
	t.Helper()
	raw, err := json.Marshal(struct {
		Items       []core.Item
		Bands       [6][]core.Item
		Tools       []core.ToolSpec
		Breakpoints []core.Breakpoint
		Updates     []core.Item
		Usage       *core.Usage
		PrefixHash  string
	}{v.Items(), [6][]core.Item{v.Band(0), v.Band(1), v.Band(2), v.Band(3), v.Band(4), v.Band(5)}, v.Tools, v.Breakpoints, v.Updates(), v.Usage, v.PrefixHash})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// A thread keeps at most AssemblyRetention records, the oldest dropped
// first.
func TestAssemblyRetention(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemory()
	rt := planRuntime(t, store, 3)
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 7; i++ {
		if err := s.Append(ctx, core.UserMessage(fmt.Sprint("q", i))); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Assemble(ctx); err != nil {
			t.Fatal(err)
		}
	}
	list, err := inspect.ListAssemblies(ctx, store, "", "t1")
	if err != nil {
		t.Fatal(err)
	}
	var turns []int
	for _, l := range list {
		turns = append(turns, l.Turn)
	}
	if fmt.Sprint(turns) != "[4 5 6]" {
		t.Fatalf("kept turns %v", turns)
	}
	if _, err := inspect.ReadAssembly(ctx, store, "", "t1", 3); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("dropped turn: %v", err)
	}
	if _, err := inspect.ListAssemblies(ctx, store, "", "none"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("no records: %v", err)
	}
}

func withoutDiagnostics(t testing.TB, body []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "diagnostics")
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
