package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/storage"
)

// counterLayer counts the items appended in thread-scoped state.
func counterLayer(id string) core.Layer[int] {
	return core.Layer[int]{ID: id, Slot: 1, Hooks: core.Hooks[int]{
		OnItemAppend: func(ctx context.Context, p core.ItemAppendParams[int]) (*int, error) {
			n := p.State + 1
			return &n, nil
		}}}
}

// One layer's save conflict neither skips the other layers' hooks nor
// poisons the layer for the rest of the run: it continues from the state
// the other run stored.
func TestRecordRunsEveryLayerAfterAConflict(t *testing.T) {
	ctx := context.Background()
	var afters, stores atomic.Int32
	other := core.Layer[int]{ID: "b", Slot: 2, Scope: core.ScopeExecution, Hooks: core.Hooks[int]{
		AfterModelCall: func(context.Context, core.StoreParams[int]) (*int, error) { afters.Add(1); return nil, nil },
		Store:          func(context.Context, core.StoreParams[int]) (*int, error) { stores.Add(1); return nil, nil }}}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{counterLayer("a"), other}})
	if err != nil {
		t.Fatal(err)
	}
	s1, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
	s2, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
	if err := s2.Append(ctx, core.UserMessage("hi")); err != nil {
		t.Fatal(err)
	}
	err = s1.Record(ctx, core.AssistantMessage("answer"))
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("Record: %v, want the conflict reported", err)
	}
	if afters.Load() != 1 || stores.Load() != 1 {
		t.Fatalf("layer b: afterModelCall=%d store=%d, want 1 and 1", afters.Load(), stores.Load())
	}
	// s1 adopted what s2 stored (1) and its revision: its next save lands.
	if st, _ := core.State[int](s1, "a"); st != 1 {
		t.Fatalf("state after conflict = %d, want the stored 1", st)
	}
	if err := s1.Record(ctx, core.AssistantMessage("again")); err != nil {
		t.Fatalf("second Record: %v, want no conflict", err)
	}
	e, err := rt.Store().Get(ctx, storage.Key{Scope: "thread", ScopeID: "t", Layer: "a", Name: "state"})
	if err != nil || string(e.Value) != "2" {
		t.Fatalf("stored = %s (%v), want 2", e.Value, err)
	}
	conflicts := 0
	for _, d := range s1.Diagnostics() {
		if d.Kind == core.KindConflict {
			conflicts++
		}
	}
	if conflicts != 1 {
		t.Fatalf("%d conflict diagnostics, want 1: %+v", conflicts, s1.Diagnostics())
	}
	// An invalid item still stops Record before any hook.
	if err := s1.Record(ctx, core.Item{Type: "bogus"}); err == nil || afters.Load() != 2 {
		t.Fatalf("invalid item: err=%v afterModelCall=%d", err, afters.Load())
	}
}

// An eventual recall that ignores its context is timed out at its deadline
// and called again, not served stale forever.
func TestEventualRecallPastItsDeadlineTimesOut(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	release := make(chan struct{})
	defer close(release)
	l := core.Layer[int]{ID: "slow", Slot: 1, Scope: core.ScopeExecution, EventualRecall: true, Placement: core.PlacementLive,
		Timeouts: core.Timeouts{core.HookRecall: 20 * time.Millisecond},
		Hooks: core.Hooks[int]{Recall: func(ctx context.Context, p core.RecallParams[int]) (core.Recall[int], error) {
			if calls.Add(1) > 1 {
				<-release // ignores its context on purpose
			}
			return core.Text[int]("v1")
		}}}
	s := start(t, core.Config{Layers: []core.AnyLayer{l}})
	var served []core.Served
	timeouts := 0
	for range 4 {
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		served = append(served, v.Usage.Layer("slow").Served)
		for _, d := range v.Usage.Diagnostics {
			if d.Layer == "slow" && d.Kind == core.KindTimeout {
				timeouts++
			}
		}
		time.Sleep(60 * time.Millisecond)
	}
	// fresh, stale (2nd call pending), none (it timed out: diagnostic),
	// stale (3rd call pending: the layer was called again; its last good
	// output is served meanwhile).
	if fmt.Sprint(served) != "[fresh stale none stale]" || timeouts != 1 || calls.Load() != 3 {
		t.Fatalf("served %v, %d timeouts, %d calls", served, timeouts, calls.Load())
	}
}

// An eventual recall outlives the per-turn context of the assembly that
// started it: its result lands next turn instead of being cancelled.
func TestEventualRecallSurvivesTheTurnContext(t *testing.T) {
	var calls atomic.Int32
	// finished is sent each recall's number as it returns, so the test
	// waits for the recalls it expects to land instead of sleeping for
	// them (a fixed sleep lost the race on a loaded machine).
	finished := make(chan int32, 8)
	l := core.Layer[int]{ID: "rag", Slot: 1, Scope: core.ScopeExecution, EventualRecall: true, Placement: core.PlacementLive,
		Hooks: core.Hooks[int]{Recall: func(ctx context.Context, p core.RecallParams[int]) (core.Recall[int], error) {
			n := calls.Add(1)
			defer func() { finished <- n }()
			select {
			case <-time.After(30 * time.Millisecond):
			case <-ctx.Done():
				return core.Recall[int]{}, ctx.Err()
			}
			return core.Text[int](fmt.Sprint("doc ", n))
		}}}
	s := start(t, core.Config{Layers: []core.AnyLayer{l}})
	// A caller that gives up on the first (waited-for) recall is not held
	// up: the recall goes on and is picked up next turn.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	v, err := s.Assemble(cancelled)
	if err != nil {
		t.Fatal(err)
	}
	if u := v.Usage.Layer("rag"); u.Served != core.ServedNone {
		t.Fatalf("cancelled first turn: %+v", u)
	}
	var texts []string
	// Before turn 1 the first recall must have landed, before turn 3 the
	// second; turn 2 starts the second.
	for turn, wait := range []bool{true, false, true} {
		if wait {
			select {
			case <-finished:
			case <-time.After(10 * time.Second):
				t.Fatalf("turn %d: the recall in flight never returned", turn+1)
			}
			// The hook has returned; give the runtime's goroutine the
			// moment it takes to hand its result over.
			time.Sleep(20 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // per-turn context, as hosts do
		v, err := s.Assemble(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range v.Usage.Diagnostics {
			t.Errorf("diagnostic: %+v", d)
		}
		live := v.Band(core.BandLive)
		if len(live) != 1 {
			t.Fatalf("live band %+v", live)
		}
		texts = append(texts, live[0].Text())
	}
	// Turn 1 collects the first recall; turn 2 starts the second and
	// serves the first stale; the second lands in turn 3, after turn 2's
	// context was cancelled.
	if got := strings.Join(texts, ","); got != "doc 1,doc 1,doc 2" {
		t.Fatalf("served %s, want the late recall's result next turn", got)
	}
}

// An init hook that outlives its timeout can no longer write: its storage
// handle is revoked when the runtime stops waiting (and the race detector
// sees no unguarded access).
func TestLateInitStorageIsRevoked(t *testing.T) {
	ctx := context.Background()
	done := make(chan struct{})
	var early, late error
	a := core.Layer[int]{ID: "a", Slot: 1, OnInitError: core.InitErrorDisable, Timeouts: core.Timeouts{core.HookInit: 20 * time.Millisecond},
		Hooks: core.Hooks[int]{Init: func(ictx context.Context, p core.InitParams) (int, error) {
			defer close(done)
			early = p.Storage.Save(ictx, "early", 1)
			<-ictx.Done() // outlives its timeout
			// Answer well after the deadline (an answer racing it would
			// count as in time).
			time.Sleep(20 * time.Millisecond)
			for i := range 50 {
				if err := p.Storage.Save(context.Background(), "late", i); err != nil {
					late = err
				}
				_, _ = p.Storage.Load(context.Background(), "late", new(int))
			}
			return 0, nil
		}}}
	b := core.Layer[int]{ID: "b", Slot: 2}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{a, b}})
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := core.SetState(ctx, s, "b", i); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	if early != nil {
		t.Fatalf("save within the init: %v", early)
	}
	if !errors.Is(late, core.ErrStorageRevoked) {
		t.Fatalf("late save: %v, want ErrStorageRevoked", late)
	}
	if _, err := rt.Store().Get(ctx, storage.Key{Scope: "thread", ScopeID: "t", Layer: "a", Name: "late"}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the disabled layer wrote after its init timed out: %v", err)
	}
	if err := core.SetState(ctx, s, "a", 7); err == nil {
		t.Fatal("SetState on a disabled layer succeeded")
	}
}

// A failed recall of a pinned layer leaves the pin standing: no
// retraction, no replace when it recovers, no churn. A live layer shows
// nothing for the failed turn and is back the next.
func TestFailedRecallKeepsThePin(t *testing.T) {
	for _, trailing := range []bool{false, true} {
		t.Run(fmt.Sprint("trailing=", trailing), func(t *testing.T) {
			fail := false
			recall := func(text string) func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
				return func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
					if fail {
						return core.Recall[int]{}, errors.New("vector store hiccup")
					}
					return core.Text[int](text)
				}
			}
			pinned := core.Layer[int]{ID: "facts", Slot: 1, Scope: core.ScopeExecution, Placement: core.PlacementAnchor,
				Hooks: core.Hooks[int]{Recall: recall("The user prefers metric units.")}}
			live := core.Layer[int]{ID: "clock", Slot: 2, Scope: core.ScopeExecution, Placement: core.PlacementLive,
				Hooks: core.Hooks[int]{Recall: recall("It is morning.")}}
			s := start(t, core.Config{Layers: []core.AnyLayer{pinned, live}, Cache: core.CacheConfig{TrailingUpdates: trailing}})
			for i, f := range []bool{false, true, false, true} {
				fail = f
				if i == 3 {
					// A re-anchor while the recall fails pins the last
					// good output, not nothing.
					s.ExpectColdCache()
				}
				v := turn(t, s, "q")
				u := v.Usage.Layer("facts")
				if u.Update != "" || u.ChurnRate != 0 || u.Served != core.ServedPinned || updates(v) != "" {
					t.Fatalf("turn %d fail=%v: facts %+v, updates %q", i, f, u, updates(v))
				}
				if a := v.Band(core.BandAnchor); len(a) != 1 || a[0].Text() != "The user prefers metric units." {
					t.Fatalf("turn %d: anchor %+v", i, a)
				}
				lu := v.Usage.Layer("clock")
				if f != (lu.Served == core.ServedNone) || f != (len(v.Band(core.BandLive)) == 0) || lu.ChurnRate != 0 {
					t.Fatalf("turn %d fail=%v: live %+v band %+v", i, f, lu, v.Band(core.BandLive))
				}
				if f && len(v.Usage.Diagnostics) != 2 {
					t.Fatalf("turn %d: diagnostics %+v", i, v.Usage.Diagnostics)
				}
			}
		})
	}
}

// The default history step never drops the whole history: the newest user
// message stays when it fits.
func TestHistoryStepKeepsTheNewestUserMessage(t *testing.T) {
	ctx := context.Background()
	s := start(t, core.Config{Policy: &core.Policy{TokenBudget: 2000}})
	_ = s.Append(ctx, core.AssistantMessage(strings.Repeat("abcd", 1897))) // ~1900 tokens
	_ = s.Append(ctx, core.UserMessage(strings.Repeat("wxyz", 197)))       // ~200 tokens: fits alone
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := v.Band(core.BandHistory)
	if len(h) != 1 || h[0].Role != core.RoleUser {
		t.Fatalf("history = %d items (%d tokens), want the newest user message", len(h), v.Usage.BandTokens[core.BandHistory])
	}
}

// Infinite budgets are uncapped, huge finite ones saturate: no negative
// budget, the pool conserved.
func TestAllocateInfiniteAndHugeBudgets(t *testing.T) {
	cases := []struct {
		name    string
		pool    int
		budgets []core.Budget
		want    []int
		unalloc int
	}{
		{"fixed +Inf splits with auto", 1000, []core.Budget{core.Fixed(math.Inf(1)), core.Budget{}}, []int{500, 500}, 0},
		{"fixed +Inf alone takes the pool", 1000, []core.Budget{core.Fixed(math.Inf(1)), core.Fixed(100)}, []int{900, 100}, 0},
		{"huge range max saturates", 1000, []core.Budget{core.Range(0, 1e300), core.Fixed(10)}, []int{990, 10}, 0},
		{"huge range max with auto", 1000, []core.Budget{core.Range(100, 1e300), core.Budget{}}, []int{1000, 0}, 0},
		{"unlimited pool", core.Unlimited, []core.Budget{core.Fixed(math.Inf(1)), core.Range(1, 1e300), core.Fixed(1e19)},
			[]int{core.Unlimited, math.MaxInt, math.MaxInt}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := core.Allocate(c.pool, c.budgets)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(a.Tokens) != fmt.Sprint(c.want) || a.Unallocated != c.unalloc {
				t.Fatalf("tokens = %v unallocated %d, want %v %d", a.Tokens, a.Unallocated, c.want, c.unalloc)
			}
		})
	}
	// Huge minimums cannot wrap around into fitting the pool.
	var ce *core.ConfigError
	for _, b := range [][]core.Budget{{core.Fixed(1e300)}, {core.Fixed(9.2e18), core.Fixed(9.2e18)}, {core.Range(1e19, 1e300)}} {
		if _, err := core.Allocate(1000, b); !errors.As(err, &ce) || ce.Code != core.CodeBudgetExceedsPool {
			t.Fatalf("%v: %v, want BUDGET_EXCEEDS_POOL", b, err)
		}
	}
	if _, err := core.NewRuntime(core.Config{Policy: &core.Policy{TokenBudget: 1000}, Layers: []core.AnyLayer{
		core.Layer[int]{ID: "x", Scope: core.ScopeExecution, Budget: core.Fixed(math.Inf(1))}}}); err != nil {
		t.Fatalf("Fixed(+Inf) in a runtime: %v", err)
	}
}

// An explicit layer pool larger than the policy leaves is a configuration
// error, not silently dropped pins.
func TestLayerPoolOverPolicyIsRejected(t *testing.T) {
	big := core.Layer[int]{ID: "big", Slot: 1, Scope: core.ScopeExecution, Placement: core.PlacementAnchor}
	sys := []core.Item{core.SystemMessage("You are terse.")}
	_, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{big}, LayerPool: 5000, Policy: &core.Policy{TokenBudget: 500}, System: sys})
	var ce *core.ConfigError
	if !errors.As(err, &ce) || ce.Code != core.CodeBudgetExceedsPool || ce.Field != "LayerPool" {
		t.Fatalf("NewRuntime: %v, want BUDGET_EXCEEDS_POOL on LayerPool", err)
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{big}, LayerPool: 400, Policy: &core.Policy{TokenBudget: 500, ResponseReserve: 50}, System: sys})
	if err != nil {
		t.Fatalf("a pool within the policy: %v", err)
	}
	if b := rt.Budgets()["big"]; b != 400 {
		t.Fatalf("budget %d", b)
	}
	// An Unlimited pool leaves the layers uncapped on purpose: what the
	// view cannot hold is left out and reported, never shown as pinned.
	text := strings.Repeat("abcd", 800) // ~800 tokens
	big.Hooks.Recall = func(context.Context, core.RecallParams[int]) (core.Recall[int], error) { return core.Text[int](text) }
	small := core.Layer[int]{ID: "small", Slot: 2, Scope: core.ScopeExecution, Placement: core.PlacementLive,
		Hooks: core.Hooks[int]{Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) { return core.Text[int]("hi") }}}
	s := start(t, core.Config{Layers: []core.AnyLayer{big, small}, LayerPool: core.Unlimited, Policy: &core.Policy{TokenBudget: 500}})
	v, err := s.Assemble(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	u := v.Usage.Layer("big")
	if len(v.Band(core.BandAnchor)) != 0 || u.Served != core.ServedNone || u.Dropped != 1 || u.Tokens != 0 || v.Usage.LayerDropped != 1 {
		t.Fatalf("dropped anchor reported as %+v (LayerDropped %d)", u, v.Usage.LayerDropped)
	}
	if d := v.Usage.Diagnostics; len(d) != 1 || d[0].Layer != "big" || d[0].Kind != core.KindOverBudget {
		t.Fatalf("diagnostics %+v", d)
	}
	if u := v.Usage.Layer("small"); u.Dropped != 0 || u.Served != core.ServedFresh || len(v.Band(core.BandLive)) != 1 {
		t.Fatalf("small %+v", u)
	}
}

// An init that aborts the start disposes the layers initialised before
// it, newest first.
func TestStartFailureDisposesInitialisedLayers(t *testing.T) {
	var mu sync.Mutex
	var events []string
	rec := func(s string) {
		mu.Lock()
		events = append(events, s)
		mu.Unlock()
	}
	mk := func(id string, slot int, fail bool) core.Layer[int] {
		return core.Layer[int]{ID: id, Slot: slot, Scope: core.ScopeExecution, Hooks: core.Hooks[int]{
			Init: func(context.Context, core.InitParams) (int, error) {
				rec("init " + id)
				if fail {
					return 0, errors.New("no")
				}
				return 1, nil
			},
			Dispose: func(context.Context, core.CompleteParams[int]) error { rec("dispose " + id); return nil }}}
	}
	off := mk("off", 2, true)
	off.OnInitError = core.InitErrorDisable
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{mk("a", 1, false), off, mk("b", 3, false), mk("bad", 4, true), mk("never", 5, false)}})
	if _, err := rt.Start(context.Background(), core.RunOptions{}); err == nil {
		t.Fatal("start succeeded")
	}
	if got := strings.Join(events, ", "); got != "init a, init off, init b, init bad, dispose b, dispose a" {
		t.Fatalf("events: %s", got)
	}
}

// A child run does not re-run Init for a layer disabled in its parent.
func TestSpawnSkipsLayersDisabledInTheParent(t *testing.T) {
	ctx := context.Background()
	var inits atomic.Int32
	l := core.Layer[int]{ID: "x", Slot: 1, Scope: core.ScopeExecution, OnInitError: core.InitErrorDisable, Hooks: core.Hooks[int]{
		Init: func(context.Context, core.InitParams) (int, error) {
			if inits.Add(1) == 1 {
				return 0, errors.New("first init fails")
			}
			return 1, nil
		},
		Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) { return core.Text[int]("x") }}}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}})
	s, _ := rt.Start(ctx, core.RunOptions{})
	child, err := s.Spawn(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if inits.Load() != 1 {
		t.Fatalf("init ran %d times", inits.Load())
	}
	v, _ := child.Assemble(ctx)
	if u := v.Usage.Layer("x"); !u.Disabled || v.Len() != 0 {
		t.Fatalf("child: %+v %+v", u, v.Items())
	}
}

// A tool or function schema must be exactly one JSON object.
func TestSchemasMustBeOneJSONObject(t *testing.T) {
	for _, params := range []string{`{"type":"object"} {"x":1}`, `[1]`, `{"type":`, `"object"`} {
		l := core.Layer[int]{ID: "l", Scope: core.ScopeExecution, Functions: []core.Function[int]{{Spec: core.ToolSpec{Name: "f", Parameters: json.RawMessage(params)}}}}
		_, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}})
		var ce *core.ConfigError
		if !errors.As(err, &ce) || ce.Code != core.CodeInvalidLayer || !strings.Contains(ce.Field, "Parameters") {
			t.Errorf("%s: %v", params, err)
		}
	}
	l := core.Layer[int]{ID: "l", Scope: core.ScopeExecution, Functions: []core.Function[int]{{Spec: core.ToolSpec{Name: "f", Parameters: json.RawMessage(` {"type":"object"} `)}}}}
	if _, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}}); err != nil {
		t.Fatal(err)
	}
}

// A provided function's panic is masked from the model, as a tool's is.
func TestCallFunctionMasksPanics(t *testing.T) {
	ctx := context.Background()
	l := core.Layer[int]{ID: "l", Scope: core.ScopeExecution, Functions: []core.Function[int]{{Spec: core.ToolSpec{Name: "f"},
		Call: func(context.Context, core.CallParams[int]) (core.FunctionResult[int], error) {
			panic("secret 0xdeadbeef")
		}}}}
	s := start(t, core.Config{Layers: []core.AnyLayer{l}})
	out, err := s.ExecuteTool(ctx, core.FunctionCall("c1", "l/f", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.Output, "secret") || !strings.Contains(out.Output, "failed unexpectedly") {
		t.Fatalf("output %q", out.Output)
	}
	if d := s.Diagnostics(); len(d) != 1 || d[0].Kind != core.KindPanic || !strings.Contains(d[0].Message, "secret") {
		t.Fatalf("diagnostics %+v", d)
	}
}

// A negative LayerPool is the one way to lift the pool limit: it means
// what Unlimited means.
func TestNegativeLayerPoolIsUnlimited(t *testing.T) {
	l := core.Layer[int]{ID: "a", Scope: core.ScopeExecution}
	for _, pool := range []int{-1, core.Unlimited} {
		rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}, LayerPool: pool, Policy: &core.Policy{TokenBudget: 500}})
		if err != nil {
			t.Fatalf("pool %d: %v", pool, err)
		}
		if b := rt.Budgets()["a"]; b != core.Unlimited {
			t.Fatalf("pool %d: budget %d, want Unlimited", pool, b)
		}
	}
}
