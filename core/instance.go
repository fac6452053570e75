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
	// Spec returns the layer's configuration without its hooks.
	Spec() LayerSpec
	newInstance(s *Session) instance
}

// LayerSpec is a layer's configuration, independent of its state type.
type LayerSpec struct {
	ID          string
	Name        string
	Slot        Slot
	Scope       Scope
	Budget      Budget
	Placement   Placement
	Timeouts    Timeouts
	OnInitError InitErrorPolicy
	// OnToolCallError is the layer's ToolCallErrorPolicy.
	OnToolCallError ToolCallErrorPolicy
	RecallMode      RecallMode
	// Functions are the names of provided functions, without the layer id.
	Functions []FunctionSpec
	// Hooks lists the hooks the layer implements, e.g. "recall".
	Hooks []string
	// CallNames are the plain function-call names its Store hook applies.
	CallNames []string
	// WritesRecords is Layer.WritesRecords.
	WritesRecords bool
}

// FunctionSpec describes a provided function to the model.
type FunctionSpec struct {
	// Name is "layerID/fnName" in Session.Tools, "fnName" in LayerSpec.
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments.
	Parameters json.RawMessage
}

// Function is a function a layer provides to the model. Calls to
// "layerID/Name" are routed to Call with the layer's current state.
type Function[S any] struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments object; nil means an
	// object with any properties. NewFunction derives it from a Go type.
	Parameters json.RawMessage
	Call       func(ctx context.Context, p FunctionParams[S]) (FunctionResult[S], error)
}

// FunctionParams is passed to a provided function.
type FunctionParams[S any] struct {
	Run       RunInfo
	State     S
	Call      Item
	Arguments string
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
		Name: name, Description: description, Parameters: raw,
		Call: func(ctx context.Context, p FunctionParams[S]) (FunctionResult[S], error) {
			if resolved != nil {
				var instance any
				if err := json.Unmarshal([]byte(orEmptyObject(p.Arguments)), &instance); err != nil {
					return FunctionResult[S]{}, &ArgumentError{Function: name, Err: err}
				}
				if err := resolved.Validate(instance); err != nil {
					return FunctionResult[S]{}, &ArgumentError{Function: name, Err: err}
				}
			}
			args, err := DecodeArguments[A](p.Arguments)
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
	spec := LayerSpec{
		ID: l.ID, Name: l.Name, Slot: l.Slot, Scope: l.Scope, Budget: l.Budget,
		Placement: l.Placement, Timeouts: l.Timeouts, OnInitError: l.OnInitError, RecallMode: l.RecallMode,
		OnToolCallError: l.OnToolCallError,
		CallNames:       append([]string(nil), l.CallNames...),
		WritesRecords:   l.WritesRecords,
	}
	if spec.Scope == "" {
		spec.Scope = ScopeThread
	}
	for _, f := range l.Functions {
		spec.Functions = append(spec.Functions, FunctionSpec{Name: f.Name, Description: f.Description, Parameters: f.Parameters})
	}
	h := l.Hooks
	for _, named := range []struct {
		name string
		set  bool
	}{
		{"init", h.Init != nil}, {"recall", h.Recall != nil}, {"renderDelta", h.RenderDelta != nil},
		{"projectHistory", h.ProjectHistory != nil}, {"onItemAppend", h.OnItemAppend != nil},
		{"beforeToolCall", h.BeforeToolCall != nil}, {"afterModelCall", h.AfterModelCall != nil},
		{"store", h.Store != nil}, {"onSpawn", h.OnSpawn != nil}, {"onReturn", h.OnReturn != nil},
		{"onComplete", h.OnComplete != nil}, {"dispose", h.Dispose != nil},
	} {
		if named.set {
			spec.Hooks = append(spec.Hooks, named.name)
		}
	}
	return spec
}

func (l Layer[S]) newInstance(s *Session) instance {
	return &layerInstance[S]{layer: l, sp: l.Spec(), sess: s}
}

// instance is one layer bound to one session: the erased view the session
// drives.
type instance interface {
	spec() *LayerSpec
	init(ctx context.Context, stored json.RawMessage, sd seed) error
	hasRecall() bool
	recallTimeout() time.Duration
	startRecall(hctx context.Context, cancel context.CancelFunc, p recallInput) *pendingHook[recallOutput]
	renderDelta(ctx context.Context, prev, next []Item) (string, DiagnosticKind, error)
	projectHistory(ctx context.Context, history []Item, tokensOf func(int) int, turn int) (HistoryProjection, bool, error)
	hasProjectHistory() bool
	onItemAppend(ctx context.Context, item Item, index int, call *Item, allowed bool) error
	hasBeforeToolCall() bool
	beforeToolCall(ctx context.Context, call Item) (Verdict, string, string, error)
	afterModelCall(ctx context.Context, newItems []Item) error
	store(ctx context.Context, newItems, history []Item) error
	storeCall(ctx context.Context, call Item, history []Item) error
	onSpawn(ctx context.Context, child RunInfo) (any, bool, error)
	onReturn(ctx context.Context, child RunInfo, childInst instance, result []Item) error
	onComplete(ctx context.Context, log []Item, outcome string) error
	dispose(ctx context.Context) error
	callFunction(ctx context.Context, name string, call Item) (string, error)
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
	text  string
	// commit applies new state returned by the recall; nil when none.
	commit func(context.Context) error
}

// HistoryProjection is the answer of a ProjectHistory hook.
type HistoryProjection struct {
	// Start drops History[:Start]; the runtime keeps its token counts.
	Start int
	// Items, when not nil, replace the history instead (counted anew).
	Items []Item
}

type layerInstance[S any] struct {
	layer   Layer[S]
	sp      LayerSpec
	sess    *Session
	state   S
	storage *layerStorage
}
