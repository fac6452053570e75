package observations_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
)

// The layer extracts facts from what the user says (offline, pattern-based
// by default), takes facts the model records through
// "observations/record", and renders them every turn.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "observations-example")
	defer os.RemoveAll(dir)
	col, _ := chromem.OpenCollection(ctx, dir, "memories", &vectorstore.Options{Dimension: 256})
	defer col.Close()
	store := &memory.Store{Records: col, Embedder: hashing.New(256),
		Now: func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }}

	obs, err := observations.New(store, observations.Options{Common: memory.Common{Placement: core.PlacementLive}})
	if err != nil {
		fmt.Println(err)
		return
	}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{obs}})
	sess, _ := rt.Start(ctx, core.RunOptions{ThreadID: "thread-1"})

	_ = sess.Append(ctx, core.UserMessage("I'm allergic to peanuts. What can I bake?"))
	call := core.FunctionCall("call-1", "observations/record",
		`{"observations": [{"text": "User wants to bake for a birthday on Saturday", "importance": 3}]}`)
	_ = sess.Record(ctx, call) // the model's answer: logged, not applied yet
	// The host asks the steering layers, then routes the call: the write
	// happens here, and the output says what it did.
	if d, err := sess.BeforeToolCall(ctx, call); err == nil && d.Allowed {
		out, _ := sess.ExecuteTool(ctx, d.Call)
		fmt.Println(out.Output)
		_ = sess.Append(ctx, out)
	}

	view, _ := sess.Assemble(ctx)
	for _, it := range view.Band(core.BandLive) {
		fmt.Println(it.Text())
	}
	// Output:
	// Recorded 1 observation(s): 1 new, 0 merged into existing ones, 0 already known.
	// <observations>
	// Observed in the conversations so far, most important first. [n] is importance (5 = must not forget); the date is when it was last observed.
	// - [5] User is allergic to peanuts (2026-11-30)
	// - [3] User wants to bake for a birthday on Saturday (2026-11-30)
	// </observations>
}
