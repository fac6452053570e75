package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/storage"
)

type notes struct {
	Lines []string `json:"lines"`
}

// notesLayer renders its lines and appends one per "note" function call.
func notesLayer(id string, scope core.Scope, calls *[]string, mu *sync.Mutex) core.Layer[notes] {
	rec := func(hook string) {
		if calls != nil {
			mu.Lock()
			*calls = append(*calls, id+":"+hook)
			mu.Unlock()
		}
	}
	return core.Layer[notes]{
		ID: id, Slot: core.SlotScratchpad, Scope: scope,
		Hooks: core.Hooks[notes]{
			Init: func(ctx context.Context, p core.InitParams) (notes, error) {
				rec("init")
				var n notes
				if p.Stored != nil {
					if err := json.Unmarshal(p.Stored, &n); err != nil {
						return n, err
					}
				}
				return n, nil
			},
			Recall: func(ctx context.Context, p core.RecallParams[notes]) (core.Recall[notes], error) {
				rec("recall")
				if len(p.State.Lines) == 0 {
					return core.Recall[notes]{}, nil
				}
				return core.Text[notes]("<notes>\n" + strings.Join(p.State.Lines, "\n") + "\n</notes>")
			},
			Store: func(ctx context.Context, p core.StoreParams[notes]) (*notes, error) {
				rec("store")
				args, ok := findCall(p.NewItems, "note")
				if !ok {
					return nil, nil
				}
				text, _ := args["text"].(string)
				next := notes{Lines: append(append([]string(nil), p.State.Lines...), text)}
				return &next, nil
			},
			OnComplete: func(ctx context.Context, p core.CompleteParams[notes]) (*notes, error) {
				rec("onComplete")
				return nil, nil
			},
			Dispose: func(ctx context.Context, p core.CompleteParams[notes]) error {
				rec("dispose")
				return nil
			},
		},
	}
}

func TestLifecycleOrderAndPersistence(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemory()
	var calls []string
	var mu sync.Mutex
	rt, err := core.NewRuntime(core.Config{
		Layers: []core.AnyLayer{notesLayer("notes", core.ScopeThread, &calls, &mu)},
		System: []core.Item{core.SystemMessage("You are terse.")},
		Store:  store,
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, core.UserMessage("remember milk")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Assemble(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, core.FunctionCall("c1", "note", `{"text":"buy milk"}`)); err != nil {
		t.Fatal(err)
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The layer had nothing when the epoch pinned it, so its first output
	// arrives as an "add" context update (which joins history once the
	// call's round trip closes).
	if u := v.Updates(); len(u) != 1 || !strings.Contains(u[0].Text(), `<update layer="notes" action="add">`) || !strings.Contains(u[0].Text(), "buy milk") {
		t.Fatalf("updates = %+v, want the note added", u)
	}
	if err := s.Complete(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	want := "notes:init notes:recall notes:store notes:recall notes:onComplete notes:dispose"
	if got := strings.Join(calls, " "); got != want {
		t.Fatalf("hook order\n got %s\nwant %s", got, want)
	}
	if _, err := s.Assemble(ctx); !errors.Is(err, core.ErrDisposed) {
		t.Fatalf("assemble after complete: %v, want ErrDisposed", err)
	}

	// A second run of the thread sees the note; another thread does not.
	s2, err := rt.Start(ctx, core.RunOptions{ThreadID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := core.State[notes](s2, "notes"); len(st.Lines) != 1 || st.Lines[0] != "buy milk" {
		t.Fatalf("second run state = %+v", st)
	}
	s3, err := rt.Start(ctx, core.RunOptions{ThreadID: "t2"})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := core.State[notes](s3, "notes"); len(st.Lines) != 0 {
		t.Fatalf("other thread sees %+v", st)
	}
}

func TestExecutionScopeDiesWithRun(t *testing.T) {
	ctx := context.Background()
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{notesLayer("n", core.ScopeExecution, nil, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	if err := s.Record(ctx, core.FunctionCall("c1", "note", `{"text":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if st, _ := core.State[notes](s, "n"); len(st.Lines) != 1 {
		t.Fatalf("state = %+v", st)
	}
	_ = s.Complete(ctx, "ok")
	s2, _ := rt.Start(ctx, core.RunOptions{})
	if st, _ := core.State[notes](s2, "n"); len(st.Lines) != 0 {
		t.Fatalf("execution state survived: %+v", st)
	}
}

func TestConflictingRunsNeverLoseAnUpdate(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemory()
	layer := notesLayer("n", core.ScopeResource, nil, nil)
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}, Store: store})
	a, _ := rt.Start(ctx, core.RunOptions{ResourceID: "r"})
	b, _ := rt.Start(ctx, core.RunOptions{ResourceID: "r"})
	if err := a.Record(ctx, core.FunctionCall("c1", "note", `{"text":"from a"}`)); err != nil {
		t.Fatal(err)
	}
	err := b.Record(ctx, core.FunctionCall("c2", "note", `{"text":"from b"}`))
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("second writer: %v, want ErrConflict", err)
	}
	// With a merge function both updates land.
	layer.Merge = func(stored, mine notes) notes {
		return notes{Lines: append(stored.Lines, mine.Lines[len(mine.Lines)-1])}
	}
	rt2, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}, Store: store})
	c, _ := rt2.Start(ctx, core.RunOptions{ResourceID: "r"})
	d, _ := rt2.Start(ctx, core.RunOptions{ResourceID: "r"})
	if err := c.Record(ctx, core.FunctionCall("c3", "note", `{"text":"from c"}`)); err != nil {
		t.Fatal(err)
	}
	if err := d.Record(ctx, core.FunctionCall("c4", "note", `{"text":"from d"}`)); err != nil {
		t.Fatal(err)
	}
	e, _ := rt2.Start(ctx, core.RunOptions{ResourceID: "r"})
	st, _ := core.State[notes](e, "n")
	if got := strings.Join(st.Lines, ","); got != "from a,from c,from d" {
		t.Fatalf("merged state = %q", got)
	}
}

func TestFailingHooksAreContained(t *testing.T) {
	ctx := context.Background()
	block := make(chan struct{})
	defer close(block)
	mk := func(id string, recall func(context.Context, core.RecallParams[int]) (core.Recall[int], error)) core.AnyLayer {
		return core.Layer[int]{ID: id, Slot: 100, Scope: core.ScopeExecution, Hooks: core.Hooks[int]{Recall: recall},
			Timeouts: core.Timeouts{core.HookRecall: 30 * time.Millisecond}}
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{
		mk("hangs", func(ctx context.Context, _ core.RecallParams[int]) (core.Recall[int], error) {
			<-block // ignores its context on purpose
			return core.Text[int]("late")
		}),
		mk("panics", func(context.Context, core.RecallParams[int]) (core.Recall[int], error) { panic("boom") }),
		mk("errors", func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
			return core.Recall[int]{}, errors.New("backend down")
		}),
		mk("works", func(context.Context, core.RecallParams[int]) (core.Recall[int], error) { return core.Text[int]("fine") }),
	}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Band(core.BandAnchor); len(got) != 1 || got[0].Text() != "fine" {
		t.Fatalf("anchor = %+v, want only the working layer", got)
	}
	kinds := map[string]core.DiagnosticKind{}
	for _, d := range v.Usage.Diagnostics {
		kinds[d.Layer] = d.Kind
	}
	want := map[string]core.DiagnosticKind{"hangs": core.KindTimeout, "panics": core.KindPanic, "errors": core.KindError}
	for l, k := range want {
		if kinds[l] != k {
			t.Errorf("layer %s diagnostic = %q, want %q (all: %+v)", l, kinds[l], k, v.Usage.Diagnostics)
		}
	}
	if u := v.Usage.Layer("hangs"); u == nil || u.Served != core.ServedNone {
		t.Errorf("hangs usage = %+v", u)
	}
}

func TestInitFailureAbortsUnlessDisabled(t *testing.T) {
	ctx := context.Background()
	failing := core.Layer[int]{ID: "f", Scope: core.ScopeExecution, Hooks: core.Hooks[int]{
		Init: func(context.Context, core.InitParams) (int, error) { return 0, errors.New("no index") },
		Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
			return core.Text[int]("should not render")
		},
	}}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{failing}})
	_, err := rt.Start(ctx, core.RunOptions{})
	var he *core.HookError
	if !errors.As(err, &he) || he.Layer != "f" || he.Hook != "init" {
		t.Fatalf("start: %v, want init HookError", err)
	}
	failing.OnInitError = core.InitErrorDisable
	rt, _ = core.NewRuntime(core.Config{Layers: []core.AnyLayer{failing}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := s.Assemble(ctx)
	if v.Len() != 0 || !v.Usage.Layer("f").Disabled {
		t.Fatalf("disabled layer rendered: %+v", v.Items())
	}
	// A hanging init times out and aborts too.
	hang := core.Layer[int]{ID: "h", Scope: core.ScopeExecution, Timeouts: core.Timeouts{core.HookInit: 20 * time.Millisecond},
		Hooks: core.Hooks[int]{Init: func(ctx context.Context, _ core.InitParams) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		}}}
	rt, _ = core.NewRuntime(core.Config{Layers: []core.AnyLayer{hang}})
	if _, err := rt.Start(ctx, core.RunOptions{}); !errors.As(err, &he) || he.Kind != core.KindTimeout {
		t.Fatalf("hanging init: %v", err)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	nan := core.Layer[int]{ID: "a", Budget: core.Fixed(nanValue())}
	cases := []struct {
		name  string
		cfg   core.Config
		code  core.ErrorCode
		field string
	}{
		{"duplicate ids", core.Config{Layers: []core.AnyLayer{core.Layer[int]{ID: "a"}, core.Layer[string]{ID: "a"}}}, core.CodeDuplicateLayerID, "ID"},
		{"NaN budget", core.Config{Layers: []core.AnyLayer{nan}}, core.CodeInvalidBudgetInput, "Budget.Tokens"},
		{"negative range", core.Config{Layers: []core.AnyLayer{core.Layer[int]{ID: "a", Budget: core.Range(-1, 10)}}}, core.CodeInvalidBudgetInput, "Budget.Min"},
		{"inverted range", core.Config{Layers: []core.AnyLayer{core.Layer[int]{ID: "a", Budget: core.Range(10, 5)}}}, core.CodeInvalidBudgetInput, "Budget.Max"},
		{"reserve above budget", core.Config{Policy: &core.Policy{TokenBudget: 1000, ResponseReserve: 1000}}, core.CodeInvalidPolicy, "Policy.ResponseReserve"},
		{"empty id", core.Config{Layers: []core.AnyLayer{core.Layer[int]{}}}, core.CodeInvalidLayer, "ID"},
		{"bad scope", core.Config{Layers: []core.AnyLayer{core.Layer[int]{ID: "a", Scope: "planet"}}}, core.CodeInvalidLayer, "Scope"},
		{"minimums over pool", core.Config{LayerPool: 100, Layers: []core.AnyLayer{core.Layer[int]{ID: "a", Budget: core.Fixed(200)}}}, core.CodeBudgetExceedsPool, "Budget"},
		{"bad churn", core.Config{Cache: core.Tuned(core.CacheConfig{}, core.Tuning{AutoDemoteChurn: 0.2, AutoPromoteChurn: 0.3})}, core.CodeInvalidCacheConfig, "Cache.AutoPromoteChurn"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := core.NewRuntime(c.cfg)
			var ce *core.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *ConfigError", err)
			}
			if ce.Code != c.code || ce.Field != c.field {
				t.Fatalf("got code %s field %q (%v), want %s %q", ce.Code, ce.Field, err, c.code, c.field)
			}
		})
	}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{core.Layer[int]{ID: "a"}}})
	if _, err := rt.Start(context.Background(), core.RunOptions{}); err == nil {
		t.Fatal("thread-scoped layer started without a thread id")
	}
}

type todo struct {
	Items []string `json:"items"`
}

type addArgs struct {
	Item string `json:"item" jsonschema:"the todo to add"`
}

func TestProvidedFunctionsRouteAndReject(t *testing.T) {
	ctx := context.Background()
	layer := core.Layer[todo]{
		ID: "todos", Slot: 100, Scope: core.ScopeExecution,
		Functions: []core.Function[todo]{core.NewFunction("add", "Add a todo.", func(ctx context.Context, s todo, a addArgs) (string, *todo, error) {
			if a.Item == "" {
				return "", nil, &core.ArgumentError{Function: "add", Err: errors.New("item is empty")}
			}
			next := todo{Items: append(append([]string(nil), s.Items...), a.Item)}
			return fmt.Sprintf("added %q", a.Item), &next, nil
		})},
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	tools := s.Tools()
	if len(tools) != 1 || tools[0].Name != "todos/add" || !strings.Contains(string(tools[0].Parameters), `"item"`) {
		t.Fatalf("tools = %+v", tools)
	}
	out, err := s.ExecuteTool(ctx, core.FunctionCall("c1", "todos/add", `{"item":"write tests"}`))
	if err != nil || out.Output != `added "write tests"` || out.CallID != "c1" {
		t.Fatalf("call: %+v %v", out, err)
	}
	for _, bad := range []string{`{"item":`, `{"item":42}`, `{"other":"x"}`, `[1,2]`, `{"item":""}`} {
		out, err := s.ExecuteTool(ctx, core.FunctionCall("c2", "todos/add", bad))
		if err != nil || !strings.HasPrefix(out.Output, "error: ") {
			t.Fatalf("bad args %s: output %q err %v, want an error output", bad, out.Output, err)
		}
	}
	if st, _ := core.State[todo](s, "todos"); len(st.Items) != 1 {
		t.Fatalf("rejected calls changed state: %+v", st)
	}
	if _, err := s.ExecuteTool(ctx, core.FunctionCall("c3", "todos/nope", `{}`)); !errors.Is(err, core.ErrUnknownFunction) {
		t.Fatalf("unknown function: %v", err)
	}
}

func TestRecallBudgetCutsOutput(t *testing.T) {
	ctx := context.Background()
	big := core.Layer[int]{ID: "big", Scope: core.ScopeExecution, Budget: core.Fixed(20), Hooks: core.Hooks[int]{
		Recall: func(_ context.Context, p core.RecallParams[int]) (core.Recall[int], error) {
			if p.Budget != 20 {
				return core.Recall[int]{}, fmt.Errorf("budget %d", p.Budget)
			}
			return core.Recall[int]{Items: []core.Item{
				core.DeveloperMessage(strings.Repeat("a", 40)), // 10 + 3 tokens
				core.DeveloperMessage(strings.Repeat("b", 40)), // does not fit
			}}, nil
		}}}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{big}})
	s, _ := rt.Start(ctx, core.RunOptions{})
	v, _ := s.Assemble(ctx)
	u := v.Usage.Layer("big")
	if u.Items != 1 || u.Truncated != 1 || u.Tokens > 20 {
		t.Fatalf("usage = %+v", u)
	}
}

func TestBandsByPlacementAndStatefulRecall(t *testing.T) {
	ctx := context.Background()
	text := func(s string) func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
		return func(context.Context, core.RecallParams[int]) (core.Recall[int], error) { return core.Text[int](s) }
	}
	drains := core.Layer[int]{ID: "steer", Slot: core.SlotSteering, Scope: core.ScopeExecution, Placement: core.PlacementAnchor,
		Hooks: core.Hooks[int]{Recall: func(_ context.Context, p core.RecallParams[int]) (core.Recall[int], error) {
			next := p.State + 1
			return core.Recall[int]{Items: []core.Item{core.DeveloperMessage("guidance")}, State: &next}, nil
		}}}
	layers := []core.AnyLayer{
		core.Layer[int]{ID: "clock", Slot: 80, Scope: core.ScopeExecution, Placement: core.PlacementLive, Hooks: core.Hooks[int]{Recall: text("clock")}},
		core.Layer[int]{ID: "rag", Slot: 350, Scope: core.ScopeExecution, Placement: core.PlacementAnchor, Hooks: core.Hooks[int]{Recall: text("rag")}},
		drains,
	}
	rt, _ := core.NewRuntime(core.Config{Layers: layers, System: []core.Item{core.SystemMessage("sys")}})
	s, _ := rt.Start(ctx, core.RunOptions{})
	_ = s.Append(ctx, core.UserMessage("hi"))
	v, _ := s.Assemble(ctx)
	var got []string
	for _, it := range v.Items() {
		got = append(got, it.Text())
	}
	if want := "sys rag hi clock guidance"; strings.Join(got, " ") != want {
		t.Fatalf("view order = %q, want %q", strings.Join(got, " "), want)
	}
	if st, _ := core.State[int](s, "steer"); st != 1 {
		t.Fatalf("recall state not committed: %d", st)
	}
	// With anchoring disabled every layer renders before history.
	rt, _ = core.NewRuntime(core.Config{Layers: layers, System: []core.Item{core.SystemMessage("sys")}, Cache: core.CacheConfig{Disabled: true}})
	s, _ = rt.Start(ctx, core.RunOptions{})
	_ = s.Append(ctx, core.UserMessage("hi"))
	v, _ = s.Assemble(ctx)
	got = got[:0]
	for _, it := range v.Items() {
		got = append(got, it.Text())
	}
	if want := "sys clock guidance rag hi"; strings.Join(got, " ") != want {
		t.Fatalf("single band order = %q, want %q", strings.Join(got, " "), want)
	}
}

func TestSpawnAndReturn(t *testing.T) {
	ctx := context.Background()
	var returned []string
	layer := core.Layer[notes]{ID: "n", Scope: core.ScopeExecution, Hooks: core.Hooks[notes]{
		OnSpawn: func(_ context.Context, p core.ChildParams[notes]) (*notes, error) {
			seed := notes{Lines: []string{"from parent"}}
			return &seed, nil
		},
		Store: func(_ context.Context, p core.StoreParams[notes]) (*notes, error) {
			next := notes{Lines: append(append([]string(nil), p.State.Lines...), "child learned")}
			return &next, nil
		},
		OnReturn: func(_ context.Context, p core.ChildParams[notes]) (*notes, error) {
			if p.ChildState != nil {
				returned = p.ChildState.Lines
			}
			next := notes{Lines: append(p.State.Lines, p.ChildState.Lines[len(p.ChildState.Lines)-1])}
			return &next, nil
		},
	}}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}})
	parent, _ := rt.Start(ctx, core.RunOptions{})
	child, err := parent.Spawn(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if child.Run().ParentRunID != parent.Run().RunID {
		t.Fatal("child does not name its parent")
	}
	if err := child.Record(ctx, core.AssistantMessage("done")); err != nil {
		t.Fatal(err)
	}
	if err := parent.Return(ctx, child, []core.Item{core.AssistantMessage("done")}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(returned, ",") != "from parent,child learned" {
		t.Fatalf("child state at return = %v", returned)
	}
	if st, _ := core.State[notes](parent, "n"); strings.Join(st.Lines, ",") != "child learned" {
		t.Fatalf("parent state = %v", st.Lines)
	}
}

func TestSameStateRendersSameBytes(t *testing.T) {
	ctx := context.Background()
	render := func() []byte {
		layers := []core.AnyLayer{}
		for i := 0; i < 6; i++ {
			id := fmt.Sprintf("l%d", i)
			layers = append(layers, core.Layer[int]{ID: id, Slot: 100 + (i%3)*10, Scope: core.ScopeExecution,
				Hooks: core.Hooks[int]{Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
					return core.Text[int]("content of " + id)
				}}})
		}
		rt, _ := core.NewRuntime(core.Config{Layers: layers, System: []core.Item{core.SystemMessage("s")}})
		s, _ := rt.Start(ctx, core.RunOptions{History: []core.Item{core.UserMessage("q"), core.FunctionCall("c", "f", `{"b":1,"a":2}`), core.FunctionCallOutput("c", "r")}})
		v, _ := s.Assemble(ctx)
		b, err := json.Marshal(v.Items())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first := render()
	for i := 0; i < 20; i++ {
		if got := render(); string(got) != string(first) {
			t.Fatalf("render %d differs:\n%s\n%s", i, got, first)
		}
	}
}

func TestRecordAssemblies(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemory()
	rt, err := core.NewRuntime(core.Config{Store: store, RecordAssemblies: true,
		System: []core.Item{core.SystemMessage("sys")},
		Layers: []core.AnyLayer{notesLayer("notes", core.ScopeThread, nil, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t9"})
	_ = s.Append(ctx, core.UserMessage("hello"))
	if _, err := s.Assemble(ctx); err != nil {
		t.Fatal(err)
	}
	_ = s.Append(ctx, core.UserMessage("again"))
	if _, err := s.Assemble(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := inspect.LastAssembly(ctx, store, "", "t9")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Turn != 1 || rec.Usage.Epoch.Age != 2 || rec.Bands[0].Band != "system" || rec.Bands[1].Items[1].Text() != "again" {
		t.Fatalf("record = %+v", rec)
	}
	if _, err := inspect.LastAssembly(ctx, store, "", "other"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("other thread: %v", err)
	}
	if _, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{core.Layer[int]{ID: "_strata"}}}); err == nil {
		t.Fatal("reserved id accepted")
	}
}

func TestPlainCallNamesAreAnswered(t *testing.T) {
	ctx := context.Background()
	layer := plainNotesLayer()
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	call := core.FunctionCall("c1", "note", `{"text":"x"}`)
	_ = s.Record(ctx, call)
	out, err := s.ExecuteTool(ctx, call)
	if err != nil || out.Output != "ok: applied by notes" {
		t.Fatalf("out = %+v, err = %v", out, err)
	}
	other := core.Layer[notes]{ID: "other", Scope: core.ScopeExecution, Functions: []core.Function[notes]{noteFunction()}}
	var ce *core.ConfigError
	if _, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer, other}}); !errors.As(err, &ce) || ce.Code != core.CodeDuplicateFunction {
		t.Fatalf("two layers applying one call name: %v", err)
	}
	noCall := core.Layer[notes]{ID: "other", Scope: core.ScopeExecution,
		Functions: []core.Function[notes]{{Spec: core.ToolSpec{Name: "jot"}, Plain: true}}}
	if _, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{noCall}}); !errors.As(err, &ce) || ce.Field != "Functions" {
		t.Fatalf("plain function without Call: %v", err)
	}
}

func TestEventualRecallServesStaleThenFresh(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	calls := 0
	slow := core.Layer[int]{ID: "slow", Scope: core.ScopeExecution, EventualRecall: true, Placement: core.PlacementLive,
		Hooks: core.Hooks[int]{Recall: func(ctx context.Context, p core.RecallParams[int]) (core.Recall[int], error) {
			calls++
			if calls == 2 {
				<-release // the second recall is slow
			}
			next := 1
			return core.Recall[int]{Items: []core.Item{core.DeveloperMessage(fmt.Sprint("result ", calls))}, State: &next}, nil
		}}}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{slow}})
	s, _ := rt.Start(ctx, core.RunOptions{})
	v, _ := s.Assemble(ctx) // first recall: fast
	if u := v.Usage.Layer("slow"); u.Served != core.ServedFresh || len(v.Usage.Diagnostics) != 1 {
		t.Fatalf("first: %+v %+v", u, v.Usage.Diagnostics)
	}
	if st, _ := core.State[int](s, "slow"); st != 0 {
		t.Fatal("eventual recall state committed")
	}
	v, _ = s.Assemble(ctx) // second recall hangs: the previous output is served
	if u := v.Usage.Layer("slow"); u.Served != core.ServedStale {
		t.Fatalf("second: %+v", u)
	}
	close(release)
	time.Sleep(20 * time.Millisecond)
	v, _ = s.Assemble(ctx) // the late result is picked up
	found := false
	for _, it := range v.Items() {
		found = found || it.Text() == "result 2"
	}
	if !found {
		t.Fatalf("late result not served: %+v", v.Items())
	}
}

// findCall returns the parsed arguments of the first function call named
// name in items.
func findCall(items []core.Item, name string) (map[string]any, bool) {
	for _, it := range items {
		if it.Type == core.TypeFunctionCall && it.Name == name {
			args, err := core.DecodeArguments[map[string]any](it.Arguments)
			return args, err == nil && args != nil
		}
	}
	return nil, false
}

// Spawn takes RunOptions: a child runs on its parent's thread and
// resource, so naming another one is refused.
func TestSpawnRefusesAnotherThread(t *testing.T) {
	ctx := context.Background()
	rt, err := core.NewRuntime(core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t1", ResourceID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	var ce *core.ConfigError
	if _, err := s.Spawn(ctx, core.RunOptions{ThreadID: "t2"}); !errors.As(err, &ce) || ce.Field != "RunOptions.ThreadID" {
		t.Fatalf("other thread: %v", err)
	}
	if _, err := s.Spawn(ctx, core.RunOptions{ResourceID: "u2"}); !errors.As(err, &ce) || ce.Field != "RunOptions.ResourceID" {
		t.Fatalf("other resource: %v", err)
	}
	child, err := s.Spawn(ctx, core.RunOptions{RunID: "kid", ThreadID: "t1"})
	if err != nil || child.Run().ThreadID != "t1" || child.Run().ResourceID != "u1" || child.Run().ParentRunID != s.Run().RunID {
		t.Fatalf("child %+v %v", child, err)
	}
}

// Dispose gets the outcome Complete was given, and "" after Close.
func TestDisposeSeesTheOutcome(t *testing.T) {
	ctx := context.Background()
	var got []string
	l := core.Layer[int]{ID: "l", Scope: core.ScopeExecution, Hooks: core.Hooks[int]{
		Dispose: func(_ context.Context, p core.CompleteParams[int]) error {
			got = append(got, p.Outcome+"/"+fmt.Sprint(len(p.Log)))
			return nil
		}}}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}})
	if err != nil {
		t.Fatal(err)
	}
	for _, complete := range []bool{true, false} {
		s, err := rt.Start(ctx, core.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, core.UserMessage("hi")); err != nil {
			t.Fatal(err)
		}
		if complete {
			err = s.Complete(ctx, "ok")
		} else {
			err = s.Close(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(got) != "[ok/1 /1]" {
		t.Fatalf("dispose saw %v", got)
	}
}
