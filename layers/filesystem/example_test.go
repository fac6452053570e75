package filesystem_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/filesystem"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "project")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example\n"), 0o644)

	layer, err := filesystem.New(filesystem.Options{
		Root:      dir,
		ReadTools: []filesystem.ReadTool{{Name: "read_file", Arg: "path"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}})
	sess, _ := rt.Start(ctx, core.RunOptions{ThreadID: "thread-1"})

	// "#main.go" in a user message tracks the file; so does a read_file
	// call of the model, once the layers allowed it and its output is
	// appended. "#../etc/passwd" is outside the root: refused.
	_ = sess.Append(ctx, core.UserMessage("Why does #main.go do nothing? See also #../etc/passwd."))
	call := core.FunctionCall("call-1", "read_file", `{"path":"go.mod"}`)
	_ = sess.Record(ctx, call)
	if d, err := sess.BeforeToolCall(ctx, call); err == nil && d.Allowed {
		_ = sess.Append(ctx, core.FunctionCallOutput(call.CallID, "module example")) // the host read it
	}

	view, _ := sess.Assemble(ctx)
	for _, it := range view.Band(core.BandAnchor) {
		fmt.Println(it.Text())
	}

	// An edit is published as a context update carrying only that file.
	_ = os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() { println(\"hi\") }\n"), 0o644)
	_ = sess.Record(ctx, core.AssistantMessage("It has an empty body."))
	view, _ = sess.Assemble(ctx)
	update := view.Updates()[0].Text()
	fmt.Println(strings.Contains(update, "## main.go"), strings.Contains(update, "## go.mod"))
	// Output:
	// ## go.mod
	// ```
	// module example
	// ```
	// ## main.go
	// ```
	// package main
	//
	// func main() {}
	// ```
	// true false
}
