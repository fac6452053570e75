package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stratamem/strata/storage"
)

func (i *layerInstance[S]) spec() *layerConfig { return &i.sp }

func (i *layerInstance[S]) run() RunInfo { return i.sess.info }

// timeout picks the layer's limit for a hook, else the runtime's, else the
// package default.
func (i *layerInstance[S]) timeout(h Hook) time.Duration {
	if d := i.sp.timeouts[h]; d > 0 {
		return d
	}
	if d := i.sess.rt.cfg.Timeouts[h]; d > 0 {
		return d
	}
	return defaultTimeouts[h]
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
				return &HookError{Layer: i.sp.ID, Hook: HookInit, Kind: KindError, Err: fmt.Errorf("decode stored state: %w", err)}
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
	hctx, cancel := context.WithTimeout(ctx, i.timeout(HookInit))
	st := newInitStorage(inner, hctx)
	p := InitParams{Run: i.run(), Storage: st, Stored: stored, ClaimedThread: i.sess.claimed}
	s, kind, err := startHookIn(hctx, cancel,
		func(ctx context.Context) (S, error) { return i.layer.Hooks.Init(ctx, p) }).wait()
	st.revoke() // wait cancelled hctx
	if err != nil {
		return &HookError{Layer: i.sp.ID, Hook: HookInit, Kind: kind, Err: err}
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
func (i *layerInstance[S]) commit(ctx context.Context, hook Hook, next *S) error {
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
func guard[S any](ctx context.Context, i *layerInstance[S], hook Hook, timeout time.Duration, fn func(context.Context) (*S, error)) error {
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
func (i *layerInstance[S]) unconfirmed(hook Hook, kind DiagnosticKind, err error) error {
	var we *WriteError
	switch {
	case errors.As(err, &we):
		if we.Layer == "" {
			we.Layer = i.sp.ID
		}
	case errors.Is(err, ErrNotStored):
	case i.sp.writesRecords && (kind == KindTimeout || kind == KindCanceled || kind == KindPanic):
		err = &WriteError{Layer: i.sp.ID, Item: "the writes of hook " + string(hook) + " (outcome unknown)", Err: err}
	default:
		return nil
	}
	return &HookError{Layer: i.sp.ID, Hook: hook, Kind: kind, Err: err}
}

func (i *layerInstance[S]) hasRecall() bool { return i.layer.Hooks.Recall != nil }

func (i *layerInstance[S]) recallTimeout() time.Duration {
	return i.timeout(HookRecall)
}

func (i *layerInstance[S]) startRecall(hctx context.Context, cancel context.CancelFunc, in recallInput) *pendingHook[recallOutput] {
	p := RecallParams[S]{Run: i.run(), State: i.state, Budget: in.budget, Turn: in.turn, History: in.history, Visible: in.visible, Tokens: i.sess.rt.counter}
	return startHookIn(hctx, cancel,
		func(ctx context.Context) (recallOutput, error) {
			r, err := i.layer.Hooks.Recall(ctx, p)
			if err != nil {
				return recallOutput{}, err
			}
			out := recallOutput{items: r.Items}
			if r.State != nil {
				// Committed by the session on its own goroutine, and only
				// if the recall answered in time.
				st := *r.State
				out.commit = func(ctx context.Context) error { return i.commit(ctx, HookRecall, &st) }
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
	d, kind, err := callHook(ctx, i.timeout(HookRenderDelta),
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

func (i *layerInstance[S]) projectHistory(ctx context.Context, history []Item, tokensOf func(int) int, turn int) (historyProjection, bool, error) {
	p := ProjectHistoryParams[S]{State: i.state, History: history, TokensOf: tokensOf, Turn: turn}
	proj, kind, err := callHook(ctx, i.timeout(HookProjectHistory),
		func(ctx context.Context) (historyProjection, error) {
			start, items, err := i.layer.Hooks.ProjectHistory(ctx, p)
			return historyProjection{start, items}, err
		})
	if err != nil {
		i.sess.diagnose(i.sp.ID, HookProjectHistory, kind, err)
		return historyProjection{}, false, nil
	}
	if proj.items == nil && (proj.start < 0 || proj.start > len(history)) {
		i.sess.diagnose(i.sp.ID, HookProjectHistory, KindError, fmt.Errorf("start %d outside history of %d items", proj.start, len(history)))
		return historyProjection{}, false, nil
	}
	return proj, true, nil
}

func (i *layerInstance[S]) onItemAppend(ctx context.Context, item Item, index int, call *Item, allowed bool) error {
	if i.layer.Hooks.OnItemAppend == nil {
		return nil
	}
	p := ItemAppendParams[S]{Run: i.run(), State: i.state, Item: item, Index: index, Call: call, CallAllowed: allowed,
		Activate: i.sess.queueActivation}
	return guard(ctx, i, HookOnItemAppend, i.timeout(HookOnItemAppend),
		func(ctx context.Context) (*S, error) { return i.layer.Hooks.OnItemAppend(ctx, p) })
}

func (i *layerInstance[S]) hasBeforeToolCall() bool { return i.layer.Hooks.BeforeToolCall != nil }

// beforeToolCall asks the layer about a call. A hook that errors, panics,
// times out or is cancelled denies the call (fail closed: a deny rule
// whose check is slow must not let the call run), unless the layer says
// FailOpen; either way the failure is a diagnostic. A returned
// error is a failure to persist the decision's state; the verdict comes
// with it.
func (i *layerInstance[S]) beforeToolCall(ctx context.Context, call Item) (bool, string, string, error) {
	if i.layer.Hooks.BeforeToolCall == nil {
		return false, "", "", nil
	}
	p := CallParams[S]{Run: i.run(), State: i.state, Call: call}
	d, kind, err := callHook(ctx, i.timeout(HookBeforeToolCall),
		func(ctx context.Context) (ToolDecision[S], error) { return i.layer.Hooks.BeforeToolCall(ctx, p) })
	if err != nil {
		i.sess.diagnose(i.sp.ID, HookBeforeToolCall, kind, err)
		if i.sp.failOpen {
			return false, "", "", nil
		}
		// The reason goes to the model: the kind, not the error's text,
		// which is for the diagnostics.
		return true, fmt.Sprintf("the call could not be checked (the check failed: %s), so it is refused", kind), "", nil
	}
	if err := i.commit(ctx, HookBeforeToolCall, d.State); err != nil {
		return d.Deny, d.Reason, d.Arguments, err
	}
	return d.Deny, d.Reason, d.Arguments, nil
}

func (i *layerInstance[S]) afterModelCall(ctx context.Context, newItems []Item) error {
	if i.layer.Hooks.AfterModelCall == nil {
		return nil
	}
	p := StoreParams[S]{Run: i.run(), State: i.state, NewItems: newItems, History: i.sess.items}
	return guard(ctx, i, HookAfterModelCall, i.timeout(HookAfterModelCall),
		func(ctx context.Context) (*S, error) { return i.layer.Hooks.AfterModelCall(ctx, p) })
}

func (i *layerInstance[S]) store(ctx context.Context, newItems, history []Item) error {
	if i.layer.Hooks.Store == nil {
		return nil
	}
	p := StoreParams[S]{Run: i.run(), State: i.state, NewItems: newItems, History: history}
	return guard(ctx, i, HookStore, i.timeout(HookStore),
		func(ctx context.Context) (*S, error) { return i.layer.Hooks.Store(ctx, p) })
}

// onSpawn runs the parent's hook; ok is false when it gave the child no
// state of its own.
func (i *layerInstance[S]) onSpawn(ctx context.Context, child RunInfo) (any, bool, error) {
	if i.layer.Hooks.OnSpawn == nil {
		return nil, false, nil
	}
	p := ChildParams[S]{Parent: i.run(), Child: child, State: i.state}
	seed, kind, err := callHook(ctx, i.timeout(HookOnSpawn),
		func(ctx context.Context) (*S, error) { return i.layer.Hooks.OnSpawn(ctx, p) })
	if err != nil {
		i.sess.diagnose(i.sp.ID, HookOnSpawn, kind, err)
		return nil, false, nil
	}
	if seed == nil {
		return nil, false, nil
	}
	return *seed, true, nil
}

func (i *layerInstance[S]) onReturn(ctx context.Context, child RunInfo, childInst instance, result []Item) error {
	if i.layer.Hooks.OnReturn == nil {
		return nil
	}
	p := ChildParams[S]{Parent: i.run(), Child: child, State: i.state, Result: result}
	if childInst != nil {
		if cs, ok := childInst.stateValue().(S); ok {
			p.ChildState = &cs
		}
	}
	return guard(ctx, i, HookOnReturn, i.timeout(HookOnReturn),
		func(ctx context.Context) (*S, error) { return i.layer.Hooks.OnReturn(ctx, p) })
}

func (i *layerInstance[S]) onComplete(ctx context.Context, log []Item, outcome string) error {
	if i.layer.Hooks.OnComplete == nil {
		return nil
	}
	p := CompleteParams[S]{Run: i.run(), State: i.state, Log: log, Outcome: outcome}
	return guard(ctx, i, HookOnComplete, i.timeout(HookOnComplete),
		func(ctx context.Context) (*S, error) { return i.layer.Hooks.OnComplete(ctx, p) })
}

func (i *layerInstance[S]) dispose(ctx context.Context, outcome string) error {
	if i.layer.Hooks.Dispose == nil {
		return nil
	}
	p := CompleteParams[S]{Run: i.run(), State: i.state, Log: i.sess.items, Outcome: outcome}
	_, kind, err := callHook(ctx, i.timeout(HookDispose),
		func(ctx context.Context) (struct{}, error) { return struct{}{}, i.layer.Hooks.Dispose(ctx, p) })
	if err != nil {
		i.sess.diagnose(i.sp.ID, HookDispose, kind, err)
	}
	return nil
}

// callFunction runs the layer's function name, provided or plain (a
// plain function's diagnostics name it as the model calls it, without the
// layer id). A failure is a diagnostic and is returned as a *HookError; a
// state that could not be persisted is returned as commit's error.
func (i *layerInstance[S]) callFunction(ctx context.Context, name string, plain bool, call Item) (string, error) {
	var fn *Function[S]
	for k := range i.layer.Functions {
		if f := &i.layer.Functions[k]; f.Spec.Name == name && f.Plain == plain {
			fn = f
			break
		}
	}
	if fn == nil || fn.Call == nil {
		return "", fmt.Errorf("%w: %s/%s", ErrUnknownFunction, i.sp.ID, name)
	}
	label := Hook(i.sp.ID + "/" + name)
	if plain {
		label = Hook(name)
	}
	p := CallParams[S]{Run: i.run(), State: i.state, Call: call}
	r, kind, err := callHook(ctx, i.timeout(HookStore),
		func(ctx context.Context) (FunctionResult[S], error) { return fn.Call(ctx, p) })
	if err != nil {
		var argErr *ArgumentError
		if errors.As(err, &argErr) {
			kind = KindRejected
		}
		i.sess.diagnose(i.sp.ID, label, kind, err)
		return "", &HookError{Layer: i.sp.ID, Hook: Hook(name), Kind: kind, Err: err}
	}
	if err := i.commit(ctx, Hook(name), r.State); err != nil {
		return "", err
	}
	return r.Output, nil
}

// recordCall applies a plain call as Record logs it (no layer can deny
// calls). As for the write hooks Record runs, a failure is a diagnostic
// and only a write left unconfirmed (see unconfirmed), or the state's
// persistence failure, is returned; applied reports that Call succeeded.
func (i *layerInstance[S]) recordCall(ctx context.Context, name string, call Item) (bool, error) {
	_, err := i.callFunction(ctx, name, true, call)
	if err == nil {
		return true, nil
	}
	var he *HookError
	if errors.As(err, &he) && he.Layer == i.sp.ID && he.Hook == Hook(name) {
		return false, i.unconfirmed(he.Hook, he.Kind, he.Err)
	}
	return false, err
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
