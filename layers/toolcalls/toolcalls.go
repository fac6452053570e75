// Package toolcalls generates the context layers of tool-owned state (the
// spec's toolCalls()): one layer per unique state id declared by the
// tools, so tools that name the same id share one state, which the next
// recall renders.
//
//	tools := []core.Tool{writeTodos, updateTodo}
//	rt, err := core.NewRuntime(core.Config{
//		Tools:  tools,
//		Layers: toolcalls.Layers(tools...),
//	})
//
// State is execution-scoped by default: it lives for the run. Declare
// another scope on the core.ToolState to keep it across runs.
package toolcalls

import "github.com/stratamem/strata/core"

// Layers returns one layer per unique state id among the tools'
// declarations, in the order the ids first appear. Tools without a
// declaration add nothing. When two declarations share an id, the first
// one defines the layer.
func Layers(tools ...core.Tool) []core.AnyLayer {
	seen := map[string]bool{}
	var out []core.AnyLayer
	for _, t := range tools {
		if t == nil {
			continue
		}
		decl := t.State()
		if decl == nil || seen[decl.StateID()] {
			continue
		}
		seen[decl.StateID()] = true
		out = append(out, decl.Layer())
	}
	return out
}
