package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
)

// DiagnosticKind says how a hook failed.
type DiagnosticKind string

// Diagnostic kinds.
const (
	KindError   DiagnosticKind = "error"
	KindPanic   DiagnosticKind = "panic"
	KindTimeout DiagnosticKind = "timeout"
	// KindCanceled: the caller's context ended while the hook ran.
	KindCanceled DiagnosticKind = "canceled"
	// KindRejected: a provided function rejected the model's arguments.
	KindRejected DiagnosticKind = "rejected"
	// KindConflict: persisting state hit a revision conflict.
	KindConflict DiagnosticKind = "conflict"
	// KindOverBudget: the view's token budget could not hold layer
	// output.
	KindOverBudget DiagnosticKind = "over-budget"
)

// Hook names a layer hook (Hooks): the hook a Diagnostic or a HookError
// is about. Besides the hooks' names it holds the runtime's own steps
// ("assemble", "record", "set" for SetState and tool writes, "execute"
// for a host tool) and the name of a provided function ("layer/fn").
type Hook string

// The layer hooks, as named in diagnostics.
const (
	HookInit           Hook = "init"
	HookRecall         Hook = "recall"
	HookRenderDelta    Hook = "renderDelta"
	HookProjectHistory Hook = "projectHistory"
	HookOnItemAppend   Hook = "onItemAppend"
	HookBeforeToolCall Hook = "beforeToolCall"
	HookAfterModelCall Hook = "afterModelCall"
	HookStore          Hook = "store"
	HookOnSpawn        Hook = "onSpawn"
	HookOnReturn       Hook = "onReturn"
	HookOnComplete     Hook = "onComplete"
	HookDispose        Hook = "dispose"
)

// Diagnostic records a hook that did not contribute. The run went on
// without that layer's contribution for that phase.
type Diagnostic struct {
	Layer   string
	Hook    Hook
	Kind    DiagnosticKind
	Message string
	// Turn is the assembly count when it happened.
	Turn int
}

// hookResult carries a hook's answer out of its goroutine.
type hookResult[R any] struct {
	v     R
	err   error
	panic any
	stack []byte
}

// pendingHook is a hook running in its own goroutine under a deadline.
//
// Hooks run in a goroutine so that one that ignores its context cannot hang
// the run: the runtime stops waiting at the deadline. The goroutine itself
// ends when the hook returns; its late answer lands in a buffered channel
// and is dropped (or, for an eventual recall, picked up next turn).
type pendingHook[R any] struct {
	ch     chan hookResult[R]
	ctx    context.Context
	cancel context.CancelFunc
}

func startHook[R any](ctx context.Context, timeout time.Duration, fn func(context.Context) (R, error)) *pendingHook[R] {
	hctx, cancel := context.WithTimeout(ctx, timeout)
	return startHookIn(hctx, cancel, fn)
}

// startHookIn runs fn under an existing deadline context. cancel may be a
// no-op when the context is shared by several hooks of one phase (one
// timer for all recalls of an assembly, instead of one each).
func startHookIn[R any](hctx context.Context, cancel context.CancelFunc, fn func(context.Context) (R, error)) *pendingHook[R] {
	p := &pendingHook[R]{ch: make(chan hookResult[R], 1), ctx: hctx, cancel: cancel}
	go func() {
		var r hookResult[R]
		defer func() {
			if rec := recover(); rec != nil {
				r = hookResult[R]{panic: rec, stack: debug.Stack()}
			}
			p.ch <- r
		}()
		r.v, r.err = fn(hctx)
	}()
	return p
}

// wait blocks until the hook answers or its deadline passes.
func (p *pendingHook[R]) wait() (R, DiagnosticKind, error) {
	r, kind, err, _ := p.waitOr(nil)
	return r, kind, err
}

// waitOr is wait that also gives up when stop closes, leaving the hook
// running: ok is false then, and the hook may still be polled later. A
// nil stop never closes.
func (p *pendingHook[R]) waitOr(stop <-chan struct{}) (R, DiagnosticKind, error, bool) {
	select {
	case r := <-p.ch:
		p.cancel()
		v, k, err := r.unpack()
		return v, k, err, true
	case <-p.ctx.Done():
		v, k, err := p.expired()
		return v, k, err, true
	case <-stop:
		var zero R
		return zero, "", nil, false
	}
}

// expired is the answer of a hook whose deadline context is done.
func (p *pendingHook[R]) expired() (R, DiagnosticKind, error) {
	p.cancel()
	// The answer may have raced the deadline: prefer it.
	select {
	case r := <-p.ch:
		return r.unpack()
	default:
	}
	var zero R
	if errors.Is(p.ctx.Err(), context.DeadlineExceeded) {
		return zero, KindTimeout, fmt.Errorf("hook did not return in time: %w", p.ctx.Err())
	}
	return zero, KindCanceled, p.ctx.Err()
}

// poll returns the answer if it has arrived, or a timeout once the hook's
// deadline has passed without one (the hook may ignore its context: it is
// then abandoned, and its late answer dropped). done is false while the
// hook is still within its deadline.
func (p *pendingHook[R]) poll() (R, DiagnosticKind, error, bool) {
	select {
	case r := <-p.ch:
		p.cancel()
		v, k, err := r.unpack()
		return v, k, err, true
	default:
	}
	select {
	case <-p.ctx.Done():
		v, k, err := p.expired()
		return v, k, err, true
	default:
		var zero R
		return zero, "", nil, false
	}
}

func (r hookResult[R]) unpack() (R, DiagnosticKind, error) {
	if r.panic != nil {
		var zero R
		return zero, KindPanic, fmt.Errorf("panic: %v", r.panic)
	}
	if r.err != nil {
		if errors.Is(r.err, context.DeadlineExceeded) {
			return r.v, KindTimeout, r.err
		}
		return r.v, KindError, r.err
	}
	return r.v, "", nil
}

// callHook runs fn under timeout and returns its answer or why there is
// none.
func callHook[R any](ctx context.Context, timeout time.Duration, fn func(context.Context) (R, error)) (R, DiagnosticKind, error) {
	return startHook(ctx, timeout, fn).wait()
}

// diagnose records a failed hook on the session and logs it.
func (s *Session) diagnose(layer string, hook Hook, kind DiagnosticKind, err error) {
	d := Diagnostic{Layer: layer, Hook: hook, Kind: kind, Message: err.Error(), Turn: s.turn}
	s.mu.Lock()
	s.diagnostics = append(s.diagnostics, d)
	s.mu.Unlock()
	s.rt.logger.LogAttrs(context.Background(), slog.LevelWarn, "strata: hook failed",
		slog.String("layer", layer), slog.String("hook", string(hook)), slog.String("kind", string(kind)),
		slog.String("run", s.info.RunID), slog.String("error", err.Error()))
}
