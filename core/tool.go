package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/stratamem/strata/storage"
)

// ToolSpec describes a tool to the model: a host tool (Tool.Spec) or a
// function a layer provides (Layer.Functions), which the model sees alike.
type ToolSpec struct {
	// Name is the name the model calls: a host tool's own name, or
	// "layerID/fnName" for a provided function (Session.Tools, View.Tools).
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments object. In
	// Session.Tools and View.Tools it is canonical JSON, an object schema
	// with any properties when the tool declared none.
	Parameters json.RawMessage
}

// ToolContext is what a running tool sees of the context layers: their
// state by layer id (toolcalls.GetState is its typed form). Writes are
// applied when the tool returns successfully, so a tool that fails,
// panics or times out changes nothing; the next recall sees them. A write the store refuses is not half applied either:
// see Session.ExecuteTool.
type ToolContext interface {
	// Get returns the state of the layer with id (the tool's own state
	// declaration, or any other layer). ok is false for an unknown layer.
	Get(layerID string) (state any, ok bool)
	// Set replaces the state of the layer with id.
	Set(layerID string, state any) error
	// Run identifies the run.
	Run() RunInfo
}

// Tool is a tool the host offers the model (Config.Tools). The
// toolcalls package builds them from typed Go functions
// (toolcalls.NewTool), with the state they share.
type Tool interface {
	Spec() ToolSpec
	// StateID is the id of the layer holding the state the tool reads
	// and writes through its ToolContext, "" when it has none. NewRuntime
	// refuses a tool whose state layer is not configured.
	StateID() string
	// Execute runs the tool with the model's JSON arguments and returns the
	// output sent back to the model. An *ArgumentError means the arguments
	// were rejected before the tool ran.
	Execute(ctx context.Context, tc ToolContext, arguments string) (string, error)
}

// sessionToolContext buffers a tool's writes until it returns.
type sessionToolContext struct {
	s *Session
	// snapshot holds every layer's state when the tool started: its own
	// slice, since a tool that timed out may still read it later.
	snapshot []any
	mu       sync.Mutex
	writes   map[string]any
	order    []string
}

func (tc *sessionToolContext) Run() RunInfo { return tc.s.info }

func (tc *sessionToolContext) Get(layerID string) (any, bool) {
	tc.mu.Lock()
	v, ok := tc.writes[layerID]
	tc.mu.Unlock()
	if ok {
		return v, true
	}
	k, ok := tc.s.rt.layerIndex[layerID]
	if !ok || tc.s.states[k].disabled {
		return nil, false
	}
	return tc.snapshot[k], true
}

func (tc *sessionToolContext) Set(layerID string, state any) error {
	k, ok := tc.s.rt.layerIndex[layerID]
	if !ok {
		return fmt.Errorf("core: no layer %q", layerID)
	}
	if tc.s.states[k].disabled {
		return fmt.Errorf("core: layer %q is disabled", layerID)
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.writes == nil {
		tc.writes = map[string]any{}
	}
	if _, seen := tc.writes[layerID]; !seen {
		tc.order = append(tc.order, layerID)
	}
	tc.writes[layerID] = state
	return nil
}

// defaultToolTimeout is the limit of a tool's Execute when
// Config.ToolTimeout is zero.
const defaultToolTimeout = 2 * time.Minute

// toolConflictRetries is how often ExecuteTool re-runs a tool on reloaded
// state after its state write lost a compare-and-swap to another run of
// the same thread or resource, before it answers that the change was not
// applied. Three retries outlast the short races of a few concurrent runs;
// a tool that keeps losing is better told the truth than retried forever.
const toolConflictRetries = 3

// ExecuteTool runs a call to a provided layer function or to one of the
// runtime's tools and returns the function_call_output to record. Bad
// arguments, a failing, panicking or hung tool all produce an output that
// tells the model what went wrong, with no state changed; only an unknown
// name also returns ErrUnknownFunction. It does not consult the layers'
// beforeToolCall: call BeforeToolCall first (the agent package does). A
// call BeforeToolCall denied in this session does not run: the output
// says so and the error is ErrCallDenied.
//
// A tool's writes (ToolContext.Set) are stored when it returns. The
// output it returned is answered only once they are: the model never
// reads success for a change that was not kept. When a durable state's
// write loses the compare-and-swap to another run (a toolcalls.ToolState
// of thread or resource scope that two sessions share), the session
// adopts the stored state and the tool is run again on it, up to three
// times; a tool's Execute must therefore be safe to re-run: a function of
// its arguments and the state it reads, with any outside effect
// idempotent. When the retries run out the output says that the change
// was not applied; when a write fails otherwise (the store is down), that
// it is not saved. Either way the error is a *WriteError naming the state
// and the tool (errors.Is(err, ErrNotStored); errors.Is(err,
// storage.ErrConflict) for a conflict). Each lost attempt is also a
// KindConflict diagnostic. A tool that fails with an error matching
// ErrNotStored (a write of its own its store did not confirm) has that
// error returned with its output, as a provided function's does.
//
// A plain call (Function.Plain) is applied here, by its function's Call,
// when a layer of the session can deny calls (Record withheld it);
// otherwise Record applied it and this only answers it.
func (s *Session) ExecuteTool(ctx context.Context, call Item) (Item, error) {
	if s.disposed {
		return Item{}, ErrDisposed
	}
	if call.Type != TypeFunctionCall {
		return Item{}, fmt.Errorf("%w: ExecuteTool needs a function_call", ErrInvalidItem)
	}
	if out, denied, err := s.refuseDenied(call); denied {
		return out, err
	}
	r, ok := s.rt.routes[call.Name]
	switch {
	case ok && r.plain && !s.states[r.layer].disabled:
		return s.applyPlain(ctx, r, call)
	case ok && r.fn != "" && !r.plain:
		return s.callFunction(ctx, call)
	case !ok || r.tool == nil:
		return FunctionCallOutput(call.CallID, fmt.Sprintf("error: unknown tool %q", call.Name)),
			fmt.Errorf("%w: %q", ErrUnknownFunction, call.Name)
	}
	tool := r.tool
	s.verdict[call.CallID] = callRan
	timeout := s.rt.cfg.ToolTimeout
	if timeout <= 0 {
		timeout = defaultToolTimeout
	}
	for attempt := 1; ; attempt++ {
		// Tools read state from a snapshot taken now and write through a
		// buffer: a late write from a timed-out tool cannot race the
		// session. A retry's snapshot holds the state reloaded after the
		// conflict.
		tc := &sessionToolContext{s: s, snapshot: make([]any, len(s.insts))}
		for k, inst := range s.insts {
			tc.snapshot[k] = inst.stateValue()
		}
		out, kind, err := callHook(ctx, timeout, func(ctx context.Context) (string, error) {
			return tool.Execute(ctx, tc, call.Arguments)
		})
		if err != nil {
			var argErr *ArgumentError
			if errors.As(err, &argErr) {
				kind = KindRejected
			}
			s.diagnose("tool:"+call.Name, "execute", kind, err)
			msg := err.Error()
			if kind == KindPanic {
				msg = "the tool failed unexpectedly"
			}
			if errors.Is(err, ErrNotStored) {
				// The tool says a write of its own was not stored: the
				// host must hear it, not only the model.
				return FunctionCallOutput(call.CallID, "error: not saved, the store failed: "+msg), err
			}
			return FunctionCallOutput(call.CallID, "error: "+msg), nil
		}
		applied, failed, rerun, err := s.storeToolWrites(ctx, tc)
		if err == nil {
			return FunctionCallOutput(call.CallID, out), nil
		}
		if rerun && attempt <= toolConflictRetries && ctx.Err() == nil {
			continue // nothing changed: run it again on the stored state
		}
		serr := &WriteError{Layer: failed, Item: call.Name, Attempts: attempt, Applied: applied, Err: err}
		return FunctionCallOutput(call.CallID, notAppliedOutput(serr)), serr
	}
}

// storeToolWrites stores a tool's buffered writes, durable states first in
// the order the tool set them, then the execution-scoped ones. A durable
// write that loses its compare-and-swap stops it: that state now holds the
// other run's value, and nothing of this attempt is applied when it is the
// first, so the tool can be re-run, and no in-memory state holds half of
// a change. A write that fails otherwise (the store is down: the state
// keeps the change and saves it at its next write, see ErrNotStored) does
// not stop the others. It returns the states stored, the first that
// failed, whether the tool can be re-run (the first write lost a
// conflict, so nothing of this attempt was applied), and the failures.
func (s *Session) storeToolWrites(ctx context.Context, tc *sessionToolContext) (applied []string, failed string, rerun bool, err error) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	order := make([]string, 0, len(tc.order))
	for _, durable := range []bool{true, false} {
		for _, id := range tc.order {
			if (s.layerStorage(*s.insts[s.rt.layerIndex[id]].spec()) != nil) == durable {
				order = append(order, id)
			}
		}
	}
	var errs []error
	for _, id := range order {
		k := s.rt.layerIndex[id]
		if werr := s.insts[k].setStateValue(ctx, tc.writes[id]); werr != nil {
			if failed == "" {
				failed = id
			}
			if errors.Is(werr, storage.ErrConflict) {
				rerun = len(errs) == 0 && len(applied) == 0
				errs = append(errs, werr)
				break
			}
			errs = append(errs, werr)
			continue
		}
		applied = append(applied, id)
	}
	return applied, failed, rerun, errors.Join(errs...)
}

// notAppliedOutput is what the model reads when a tool's change was not
// stored: it must not mistake the tool's own output for success.
func notAppliedOutput(e *WriteError) string {
	var b strings.Builder
	if !errors.Is(e.Err, storage.ErrConflict) {
		fmt.Fprintf(&b, "error: not saved: the change to %q could not be stored (%v); "+
			"do not rely on it until a later call succeeds", e.Layer, e.Err)
		return b.String()
	}
	fmt.Fprintf(&b, "error: not applied: another run changed %q at the same time (%d attempt(s)); "+
		"the state now holds that run's changes", e.Layer, e.Attempts)
	if len(e.Applied) > 0 {
		fmt.Fprintf(&b, "; only %s were changed", strings.Join(e.Applied, ", "))
	} else {
		b.WriteString("; nothing was changed")
	}
	b.WriteString(". Call the tool again if the change is still wanted.")
	return b.String()
}
