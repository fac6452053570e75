package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/stratamem/strata/projector"
	"github.com/stratamem/strata/storage"
)

// RunOptions identify a run.
type RunOptions struct {
	// RunID names the run; empty means a random id. It is never rendered.
	RunID string
	// ThreadID keys thread-scoped state; required when a layer has thread
	// scope. With a ResourceID the thread belongs to that resource: its
	// state is keyed by both, and a run naming the thread with another
	// resource (or none) is refused (see ThreadBoundError).
	ThreadID string
	// ResourceID keys resource-scoped state (a user, an account); required
	// when a layer has resource scope.
	ResourceID string
	// History seeds the run's log with earlier items of the thread.
	History []Item
}

// Session is one agent run on one thread and resource. It owns the run's
// item log and drives the layers' hooks:
//
//	Start (init) -> Assemble (recall, projectHistory) -> host calls the
//	model -> Record (onItemAppend, afterModelCall, store) -> ... ->
//	Complete (onComplete, dispose)
//
// A Session is not safe for concurrent use: one run is one sequence of
// turns. Hooks run on their own goroutines under their timeouts.
type Session struct {
	rt     *Runtime
	info   RunInfo
	parent *Session
	child  bool

	insts   []instance // one per runtime layer, same order
	states  []layerRun
	log     []projector.Entry[Item]
	items   []Item // the same log as plain items, for hooks
	stored  int    // log index of the first item not yet given to Store
	turn    int
	visible int // log index of the first item the last view showed

	mu          sync.Mutex // guards diagnostics (written from diagnose)
	diagnostics []Diagnostic

	// revs is the revision this session last saw of each stored value.
	// revsMu guards it: a layer's Init may use its storage from the hook's
	// goroutine.
	revsMu sync.Mutex
	revs   map[storage.Key]int64
	// seen holds the bytes of the revision in revs, so a save of an
	// unchanged value is no write at all (and no conflict).
	seen     map[storage.Key][]byte
	last     *Usage
	disposed bool
	// compactNow is set by Compact: the next assembly compacts whatever
	// the threshold.
	compactNow bool

	// Prompt-cache anchoring.
	epoch     epoch
	stats     []layerStats
	feedback  cacheFeedback
	prefix    string
	logTokens int

	tools []ToolSpec

	// claimed is true when Start bound the run's thread to its resource
	// for the first time (InitParams.ClaimedThread).
	claimed bool

	// Tool-call bookkeeping by call id: where the call is in the log,
	// what became of it (BeforeToolCall, ExecuteTool), and the plain
	// calls applied (Function.Plain).
	callAt map[string]int
	// acts are the activations the item hooks asked for.
	acts activations
	asm  assemblyScratch
	plan planRecorder // Config.RecordAssemblies
	// sigPrev and sigLast fingerprint the last two views, for attributing
	// a cache miss (ReportCache).
	sigPrev, sigLast viewSig
	// events are the log indices of the runtime's events, in order, and
	// loopAt the index of the model's first message or call (-1: none
	// yet): kept as items are logged, so no assembly scans the log.
	events []int
	loopAt int
	// conv is the log without its events, kept once the first event is
	// logged (nil before: the log is its own conversation).
	conv    []Item
	verdict map[string]callVerdict
	applied map[string]bool
}

// callVerdict is what the session knows of a call's fate.
type callVerdict uint8

const (
	callUnasked callVerdict = iota
	// callAllowed: BeforeToolCall allowed it.
	callAllowed
	// callDenied: BeforeToolCall denied it (or could not check it).
	callDenied
	// callRan: ExecuteTool ran it.
	callRan
)

// layerRun is the per-session bookkeeping of one layer.
type layerRun struct {
	disabled bool
	// out is the layer's last rendered output, served again by an eventual
	// recall that has not answered yet.
	out     []projector.Entry[Item]
	pending *pendingHook[recallOutput]
	// answered is true once a recall of the layer has answered: before
	// that an eventual recall has nothing older to serve, so it is waited
	// for like an atomic one.
	answered bool
}

// Start begins a run: it checks that the thread belongs to the run's
// resource (binding it on first use: a *ThreadBoundError refuses a thread
// of another resource), loads each durable layer's state and runs the
// init hooks in slot order. An init failure aborts with a *HookError unless
// the layer says InitErrorDisable; the layers already initialised are then
// disposed, newest first.
func (rt *Runtime) Start(ctx context.Context, opts RunOptions) (*Session, error) {
	s, err := rt.newSession(opts, nil)
	if err != nil {
		return nil, err
	}
	if err := s.bindThread(ctx); err != nil {
		return nil, err
	}
	if err := s.initLayers(ctx, nil); err != nil {
		return nil, err
	}
	return s, nil
}

func (rt *Runtime) newSession(opts RunOptions, parent *Session) (*Session, error) {
	if err := checkRunIDs(opts); err != nil {
		return nil, err
	}
	for _, spec := range rt.specs {
		switch {
		case spec.Scope == ScopeThread && opts.ThreadID == "":
			return nil, &ConfigError{Code: CodeInvalidRun, Layer: spec.ID, Field: "RunOptions.ThreadID", Reason: "thread-scoped layer needs a thread id"}
		case spec.Scope == ScopeResource && opts.ResourceID == "":
			return nil, &ConfigError{Code: CodeInvalidRun, Layer: spec.ID, Field: "RunOptions.ResourceID", Reason: "resource-scoped layer needs a resource id"}
		}
	}
	if opts.RunID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		opts.RunID = "run-" + hex.EncodeToString(b[:])
	}
	s := &Session{
		rt:     rt,
		info:   RunInfo{RunID: opts.RunID, ThreadID: opts.ThreadID, ResourceID: opts.ResourceID},
		parent: parent,
		child:  parent != nil,
		revs:   map[storage.Key]int64{},
		seen:   map[storage.Key][]byte{},
		states: make([]layerRun, len(rt.layers)),
		stats:  make([]layerStats, len(rt.layers)),
		loopAt: -1, callAt: map[string]int{}, verdict: map[string]callVerdict{}, applied: map[string]bool{},
	}
	if parent != nil {
		s.info.ParentRunID = parent.info.RunID
	}
	for _, it := range opts.History {
		if err := it.Validate(); err != nil {
			return nil, &ConfigError{Code: CodeInvalidRun, Field: "RunOptions.History", Reason: err.Error()}
		}
		e := rt.entry(it)
		s.log = append(s.log, e)
		s.items = append(s.items, it)
		s.noteItem()
		s.logTokens += e.Tokens
		if it.Type == TypeFunctionCall {
			s.callAt[it.CallID] = len(s.items) - 1
		}
	}
	s.stored = len(s.items)
	for _, l := range rt.layers {
		s.insts = append(s.insts, l.newInstance(s))
	}
	return s, nil
}

// initLayers loads each durable layer's state and runs the init hooks in
// slot order. seeds, for a child run, hold each layer's initial state
// (ok false: the layer inits as usual). Layers already disabled (in a
// child: disabled in the parent) are skipped. When an init aborts the
// run, the layers initialised before it are disposed, in reverse order,
// so none is left holding what its init acquired.
func (s *Session) initLayers(ctx context.Context, seeds []seed) (err error) {
	inited := make([]int, 0, len(s.insts))
	defer func() {
		if err == nil {
			return
		}
		// Dispose has its own timeout; a cancelled start must still
		// release what the earlier inits acquired.
		dctx := context.WithoutCancel(ctx)
		for n := len(inited) - 1; n >= 0; n-- {
			_ = s.insts[inited[n]].dispose(dctx, "")
		}
		s.disposed = true
	}()
	for k, inst := range s.insts {
		if s.states[k].disabled {
			continue
		}
		spec := inst.spec()
		var stored json.RawMessage
		var sd seed
		if seeds != nil {
			sd = seeds[k]
		}
		if st := s.layerStorage(*spec); st != nil && !sd.ok {
			var raw json.RawMessage
			found, err := st.Load(ctx, "state", &raw)
			if err != nil {
				err = &HookError{Layer: spec.ID, Hook: HookInit, Kind: KindError, Err: fmt.Errorf("load state: %w", err)}
				if spec.onInitError != InitErrorDisable {
					return err
				}
				s.disable(k, err)
				continue
			}
			if found {
				stored = raw
			}
		}
		if err := inst.init(ctx, stored, sd); err != nil {
			if spec.onInitError != InitErrorDisable {
				return err
			}
			s.disable(k, err)
			continue
		}
		inited = append(inited, k)
	}
	return nil
}

// seed is a child layer's initial state handed down by its parent.
type seed struct {
	v  any
	ok bool
}

func (s *Session) disable(k int, err error) {
	s.states[k].disabled = true
	kind := KindError
	var he *HookError
	if errors.As(err, &he) {
		kind = he.Kind
	}
	s.diagnose(s.insts[k].spec().ID, HookInit, kind, err)
}

// Run returns the run's identity.
func (s *Session) Run() RunInfo { return s.info }

// Items returns the run's item log. Do not modify it.
func (s *Session) Items() []Item { return s.items }

// Turn is the number of assemblies so far.
func (s *Session) Turn() int { return s.turn }

// Diagnostics returns every diagnostic of the run so far.
func (s *Session) Diagnostics() []Diagnostic {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Diagnostic(nil), s.diagnostics...)
}

// LastUsage is the usage report of the last assembly, nil before the
// first.
func (s *Session) LastUsage() *Usage { return s.last }

// Tools lists the functions the layers provide, sorted by name, with their
// JSON schemas. Offer them to the model; route calls with ExecuteTool.
func (s *Session) Tools() []ToolSpec {
	if s.tools != nil {
		return s.tools
	}
	out := make([]ToolSpec, 0, len(s.rt.tools))
	for _, t := range s.rt.tools {
		if r := s.rt.routes[t.Name]; r.tool == nil && s.states[r.layer].disabled {
			continue
		}
		out = append(out, t)
	}
	s.tools = out
	return out
}

// Append records items the host adds to the log (user input, tool
// outputs) and runs onItemAppend for each. Invalid items are rejected
// whole: nothing is appended.
//
// A hook failure is a diagnostic, not an error, with one exception: a
// write the layer's store did not confirm. The error joins the persistence
// failures of the hooks' new state (errors.Is(err, storage.ErrConflict) for
// a revision conflict) and the records the layers could not store
// (errors.Is(err, ErrNotStored); errors.As gives the *WriteError naming
// layer and item); they never stop the other layers' hooks. Nil means
// every layer has stored what it keeps of the items. After ErrNotStored
// the items are in the log and the layers retry what they hold unstored at
// their next write: Append or Record again with new items, or Complete.
func (s *Session) Append(ctx context.Context, items ...Item) error {
	if err := s.validateAppend(items); err != nil {
		return err
	}
	return errors.Join(s.appendItems(ctx, items)...)
}

// validateAppend rejects a disposed session or an invalid item before
// anything is appended.
func (s *Session) validateAppend(items []Item) error {
	if s.disposed {
		return ErrDisposed
	}
	for _, it := range items {
		if err := it.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// appendItems logs valid items and runs every layer's onItemAppend for
// each, collecting persistence errors without stopping. An output comes
// with the call it answers and whether this session let that call run.
func (s *Session) appendItems(ctx context.Context, items []Item) []error {
	var errs []error
	for _, it := range items {
		e := s.rt.entry(it)
		s.log = append(s.log, e)
		s.items = append(s.items, it)
		s.noteItem()
		s.logTokens += e.Tokens
		idx := len(s.items) - 1
		if it.Type == TypeCompaction || it.Type == TypeContent {
			continue // an event of the runtime's, not conversation
		}
		var call *Item
		allowed := false
		switch it.Type {
		case TypeFunctionCall:
			s.callAt[it.CallID] = idx
		case TypeFunctionCallOutput:
			if j, ok := s.callAt[it.CallID]; ok {
				c := s.items[j]
				call = &c
			}
			v := s.verdict[it.CallID]
			allowed = v == callAllowed || v == callRan
		}
		for k, inst := range s.insts {
			if s.states[k].disabled {
				continue
			}
			var c *Item
			if call != nil {
				cc := *call // each hook gets its own copy
				c = &cc
			}
			if err := inst.onItemAppend(ctx, it, idx, c, allowed); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// What the hooks activated goes after the batch: after this turn's
	// tool outputs.
	for _, c := range s.acts.take() {
		s.activate(c)
	}
	return errs
}

// Record records what the model wrote in one call: it appends the items
// (onItemAppend), then runs afterModelCall with them and store with every
// item recorded since the previous Record.
//
// A layer's plain calls (Function.Plain) among those items are applied
// before its store hook runs, unless a layer can deny calls (some layer has
// a BeforeToolCall hook): the model's calls are recorded before the layers
// are asked about them, so such a call is then applied by ExecuteTool once
// allowed. Either way store's NewItems hold every item, plain calls too.
//
// Only an invalid item (or a disposed session) stops Record before any
// hook runs. Otherwise every layer's hooks run even when persisting
// another layer's state failed: the returned error joins every such
// failure (see Append), and the layers that succeeded keep their state.
func (s *Session) Record(ctx context.Context, items ...Item) error {
	if err := s.validateAppend(items); err != nil {
		return err
	}
	errs := s.appendItems(ctx, items)
	newItems := s.items[s.stored:]
	s.stored = len(s.items)
	for k, inst := range s.insts {
		if s.states[k].disabled {
			continue
		}
		if err := inst.afterModelCall(ctx, items); err != nil {
			errs = append(errs, err)
		}
	}
	deferCalls := s.canDeny()
	for k, inst := range s.insts {
		if s.states[k].disabled {
			continue
		}
		if !deferCalls {
			errs = append(errs, s.recordPlainCalls(ctx, k, newItems)...)
		}
		if err := inst.store(ctx, conversation(newItems), s.conversationFrom(0)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ToolDecisionResult is the layers' combined answer on a tool call.
type ToolDecisionResult struct {
	// Allowed is false when a layer denied the call.
	Allowed bool
	// DeniedBy and Reason name the layer that denied and why.
	DeniedBy string
	Reason   string
	// Call is the call to run, with arguments rewritten by layers.
	Call Item
	// Output is the function_call_output to record for a denied call.
	Output Item
}

// BeforeToolCall asks every layer about a tool call, in slot order. The
// first denial wins; a layer may rewrite the arguments for the next.
//
// It fails closed: a layer whose hook errors, panics or times out denies
// the call (a diagnostic says why) unless the layer says
// FailOpen, and when a layer's decision cannot be persisted the
// error comes back with Allowed false. The session remembers the answer:
// ExecuteTool refuses a denied call (ErrCallDenied), and the layers see it
// with the call's output (ItemAppendParams.CallAllowed).
func (s *Session) BeforeToolCall(ctx context.Context, call Item) (ToolDecisionResult, error) {
	if s.disposed {
		return ToolDecisionResult{}, ErrDisposed
	}
	if call.Type != TypeFunctionCall {
		return ToolDecisionResult{}, fmt.Errorf("%w: BeforeToolCall needs a function_call", ErrInvalidItem)
	}
	res := ToolDecisionResult{Allowed: true, Call: call}
	for k, inst := range s.insts {
		if s.states[k].disabled {
			continue
		}
		deny, reason, args, err := inst.beforeToolCall(ctx, res.Call)
		if err != nil {
			s.deny(&res, call, inst.spec().ID, "the call could not be checked (its decision could not be saved), so it is refused")
			return res, err
		}
		if args != "" {
			res.Call.Arguments = args
		}
		if deny {
			s.deny(&res, call, inst.spec().ID, reason)
			return res, nil
		}
	}
	s.verdict[call.CallID] = callAllowed
	return res, nil
}

// deny fills a denial into res and remembers it.
func (s *Session) deny(res *ToolDecisionResult, call Item, by, reason string) {
	res.Allowed = false
	res.DeniedBy = by
	res.Reason = reason
	res.Output = FunctionCallOutput(call.CallID, fmt.Sprintf("Call to %s denied by %s: %s", call.Name, by, reason))
	s.verdict[call.CallID] = callDenied
}

// refuseDenied answers a call the layers denied in this session, which
// must not run; ok is false for any other call.
func (s *Session) refuseDenied(call Item) (out Item, denied bool, err error) {
	if s.verdict[call.CallID] != callDenied {
		return Item{}, false, nil
	}
	return FunctionCallOutput(call.CallID, fmt.Sprintf("error: the call to %s was denied and did not run", call.Name)), true,
		fmt.Errorf("%w: %s (call %s)", ErrCallDenied, call.Name, call.CallID)
}

// callFunction is ExecuteTool's part for a call to a provided function
// ("layer/fn"). Arguments the function rejects produce an output that
// tells the model what was wrong, with state unchanged. A function of a
// layer disabled by its init failure is unknown (ErrUnknownFunction).
func (s *Session) callFunction(ctx context.Context, call Item) (Item, error) {
	r := s.rt.routes[call.Name]
	if r.fn == "" || r.plain || s.states[r.layer].disabled {
		return FunctionCallOutput(call.CallID, fmt.Sprintf("error: unknown function %q", call.Name)),
			fmt.Errorf("%w: %q", ErrUnknownFunction, call.Name)
	}
	s.verdict[call.CallID] = callRan
	out, err := s.insts[r.layer].callFunction(ctx, r.fn, false, call)
	if err != nil {
		return layerCallFailed(call.CallID, "the function", err)
	}
	return FunctionCallOutput(call.CallID, out), nil
}

// layerCallFailed is the output of a call a layer's code failed to apply:
// a provided function, or a plain one ("the call"). The
// model reads what went wrong; the host gets the error only for a write
// the store did not confirm (acknowledged means stored) or a failure
// outside the hook. A panic's value and stack are for the diagnostics,
// not the model: it reads that what ran ("the function") failed.
func layerCallFailed(callID, what string, err error) (Item, error) {
	var he *HookError
	if !errors.As(err, &he) {
		return FunctionCallOutput(callID, "error: the call could not be applied"), err
	}
	msg := he.Err.Error()
	if he.Kind == KindPanic {
		msg = what + " failed unexpectedly"
	}
	if errors.Is(err, ErrNotStored) {
		return FunctionCallOutput(callID, "error: not saved, the memory store failed: "+msg), err
	}
	return FunctionCallOutput(callID, "error: "+msg), nil
}

// Complete ends the run: onComplete on every layer (its returned state is
// persisted), then dispose. The session is unusable afterwards. An error
// matching ErrNotStored means some layer could not store what the run gave
// it (its last retry failed too): those items are not in memory, and the
// error's *WriteError values say which.
func (s *Session) Complete(ctx context.Context, outcome string) error {
	if s.disposed {
		return ErrDisposed
	}
	var errs []error
	for k, inst := range s.insts {
		if s.states[k].disabled {
			continue
		}
		if err := inst.onComplete(ctx, s.items, outcome); err != nil {
			errs = append(errs, err)
		}
	}
	s.dispose(ctx, outcome)
	return errors.Join(errs...)
}

// Close disposes the session without completing it (an aborted run).
// Closing twice is a no-op.
func (s *Session) Close(ctx context.Context) error {
	if !s.disposed {
		s.dispose(ctx, "")
	}
	return nil
}

func (s *Session) dispose(ctx context.Context, outcome string) {
	for k, inst := range s.insts {
		if !s.states[k].disabled {
			_ = inst.dispose(ctx, outcome)
		}
	}
	s.disposed = true
}

// Spawn starts a child run on the same thread and resource. Init does not
// run in a child: each layer's instance starts from the ChildState its
// parent's onSpawn returns, else from the parent's current state (the same
// value, not a deep copy: hooks return new state rather than mutate it).
// A layer disabled in the parent stays disabled in the child. A child
// never persists scoped state: what it learned reaches the parent through
// Return and onReturn.
//
// opts name the child's RunID (empty: a random one) and the History that
// seeds its log. The child runs on the parent's thread and resource: a
// ThreadID or ResourceID other than the parent's is refused.
func (s *Session) Spawn(ctx context.Context, opts RunOptions) (*Session, error) {
	if s.disposed {
		return nil, ErrDisposed
	}
	switch {
	case opts.ThreadID != "" && opts.ThreadID != s.info.ThreadID:
		return nil, &ConfigError{Code: CodeInvalidRun, Field: "RunOptions.ThreadID", Reason: "a child runs on its parent's thread"}
	case opts.ResourceID != "" && opts.ResourceID != s.info.ResourceID:
		return nil, &ConfigError{Code: CodeInvalidRun, Field: "RunOptions.ResourceID", Reason: "a child runs on its parent's resource"}
	}
	opts.ThreadID, opts.ResourceID = s.info.ThreadID, s.info.ResourceID
	child, err := s.rt.newSession(opts, s)
	if err != nil {
		return nil, err
	}
	seeds := make([]seed, len(s.insts))
	for k, inst := range s.insts {
		if s.states[k].disabled {
			// Not re-initialised: the child runs without it too.
			child.states[k].disabled = true
			continue
		}
		v, ok, err := inst.onSpawn(ctx, child.info)
		if err != nil {
			return nil, err
		}
		if !ok {
			// No seed: the child starts from the parent's current state.
			v = inst.stateValue()
		}
		seeds[k] = seed{v: v, ok: true}
	}
	if err := child.initLayers(ctx, seeds); err != nil {
		return nil, err
	}
	return child, nil
}

// Return hands a child's result back: onReturn runs on the parent's
// layers with the child's final state of each layer. The child is
// completed first if it was not.
func (s *Session) Return(ctx context.Context, child *Session, result []Item) error {
	if s.disposed {
		return ErrDisposed
	}
	if child == nil || child.parent != s {
		return fmt.Errorf("core: Return: not a child of this session")
	}
	var errs []error
	if !child.disposed {
		errs = append(errs, child.Complete(ctx, "returned"))
	}
	for k, inst := range s.insts {
		if s.states[k].disabled {
			continue
		}
		var ci instance
		if !child.states[k].disabled {
			ci = child.insts[k]
		}
		if err := inst.onReturn(ctx, child.info, ci, result); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// State returns the current state of the layer with id, typed. ok is false
// when no such layer exists or its state has another type.
func State[S any](s *Session, layerID string) (S, bool) {
	var zero S
	for _, inst := range s.insts {
		if inst.spec().ID == layerID {
			v, ok := inst.stateValue().(S)
			if !ok {
				return zero, false
			}
			return v, true
		}
	}
	return zero, false
}

// SetState replaces the state of the layer with id (persisting it for the
// durable scopes). The next recall sees it.
//
// A layer disabled by its init failure takes no state: the call fails.
func SetState[S any](ctx context.Context, s *Session, layerID string, v S) error {
	for k, inst := range s.insts {
		if inst.spec().ID == layerID {
			if s.states[k].disabled {
				return fmt.Errorf("core: layer %q is disabled", layerID)
			}
			return inst.setStateValue(ctx, v)
		}
	}
	return fmt.Errorf("core: no layer %q", layerID)
}
