package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stratamem/strata/storage"
)

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	// InputSchema is the JSON schema of the arguments, canonical bytes.
	InputSchema json.RawMessage
	// OutputSchema is the JSON schema of the result, if known.
	OutputSchema json.RawMessage
}

// ToolContext is what a running tool sees of the context layers: their
// state by layer id. Writes are applied when the tool returns successfully,
// so a tool that fails, panics or times out changes nothing; the next
// recall sees them. A write the store refuses is not half applied either:
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

// GetState is the typed form of ToolContext.Get.
func GetState[S any](tc ToolContext, layerID string) (S, bool) {
	v, ok := tc.Get(layerID)
	if !ok {
		var zero S
		return zero, false
	}
	s, ok := v.(S)
	return s, ok
}

// Tool is a tool the host offers the model. Build one with NewTool.
type Tool interface {
	Spec() ToolSpec
	// State is the tool's context declaration, nil when it has none.
	State() ToolStateDecl
	// Execute runs the tool with the model's JSON arguments and returns the
	// output sent back to the model. An *ArgumentError means the arguments
	// were rejected before the tool ran.
	Execute(ctx context.Context, tc ToolContext, arguments string) (string, error)
}

// ToolStateDecl is a tool's type-erased context declaration: the state a
// set of tools shares, rendered by a generated layer (layers/toolcalls).
type ToolStateDecl interface {
	// StateID is the id of the shared layer.
	StateID() string
	// Layer builds the layer that holds and renders the state.
	Layer() AnyLayer
}

// ToolState declares context state owned by tools (the spec's
// ToolContextDeclaration). Tools that name the same ID share one layer.
type ToolState[S any] struct {
	// ID of the shared layer; the tool's name when empty (NewTool fills
	// it).
	ID string
	// Init makes the initial state; nil means the zero value.
	Init func() S
	// Recall renders the state into the context; ok=false renders nothing.
	Recall func(state S) (text string, ok bool)
	// Scope defaults to ScopeExecution: the state lives for the run. A
	// thread or resource scope shares the state with every run of the
	// thread or resource; their writes are compare-and-swapped, and a
	// tool whose write lost is re-run on the stored state (see
	// Session.ExecuteTool).
	Scope Scope
	// Slot orders the layer; 0 means SlotScratchpad.
	Slot Slot
	// Placement of the layer; tool state changes as tools run, so the
	// zero value (auto) lets the runtime learn it.
	Placement Placement
}

// StateID implements ToolStateDecl.
func (d *ToolState[S]) StateID() string { return d.ID }

// Layer implements ToolStateDecl.
func (d *ToolState[S]) Layer() AnyLayer {
	scope := d.Scope
	if scope == "" {
		scope = ScopeExecution
	}
	slot := d.Slot
	if slot == 0 {
		slot = SlotScratchpad
	}
	l := Layer[S]{ID: d.ID, Name: "tool state " + d.ID, Slot: slot, Scope: scope, Placement: d.Placement}
	init := d.Init
	l.Hooks.Init = func(_ context.Context, p InitParams) (S, error) {
		var s S
		if len(p.Stored) > 0 {
			err := json.Unmarshal(p.Stored, &s)
			return s, err
		}
		if init != nil {
			s = init()
		}
		return s, nil
	}
	if render := d.Recall; render != nil {
		l.Hooks.Recall = func(_ context.Context, p RecallParams[S]) (Recall[S], error) {
			text, ok := render(p.State)
			if !ok {
				return Recall[S]{}, nil
			}
			return Recall[S]{Text: text}, nil
		}
	}
	return l
}

// ToolDef defines a tool whose arguments decode into In and whose result
// is an Out (a string result is sent as is, anything else as JSON).
type ToolDef[In, Out any] struct {
	Name        string
	Description string
	// State, when set, is the context the tool reads and writes through
	// its ToolContext. An empty State.ID takes the tool's name.
	State ToolStateDecl
	// Execute runs the tool. Its writes (tc.Set) are stored when it
	// returns; when a durable state's write loses the compare-and-swap
	// to another run, Execute is called again on the reloaded state (see
	// Session.ExecuteTool), so it must be safe to re-run: compute the
	// writes and the output from the arguments and the state read
	// through tc, and make any effect outside the state idempotent.
	Execute func(ctx context.Context, in In, tc ToolContext) (Out, error)
}

type funcTool[In, Out any] struct {
	def      ToolDef[In, Out]
	spec     ToolSpec
	resolved *jsonschema.Resolved
}

// NewTool builds a tool from its definition, deriving the input and output
// JSON schemas from In and Out (struct tags `json` and `jsonschema`).
// Arguments that do not match the input schema are rejected back to the
// model without running the tool.
func NewTool[In, Out any](def ToolDef[In, Out]) (Tool, error) {
	if def.Name == "" {
		return nil, &ConfigError{Code: CodeInvalidLayer, Field: "ToolDef.Name", Reason: "empty"}
	}
	if def.Execute == nil {
		return nil, &ConfigError{Code: CodeInvalidLayer, Field: "ToolDef.Execute", Reason: "nil"}
	}
	in, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, &ConfigError{Code: CodeInvalidLayer, Field: "ToolDef.Execute", Reason: fmt.Sprintf("input type: %v", err)}
	}
	resolved, err := in.Resolve(nil)
	if err != nil {
		return nil, &ConfigError{Code: CodeInvalidLayer, Field: "ToolDef.Execute", Reason: fmt.Sprintf("input schema: %v", err)}
	}
	inRaw, _ := json.Marshal(in)
	t := &funcTool[In, Out]{def: def, resolved: resolved,
		spec: ToolSpec{Name: def.Name, Description: def.Description, InputSchema: canonicalJSON(inRaw)}}
	if out, err := jsonschema.For[Out](nil); err == nil {
		outRaw, _ := json.Marshal(out)
		t.spec.OutputSchema = canonicalJSON(outRaw)
	}
	if ts, ok := def.State.(interface{ setDefaultID(string) }); ok {
		ts.setDefaultID(def.Name)
	}
	return t, nil
}

func (d *ToolState[S]) setDefaultID(id string) {
	if d.ID == "" {
		d.ID = id
	}
}

// MustTool is NewTool for definitions known to be valid; it panics
// otherwise. Use it for package-level tools.
func MustTool[In, Out any](def ToolDef[In, Out]) Tool {
	t, err := NewTool(def)
	if err != nil {
		panic(err)
	}
	return t
}

func (t *funcTool[In, Out]) Spec() ToolSpec       { return t.spec }
func (t *funcTool[In, Out]) State() ToolStateDecl { return t.def.State }

func (t *funcTool[In, Out]) Execute(ctx context.Context, tc ToolContext, arguments string) (string, error) {
	var instance any
	if err := json.Unmarshal([]byte(orEmptyObject(arguments)), &instance); err != nil {
		return "", &ArgumentError{Function: t.spec.Name, Err: err}
	}
	if err := t.resolved.Validate(instance); err != nil {
		return "", &ArgumentError{Function: t.spec.Name, Err: err}
	}
	in, err := DecodeArguments[In](arguments)
	if err != nil {
		return "", &ArgumentError{Function: t.spec.Name, Err: err}
	}
	out, err := t.def.Execute(ctx, in, tc)
	if err != nil {
		return "", err
	}
	if s, ok := any(out).(string); ok {
		return s, nil
	}
	raw, err := marshalNoEscape(out)
	if err != nil {
		return "", fmt.Errorf("encode %s result: %w", t.spec.Name, err)
	}
	return string(raw), nil
}

// applyDeclared runs a declared call of layer k that the host routed. When
// a layer can deny calls, Record withheld it from the Store hook, so it is
// applied now, once per call id; otherwise Record applied it already.
func (s *Session) applyDeclared(ctx context.Context, k int, call Item) (Item, error) {
	s.verdict[call.CallID] = callRan
	id := s.insts[k].spec().ID
	if s.canDeny() && !s.applied[call.CallID] {
		if err := s.insts[k].storeCall(ctx, call, s.items); err != nil {
			var he *HookError
			if errors.As(err, &he) {
				msg := he.Err.Error()
				if he.Kind == KindPanic {
					msg = "the call failed unexpectedly"
				}
				if errors.Is(err, ErrNotStored) {
					// As CallFunction: the model reads that nothing was
					// kept, the host gets the error.
					return FunctionCallOutput(call.CallID, "error: not saved, the memory store failed: "+msg), err
				}
				return FunctionCallOutput(call.CallID, "error: "+msg), nil
			}
			return FunctionCallOutput(call.CallID, "error: the call could not be applied"), err
		}
		s.applied[call.CallID] = true
	}
	return FunctionCallOutput(call.CallID, fmt.Sprintf("ok: applied by %s", id)), nil
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

// ToolTimeout is the default limit of a tool's Execute.
const ToolTimeout = 2 * time.Minute

// ToolConflictRetries is how often ExecuteTool re-runs a tool on reloaded
// state after its state write lost a compare-and-swap to another run of
// the same thread or resource, before it answers that the change was not
// applied.
const ToolConflictRetries = 3

// ToolStateError reports a tool whose change to its state was not stored:
// the write lost a compare-and-swap (errors.Is(err, storage.ErrConflict))
// on every attempt, or failed otherwise. The call's output tells the model
// the change was not applied; this error tells the host. It matches
// ErrNotStored and the write's own error.
type ToolStateError struct {
	// Tool is the tool's name, Layer the state whose write failed.
	Tool  string
	Layer string
	// Attempts counts the runs of the tool: 1 plus the conflict retries.
	Attempts int
	// Applied lists the states of the last attempt that were stored
	// before the failure (a tool that writes several durable states is
	// not atomic across them); empty when nothing changed.
	Applied []string
	Err     error
}

func (e *ToolStateError) Error() string {
	msg := fmt.Sprintf("core: tool %q: state %q not stored after %d attempt(s)", e.Tool, e.Layer, e.Attempts)
	if len(e.Applied) > 0 {
		msg += fmt.Sprintf(" (stored: %s)", strings.Join(e.Applied, ", "))
	}
	return msg + ": " + e.Err.Error()
}

// Unwrap lets errors.Is match ErrNotStored and the write's error.
func (e *ToolStateError) Unwrap() []error { return []error{ErrNotStored, e.Err} }

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
// write loses the compare-and-swap to another run (a ToolState of thread
// or resource scope that two sessions share), the session adopts the
// stored state and the tool is run again on it, up to ToolConflictRetries
// times; a tool's Execute must therefore be safe to re-run: a function of
// its arguments and the state it reads, with any outside effect
// idempotent. When the retries run out the output says that the change
// was not applied; when a write fails otherwise (the store is down), that
// it is not saved. Either way the error is a *ToolStateError
// (errors.Is(err, ErrNotStored); errors.Is(err, storage.ErrConflict) for
// a conflict). Each lost attempt is also a
// KindConflict diagnostic. A tool that fails with an error matching
// ErrNotStored (a write of its own its store did not confirm) has that
// error returned with its output, as CallFunction does.
//
// A declared call (Layer.CallNames) is applied here, by its layer's Store
// hook, when a layer of the session can deny calls (Record withheld it);
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
	if s.IsFunction(call.Name) {
		return s.CallFunction(ctx, call)
	}
	if k, ok := s.rt.callNames[call.Name]; ok && !s.states[k].disabled {
		return s.applyDeclared(ctx, k, call)
	}
	tool, ok := s.rt.toolByName[call.Name]
	if !ok {
		return FunctionCallOutput(call.CallID, fmt.Sprintf("error: unknown tool %q", call.Name)),
			fmt.Errorf("%w: %q", ErrUnknownFunction, call.Name)
	}
	s.verdict[call.CallID] = callRan
	timeout := s.rt.cfg.ToolTimeout
	if timeout <= 0 {
		timeout = ToolTimeout
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
		if rerun && attempt <= ToolConflictRetries && ctx.Err() == nil {
			continue // nothing changed: run it again on the stored state
		}
		serr := &ToolStateError{Tool: call.Name, Layer: failed, Attempts: attempt, Applied: applied, Err: err}
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
func notAppliedOutput(e *ToolStateError) string {
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
