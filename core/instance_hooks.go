package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stratamem/strata/storage"
)

func (i *layerInstance[S]) spec() *LayerSpec { return &i.sp }

func (i *layerInstance[S]) run() RunInfo { return i.sess.info }

// timeout picks the layer's limit for a hook, else the runtime's, else the
// package default.
func (i *layerInstance[S]) timeout(pick func(Timeouts) time.Duration) time.Duration {
	if d := pick(i.sp.Timeouts); d > 0 {
		return d
	}
	if d := pick(i.sess.rt.cfg.Timeouts); d > 0 {
		return d
	}
	return pick(DefaultTimeouts)
}

func (i *layerInstance[S]) init(ctx context.Context, stored json.RawMessage, sd seed) error {
	i.storage = i.sess.layerStorage(i.sp)
	if sd.ok {
		i.state, _ = sd.v.(S) // a nil interface seed is S's zero value
		return nil
	}
	if i.layer.Hooks.Init == nil {
		if len(stored) > 0 {
			if err := json.Unmarshal(stored, &i.state); err != nil {
				return &HookError{Layer: i.sp.ID, Hook: "init", Kind: KindError, Err: fmt.Errorf("decode stored state: %w", err)}
			}
		}
		return nil
	}
	var inner LayerStorage = noStorage{}
	if i.storage != nil {
		inner = i.storage
	}
	// The hook's handle dies when the runtime stops waiting for it: a
	// hook that outlives its timeout must not write for a layer the run
	// may have disabled, nor race the run's own writes.
	hctx, cancel := context.WithTimeout(ctx, i.timeout(func(t Timeouts) time.Duration { return t.Init }))
	st := newInitStorage(inner, hctx)
	p := InitParams{Run: i.run(), Storage: st, Stored: stored, ClaimedThread: i.sess.claimed}
	s, kind, err := startHookIn(hctx, cancel,
		func(ctx context.Context) (S, error) { return i.layer.Hooks.Init(ctx, p) }).wait()
	st.revoke() // wait cancelled hctx
	if err != nil {
		return &HookError{Layer: i.sp.ID, Hook: "init", Kind: kind, Err: err}
	}
	i.state = s
	return nil
}

// commit makes next the layer's state and persists it for the durable
// scopes.
//
// The write is a compare-and-swap against the revision this session last
// saw. On a conflict the layer's Merge, when it has one, combines the
// stored state with this run's and the write is retried (three times at
// most). When there is no Merge, or the retries keep conflicting, this
// run's change is given up: the conflict is returned (and diagnosed), and
// the layer adopts the stored state and its revision, so the rest of the
// run works from what another run wrote instead of conflicting on every
// later save. Nothing is lost silently: the error reports the dropped
// change.
func (i *layerInstance[S]) commit(ctx context.Context, hook string, next *S) error {
	if next == nil {
		return nil
	}
	i.state = *next
	if i.storage == nil {
		return nil
	}
	err := i.storage.Save(ctx, "state", i.state)
	for attempt := 0; err != nil && errors.Is(err, storage.ErrConflict) && i.layer.Merge != nil && attempt < 3; attempt++ {
		var stored S
		if _, lerr := i.storage.Load(ctx, "state", &stored); lerr != nil {
			err = errors.Join(err, fmt.Errorf("reload after conflict: %w", lerr))
			break
		}
		i.state = i.layer.Merge(stored, i.state)
		err = i.storage.Save(ctx, "state", i.state)
	}
	if err == nil {
		return nil
	}
	kind := KindError
	if errors.Is(err, storage.ErrConflict) {
		kind = KindConflict
		var stored S
		if _, lerr := i.storage.Load(ctx, "state", &stored); lerr != nil {
			// The revision stays stale: the next save conflicts again and
			// retries the reload.
			err = errors.Join(err, fmt.Errorf("reload after conflict: %w", lerr))
		} else {
			i.state = stored
		}
	}
	i.sess.diagnose(i.sp.ID, hook, kind, err)
	return fmt.Errorf("core: persist state of layer %q after %s: %w", i.sp.ID, hook, err)
}

// guard runs a state-returning hook and commits its state, or records a
// diagnostic when it failed. It returns persistence errors: the state's,
// and the hook's own unconfirmed writes (see unconfirmed).
func guard[S any](ctx context.Context, i *layerInstance[S], hook string, timeout time.Duration, fn func(context.Context) (*S, error)) error {
	next, kind, err := callHook(ctx, timeout, fn)
	if err != nil {
		i.sess.diagnose(i.sp.ID, hook, kind, err)
		return i.unconfirmed(hook, kind, err)
	}
	return i.commit(ctx, hook, next)
}

// unconfirmed is the error a failed write hook hands the caller, nil when
// the failure is only a missing contribution. A hook that says its store
// did not confirm a write (ErrNotStored) is returned as is; a hook of a
// layer that writes records and did not answer in time may have left a
// write half done, so its outcome is unknown and it is reported as not
// stored. Either way the caller must not take the items as acknowledged.
func (i *layerInstance[S]) unconfirmed(hook string, kind DiagnosticKind, err error) error {
	var we *WriteError
	switch {
	case errors.As(err, &we):
		if we.Layer == "" {
			we.Layer = i.sp.ID
		}
	case errors.Is(err, ErrNotStored):
	case i.sp.WritesRecords && (kind == KindTimeout || kind == KindCanceled || kind == KindPanic):
		err = &WriteError{Layer: i.sp.ID, Item: "the writes of hook " + hook + " (outcome unknown)", Err: err}
	default:
		return nil
	}
	return &HookError{Layer: i.sp.ID, Hook: hook, Kind: kind, Err: err}
}

func (i *layerInstance[S]) hasRecall() bool { return i.layer.Hooks.Recall != nil }

func (i *layerInstance[S]) recallTimeout() time.Duration {
	return i.timeout(func(t Timeouts) time.Duration { return t.Recall })
}

func (i *layerInstance[S]) startRecall(hctx context.Context, cancel context.CancelFunc, in recallInput) *pendingHook[recallOutput] {
	p := RecallParams[S]{Run: i.run(), State: i.state, Budget: in.budget, Turn: in.turn, History: in.history, Visible: in.visible, Tokens: i.sess.rt.counter}
	return startHookIn(hctx, cancel,
		func(ctx context.Context) (recallOutput, error) {
			r, err := i.layer.Hooks.Recall(ctx, p)
			if err != nil {
				return recallOutput{}, err
			}
			out := recallOutput{items: r.Items, text: r.Text}
			if r.State != nil {
				// Committed by the session on its own goroutine, and only
				// if the recall answered in time.
				st := *r.State
				out.commit = func(ctx context.Context) error { return i.commit(ctx, "recall", &st) }
			}
			return out, nil
		})
}

func (i *layerInstance[S]) renderDelta(ctx context.Context, prev, next []Item) (string, DiagnosticKind, error) {
	if i.layer.Hooks.RenderDelta == nil {
		return "", "", nil
	}
	p := RenderDeltaParams[S]{State: i.state, Prev: prev, Next: next, Tokens: i.sess.rt.counter}
	type delta struct {
		text string
		ok   bool
	}
	d, kind, err := callHook(ctx, i.timeout(func(t Timeouts) time.Duration { return t.RenderDelta }),
		func(ctx context.Context) (delta, error) {
			text, ok, err := i.layer.Hooks.RenderDelta(ctx, p)
			return delta{text, ok}, err
		})
	if err != nil {
		return "", kind, err
	}
	if !d.ok {
		return "", "", nil
	}
	return d.text, "", nil
}

func (i *layerInstance[S]) hasProjectHistory() bool { return i.layer.Hooks.ProjectHistory != nil }

func (i *layerInstance[S]) projectHistory(ctx context.Context, history []Item, tokensOf func(int) int, turn int) (HistoryProjection, bool, error) {
	p := ProjectHistoryParams[S]{State: i.state, History: history, TokensOf: tokensOf, Turn: turn}
	proj, kind, err := callHook(ctx, i.timeout(func(t Timeouts) time.Duration { return t.ProjectHistory }),
		func(ctx context.Context) (HistoryProjection, error) { return i.layer.Hooks.ProjectHistory(ctx, p) })
	if err != nil {
		i.sess.diagnose(i.sp.ID, "projectHistory", kind, err)
		return HistoryProjection{}, false, nil
	}
	if proj.Items == nil && (proj.Start < 0 || proj.Start > len(history)) {
		i.sess.diagnose(i.sp.ID, "projectHistory", KindError, fmt.Errorf("start %d outside history of %d items", proj.Start, len(history)))
		return HistoryProjection{}, false, nil
	}
	return proj, true, nil
}

func (i *layerInstance[S]) onItemAppend(ctx context.Context, item Item, index int, call *Item, allowed bool) error {
	if i.layer.Hooks.OnItemAppend == nil {
		return nil
	}
	p := ItemAppendParams[S]{Run: i.run(), State: i.state, Item: item, Index: index, Call: call, CallAllowed: allowed}
	return guard(ctx, i, "onItemAppend", i.timeout(func(t Timeouts) time.Duration { return t.OnItemAppend }),
		func(ctx context.Context) (*S, error) { return i.layer.Hooks.OnItemAppend(ctx, p) })
}

func (i *layerInstance[S]) hasBeforeToolCall() bool { return i.layer.Hooks.BeforeToolCall != nil }

// beforeToolCall asks the layer about a call. A hook that errors, panics,
// times out or is cancelled denies the call (fail closed: a Deny rule
// whose check is slow must not let the call run), unless the layer says
// ToolCallErrorAllow; either way the failure is a diagnostic. A returned
// error is a failure to persist the decision's state; the verdict comes
// with it.
func (i *layerInstance[S]) beforeToolCall(ctx context.Context, call Item) (Verdict, string, string, error) {
	if i.layer.Hooks.BeforeToolCall == nil {
		return Allow, "", "", nil
	}
	p := ToolCallParams[S]{Run: i.run(), State: i.state, Call: call}
	d, kind, err := callHook(ctx, i.timeout(func(t Timeouts) time.Duration { return t.BeforeToolCall }),
		func(ctx context.Context) (ToolDecision[S], error) { return i.layer.Hooks.BeforeToolCall(ctx, p) })
	if err != nil {
		i.sess.diagnose(i.sp.ID, "beforeToolCall", kind, err)
		if i.sp.OnToolCallError == ToolCallErrorAllow {
			return Allow, "", "", nil
		}
		// The reason goes to the model: the kind, not the error's text,
		// which is for the diagnostics.
		return Deny, fmt.Sprintf("the call could not be checked (the check failed: %s), so it is refused", kind), "", nil
	}
	if err := i.commit(ctx, "beforeToolCall", d.State); err != nil {
		return d.Verdict, d.Reason, d.Arguments, err
	}
	return d.Verdict, d.Reason, d.Arguments, nil
}

func (i *layerInstance[S]) afterModelCall(ctx context.Context, newItems []Item) error {
	if i.layer.Hooks.AfterModelCall == nil {
		return nil
	}
	p := ModelCallParams[S]{Run: i.run(), State: i.state, NewItems: newItems}
	return guard(ctx, i, "afterModelCall", i.timeout(func(t Timeouts) time.Duration { return t.AfterModelCall }),
		func(ctx context.Context) (*S, error) { return i.layer.Hooks.AfterModelCall(ctx, p) })
}

func (i *layerInstance[S]) store(ctx context.Context, newItems, history []Item) error {
	if i.layer.Hooks.Store == nil {
		return nil
	}
	p := StoreParams[S]{Run: i.run(), State: i.state, NewItems: newItems, History: history}
	return guard(ctx, i, "store", i.timeout(func(t Timeouts) time.Duration { return t.Store }),
		func(ctx context.Context) (*S, error) { return i.layer.Hooks.Store(ctx, p) })
}

// storeCall applies one declared call (Layer.CallNames) that the host
// routed after the layers allowed it: the Store hook runs with NewItems
// holding just the call. A hook failure is a diagnostic and is returned
// (a *HookError) so the call's output can say what went wrong.
func (i *layerInstance[S]) storeCall(ctx context.Context, call Item, history []Item) error {
	if i.layer.Hooks.Store == nil {
		return nil
	}
	p := StoreParams[S]{Run: i.run(), State: i.state, NewItems: []Item{call}, History: history}
	next, kind, err := callHook(ctx, i.timeout(func(t Timeouts) time.Duration { return t.Store }),
		func(ctx context.Context) (*S, error) { return i.layer.Hooks.Store(ctx, p) })
	if err != nil {
		i.sess.diagnose(i.sp.ID, "store", kind, err)
		return &HookError{Layer: i.sp.ID, Hook: "store", Kind: kind, Err: err}
	}
	return i.commit(ctx, "store", next)
}

// onSpawn runs the parent's hook; ok is false when it gave the child no
// state of its own.
func (i *layerInstance[S]) onSpawn(ctx context.Context, child RunInfo) (any, bool, error) {
	if i.layer.Hooks.OnSpawn == nil {
		return nil, false, nil
	}
	p := SpawnParams[S]{Parent: i.run(), Child: child, State: i.state}
	r, kind, err := callHook(ctx, i.timeout(func(t Timeouts) time.Duration { return t.OnSpawn }),
		func(ctx context.Context) (SpawnResult[S], error) { return i.layer.Hooks.OnSpawn(ctx, p) })
	if err != nil {
		i.sess.diagnose(i.sp.ID, "onSpawn", kind, err)
		return nil, false, nil
	}
	if err := i.commit(ctx, "onSpawn", r.State); err != nil {
		return nil, false, err
	}
	if r.ChildState == nil {
		return nil, false, nil
	}
	return *r.ChildState, true, nil
}

func (i *layerInstance[S]) onReturn(ctx context.Context, child RunInfo, childInst instance, result []Item) error {
	if i.layer.Hooks.OnReturn == nil {
		return nil
	}
	p := ReturnParams[S]{Parent: i.run(), Child: child, State: i.state, Result: result}
	if childInst != nil {
		if cs, ok := childInst.stateValue().(S); ok {
			p.ChildState = &cs
		}
	}
	return guard(ctx, i, "onReturn", i.timeout(func(t Timeouts) time.Duration { return t.OnReturn }),
		func(ctx context.Context) (*S, error) { return i.layer.Hooks.OnReturn(ctx, p) })
}

func (i *layerInstance[S]) onComplete(ctx context.Context, log []Item, outcome string) error {
	if i.layer.Hooks.OnComplete == nil {
		return nil
	}
	p := CompleteParams[S]{Run: i.run(), State: i.state, Log: log, Outcome: outcome}
	return guard(ctx, i, "onComplete", i.timeout(func(t Timeouts) time.Duration { return t.OnComplete }),
		func(ctx context.Context) (*S, error) { return i.layer.Hooks.OnComplete(ctx, p) })
}

func (i *layerInstance[S]) dispose(ctx context.Context) error {
	if i.layer.Hooks.Dispose == nil {
		return nil
	}
	p := DisposeParams[S]{Run: i.run(), State: i.state}
	_, kind, err := callHook(ctx, i.timeout(func(t Timeouts) time.Duration { return t.Dispose }),
		func(ctx context.Context) (struct{}, error) { return struct{}{}, i.layer.Hooks.Dispose(ctx, p) })
	if err != nil {
		i.sess.diagnose(i.sp.ID, "dispose", kind, err)
	}
	return nil
}

func (i *layerInstance[S]) callFunction(ctx context.Context, name string, call Item) (string, error) {
	var fn *Function[S]
	for k := range i.layer.Functions {
		if i.layer.Functions[k].Name == name {
			fn = &i.layer.Functions[k]
			break
		}
	}
	if fn == nil || fn.Call == nil {
		return "", fmt.Errorf("%w: %s/%s", ErrUnknownFunction, i.sp.ID, name)
	}
	p := FunctionParams[S]{Run: i.run(), State: i.state, Call: call, Arguments: call.Arguments}
	r, kind, err := callHook(ctx, i.timeout(func(t Timeouts) time.Duration { return t.Store }),
		func(ctx context.Context) (FunctionResult[S], error) { return fn.Call(ctx, p) })
	if err != nil {
		var argErr *ArgumentError
		if errors.As(err, &argErr) {
			kind = KindRejected
		}
		i.sess.diagnose(i.sp.ID, i.sp.ID+"/"+name, kind, err)
		return "", &HookError{Layer: i.sp.ID, Hook: name, Kind: kind, Err: err}
	}
	if err := i.commit(ctx, name, r.State); err != nil {
		return "", err
	}
	return r.Output, nil
}

func (i *layerInstance[S]) stateValue() any { return i.state }

func (i *layerInstance[S]) setStateValue(ctx context.Context, v any) error {
	s, ok := v.(S)
	if !ok {
		var want S
		return fmt.Errorf("core: layer %q holds state of type %T, not %T", i.sp.ID, want, v)
	}
	return i.commit(ctx, "set", &s)
}

// noStorage is the LayerStorage of execution-scoped layers: nothing
// persists.
type noStorage struct{}

func (noStorage) Load(context.Context, string, any) (bool, error) { return false, nil }
func (noStorage) Save(context.Context, string, any) error         { return nil }
