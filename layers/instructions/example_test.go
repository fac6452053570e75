package instructions_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/instructions"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "instructions")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "style.md"), []byte("Answer in British English.\n"), 0o644)

	layer, err := instructions.New(instructions.Options{
		Text:  "You review Go code.",
		Files: []string{"style.md"},
		Root:  dir,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}})
	sess, err := rt.Start(ctx, core.RunOptions{}) // reads style.md, once
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = sess.Append(ctx, core.UserMessage("Review my diff."))
	view, _ := sess.Assemble(ctx)
	for _, it := range view.Band(core.BandAnchor) {
		fmt.Println(it.Text())
	}
	// Output:
	// <instructions>
	// You review Go code.
	// </instructions>
	// <instructions source="style.md">
	// Answer in British English.
	// </instructions>
}

// Discovery activates the instructions file of each directory a read
// reaches into, after that turn's tool outputs; the workspace root's
// file is loaded before the loop by New.
func ExampleNewDiscovery() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(dir)
	_ = os.MkdirAll(filepath.Join(dir, "svc", "api"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Run make check before you finish.\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "svc", "api", "CLAUDE.md"), []byte("Handlers return typed errors.\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "svc", "api", "handler.go"), []byte("package api\n"), 0o644)

	static, _ := instructions.New(instructions.Options{Files: []string{"AGENTS.md"}, Root: dir})
	discovery, err := instructions.NewDiscovery(instructions.DiscoveryOptions{
		Workspace: dir,
		ReadTools: []instructions.ReadTool{{Name: "read_file", Arg: "path"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{static, discovery}})
	sess, _ := rt.Start(ctx, core.RunOptions{})
	_ = sess.Append(ctx, core.UserMessage("Fix the handler."))
	call := core.FunctionCall("c1", "read_file", `{"path":"svc/api/handler.go"}`)
	_ = sess.Record(ctx, call)
	if d, _ := sess.BeforeToolCall(ctx, call); d.Allowed {
		_ = sess.Append(ctx, core.FunctionCallOutput("c1", "package api"))
	}
	view, _ := sess.Assemble(ctx)
	for _, it := range view.Band(core.BandHistory) {
		switch it.Type {
		case core.TypeFunctionCall:
			fmt.Println("call", it.Name)
		case core.TypeFunctionCallOutput:
			fmt.Println("output", it.CallID)
		default:
			fmt.Println(it.Text())
		}
	}
	// Output:
	// Fix the handler.
	// call read_file
	// output c1
	// <instructions key="svc/api/CLAUDE.md">
	// Handlers return typed errors.
	// </instructions>
}
