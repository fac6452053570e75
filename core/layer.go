package core

import (
	"context"
	"encoding/json"
	"time"

	"github.com/stratamem/strata/tokens"
)

// Slot orders layers within their band: lower first. The constants are
// the built-in layers' defaults, spaced so that a custom layer fits
// between any two; any int works.
type Slot = int

// Built-in slots.
const (
	SlotReminder       Slot = 80
	SlotSteering       Slot = 90
	SlotScratchpad     Slot = 100
	SlotEntity         Slot = 150
	SlotObservations   Slot = 200
	SlotEpisodic       Slot = 300
	SlotRAG            Slot = 350
	SlotSemanticRecall Slot = 400
)

// Scope is the persistence boundary of a layer's state.
type Scope string

// Scopes. Execution state dies with the run; the others persist through
// the runtime's storage.Store, keyed so that one thread or resource never
// sees another's state.
const (
	ScopeThread    Scope = "thread"
	ScopeResource  Scope = "resource"
	ScopeGlobal    Scope = "global"
	ScopeExecution Scope = "execution"
)

// Placement picks a layer's band.
type Placement string

// Placements. The zero value is PlacementAuto.
const (
	// PlacementAuto lets the runtime choose by observed churn, at epoch
	// boundaries only.
	PlacementAuto Placement = ""
	// PlacementAnchor renders before history, pinned for the epoch.
	PlacementAnchor Placement = "anchor"
	// PlacementLive renders after history, fresh every turn.
	PlacementLive Placement = "live"
	// PlacementTail renders last, after the context updates, fresh every
	// turn: steering guidance. The tail is claimed before history under a
	// budget, and stays in place when anchoring is disabled.
	PlacementTail Placement = "tail"
)

// InitErrorPolicy says what an init failure does.
type InitErrorPolicy string

// Init failure policies. The zero value is InitErrorAbort.
const (
	// InitErrorAbort aborts the run: context is load-bearing.
	InitErrorAbort InitErrorPolicy = ""
	// InitErrorDisable logs a diagnostic and runs without the layer.
	InitErrorDisable InitErrorPolicy = "disable"
)

// Timeouts are per-hook limits, by hook. A hook with no (or a zero) limit
// takes the runtime's (Config.Timeouts), and one without a limit there the
// default: init 10 s, recall 5 s, renderDelta 1 s, projectHistory 1 s,
// onItemAppend 2 s, beforeToolCall 2 s, afterModelCall 5 s, store 10 s,
// onSpawn 5 s, onReturn 5 s, onComplete 30 s, dispose 5 s. HookStore also
// limits each call of the layer's provided functions.
//
//	core.Timeouts{core.HookInit: 30 * time.Second}
//
// The runtime only reads it: a layer and its copies may share one.
type Timeouts map[Hook]time.Duration

// defaultTimeouts are used for hooks whose layer and runtime set none.
var defaultTimeouts = Timeouts{
	HookInit: 10 * time.Second, HookRecall: 5 * time.Second, HookRenderDelta: time.Second,
	HookProjectHistory: time.Second, HookOnItemAppend: 2 * time.Second,
	HookBeforeToolCall: 2 * time.Second, HookAfterModelCall: 5 * time.Second, HookStore: 10 * time.Second,
	HookOnSpawn: 5 * time.Second, HookOnReturn: 5 * time.Second, HookOnComplete: 30 * time.Second, HookDispose: 5 * time.Second,
}

// Layer is a context layer whose state has type S. Build one as a struct
// literal and hand it to the runtime through Config.Layers; only ID and
// Slot are required in practice.
type Layer[S any] struct {
	// ID names the layer: unique in a runtime, part of storage keys and of
	// provided function names ("id/fn").
	ID   string
	Name string
	Slot Slot
	// Scope defaults to ScopeThread.
	Scope     Scope
	Budget    Budget
	Placement Placement
	Hooks     Hooks[S]
	Timeouts  Timeouts
	// OnInitError defaults to InitErrorAbort.
	OnInitError InitErrorPolicy
	// FailOpen says what a BeforeToolCall hook that errors, panics or
	// times out does. By default it denies the call (fail closed: a check
	// that cannot answer must not let through what it exists to stop),
	// with a reason saying it could not be checked; with FailOpen the call
	// goes on to the next layer, for a layer whose check is advisory.
	// The failure is a diagnostic either way.
	FailOpen bool
	// EventualRecall lets the turn go on without waiting for a slow recall
	// (retrieval); by default the turn waits for it, up to its timeout.
	// When such a recall has not finished by the time every other layer's
	// has, the layer's previous output is served and the late result is
	// used from the next assembly on (its first recall is waited for:
	// there is nothing older to serve, unless the caller's context ends
	// first). The recall's context carries the values of the Assemble
	// context but not its cancellation, so a host's per-turn context does
	// not cancel it; its own timeout still applies: a recall still running
	// past it is reported as timed out at the next assembly (a diagnostic,
	// nothing served for that turn) and called again the turn after. An
	// eventual recall may not return state (it would be applied late, over
	// state other hooks committed meanwhile): such state is ignored with a
	// diagnostic.
	EventualRecall bool
	// Functions are offered to the model as tools named "ID/Spec.Name",
	// next to Config.Tools (Session.Tools); calls to them are routed back
	// to the layer (Session.ExecuteTool). Each call runs under the layer's
	// Store timeout (Timeouts[HookStore]): like Store it changes the
	// layer's state. Config.ToolTimeout applies to Config.Tools only. A
	// Plain function is called by its name alone and is not offered as a
	// tool (see Function.Plain).
	Functions []Function[S]
	// Merge resolves a compare-and-swap conflict when the runtime persists
	// state that another run changed meanwhile: it gets the stored state
	// and this run's state and returns the state to write (retried up to
	// three times). Without it, or when the retries keep conflicting, the
	// conflict is returned to the caller as an error (errors.Is(err,
	// storage.ErrConflict)) and a KindConflict diagnostic, this run's
	// change is given up, and the layer continues from the stored state
	// and revision, so its later saves do not conflict again.
	Merge func(stored, mine S) S
	// WritesRecords says the layer's write hooks (OnItemAppend,
	// AfterModelCall, Store, OnComplete) write records to a store of their
	// own (a vector store), outside the runtime's state store. When such a
	// hook times out or is cancelled, what it was writing is unconfirmed,
	// so the session method returns an error matching ErrNotStored rather
	// than only a diagnostic. Whatever the flag, a hook that returns an
	// error wrapping ErrNotStored (a *WriteError) has it returned.
	WritesRecords bool
}

// Hooks are a layer's lifecycle functions; every one is optional. Each runs
// under its timeout with a context that is cancelled when it expires.
// A *S a hook returns commits new state when it is not nil, except
// OnSpawn's: run on the parent's layer, it is the child's initial state
// for this layer, and nil starts the child from the parent's state (Init
// never runs in a child). ProjectHistory drops History[:start] (the
// runtime keeps its token counts) or, when replace is not nil, shows
// replace instead (counted anew).
type Hooks[S any] struct {
	Init           func(ctx context.Context, p InitParams) (S, error)
	Recall         func(ctx context.Context, p RecallParams[S]) (Recall[S], error)
	RenderDelta    func(ctx context.Context, p RenderDeltaParams[S]) (delta string, ok bool, err error)
	ProjectHistory func(ctx context.Context, p ProjectHistoryParams[S]) (start int, replace []Item, err error)
	OnItemAppend   func(ctx context.Context, p ItemAppendParams[S]) (*S, error)
	BeforeToolCall func(ctx context.Context, p CallParams[S]) (ToolDecision[S], error)
	AfterModelCall func(ctx context.Context, p StoreParams[S]) (*S, error)
	Store          func(ctx context.Context, p StoreParams[S]) (*S, error)
	OnSpawn        func(ctx context.Context, p ChildParams[S]) (child *S, err error)
	OnReturn       func(ctx context.Context, p ChildParams[S]) (*S, error)
	OnComplete     func(ctx context.Context, p CompleteParams[S]) (*S, error)
	Dispose        func(ctx context.Context, p CompleteParams[S]) error
}

// RunInfo identifies the run a hook is called for.
type RunInfo struct {
	RunID      string
	ThreadID   string
	ResourceID string
	// ParentRunID is set for child runs.
	ParentRunID string
}

// InitParams is passed to Init.
type InitParams struct {
	Run RunInfo
	// Storage reads and writes the layer's scoped values. The runtime has
	// already loaded the "state" value: Stored holds it. The handle is
	// valid only while Init runs: once the hook returns or its timeout
	// passes, its calls fail with ErrStorageRevoked (calls in flight are
	// cancelled and waited for), so an Init that outlives its timeout
	// cannot write for a layer the run went on without.
	Storage LayerStorage
	// Stored is the persisted state as JSON, nil when none was saved or the
	// scope is execution. Decode it with json.Unmarshal or use Storage.
	Stored json.RawMessage
	// ClaimedThread is true when this run bound its thread to its resource
	// for the first time (see ThreadBoundError). What an earlier version
	// kept for the thread under the thread id alone is this resource's
	// from now on: the runtime has moved the thread's state already, and a
	// layer that keeps records of its own adopts its thread's records that
	// name no resource (layers that never wrote such records ignore it).
	ClaimedThread bool
}

// LayerStorage is the slice of the runtime's store a layer owns: its values
// under its scope.
type LayerStorage interface {
	// Load decodes the value named name into v; found is false when absent.
	Load(ctx context.Context, name string, v any) (found bool, err error)
	// Save encodes v as JSON and writes it under name, compare-and-swap
	// against the revision this session last saw.
	Save(ctx context.Context, name string, v any) error
}

// RecallParams is passed to Recall.
type RecallParams[S any] struct {
	Run   RunInfo
	State S
	// Budget is the layer's allocated token budget (projector.Unlimited
	// when uncapped). Output past it is cut by the runtime.
	Budget int
	// Turn counts assemblies in the run, from 0.
	Turn int
	// History is the run's full item log, newest last. Read only.
	History []Item
	// Visible is the part of History the projection will show, when known
	// from the previous assembly.
	Visible []Item
	// Tokens is the runtime's token counter, the one that cuts the layer's
	// output to Budget: a layer that fits its rendering to the budget
	// counts with it, so both sides agree.
	Tokens tokens.Tokenizer
}

// Recall is what a layer contributes to one assembly. The zero value
// contributes nothing.
type Recall[S any] struct {
	// Items are rendered in the layer's band (Text builds the common
	// case, one developer message).
	Items []Item
	// State, when not nil, commits new state. Such a recall changed
	// something as it rendered, so its output is never pinned: the layer
	// renders live whatever its placement says.
	State *S
}

// Text is the recall shorthand: text wrapped as one developer message, or
// nothing when text is empty.
func Text[S any](text string) (Recall[S], error) {
	if text == "" {
		return Recall[S]{}, nil
	}
	return Recall[S]{Items: []Item{DeveloperMessage(text)}}, nil
}

// RenderDeltaParams is passed to RenderDelta with the output the model
// last saw from the layer and its fresh output. With inline updates (the
// default) Prev is what the layer last published in the epoch: its pin,
// or the output of its latest update. With CacheConfig.TrailingUpdates,
// which restate the drift from the pin on every turn, Prev is the pin.
type RenderDeltaParams[S any] struct {
	State S
	// Prev is the output the delta is relative to (see above).
	Prev []Item
	// Next is the fresh output.
	Next []Item
	// Tokens is the runtime's token counter (see RecallParams.Tokens).
	Tokens tokens.Tokenizer
}

// ProjectHistoryParams is passed to ProjectHistory.
type ProjectHistoryParams[S any] struct {
	State   S
	History []Item
	// TokensOf returns the runtime's token count of History[i], counted
	// once when the item was recorded.
	TokensOf func(i int) int
	// Turn counts assemblies in the run.
	Turn int
}

// ItemAppendParams is passed to OnItemAppend for each item recorded.
type ItemAppendParams[S any] struct {
	Run   RunInfo
	State S
	Item  Item
	// Index is the item's position in the run's log.
	Index int
	// Call, for a function_call_output, is the function_call it answers
	// (the latest one in the log with its CallID); nil otherwise.
	Call *Item
	// CallAllowed, for a function_call_output, reports that this session
	// let the call it answers run: Session.BeforeToolCall allowed it, or
	// Session.ExecuteTool ran it, and no layer denied it since. It is
	// false for a denial's output and for an output the host appended
	// without asking either. The host records the model's calls before
	// asking the layers about them, so a layer that acts on a call's
	// effect (a file the call reads) must act here, on the output with
	// CallAllowed, never on the function_call itself.
	CallAllowed bool
	// Activate makes content resident (see Session.Activate): the event
	// is logged after the items being appended, e.g. after this turn's
	// tool outputs. It fails like Session.Activate for an unknown kind
	// or empty key or text.
	Activate func(Content) error
}

// CallParams is passed to BeforeToolCall and to a provided function's
// Call: the model's function call (its Arguments the JSON the model
// wrote) and the layer's state.
type CallParams[S any] struct {
	Run   RunInfo
	State S
	Call  Item
}

// ToolDecision is BeforeToolCall's answer. The zero value allows the call.
type ToolDecision[S any] struct {
	// Deny refuses the call.
	Deny bool
	// Reason explains a denial; it becomes the call's output.
	Reason string
	// Arguments, when not empty, replace the call's arguments.
	Arguments string
	State     *S
}

// StoreParams is passed to AfterModelCall and Store once a model call's
// items are recorded. For AfterModelCall NewItems are the items of that
// call; for Store, every item recorded since the previous Record (the
// host's appends included). History is the run's whole log, NewItems
// last. Read only.
type StoreParams[S any] struct {
	Run      RunInfo
	State    S
	NewItems []Item
	History  []Item
}

// ChildParams is passed to OnSpawn and OnReturn on the parent's layers,
// about a child run (Session.Spawn, Session.Return).
type ChildParams[S any] struct {
	Parent RunInfo
	Child  RunInfo
	// State is the parent's state of the layer.
	State S
	// ChildState is, for OnReturn, the child's final state of the same
	// layer, if the child ran it; nil for OnSpawn.
	ChildState *S
	// Result is, for OnReturn, the child's final items; nil for OnSpawn.
	Result []Item
}

// CompleteParams is passed to OnComplete and Dispose at the end of a run.
// Outcome is what Session.Complete was given; Dispose after
// Session.Close, or after a Start that failed, gets "".
type CompleteParams[S any] struct {
	Run     RunInfo
	State   S
	Log     []Item
	Outcome string
}
