package core

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// AnyLayer is the type-erased layer the runtime holds. *Layer[S] and
// Layer[S] implement it; build layers with those.
type AnyLayer interface {
	// Spec returns the layer's identity and placement, with the defaults
	// applied (an empty Scope reads ScopeThread).
	Spec() LayerSpec
	config() layerConfig
	newInstance(s *Session) instance
}

// LayerSpec is what a host sees of a layer whatever its state type: its
// identity and where its output goes.
type LayerSpec struct {
	ID        string
	Name      string
	Slot      Slot
	Scope     Scope
	Budget    Budget
	Placement Placement
}

// layerConfig is the rest of a layer's configuration the runtime needs
// without knowing the state type.
type layerConfig struct {
	LayerSpec
	timeouts       Timeouts
	onInitError    InitErrorPolicy
	failOpen       bool
	eventualRecall bool
	// functions are the layer's functions, provided and plain, named
	// without the layer id.
	functions     []functionConfig
	writesRecords bool
}

// functionConfig is what the runtime needs of a Function without knowing
// the state type.
type functionConfig struct {
	ToolSpec
	plain  bool
	noCall bool
}

// Function is a function a layer provides to the model. Calls to
// "layerID/Spec.Name" are routed to Call with the layer's current state.
//
// Spec is the same ToolSpec a host tool has (Tool.Spec): the model cannot
// tell them apart, and both are listed by Session.Tools. Its Name is the
// function's name without the layer id; a nil Parameters means an object
// with any properties (NewFunction derives it from a Go type).
type Function[S any] struct {
	Spec ToolSpec
	// Plain makes the function a plain call name: no schema is offered
	// (it is not in Session.Tools nor View.Tools), the model is told of it
	// by the system prompt, for models or hosts that do not route tool
	// calls back (memory/entity's "updateEntities"). The model calls it by
	// Spec.Name alone, without the layer id, in the one name space of the
	// provided functions and Config.Tools; it needs a Call. When Call
	// applies such a call depends on whether a call can be denied:
	//
	//   - when some layer of the session has a BeforeToolCall hook, Record
	//     withholds the call, and Session.ExecuteTool, which the host
	//     calls once the layers allowed it, applies it and answers with
	//     "ok: applied by <layer id>" or the error. A denied call is never
	//     applied;
	//   - when no layer can deny, the call is applied when Record logs it,
	//     unless it was recorded with its function_call_output (the host
	//     answered it), and ExecuteTool only answers it, so the provider
	//     still gets an output for the call; a failure is a diagnostic,
	//     and Record returns only a write the store did not confirm.
	//
	// Either way a call id is applied at most once per session, and Call's
	// Output is not sent to the model.
	Plain bool
	Call  func(ctx context.Context, p CallParams[S]) (FunctionResult[S], error)
}

// FunctionResult is a provided function's answer.
type FunctionResult[S any] struct {
	// Output is sent back to the model as the call's output.
	Output string
	// State, when not nil, commits new state.
	State *S
}

// NewFunction builds a provided function whose arguments decode into A.
// The JSON schema is derived from A (struct tags `json` and
// `jsonschema:"description"`); arguments that do not match it are rejected
// back to the model without calling fn.
func NewFunction[S, A any](name, description string, fn func(ctx context.Context, state S, args A) (output string, next *S, err error)) Function[S] {
	schema, err := jsonschema.For[A](nil)
	var raw json.RawMessage
	var resolved *jsonschema.Resolved
	if err == nil {
		raw, _ = json.Marshal(schema)
		resolved, _ = schema.Resolve(nil)
	}
	return Function[S]{
		Spec: ToolSpec{Name: name, Description: description, Parameters: raw},
		Call: func(ctx context.Context, p CallParams[S]) (FunctionResult[S], error) {
			if resolved != nil {
				var instance any
				if err := json.Unmarshal([]byte(orEmptyObject(p.Call.Arguments)), &instance); err != nil {
					return FunctionResult[S]{}, &ArgumentError{Function: name, Err: err}
				}
				if err := resolved.Validate(instance); err != nil {
					return FunctionResult[S]{}, &ArgumentError{Function: name, Err: err}
				}
			}
			args, err := DecodeArguments[A](p.Call.Arguments)
			if err != nil {
				return FunctionResult[S]{}, &ArgumentError{Function: name, Err: err}
			}
			out, next, err := fn(ctx, p.State, args)
			return FunctionResult[S]{Output: out, State: next}, err
		},
	}
}

func orEmptyObject(s string) string {
	if s == "" {
		return "{}"
	}
	return s
}

// ArgumentError reports function-call arguments the layer rejected. Its
// message is sent back to the model; state is left unchanged.
type ArgumentError struct {
	Function string
	Err      error
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("invalid arguments for %s: %v", e.Function, e.Err)
}

func (e *ArgumentError) Unwrap() error { return e.Err }

// Spec implements AnyLayer.
func (l Layer[S]) Spec() LayerSpec {
	spec := LayerSpec{ID: l.ID, Name: l.Name, Slot: l.Slot, Scope: l.Scope, Budget: l.Budget, Placement: l.Placement}
	if spec.Scope == "" {
		spec.Scope = ScopeThread
	}
	return spec
}

func (l Layer[S]) config() layerConfig {
	c := layerConfig{
		LayerSpec: l.Spec(), timeouts: l.Timeouts, onInitError: l.OnInitError, eventualRecall: l.EventualRecall,
		failOpen:      l.FailOpen,
		writesRecords: l.WritesRecords,
	}
	for _, f := range l.Functions {
		c.functions = append(c.functions, functionConfig{ToolSpec: f.Spec, plain: f.Plain, noCall: f.Call == nil})
	}
	return c
}

func (l Layer[S]) newInstance(s *Session) instance {
	return &layerInstance[S]{layer: l, sp: l.config(), sess: s}
}

// instance is one layer bound to one session: the erased view the session
// drives.
type instance interface {
	spec() *layerConfig
	init(ctx context.Context, stored json.RawMessage, sd seed) error
	hasRecall() bool
	recallTimeout() time.Duration
	startRecall(hctx context.Context, cancel context.CancelFunc, p recallInput) *pendingHook[recallOutput]
	renderDelta(ctx context.Context, prev, next []Item) (string, DiagnosticKind, error)
	projectHistory(ctx context.Context, history []Item, tokensOf func(int) int, turn int) (historyProjection, bool, error)
	hasProjectHistory() bool
	onItemAppend(ctx context.Context, item Item, index int, call *Item, allowed bool) error
	hasBeforeToolCall() bool
	beforeToolCall(ctx context.Context, call Item) (deny bool, reason, args string, err error)
	afterModelCall(ctx context.Context, newItems []Item) error
	store(ctx context.Context, newItems, history []Item) error
	onSpawn(ctx context.Context, child RunInfo) (any, bool, error)
	onReturn(ctx context.Context, child RunInfo, childInst instance, result []Item) error
	onComplete(ctx context.Context, log []Item, outcome string) error
	dispose(ctx context.Context, outcome string) error
	callFunction(ctx context.Context, name string, plain bool, call Item) (string, error)
	recordCall(ctx context.Context, name string, call Item) (applied bool, err error)
	stateValue() any
	setStateValue(ctx context.Context, v any) error
}

// recallInput is what the session gives every recall of one assembly.
type recallInput struct {
	budget  int
	turn    int
	history []Item
	visible []Item
}

// recallOutput is a recall's answer in erased form.
type recallOutput struct {
	items []Item
	// commit applies new state returned by the recall; nil when none.
	commit func(context.Context) error
}

// historyProjection is the answer of a ProjectHistory hook.
type historyProjection struct {
	start int
	items []Item
}

type layerInstance[S any] struct {
	layer   Layer[S]
	sp      layerConfig
	sess    *Session
	state   S
	storage *layerStorage
}
