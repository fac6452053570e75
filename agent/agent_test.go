package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/agent"
	"github.com/stratamem/strata/cachesim"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/toolcalls"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/scripted"
)

type counter struct{ N int }

type incArgs struct {
	By int `json:"by"`
}

func counterLayer() core.Layer[counter] {
	return core.Layer[counter]{ID: "counter", Slot: 100, Scope: core.ScopeExecution,
		Hooks: core.Hooks[counter]{
			Recall: func(_ context.Context, p core.RecallParams[counter]) (core.Recall[counter], error) {
				return core.Text[counter](strings.Repeat("counter state. ", 80) + string(rune('0'+p.State.N)))
			},
			BeforeToolCall: func(_ context.Context, p core.CallParams[counter]) (core.ToolDecision[counter], error) {
				if p.Call.Name == "rm_rf" {
					return core.ToolDecision[counter]{Deny: true, Reason: "destructive commands are not allowed"}, nil
				}
				return core.ToolDecision[counter]{}, nil
			},
		},
		Functions: []core.Function[counter]{core.NewFunction("inc", "Increment.", func(_ context.Context, s counter, a incArgs) (string, *counter, error) {
			next := counter{N: s.N + a.By}
			return "ok", &next, nil
		})},
	}
}

func TestTurnRunsToolsUntilDone(t *testing.T) {
	ctx := context.Background()
	echo := toolcalls.MustTool(toolcalls.ToolDef[struct {
		Text string `json:"text"`
	}, string]{Name: "echo", Execute: func(_ context.Context, in struct {
		Text string `json:"text"`
	}, _ core.ToolContext) (string, error) {
		return in.Text, nil
	}})
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{counterLayer()}, Tools: []core.Tool{echo},
		System: []core.Item{core.SystemMessage(strings.Repeat("You are a careful agent. ", 200))}})
	if err != nil {
		t.Fatal(err)
	}
	sim, _ := cachesim.NewAnthropic(cachesim.AnthropicOptions{})
	model := &scripted.Model{Cache: sim, Script: func(req provider.Request, call int) ([]core.Item, error) {
		switch call {
		case 0:
			return []core.Item{core.FunctionCall("a", "counter/inc", `{"by":2}`), core.FunctionCall("b", "echo", `{"text":"hi"}`)}, nil
		case 1:
			return []core.Item{core.FunctionCall("c", "rm_rf", `{}`), core.FunctionCall("d", "nope", `{}`)}, nil
		}
		return []core.Item{core.AssistantMessage("done")}, nil
	}}
	a, err := agent.New(agent.Options{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
	res, err := a.Turn(ctx, s, core.UserMessage("go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rounds) != 3 || res.Stop != agent.StopNoToolCalls || res.Text() != "done" {
		t.Fatalf("result = %+v", res)
	}
	outputs := map[string]string{}
	for _, it := range s.Items() {
		if it.Type == core.TypeFunctionCallOutput {
			outputs[it.CallID] = it.Output
		}
	}
	if outputs["a"] != "ok" || outputs["b"] != "hi" || !strings.Contains(outputs["c"], "denied by counter") ||
		!strings.Contains(outputs["d"], "unknown tool") {
		t.Fatalf("outputs = %v", outputs)
	}
	if st, _ := core.State[counter](s, "counter"); st.N != 2 {
		t.Fatalf("counter = %d", st.N)
	}
	if !res.Rounds[0].Cache.FirstRound || res.Rounds[1].Cache.FirstRound || !res.Rounds[1].Cache.Reported {
		t.Fatalf("cache reports = %+v", res.Rounds)
	}
	// The second round reads the system prompt and anchor from the cache.
	if res.Rounds[1].Cache.ReadTokens == 0 {
		t.Fatalf("no cache read on round 2: %+v", res.Rounds[1].Cache)
	}
}

type flaky struct {
	errs  []error
	calls int
}

func (f *flaky) Respond(ctx context.Context, req provider.Request) (*provider.Response, error) {
	f.calls++
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, err
	}
	return &provider.Response{Items: []core.Item{core.AssistantMessage("finally")}}, nil
}

func TestRetriesAndTypedErrors(t *testing.T) {
	ctx := context.Background()
	rt, _ := core.NewRuntime(core.Config{})
	var waits []time.Duration
	sleep := func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	f := &flaky{errs: []error{
		&provider.Error{Provider: "x", StatusCode: 429, Retryable: true, RetryAfter: 3 * time.Second},
		&provider.Error{Provider: "x", StatusCode: 503, Retryable: true},
	}}
	a, _ := agent.New(agent.Options{Model: f, Sleep: sleep})
	s, _ := rt.Start(ctx, core.RunOptions{})
	res, err := a.Turn(ctx, s, core.UserMessage("hi"))
	if err != nil || res.Text() != "finally" || f.calls != 3 {
		t.Fatalf("res=%+v err=%v calls=%d", res, err, f.calls)
	}
	if len(waits) != 2 || waits[0] != 3*time.Second || waits[1] != 2*time.Second {
		t.Fatalf("waits = %v", waits)
	}
	// A non-retryable error ends the turn, typed, with nothing half-recorded.
	f = &flaky{errs: []error{&provider.Error{Provider: "x", StatusCode: 400, Message: "bad request"}}}
	a, _ = agent.New(agent.Options{Model: f, Sleep: sleep})
	s, _ = rt.Start(ctx, core.RunOptions{})
	_, err = a.Turn(ctx, s, core.UserMessage("hi"))
	var perr *provider.Error
	if !errors.As(err, &perr) || perr.StatusCode != 400 || !errors.Is(err, provider.ErrProvider) {
		t.Fatalf("err = %v", err)
	}
	if n := len(s.Items()); n != 1 {
		t.Fatalf("log has %d items after a failed call, want only the input", n)
	}
}

func TestCancelledTurnLeavesNoDanglingCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{counterLayer()}})
	model := &scripted.Model{Script: func(req provider.Request, call int) ([]core.Item, error) {
		cancel() // the host gives up while the model answers
		return []core.Item{core.FunctionCall("a", "counter/inc", `{"by":1}`), core.FunctionCall("b", "counter/inc", `{"by":1}`)}, nil
	}}
	a, _ := agent.New(agent.Options{Model: model})
	s, _ := rt.Start(context.Background(), core.RunOptions{})
	_, err := a.Turn(ctx, s, core.UserMessage("go"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	calls, outs := 0, 0
	for _, it := range s.Items() {
		switch it.Type {
		case core.TypeFunctionCall:
			calls++
		case core.TypeFunctionCallOutput:
			outs++
		}
	}
	if calls != outs {
		t.Fatalf("%d calls but %d outputs", calls, outs)
	}
}

func TestMaxRoundsAndUntil(t *testing.T) {
	ctx := context.Background()
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{counterLayer()}})
	loop := &scripted.Model{Script: func(req provider.Request, call int) ([]core.Item, error) {
		return []core.Item{core.FunctionCall(string(rune('a'+call)), "counter/inc", `{"by":1}`)}, nil
	}}
	a, _ := agent.New(agent.Options{Model: loop, MaxRounds: 3})
	s, _ := rt.Start(ctx, core.RunOptions{})
	res, err := a.Turn(ctx, s, core.UserMessage("go"))
	var mre *agent.MaxRoundsError
	if !errors.As(err, &mre) || !errors.Is(err, agent.ErrMaxRounds) || mre.Rounds != 3 || !slices.Equal(mre.LastCalls, []string{"counter/inc"}) ||
		res.Stop != agent.StopMaxRounds || len(res.Rounds) != 3 {
		t.Fatalf("res = %+v err = %v", res, err)
	}
	// A turn that answered in text on the way is not an error.
	chatty := &scripted.Model{Script: func(req provider.Request, call int) ([]core.Item, error) {
		return []core.Item{core.AssistantMessage("working on it"), core.FunctionCall(string(rune('a'+call)), "counter/inc", `{"by":1}`)}, nil
	}}
	a, _ = agent.New(agent.Options{Model: chatty, MaxRounds: 2})
	s, _ = rt.Start(ctx, core.RunOptions{})
	if res, err := a.Turn(ctx, s, core.UserMessage("go")); err != nil || res.Stop != agent.StopMaxRounds || res.Text() != "working on it" {
		t.Fatalf("chatty: res = %+v err = %v", res, err)
	}
	a, _ = agent.New(agent.Options{Model: loop, Until: func(round int, _ []core.Item) bool { return round == 1 }})
	s, _ = rt.Start(ctx, core.RunOptions{})
	if res, _ := a.Turn(ctx, s, core.UserMessage("go")); res.Stop != agent.StopUntil || len(res.Rounds) != 2 {
		t.Fatalf("until: %+v", res)
	}
}

func TestSpawnFiresParentHooks(t *testing.T) {
	ctx := context.Background()
	var spawned, returned string
	layer := core.Layer[string]{ID: "notes", Scope: core.ScopeExecution, Hooks: core.Hooks[string]{
		OnSpawn: func(_ context.Context, p core.ChildParams[string]) (*string, error) {
			spawned = p.Child.ParentRunID
			return nil, nil
		},
		OnReturn: func(_ context.Context, p core.ChildParams[string]) (*string, error) {
			returned = p.Result[0].Text()
			return &returned, nil
		},
	}}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}})
	model := &scripted.Model{Script: func(req provider.Request, call int) ([]core.Item, error) {
		return []core.Item{core.AssistantMessage("child result")}, nil
	}}
	a, _ := agent.New(agent.Options{Model: model})
	parent, _ := rt.Start(ctx, core.RunOptions{RunID: "parent"})
	if _, err := a.Spawn(ctx, parent, "research this", nil); err != nil {
		t.Fatal(err)
	}
	if spawned != "parent" || returned != "child result" {
		t.Fatalf("spawned=%q returned=%q", spawned, returned)
	}
	if st, _ := core.State[string](parent, "notes"); st != "child result" {
		t.Fatalf("parent state = %q", st)
	}
}

// TestColdCacheAfterIdle: a turn that starts after the provider's cache
// lifetime re-anchors at once, so its one full write carries fresh pins.
// Without the lifetime the same cold request writes the stale pins and
// the update that supersedes them, and the runtime, seeing an expiry,
// does not re-anchor after it (that would write the prompt a second
// time): the epoch goes on carrying the update.
func TestColdCacheAfterIdle(t *testing.T) {
	run := func(lifetime time.Duration) (reasons []string, written, updates int) {
		t.Helper()
		ctx := context.Background()
		text := "profile v1. " + strings.Repeat("The user's long-lived profile. ", 10)
		profile := core.Layer[struct{}]{ID: "profile", Slot: 100, Placement: core.PlacementAnchor,
			Hooks: core.Hooks[struct{}]{Recall: func(context.Context, core.RecallParams[struct{}]) (core.Recall[struct{}], error) {
				return core.Text[struct{}](text)
			}}}
		rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{profile},
			System: []core.Item{core.SystemMessage(strings.Repeat("You are a careful agent. ", 200))}})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		sim, _ := cachesim.NewAnthropic(cachesim.AnthropicOptions{})
		model := &scripted.Model{Cache: sim, Clock: clock, Script: func(provider.Request, int) ([]core.Item, error) {
			return []core.Item{core.AssistantMessage("ok")}, nil
		}}
		a, err := agent.New(agent.Options{Model: model, CacheLifetime: lifetime, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
		steps := []struct {
			after time.Duration
			text  string
		}{{0, ""}, {time.Minute, "profile v2. "}, {30 * time.Minute, ""}, {time.Minute, ""}}
		for i, st := range steps {
			now = now.Add(st.after)
			if st.text != "" {
				text = st.text + strings.Repeat("The user's long-lived profile. ", 10)
			}
			res, err := a.Turn(ctx, s, core.UserMessage(fmt.Sprint("question ", i)))
			if err != nil {
				t.Fatal(err)
			}
			ep := res.Rounds[0].View.Usage.Epoch
			reason := "-"
			if ep.Reanchored {
				reason = string(ep.ReanchorReason)
			}
			reasons = append(reasons, reason)
			if i >= 2 {
				written += res.Rounds[0].Cache.WriteTokens
			}
			updates = ep.Updates
		}
		return reasons, written, updates
	}
	on, wOn, uOn := run(0)
	off, wOff, uOff := run(-1)
	if got := strings.Join(on, " "); got != "initial - cache-expired -" {
		t.Fatalf("with the default lifetime: re-anchors %s", got)
	}
	if got := strings.Join(off, " "); got != "initial - - -" {
		t.Fatalf("without a lifetime: re-anchors %s (an expiry must not re-anchor after the request that missed)", got)
	}
	// With the lifetime the cold write folds the update into fresh pins;
	// without it the update is written and carried on.
	if uOn != 0 || uOff == 0 || wOn >= wOff {
		t.Fatalf("after the idle time: with the lifetime %d tokens written, %d updates carried; without %d, %d", wOn, uOn, wOff, uOff)
	}
	t.Logf("tokens written after the idle time: %d with the lifetime, %d without", wOn, wOff)
}

// A provider's retry-after advice is capped (one minute by default,
// Options.MaxRetryWait), so a buggy or hostile header cannot hold the
// loop for hours; the exponential backoff is capped the same way.
func TestRetryWaitIsCapped(t *testing.T) {
	ctx := context.Background()
	rt, _ := core.NewRuntime(core.Config{})
	for _, tc := range []struct {
		max  time.Duration
		want []time.Duration
	}{
		{0, []time.Duration{time.Minute, time.Minute, time.Minute}},
		{10 * time.Second, []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second}},
	} {
		var waits []time.Duration
		sleep := func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
		f := &flaky{errs: []error{
			&provider.Error{Provider: "x", StatusCode: 429, Retryable: true, RetryAfter: 5 * time.Hour},
			&provider.Error{Provider: "x", StatusCode: 503, Retryable: true},
			&provider.Error{Provider: "x", StatusCode: 503, Retryable: true},
		}}
		a, err := agent.New(agent.Options{Model: f, Sleep: sleep, Retries: 3, Backoff: 40 * time.Second, MaxRetryWait: tc.max})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := rt.Start(ctx, core.RunOptions{})
		if res, err := a.Turn(ctx, s, core.UserMessage("hi")); err != nil || res.Text() != "finally" {
			t.Fatalf("res = %+v, err = %v", res, err)
		}
		if fmt.Sprint(waits) != fmt.Sprint(tc.want) {
			t.Fatalf("MaxRetryWait %v: waits = %v, want %v", tc.max, waits, tc.want)
		}
	}
	if _, err := agent.New(agent.Options{Model: &flaky{}, MaxRetryWait: -time.Second}); err == nil {
		t.Fatal("a negative MaxRetryWait was accepted")
	}
}

// truncating answers with text and a complete call, cut by the output
// cap (the adapter has already dropped the call the cap cut off).
type truncating struct{ calls int }

func (m *truncating) Respond(context.Context, provider.Request) (*provider.Response, error) {
	m.calls++
	return &provider.Response{StopReason: "max_tokens", Truncated: true, Items: []core.Item{
		core.AssistantMessage("Counting up, then"), core.FunctionCall("a", "counter/inc", `{"by":1}`)}}, nil
}

// A truncated answer ends the turn with StopTruncated: its complete calls
// run (every recorded call gets its output), but the loop does not go on
// as if the model had finished.
func TestTruncatedAnswerEndsTurn(t *testing.T) {
	ctx := context.Background()
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{counterLayer()}})
	m := &truncating{}
	a, _ := agent.New(agent.Options{Model: m})
	s, _ := rt.Start(ctx, core.RunOptions{})
	res, err := a.Turn(ctx, s, core.UserMessage("go"))
	if err != nil || res.Stop != agent.StopTruncated || m.calls != 1 || len(res.Rounds[0].ToolOutputs) != 1 {
		t.Fatalf("stop = %q, rounds = %d, err = %v, model calls = %d", res.Stop, len(res.Rounds), err, m.calls)
	}
	if st, _ := core.State[counter](s, "counter"); st.N != 1 {
		t.Fatalf("counter = %d: the complete call did not run", st.N)
	}
}
