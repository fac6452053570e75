package core

import (
	"context"
	"fmt"
)

// Plain functions (Function.Plain) are call names a layer applies with no
// tool offered. The model's calls are recorded before the layers are asked
// about them, so when some layer can deny a call, Record leaves a plain
// call alone and ExecuteTool applies it, once allowed, by its Call. The
// runtime knows nothing of any particular layer's calls: the names are
// routes like any other (Runtime.routes).

// canDeny reports whether a layer of the session can deny a tool call.
func (s *Session) canDeny() bool {
	for k, inst := range s.insts {
		if !s.states[k].disabled && inst.hasBeforeToolCall() {
			return true
		}
	}
	return false
}

// recordPlainCalls applies the plain calls of layer k among items (every
// item recorded since the previous Record) when no layer can deny calls: a
// call recorded with its function_call_output (the host answered it) is
// not applied, nor a call id applied before. It returns the writes left
// unconfirmed and the persistence failures.
func (s *Session) recordPlainCalls(ctx context.Context, k int, items []Item) []error {
	var answered map[string]bool
	var errs []error
	for _, it := range items {
		if it.Type != TypeFunctionCall || s.applied[it.CallID] {
			continue
		}
		r, ok := s.rt.routes[it.Name]
		if !ok || !r.plain || r.layer != k {
			continue
		}
		if answered == nil {
			answered = map[string]bool{}
			for _, o := range items {
				if o.Type == TypeFunctionCallOutput {
					answered[o.CallID] = true
				}
			}
		}
		if answered[it.CallID] {
			continue
		}
		applied, err := s.insts[k].recordCall(ctx, r.fn, it)
		if applied {
			s.applied[it.CallID] = true
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// applyPlain answers a plain call of layer k that the host routed. When a
// layer can deny calls, Record left it alone, so it is applied now, once
// per call id; otherwise Record applied it already.
func (s *Session) applyPlain(ctx context.Context, r route, call Item) (Item, error) {
	s.verdict[call.CallID] = callRan
	if s.canDeny() && !s.applied[call.CallID] {
		if _, err := s.insts[r.layer].callFunction(ctx, r.fn, true, call); err != nil {
			return layerCallFailed(call.CallID, "the call", err)
		}
		s.applied[call.CallID] = true
	}
	return FunctionCallOutput(call.CallID, fmt.Sprintf("ok: applied by %s", s.insts[r.layer].spec().ID)), nil
}
