package toolcalls_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/toolcalls"
)

// The spec's todo example.

type TodoItem struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Status      string `json:"status"`
}

type TodoState struct {
	Items []TodoItem `json:"items"`
}

const todoID = "todos"

var todoContext = &toolcalls.ToolState[TodoState]{
	ID:   todoID,
	Init: func() TodoState { return TodoState{} },
	Recall: func(s TodoState) (string, bool) {
		if len(s.Items) == 0 {
			return "", false
		}
		lines := make([]string, len(s.Items))
		for i, it := range s.Items {
			lines[i] = fmt.Sprintf("[%s] %s: %s", it.Status, it.ID, it.Description)
		}
		return "<todos>\n" + strings.Join(lines, "\n") + "\n</todos>", true
	},
}

type writeArgs struct {
	Items []string `json:"items" jsonschema:"descriptions of the new todos"`
}

type updateArgs struct {
	ID     string `json:"id"`
	Status string `json:"status" jsonschema:"pending, in_progress or completed"`
}

func todoTools(t *testing.T) []core.Tool {
	write, err := toolcalls.NewTool(toolcalls.ToolDef[writeArgs, []TodoItem]{
		Name: "write_todos", Description: "Create new todo items.", State: todoContext,
		Execute: func(_ context.Context, in writeArgs, tc core.ToolContext) ([]TodoItem, error) {
			st, _ := toolcalls.GetState[TodoState](tc, todoID)
			var added []TodoItem
			for _, d := range in.Items {
				added = append(added, TodoItem{ID: fmt.Sprintf("t%d", len(st.Items)+len(added)+1), Description: d, Status: "pending"})
			}
			next := TodoState{Items: append(append([]TodoItem(nil), st.Items...), added...)}
			return added, tc.Set(todoID, next)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	update, err := toolcalls.NewTool(toolcalls.ToolDef[updateArgs, TodoItem]{
		Name: "update_todo", Description: "Update the status of a todo item.", State: todoContext,
		Execute: func(_ context.Context, in updateArgs, tc core.ToolContext) (TodoItem, error) {
			st, _ := toolcalls.GetState[TodoState](tc, todoID)
			next := TodoState{Items: append([]TodoItem(nil), st.Items...)}
			for i := range next.Items {
				if next.Items[i].ID == in.ID {
					next.Items[i].Status = in.Status
					return next.Items[i], tc.Set(todoID, next)
				}
			}
			return TodoItem{}, fmt.Errorf("todo not found: %s", in.ID)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return []core.Tool{write, update}
}

func TestTodoExample(t *testing.T) {
	ctx := context.Background()
	tools := todoTools(t)
	layers := toolcalls.Layers(tools...)
	if len(layers) != 1 || layers[0].Spec().ID != todoID || layers[0].Spec().Scope != core.ScopeExecution {
		t.Fatalf("layers = %+v", layers)
	}
	rt, err := core.NewRuntime(core.Config{Tools: tools, Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	v, _ := s.Assemble(ctx)
	if names := []string{v.Tools[0].Name, v.Tools[1].Name}; names[0] != "update_todo" || names[1] != "write_todos" {
		t.Fatalf("tools not sorted: %v", names)
	}
	if v.Len() != 0 {
		t.Fatal("empty todo list rendered")
	}
	out, err := s.ExecuteTool(ctx, core.FunctionCall("c1", "write_todos", `{"items":["write tests","ship"]}`))
	if err != nil || !strings.Contains(out.Output, `"t1"`) {
		t.Fatalf("write: %+v %v", out, err)
	}
	if _, err := s.ExecuteTool(ctx, core.FunctionCall("c2", "update_todo", `{"id":"t1","status":"completed"}`)); err != nil {
		t.Fatal(err)
	}
	v, _ = s.Assemble(ctx)
	text := ""
	for _, it := range v.Items() {
		text += it.Text()
	}
	if want := "<todos>\n[completed] t1: write tests\n[pending] t2: ship\n</todos>"; !strings.Contains(text, want) {
		t.Fatalf("view = %q, want %q", text, want)
	}
	// A failing tool changes nothing and tells the model.
	out, _ = s.ExecuteTool(ctx, core.FunctionCall("c3", "update_todo", `{"id":"t9","status":"completed"}`))
	if !strings.Contains(out.Output, "todo not found") {
		t.Fatalf("missing todo: %q", out.Output)
	}
	// Bad arguments do not run the tool.
	for _, bad := range []string{`{"items":"not a list"}`, `{"items":[1]}`, `not json`, `{"items":["a"],"extra":1}`} {
		out, _ := s.ExecuteTool(ctx, core.FunctionCall("c4", "write_todos", bad))
		if !strings.HasPrefix(out.Output, "error: invalid arguments") {
			t.Fatalf("%s: %q", bad, out.Output)
		}
	}
	st, _ := core.State[TodoState](s, todoID)
	if len(st.Items) != 2 {
		t.Fatalf("state = %+v", st)
	}
}

func TestPanickingAndHungToolsAreContained(t *testing.T) {
	ctx := context.Background()
	state := &toolcalls.ToolState[int]{ID: "counter"}
	boom := toolcalls.MustTool(toolcalls.ToolDef[struct{}, string]{Name: "boom", State: state,
		Execute: func(_ context.Context, _ struct{}, tc core.ToolContext) (string, error) {
			_ = tc.Set("counter", 99)
			panic("tool bug")
		}})
	hang := toolcalls.MustTool(toolcalls.ToolDef[struct{}, string]{Name: "hang", State: state,
		Execute: func(ctx context.Context, _ struct{}, tc core.ToolContext) (string, error) {
			_ = tc.Set("counter", 7)
			<-ctx.Done()
			return "", ctx.Err()
		}})
	tools := []core.Tool{boom, hang}
	rt, err := core.NewRuntime(core.Config{Tools: tools, Layers: toolcalls.Layers(tools...), ToolTimeout: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	for _, name := range []string{"boom", "hang"} {
		out, err := s.ExecuteTool(ctx, core.FunctionCall("c", name, `{}`))
		if err != nil || !strings.HasPrefix(out.Output, "error: ") {
			t.Fatalf("%s: %+v %v", name, out, err)
		}
	}
	if v, _ := core.State[int](s, "counter"); v != 0 {
		t.Fatalf("failed tools changed state to %d", v)
	}
	if _, err := core.NewRuntime(core.Config{Tools: tools}); err == nil {
		t.Fatal("tools with state but no state layer accepted")
	}
}

// Two declarations of one id with different state types used to be
// resolved silently (the first won, and the second tool's Set failed at
// run time): the runtime now refuses the configuration.
func TestOneIDTwoStateTypesIsAConfigError(t *testing.T) {
	noop := func(_ context.Context, _ struct{}, _ core.ToolContext) (string, error) { return "", nil }
	a := toolcalls.MustTool(toolcalls.ToolDef[struct{}, string]{Name: "a", State: &toolcalls.ToolState[int]{ID: "shared"}, Execute: noop})
	b := toolcalls.MustTool(toolcalls.ToolDef[struct{}, string]{Name: "b", State: &toolcalls.ToolState[string]{ID: "shared"}, Execute: noop})
	c := toolcalls.MustTool(toolcalls.ToolDef[struct{}, string]{Name: "c", State: &toolcalls.ToolState[int]{ID: "shared"}, Execute: noop})
	tools := []core.Tool{a, b, c}
	layers := toolcalls.Layers(tools...)
	if len(layers) != 2 {
		t.Fatalf("%d layers, want one per state type", len(layers))
	}
	_, err := core.NewRuntime(core.Config{Tools: tools, Layers: layers})
	var ce *core.ConfigError
	if !errors.As(err, &ce) || ce.Code != core.CodeDuplicateLayerID || ce.Layer != "shared" {
		t.Fatalf("NewRuntime: %v, want DUPLICATE_LAYER_ID for \"shared\"", err)
	}
	// One type: one shared layer, accepted.
	if _, err := core.NewRuntime(core.Config{Tools: []core.Tool{a, c}, Layers: toolcalls.Layers(a, c)}); err != nil {
		t.Fatal(err)
	}
}
