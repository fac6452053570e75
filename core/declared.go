package core

import (
	"context"
	"fmt"
)

// Declared calls (Layer.CallNames) are plain function-call names a layer
// applies in its Store hook, with no tool offered. The model's calls are
// recorded before the layers are asked about them, so when some layer can
// deny a call, Record withholds a layer's declared calls from its Store
// hook and ExecuteTool applies each one, once allowed, by that hook. The
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

// withoutDeclaredCalls returns items without the function calls layer k
// declares (Layer.CallNames); items itself when it holds none.
func (s *Session) withoutDeclaredCalls(items []Item, k int) []Item {
	if len(s.insts[k].spec().callNames) == 0 {
		return items
	}
	declared := func(it *Item) bool {
		r, ok := s.rt.routes[it.Name]
		return it.Type == TypeFunctionCall && ok && r.layer == k && r.fn == "" && r.tool == nil
	}
	var out []Item
	for i := range items {
		if declared(&items[i]) {
			if out == nil {
				out = append(make([]Item, 0, len(items)), items[:i]...)
			}
			continue
		}
		if out != nil {
			out = append(out, items[i])
		}
	}
	if out == nil {
		return items
	}
	return out
}

// applyDeclared runs a declared call of layer k that the host routed. When
// a layer can deny calls, Record withheld it from the Store hook, so it is
// applied now, once per call id; otherwise Record applied it already.
func (s *Session) applyDeclared(ctx context.Context, k int, call Item) (Item, error) {
	s.verdict[call.CallID] = callRan
	id := s.insts[k].spec().ID
	if s.canDeny() && !s.applied[call.CallID] {
		if err := s.insts[k].storeCall(ctx, call, s.items); err != nil {
			return layerCallFailed(call.CallID, "the call", err)
		}
		s.applied[call.CallID] = true
	}
	return FunctionCallOutput(call.CallID, fmt.Sprintf("ok: applied by %s", id)), nil
}
