package core_test

import (
	"context"
	"fmt"

	"github.com/stratamem/strata/core"
)

type Notes struct{ Lines []string }

// The README's quick start, kept compiling and running.
func ExampleRuntime_quickStart() {
	ctx := context.Background()
	notes := core.Layer[Notes]{
		ID: "notes", Slot: core.SlotScratchpad, Scope: core.ScopeThread, Budget: core.Range(50, 500),
		Hooks: core.Hooks[Notes]{Recall: func(_ context.Context, p core.RecallParams[Notes]) (core.Recall[Notes], error) {
			return core.Text[Notes](fmt.Sprint("<notes>", p.State.Lines, "</notes>"))
		}},
	}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{notes},
		System: []core.Item{core.SystemMessage("You are helpful.")}})
	sess, _ := rt.Start(ctx, core.RunOptions{ThreadID: "thread-1"})
	_ = sess.Append(ctx, core.UserMessage("Hello!"))
	view, _ := sess.Assemble(ctx)                      // send view.Items() and view.Tools to your model
	_ = sess.Record(ctx, core.AssistantMessage("Hi!")) // what the model answered
	fmt.Println(view.Len(), view.Usage.Total)
	_ = sess.Complete(ctx, "ok")
	// Output: 3 20
}

// A layer can return text shorthand; the runtime wraps it in a developer
// message and counts its tokens.
func ExampleText() {
	ctx := context.Background()
	clock := core.Layer[struct{}]{ID: "clock", Scope: core.ScopeExecution, Placement: core.PlacementLive,
		Hooks: core.Hooks[struct{}]{Recall: func(context.Context, core.RecallParams[struct{}]) (core.Recall[struct{}], error) {
			return core.Text[struct{}]("It is turn 1.")
		}}}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{clock}})
	sess, _ := rt.Start(ctx, core.RunOptions{})
	view, _ := sess.Assemble(ctx)
	for _, it := range view.Band(core.BandLive) {
		fmt.Println(it.Role, it.Text())
	}
	// Output: developer It is turn 1.
}

// Compaction folds old history into a summary, logged as an event, when
// the view nears the model's window; the log keeps every item.
func ExampleCompactionConfig() {
	ctx := context.Background()
	rt, _ := core.NewRuntime(core.Config{System: []core.Item{core.SystemMessage("Be brief.")},
		Compaction: &core.CompactionConfig{Window: 300, Keep: 2}})
	sess, _ := rt.Start(ctx, core.RunOptions{})
	var view *core.View
	for n := range 12 {
		_ = sess.Append(ctx, core.UserMessage(fmt.Sprintf("Question %d about the parser. Details follow.", n)))
		view, _ = sess.Assemble(ctx)
		_ = sess.Record(ctx, core.AssistantMessage(fmt.Sprintf("Answer %d. More details.", n)))
	}
	fmt.Println(view.Usage.Compaction.Count, view.Band(core.BandHistory)[0].Role)
	// Output: 1 developer
}
