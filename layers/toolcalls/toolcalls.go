// Package toolcalls builds host tools from typed Go functions (NewTool,
// MustTool) with the context state they share (ToolState), and generates
// the context layers of that state (Layers): one layer per unique state
// id declared by the tools, so tools that name the same id share one
// state, which the next recall renders.
//
//	tools := []core.Tool{writeTodos, updateTodo}
//	rt, err := core.NewRuntime(core.Config{
//		Tools:  tools,
//		Layers: toolcalls.Layers(tools...),
//	})
//
// State is execution-scoped by default: it lives for the run. Declare
// another scope on the ToolState to keep it across runs. A thread or
// resource scope shares the state with the other runs of the thread or
// resource, in this process or another one on the same store: each write
// is a compare-and-swap, and a tool whose write lost is run again on the
// state the other run stored (three times at most),
// so a tool's Execute must be safe to re-run. When it keeps losing, the
// output tells the model the change was not applied and
// core.Session.ExecuteTool returns a *core.WriteError: the model never
// reads success for a change that was not kept.
package toolcalls

import (
	"reflect"

	"github.com/stratamem/strata/core"
)

// Layers returns one layer per unique state id among the tools'
// declarations (a tool built by NewTool, or any core.Tool with a
// State() Decl method), in the order the ids first appear. Tools without
// a declaration add nothing. When two declarations share an id and a state
// type, the first one defines the layer. When their state types differ
// they cannot share one state: both layers are returned, so
// core.NewRuntime refuses the configuration with a *core.ConfigError
// (CodeDuplicateLayerID naming the id) instead of one tool's writes
// failing at run time.
func Layers(tools ...core.Tool) []core.AnyLayer {
	seen := map[string][]reflect.Type{}
	var out []core.AnyLayer
	for _, t := range tools {
		if t == nil {
			continue
		}
		st, ok := t.(interface{ State() Decl })
		if !ok {
			continue
		}
		decl := st.State()
		if decl == nil {
			continue
		}
		id, typ := decl.StateID(), reflect.TypeOf(decl)
		types, known := seen[id]
		if known && contains(types, typ) {
			continue
		}
		seen[id] = append(types, typ)
		out = append(out, decl.Layer())
	}
	return out
}

func contains(types []reflect.Type, t reflect.Type) bool {
	for _, x := range types {
		if x == t {
			return true
		}
	}
	return false
}
