package core_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/toolcalls"
)

// denyLayer denies every call whose arguments contain word.
func denyLayer(word string) core.Layer[struct{}] {
	return core.Layer[struct{}]{ID: "policy", Slot: core.SlotSteering, Scope: core.ScopeExecution,
		Hooks: core.Hooks[struct{}]{BeforeToolCall: func(_ context.Context, p core.CallParams[struct{}]) (core.ToolDecision[struct{}], error) {
			if strings.Contains(p.Call.Arguments, word) {
				return core.ToolDecision[struct{}]{Deny: true, Reason: "off limits"}, nil
			}
			return core.ToolDecision[struct{}]{}, nil
		}}}
}

// route plays the host's part for a recorded call, as agent.Turn does: ask
// BeforeToolCall, ExecuteTool what is allowed, Append the output.
func route(t *testing.T, s *core.Session, call core.Item) core.Item {
	t.Helper()
	ctx := context.Background()
	d, err := s.BeforeToolCall(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	out := d.Output
	if d.Allowed {
		if out, err = s.ExecuteTool(ctx, d.Call); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// noteFunction is the plain function "note": it adds the call's text to
// the notes.
func noteFunction() core.Function[notes] {
	return core.Function[notes]{Spec: core.ToolSpec{Name: "note"}, Plain: true,
		Call: func(_ context.Context, p core.CallParams[notes]) (core.FunctionResult[notes], error) {
			args, err := core.DecodeArguments[map[string]any](p.Call.Arguments)
			if err != nil {
				return core.FunctionResult[notes]{}, &core.ArgumentError{Function: "note", Err: err}
			}
			text, _ := args["text"].(string)
			next := notes{Lines: append(append([]string(nil), p.State.Lines...), text)}
			return core.FunctionResult[notes]{Output: "noted", State: &next}, nil
		}}
}

// plainNotesLayer is notesLayer applying "note" by the plain function
// instead of its Store hook.
func plainNotesLayer() core.Layer[notes] {
	layer := notesLayer("notes", core.ScopeExecution, nil, nil)
	layer.Hooks.Store = nil
	layer.Functions = []core.Function[notes]{noteFunction()}
	return layer
}

// A plain call (Function.Plain) used to be applied by the Store hook when
// Record logged it, before the steering layers were asked: a denied call
// still changed the state. With a layer that can deny, it is applied only
// when the host routes it after the layers allowed it.
func TestDeniedPlainCallLeavesStateUnchanged(t *testing.T) {
	ctx := context.Background()
	layer := plainNotesLayer()
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{denyLayer("secret"), layer}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	lines := func() []string { st, _ := core.State[notes](s, "notes"); return st.Lines }

	denied := core.FunctionCall("c1", "note", `{"text":"the secret is 42"}`)
	if err := s.Record(ctx, denied); err != nil {
		t.Fatal(err)
	}
	if got := lines(); len(got) != 0 {
		t.Fatalf("Record applied a call before anyone was asked: %q", got)
	}
	if out := route(t, s, denied); !strings.Contains(out.Output, "denied by policy") {
		t.Fatalf("denied output %q", out.Output)
	}
	if got := lines(); len(got) != 0 {
		t.Fatalf("denied call applied: %q", got)
	}
	// Routing the denied call anyway is refused.
	if out, err := s.ExecuteTool(ctx, denied); !errors.Is(err, core.ErrCallDenied) || !strings.HasPrefix(out.Output, "error: ") {
		t.Fatalf("ExecuteTool of a denied call: %+v %v", out, err)
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range v.Items() {
		if strings.Contains(it.Text(), "<notes>") {
			t.Fatalf("denied call rendered by the layer: %q", it.Text())
		}
	}

	allowed := core.FunctionCall("c2", "note", `{"text":"buy milk"}`)
	if err := s.Record(ctx, allowed); err != nil {
		t.Fatal(err)
	}
	if got := lines(); len(got) != 0 {
		t.Fatalf("allowed call applied before routing: %q", got)
	}
	if out := route(t, s, allowed); out.Output != "ok: applied by notes" {
		t.Fatalf("allowed output %q", out.Output)
	}
	if got := lines(); len(got) != 1 || got[0] != "buy milk" {
		t.Fatalf("allowed call: lines %q", got)
	}
	// A second routing of the same call id applies nothing.
	if out, err := s.ExecuteTool(ctx, allowed); err != nil || out.Output != "ok: applied by notes" {
		t.Fatalf("replay: %+v %v", out, err)
	}
	if got := lines(); len(got) != 1 {
		t.Fatalf("replayed call applied twice: %q", got)
	}
	// The next Record does not apply it either.
	if err := s.Record(ctx, core.AssistantMessage("done")); err != nil {
		t.Fatal(err)
	}
	if got := lines(); len(got) != 1 {
		t.Fatalf("Record re-applied a routed call: %q", got)
	}
}

// Without any layer that can deny, a plain call is applied when Record
// logs it (the pseudo-tool needs no routing), and ExecuteTool only answers
// it. A call id is applied once, and a call recorded with its output (the
// host answered it) is not applied. Plain names are not offered as tools.
func TestPlainCallWithoutDeniersAppliedAtRecord(t *testing.T) {
	ctx := context.Background()
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{plainNotesLayer()}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	lines := func() []string { st, _ := core.State[notes](s, "notes"); return st.Lines }
	call := core.FunctionCall("c1", "note", `{"text":"x"}`)
	if err := s.Record(ctx, call); err != nil {
		t.Fatal(err)
	}
	if got := lines(); len(got) != 1 {
		t.Fatalf("lines %q", got)
	}
	if out := route(t, s, call); out.Output != "ok: applied by notes" {
		t.Fatalf("output %q", out.Output)
	}
	if got := lines(); len(got) != 1 {
		t.Fatalf("applied twice: %q", got)
	}
	if err := s.Record(ctx, call); err != nil {
		t.Fatal(err)
	}
	if got := lines(); len(got) != 1 {
		t.Fatalf("re-recorded call applied again: %q", got)
	}
	if err := s.Record(ctx, core.FunctionCall("c2", "note", `{"text":"y"}`), core.FunctionCallOutput("c2", "answered")); err != nil {
		t.Fatal(err)
	}
	if got := lines(); len(got) != 1 {
		t.Fatalf("call recorded with its output applied: %q", got)
	}
	// A rejected call is a diagnostic naming the call, not an error.
	if err := s.Record(ctx, core.FunctionCall("c3", "note", `[1]`)); err != nil {
		t.Fatal(err)
	}
	if d := s.Diagnostics(); len(d) != 1 || d[0].Hook != "note" || d[0].Kind != core.KindRejected {
		t.Fatalf("diagnostics %+v", d)
	}
	if len(s.Tools()) != 0 {
		t.Fatalf("plain call offered as a tool: %+v", s.Tools())
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Tools) != 0 {
		t.Fatalf("plain call in View.Tools: %+v", v.Tools)
	}
}

// A layer sees, with a function_call_output, the call it answers and
// whether this session let that call run, so it can act on a call's effect
// (a file read) only once the steering layers allowed it.
func TestOutputCarriesItsCallAndVerdict(t *testing.T) {
	ctx := context.Background()
	type seen struct {
		call    string
		allowed bool
	}
	var mu sync.Mutex
	got := map[string]seen{}
	watcher := core.Layer[struct{}]{ID: "watch", Slot: 10, Scope: core.ScopeExecution, Hooks: core.Hooks[struct{}]{
		OnItemAppend: func(_ context.Context, p core.ItemAppendParams[struct{}]) (*struct{}, error) {
			if p.Item.Type == core.TypeFunctionCallOutput {
				var name string
				if p.Call != nil {
					name = p.Call.Name + " " + p.Call.Arguments
				}
				mu.Lock()
				got[p.Item.CallID] = seen{name, p.CallAllowed}
				mu.Unlock()
			}
			return nil, nil
		}}}
	tool := toolcalls.MustTool(toolcalls.ToolDef[struct{}, string]{Name: "read", Execute: func(context.Context, struct{}, core.ToolContext) (string, error) { return "content", nil }})
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{denyLayer("secret"), watcher}, Tools: []core.Tool{tool}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	deny := core.FunctionCall("d", "read", `{"secret":1}`)
	allow := core.FunctionCall("a", "read", `{}`)
	unasked := core.FunctionCall("u", "read", `{}`)
	if err := s.Record(ctx, deny, allow, unasked); err != nil {
		t.Fatal(err)
	}
	route(t, s, deny)
	route(t, s, allow)
	if err := s.Append(ctx, core.FunctionCallOutput("u", "host ran it without asking")); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, core.FunctionCallOutput("nocall", "dangling")); err != nil {
		t.Fatal(err)
	}
	want := map[string]seen{
		"d": {`read {"secret":1}`, false}, "a": {"read {}", true}, "u": {"read {}", false}, "nocall": {"", false},
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("output %s: saw %+v, want %+v", id, got[id], w)
		}
	}
}

// A BeforeToolCall hook that errors, panics or times out used to allow the
// call: a Deny rule whose check was slow let the call run. It now denies
// (fail closed) with a diagnostic, unless the layer opts into
// FailOpen.
func TestBeforeToolCallFailsClosed(t *testing.T) {
	ctx := context.Background()
	block := make(chan struct{})
	defer close(block)
	hooks := map[string]func(context.Context, core.CallParams[struct{}]) (core.ToolDecision[struct{}], error){
		"errors": func(context.Context, core.CallParams[struct{}]) (core.ToolDecision[struct{}], error) {
			return core.ToolDecision[struct{}]{}, errors.New("policy backend down")
		},
		"panics": func(context.Context, core.CallParams[struct{}]) (core.ToolDecision[struct{}], error) {
			panic("boom")
		},
		"hangs": func(context.Context, core.CallParams[struct{}]) (core.ToolDecision[struct{}], error) {
			<-block // a slow Match that ignores its context
			return core.ToolDecision[struct{}]{Deny: true, Reason: "too late"}, nil
		},
	}
	kinds := map[string]core.DiagnosticKind{"errors": core.KindError, "panics": core.KindPanic, "hangs": core.KindTimeout}
	for name, hook := range hooks {
		for _, failOpen := range []bool{false, true} {
			l := core.Layer[struct{}]{ID: name, Scope: core.ScopeExecution, FailOpen: failOpen,
				Timeouts: core.Timeouts{core.HookBeforeToolCall: 30 * time.Millisecond},
				Hooks:    core.Hooks[struct{}]{BeforeToolCall: hook}}
			rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}})
			if err != nil {
				t.Fatal(err)
			}
			s, _ := rt.Start(ctx, core.RunOptions{})
			call := core.FunctionCall("c", "shell", `{"cmd":"rm -rf /"}`)
			res, err := s.BeforeToolCall(ctx, call)
			if err != nil {
				t.Fatalf("%s/%v: err %v", name, failOpen, err)
			}
			if failOpen {
				if !res.Allowed {
					t.Errorf("%s: fail-open layer denied: %+v", name, res)
				}
			} else {
				if res.Allowed {
					t.Errorf("%s: a failed check ALLOWED the call", name)
				}
				if res.DeniedBy != name || !strings.Contains(res.Reason, "could not be checked") ||
					res.Output.CallID != "c" || !strings.Contains(res.Output.Output, "denied by "+name) {
					t.Errorf("%s: decision %+v", name, res)
				}
				if out, err := s.ExecuteTool(ctx, call); !errors.Is(err, core.ErrCallDenied) {
					t.Errorf("%s: ExecuteTool after the denial: %+v %v", name, out, err)
				}
			}
			d := s.Diagnostics()
			if len(d) != 1 || d[0].Layer != name || d[0].Hook != "beforeToolCall" || d[0].Kind != kinds[name] {
				t.Errorf("%s: diagnostics %+v", name, d)
			}
		}
	}
}
