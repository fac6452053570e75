package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/toolcalls"
	"github.com/stratamem/strata/storage"
)

// interferingStore is a memory store where another run writes the key
// under contention just before each of this run's writes of it, while
// interfere is set: the shape of a lost compare-and-swap.
type interferingStore struct {
	*storage.Memory
	interfere atomic.Bool
}

func (s *interferingStore) Put(ctx context.Context, k storage.Key, v []byte, expected int64) (int64, error) {
	if s.interfere.Load() && k.Layer == "todos" {
		e, err := s.Memory.Get(ctx, k)
		rev := int64(0)
		if err == nil {
			rev = e.Revision
		}
		var other []string
		if err == nil {
			_ = json.Unmarshal(e.Value, &other)
		}
		other = append(other, fmt.Sprintf("other-%d", len(other)))
		raw, _ := json.Marshal(other)
		if _, err := s.Memory.Put(ctx, k, raw, rev); err != nil {
			return 0, err
		}
	}
	return s.Memory.Put(ctx, k, v, expected)
}

type todoArgs struct {
	Text string `json:"text"`
}

// todoTool appends to a resource-scoped list and to an execution-scoped
// counter, and says how many todos it saw: its output depends on the
// state it ran on.
func todoTool(runs *atomic.Int32) core.Tool {
	return toolcalls.MustTool(toolcalls.ToolDef[todoArgs, string]{
		Name:  "add_todo",
		State: &toolcalls.ToolState[[]string]{ID: "todos", Scope: core.ScopeResource},
		Execute: func(_ context.Context, in todoArgs, tc core.ToolContext) (string, error) {
			runs.Add(1)
			todos, _ := toolcalls.GetState[[]string](tc, "todos")
			n, _ := toolcalls.GetState[int](tc, "calls")
			if err := tc.Set("calls", n+1); err != nil {
				return "", err
			}
			if err := tc.Set("todos", append(append([]string(nil), todos...), in.Text)); err != nil {
				return "", err
			}
			return fmt.Sprintf("added %q after %d todo(s)", in.Text, len(todos)), nil
		},
	})
}

func todoRuntime(t *testing.T, store storage.Store, runs *atomic.Int32) *core.Runtime {
	t.Helper()
	tool := todoTool(runs)
	calls := &toolcalls.ToolState[int]{ID: "calls"} // execution-scoped
	layers := append(toolcalls.Layers(tool), calls.Layer())
	rt, err := core.NewRuntime(core.Config{Store: store, Tools: []core.Tool{tool}, Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// A tool whose write to shared state lost the compare-and-swap used to
// answer its own output ("added") while the change was dropped. It is now
// run again on the state the other run stored, and its output is the one
// of the run that was kept.
func TestToolRerunsOnReloadedStateAfterAConflict(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemory()
	var runs atomic.Int32
	rt := todoRuntime(t, store, &runs)
	a, _ := rt.Start(ctx, core.RunOptions{ResourceID: "u"})
	b, _ := rt.Start(ctx, core.RunOptions{ResourceID: "u"}) // both read an empty list

	callA := core.FunctionCall("a1", "add_todo", `{"text":"from a"}`)
	if err := a.Record(ctx, callA); err != nil {
		t.Fatal(err)
	}
	if out, err := a.ExecuteTool(ctx, callA); err != nil || out.Output != `added "from a" after 0 todo(s)` {
		t.Fatalf("a: %q %v", out.Output, err)
	}
	callB := core.FunctionCall("b1", "add_todo", `{"text":"from b"}`)
	if err := b.Record(ctx, callB); err != nil {
		t.Fatal(err)
	}
	runs.Store(0)
	out, err := b.ExecuteTool(ctx, callB)
	if err != nil {
		t.Fatalf("b after one conflict: %v", err)
	}
	if out.Output != `added "from b" after 1 todo(s)` {
		t.Fatalf("b's output %q is not the one of the run on the reloaded state", out.Output)
	}
	if runs.Load() != 2 {
		t.Fatalf("tool ran %d times, want 2 (one conflict, one retry)", runs.Load())
	}
	if got, _ := core.State[[]string](b, "todos"); strings.Join(got, ",") != "from a,from b" {
		t.Fatalf("b's state %q", got)
	}
	if n, _ := core.State[int](b, "calls"); n != 1 {
		t.Fatalf("execution-scoped counter %d, want 1: the lost attempt must not count", n)
	}
	c, _ := rt.Start(ctx, core.RunOptions{ResourceID: "u"})
	if got, _ := core.State[[]string](c, "todos"); strings.Join(got, ",") != "from a,from b" {
		t.Fatalf("stored %q", got)
	}
}

// When every attempt loses the compare-and-swap, the output says the change
// was not applied (never the tool's own output), the host gets a
// *WriteError that is a storage.ErrConflict, and no state, durable or
// in memory, holds any part of the change.
func TestToolConflictRetriesExhaustedSayNotApplied(t *testing.T) {
	ctx := context.Background()
	store := &interferingStore{Memory: storage.NewMemory()}
	var runs atomic.Int32
	rt := todoRuntime(t, store, &runs)
	s, _ := rt.Start(ctx, core.RunOptions{ResourceID: "u"})
	call := core.FunctionCall("c1", "add_todo", `{"text":"mine"}`)
	if err := s.Record(ctx, call); err != nil {
		t.Fatal(err)
	}
	store.interfere.Store(true)
	out, err := s.ExecuteTool(ctx, call)
	store.interfere.Store(false)

	if strings.Contains(out.Output, "added") || !strings.HasPrefix(out.Output, "error: not applied") ||
		!strings.Contains(out.Output, `"todos"`) || !strings.Contains(out.Output, "nothing was changed") {
		t.Fatalf("output %q does not say the change was not applied", out.Output)
	}
	if out.CallID != "c1" {
		t.Fatalf("output answers %q", out.CallID)
	}
	var se *core.WriteError
	if !errors.As(err, &se) || !errors.Is(err, storage.ErrConflict) || !errors.Is(err, core.ErrNotStored) {
		t.Fatalf("error %v (%T), want a *WriteError matching storage.ErrConflict and core.ErrNotStored", err, err)
	}
	want := 1 + core.ToolConflictRetries
	if se.Item != "add_todo" || se.Layer != "todos" || se.Attempts != want || len(se.Applied) != 0 {
		t.Fatalf("WriteError %+v", se)
	}
	if int(runs.Load()) != want {
		t.Fatalf("tool ran %d times, want %d", runs.Load(), want)
	}
	stored, _ := core.State[[]string](s, "todos")
	for _, x := range stored {
		if x == "mine" {
			t.Fatalf("the change the output calls not applied is in the state: %q", stored)
		}
	}
	if len(stored) != want {
		t.Fatalf("state %q, want the %d entries the other run stored", stored, want)
	}
	if n, _ := core.State[int](s, "calls"); n != 0 {
		t.Fatalf("execution-scoped counter %d: half of a change that was not applied", n)
	}
	conflicts := 0
	for _, d := range s.Diagnostics() {
		if d.Kind == core.KindConflict && d.Layer == "todos" {
			conflicts++
		}
	}
	if conflicts != want {
		t.Fatalf("%d conflict diagnostics, want one per lost attempt (%d)", conflicts, want)
	}
	// The output is a well-formed answer to the call: it can be logged.
	if err := s.Append(ctx, out); err != nil {
		t.Fatal(err)
	}
}

// A write that fails for a reason other than a conflict is not retried,
// and the output does not claim success either.
func TestToolWriteOfWrongTypeSaysNotSaved(t *testing.T) {
	ctx := context.Background()
	tool := toolcalls.MustTool(toolcalls.ToolDef[struct{}, string]{
		Name:  "bad",
		State: &toolcalls.ToolState[int]{},
		Execute: func(_ context.Context, _ struct{}, tc core.ToolContext) (string, error) {
			return "done", tc.Set("bad", "not an int")
		},
	})
	rt, err := core.NewRuntime(core.Config{Tools: []core.Tool{tool}, Layers: toolcalls.Layers(tool)})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	call := core.FunctionCall("c", "bad", `{}`)
	_ = s.Record(ctx, call)
	out, err := s.ExecuteTool(ctx, call)
	var se *core.WriteError
	if !errors.As(err, &se) || se.Attempts != 1 || errors.Is(err, storage.ErrConflict) {
		t.Fatalf("error %v", err)
	}
	if !strings.HasPrefix(out.Output, "error: not saved") || strings.Contains(out.Output, "done") {
		t.Fatalf("output %q", out.Output)
	}
}

// failingStore refuses every write while fail is set: a full disk.
type failingStore struct {
	*storage.Memory
	fail atomic.Bool
}

var errStoreDown = errors.New("store down")

func (s *failingStore) Put(ctx context.Context, k storage.Key, v []byte, expected int64) (int64, error) {
	if s.fail.Load() {
		return 0, errStoreDown
	}
	return s.Memory.Put(ctx, k, v, expected)
}

// A write that the store refuses is not a conflict: it is not retried
// (the state keeps the change and saves it at its next write), and the
// output says it is not saved rather than the tool's own output.
func TestToolWriteTheStoreRefusesSaysNotSaved(t *testing.T) {
	ctx := context.Background()
	store := &failingStore{Memory: storage.NewMemory()}
	var runs atomic.Int32
	rt := todoRuntime(t, store, &runs)
	s, _ := rt.Start(ctx, core.RunOptions{ResourceID: "u"})
	call := core.FunctionCall("c1", "add_todo", `{"text":"mine"}`)
	_ = s.Record(ctx, call)
	store.fail.Store(true)
	out, err := s.ExecuteTool(ctx, call)
	store.fail.Store(false)
	var se *core.WriteError
	if !errors.As(err, &se) || !errors.Is(err, errStoreDown) || !errors.Is(err, core.ErrNotStored) || errors.Is(err, storage.ErrConflict) {
		t.Fatalf("error %v", err)
	}
	if se.Attempts != 1 || runs.Load() != 1 {
		t.Fatalf("retried a write the store refused: %+v, %d runs", se, runs.Load())
	}
	if !strings.HasPrefix(out.Output, "error: not saved") || strings.Contains(out.Output, "added") {
		t.Fatalf("output %q", out.Output)
	}
}

// A tool whose own error says a write was not stored (core.ErrNotStored)
// hands that error to the host with its output, as CallFunction does: it
// is no longer only the model's to read.
func TestToolErrorNotStoredReachesTheHost(t *testing.T) {
	ctx := context.Background()
	tool := toolcalls.MustTool(toolcalls.ToolDef[struct{}, string]{
		Name: "remember",
		Execute: func(context.Context, struct{}, core.ToolContext) (string, error) {
			return "", &core.WriteError{Layer: "remember", Item: "fact 1", Err: errStoreDown}
		},
	})
	rt, err := core.NewRuntime(core.Config{Tools: []core.Tool{tool}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	call := core.FunctionCall("c", "remember", `{}`)
	_ = s.Record(ctx, call)
	out, err := s.ExecuteTool(ctx, call)
	if !errors.Is(err, core.ErrNotStored) || !strings.HasPrefix(out.Output, "error: not saved") {
		t.Fatalf("ExecuteTool: %q %v", out.Output, err)
	}
}

// A plain call routed through ExecuteTool whose function could not store
// its write returns the error to the host, and the output says so.
func TestPlainCallNotStoredReachesTheHost(t *testing.T) {
	ctx := context.Background()
	layer := core.Layer[notes]{ID: "notes", Scope: core.ScopeExecution, Functions: []core.Function[notes]{{
		Spec: core.ToolSpec{Name: "note"}, Plain: true,
		Call: func(context.Context, core.CallParams[notes]) (core.FunctionResult[notes], error) {
			return core.FunctionResult[notes]{}, &core.WriteError{Layer: "notes", Item: "a note", Err: errStoreDown}
		}}}}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{denyLayer("secret"), layer}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	call := core.FunctionCall("c", "note", `{"text":"x"}`)
	_ = s.Record(ctx, call)
	out, err := s.ExecuteTool(ctx, call)
	if !errors.Is(err, core.ErrNotStored) || !strings.HasPrefix(out.Output, "error: not saved") {
		t.Fatalf("ExecuteTool: %q %v", out.Output, err)
	}
}
