package episodic_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
)

// A completed run becomes an episode; the next run of the same resource
// starts with it in context.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "episodic-example")
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
	now := time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)
	store := &memory.Store{Records: col, Embedder: hashing.New(256), Now: func() time.Time { return now }}

	// The one line: recency mode and the offline extractive summarizer.
	episodes, err := episodic.New(store, episodic.Options{})
	if err != nil {
		log.Fatal(err)
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{episodes}})
	if err != nil {
		log.Fatal(err)
	}

	// Monday's run.
	run := core.RunOptions{ThreadID: "monday", ResourceID: "user-42"}
	sess, _ := rt.Start(ctx, run)
	_ = sess.Append(ctx, core.UserMessage("Why is the nightly backup failing?"))
	_ = sess.Record(ctx, core.FunctionCall("c1", "read_logs", `{"job": "backup"}`))
	_ = sess.Append(ctx, core.FunctionCallOutput("c1", "disk full on /var/backups"))
	_ = sess.Record(ctx, core.AssistantMessage("The backup disk is full. I removed archives older than 90 days."))
	_ = sess.Complete(ctx, "resolved")

	// Tuesday: another thread of the same user.
	sess, _ = rt.Start(ctx, core.RunOptions{ThreadID: "tuesday", ResourceID: "user-42"})
	_ = sess.Append(ctx, core.UserMessage("Is the backup OK now?"))
	view, _ := sess.Assemble(ctx)
	fmt.Println(view.Band(core.BandAnchor)[0].Text())
	// Output:
	// <episodes>
	// [2025-03-01T09:30:00Z] (resolved) Request: Why is the nightly backup failing?
	//   Tools used: read_logs
	//   Result: The backup disk is full. I removed archives older than 90 days.
	// </episodes>
}
