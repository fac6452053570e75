package temporal_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
)

// The model records facts with temporal/record; "when" is resolved
// against the time of the call. A newer fact closes the older one, which
// as_of still finds.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "temporal-example")
	defer os.RemoveAll(dir)
	col, _ := chromem.OpenCollection(ctx, dir, "memories", &vectorstore.Options{Dimension: 256})
	defer col.Close()
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC) // a Monday
	store := &memory.Store{Records: col, Embedder: hashing.New(256), Now: func() time.Time { return now }}

	ledger, err := temporal.New(store, temporal.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{ledger}})
	sess, _ := rt.Start(ctx, core.RunOptions{ThreadID: "thread-1"})

	out, _ := sess.ExecuteTool(ctx, core.FunctionCall("call-1", "temporal/record",
		`{"facts": [{"subject": "user", "predicate": "lives in", "value": "Paris", "when": "2026-10-01"},
		            {"subject": "user", "predicate": "lives in", "value": "Berlin", "when": "last Friday"}]}`))

	fmt.Println(out.Output)

	view, _ := sess.Assemble(ctx)
	for _, it := range view.Band(core.BandAnchor) {
		fmt.Println(it.Text())
	}
	out, _ = sess.ExecuteTool(ctx, core.FunctionCall("call-2", "temporal/as_of", `{"date": "2026-11-01"}`))
	fmt.Println(out.Output)
	// Output:
	// Recorded 2 fact(s): 2 new, 0 unchanged; 1 older fact(s) superseded.
	// - user · lives in: Paris, valid from 2026-10-01
	// - user · lives in: Berlin, valid from 2026-11-27
	// - superseded: user · lives in: Paris, valid 2026-10-01 to 2026-11-27
	// <temporal_facts today="2026-11-30" weekday="Monday">
	// Facts as they stand today, newest first. [date it became true · how long ago, in calendar days from today]. Earlier values are kept: call temporal/as_of for a past date.
	// - [2026-11-27 · 3 days ago] user · lives in: Berlin (before: Paris)
	// </temporal_facts>
	// As of 2026-11-01T23:59:59Z (2026-11-01, 4 weeks ago):
	// - user · lives in: Paris (from 2026-10-01 until 2026-11-27)
}
