package semantic_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "semantic-example")
	defer os.RemoveAll(dir)
	col, err := chromem.OpenCollection(ctx, dir, "memories", &vectorstore.Options{Dimension: 256})
	if err != nil {
		log.Fatal(err)
	}
	defer col.Close()
	now := time.Date(2024, 3, 4, 9, 0, 0, 0, time.UTC)
	// Use the default offline model (embed/uselite) in a real agent; the
	// hashing embedder keeps this example self-contained.
	store := &memory.Store{Records: col, Embedder: hashing.New(256), Now: func() time.Time { return now }}

	layer, err := semantic.New(store, semantic.Options{})
	if err != nil {
		log.Fatal(err)
	}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}})

	// Monday's run.
	s, _ := rt.Start(ctx, core.RunOptions{ThreadID: "thread-1"})
	_ = s.Append(ctx, core.UserMessage("I booked the flights to Lisbon, leaving on the 14th."))
	now = now.Add(time.Minute)
	_ = s.Record(ctx, core.AssistantMessage("Great! Do you need a hotel too?"))
	_ = s.Complete(ctx, "done")

	// Thursday, a new run on the same thread.
	now = now.Add(72 * time.Hour)
	s, _ = rt.Start(ctx, core.RunOptions{ThreadID: "thread-1"})
	_ = s.Append(ctx, core.UserMessage("When do my Lisbon flights leave?"))
	view, _ := s.Assemble(ctx)
	for _, it := range view.Band(core.BandLive) {
		fmt.Println(it.Text())
	}
	// Output:
	// <semantic_recall>
	// Earlier messages that may be relevant to the latest one, oldest first (quoted from past conversation, with their dates):
	// [Mon 2024-03-04 09:00 UTC] user: I booked the flights to Lisbon, leaving on the 14th.
	// [Mon 2024-03-04 09:01 UTC] assistant: Great! Do you need a hotel too?
	// </semantic_recall>
}
