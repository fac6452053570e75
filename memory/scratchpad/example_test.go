package scratchpad_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
)

// The model keeps working notes with scratchpad/update; they are shown to
// it on the next turn and persist as records for the thread.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "scratchpad-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// The embedded store. The hashing embedder keeps the example offline
	// and deterministic; use embed/uselite (the default model) for real.
	col, err := chromem.OpenCollection(ctx, dir, "memories", &vectorstore.Options{Dimension: 256})
	if err != nil {
		log.Fatal(err)
	}
	defer col.Close()
	store := &memory.Store{Records: col, Embedder: hashing.New(256)}

	pad, err := scratchpad.New(store, scratchpad.Options{}) // the one line
	if err != nil {
		log.Fatal(err)
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{pad}})
	if err != nil {
		log.Fatal(err)
	}
	sess, err := rt.Start(ctx, core.RunOptions{ThreadID: "thread-1"})
	if err != nil {
		log.Fatal(err)
	}
	_ = sess.Append(ctx, core.UserMessage("Migrate the database tonight."))

	// The model calls the provided function. The host records the call
	// (which writes nothing yet), asks the steering layers, routes the
	// call if they allow it (the write happens here) and records the
	// output.
	call := core.FunctionCall("call-1", "scratchpad/update", `{"set": {"plan": "dump, then restore", "window": "22:00-23:00"}}`)
	_ = sess.Record(ctx, call)
	decision, err := sess.BeforeToolCall(ctx, call)
	if err != nil {
		log.Fatal(err)
	}
	out := decision.Output // the denial, if a layer denied the call
	if decision.Allowed {
		out, _ = sess.ExecuteTool(ctx, decision.Call)
	}
	_ = sess.Append(ctx, out)
	fmt.Println(out.Output)

	view, _ := sess.Assemble(ctx)
	fmt.Println(view.Band(core.BandAnchor)[0].Text())
	// Output:
	// ok: set "plan", "window"; the scratchpad holds 2 keys.
	// <scratchpad>
	// "plan": "dump, then restore"
	// "window": "22:00-23:00"
	// </scratchpad>
}
