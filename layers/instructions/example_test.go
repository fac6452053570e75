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
