package history_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/history"
)

func TestFrontHoldsStillBetweenCuts(t *testing.T) {
	var log []core.Item
	opts := history.Options{MaxItems: 10, LowWatermark: 0.5}
	var fronts []int
	for i := 0; i < 40; i++ {
		log = append(log, core.UserMessage(fmt.Sprint("m", i)))
		fronts = append(fronts, history.Front(log, nil, opts))
	}
	moves := 0
	for i := 1; i < len(fronts); i++ {
		if fronts[i] != fronts[i-1] {
			moves++
			if shown := i + 1 - fronts[i]; shown > 10 || shown < 5 {
				t.Fatalf("after a cut at %d items %d are shown, want 5..10", i+1, shown)
			}
		}
		if shown := i + 1 - fronts[i]; shown > 10 {
			t.Fatalf("%d items shown over the cap", shown)
		}
	}
	// 40 items, a cut every 5 once past 10: 6 moves, not 30 as a
	// sliding window would make.
	if moves != 6 {
		t.Fatalf("front moved %d times: %v", moves, fronts)
	}
}

func TestFrontNeverOrphansAnOutput(t *testing.T) {
	log := []core.Item{
		core.UserMessage("a"), core.FunctionCall("c1", "f", "{}"), core.FunctionCallOutput("c1", "x"),
		core.FunctionCallOutput("c1", "y"), core.UserMessage("b"), core.AssistantMessage("c"),
	}
	// A token cap whose cut lands on the output.
	tokens := func(i int) int { return 10 }
	front := history.Front(log, tokens, history.Options{MaxTokens: 40, LowWatermark: 0.5})
	if log[front].Type == core.TypeFunctionCallOutput {
		t.Fatalf("front %d is an orphan output", front)
	}
	if front != 4 {
		t.Fatalf("front = %d, want 4", front)
	}
}

func TestLayerInASession(t *testing.T) {
	ctx := context.Background()
	layer, err := history.Layer(history.Options{MaxItems: 8})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	prevFirst := ""
	moves := 0
	for i := 0; i < 30; i++ {
		_ = s.Append(ctx, core.UserMessage(fmt.Sprint("q", i)))
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		h := v.Band(core.BandHistory)
		if len(h) > 8 {
			t.Fatalf("turn %d shows %d items", i, len(h))
		}
		if first := h[0].Text(); first != prevFirst {
			moves++
			prevFirst = first
		}
		_ = s.Record(ctx, core.AssistantMessage(fmt.Sprint("a", i)))
	}
	if moves > 16 {
		t.Fatalf("history front moved %d times in 30 turns", moves)
	}
}

func TestOptionsErrors(t *testing.T) {
	for _, o := range []history.Options{{}, {MaxItems: -1}, {MaxItems: 5, LowWatermark: 1.5}} {
		var ce *core.ConfigError
		if _, err := history.Layer(o); !errors.As(err, &ce) {
			t.Errorf("%+v: err = %v", o, err)
		}
	}
}
