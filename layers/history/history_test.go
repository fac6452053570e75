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

// A stepped cut used to jump past the newest item: the cap is 8000 and the
// newest message alone (5000) fits, yet the grid step (4000) cut all three
// items and the view had no history at all.
func TestFrontKeepsTheNewestItem(t *testing.T) {
	log := []core.Item{core.UserMessage("a"), core.AssistantMessage("b"), core.UserMessage("big")}
	toks := []int{2000, 1900, 5000}
	front := history.Front(log, func(i int) int { return toks[i] }, history.Options{MaxTokens: 8000, LowWatermark: 0.5})
	// The grid point lies past the newest item, so the unrounded cut
	// stands: 1900+5000 fit under 8000.
	if front != 1 {
		t.Fatalf("front = %d, want 1 (the newest message fits under the cap)", front)
	}
	// The newest item is never cut, even when it alone exceeds the cap:
	// a view without the message being answered is useless.
	toks = []int{2000, 1900, 9000}
	if front := history.Front(log, func(i int) int { return toks[i] }, history.Options{MaxTokens: 8000, LowWatermark: 0.5}); front != 2 {
		t.Fatalf("oversized newest: front = %d, want 2", front)
	}
	// When the newest item is an output, the call it answers stays too.
	log = []core.Item{core.UserMessage("a"), core.AssistantMessage("b"), core.FunctionCall("c", "f", "{}"), core.FunctionCallOutput("c", "big")}
	toks = []int{2000, 1900, 100, 5000}
	if front := history.Front(log, func(i int) int { return toks[i] }, history.Options{MaxTokens: 8000, LowWatermark: 0.5}); front != 1 {
		t.Fatalf("newest output: front = %d, want 1 (the unrounded cut keeps it and its call)", front)
	}
}

// shownOrphans lists the outputs of history[front:] whose call is not in
// history[front:].
func shownOrphans(log []core.Item, front int) []string {
	calls := map[string]bool{}
	var out []string
	for _, it := range log[front:] {
		switch it.Type {
		case core.TypeFunctionCall:
			calls[it.CallID] = true
		case core.TypeFunctionCallOutput:
			if !calls[it.CallID] {
				out = append(out, it.CallID)
			}
		}
	}
	return out
}

// Parallel calls [call A, call B, out A, out B]: the front used to land on
// call B and send out A without call A (a provider 400).
func TestFrontNeverSplitsParallelCalls(t *testing.T) {
	log := []core.Item{
		core.UserMessage("u1"),
		core.FunctionCall("A", "f", `{}`), core.FunctionCall("B", "f", `{}`),
		core.FunctionCallOutput("A", "a"), core.FunctionCallOutput("B", "b"),
		core.AssistantMessage("done"), core.UserMessage("u2"),
	}
	front := history.Front(log, nil, history.Options{MaxItems: 5, LowWatermark: 0.6})
	if o := shownOrphans(log, front); len(o) > 0 {
		t.Fatalf("front=%d shows outputs %v without their calls", front, o)
	}
	if front != 5 {
		t.Fatalf("front = %d, want 5 (past the whole call block)", front)
	}
	// When the newest items are the outputs, the front moves back to the
	// first call of the block instead of dropping them.
	log = log[:5]
	for cap := 1; cap <= 5; cap++ {
		front := history.Front(log, nil, history.Options{MaxItems: cap, LowWatermark: 0.5})
		if o := shownOrphans(log, front); len(o) > 0 {
			t.Fatalf("cap %d: front=%d shows outputs %v without their calls", cap, front, o)
		}
		if front > 2 {
			t.Fatalf("cap %d: front = %d dropped the newest output's call", cap, front)
		}
	}
	// Every prefix of a log of interleaved parallel blocks, every cap.
	var long []core.Item
	for i := 0; i < 6; i++ {
		a, b := fmt.Sprint("a", i), fmt.Sprint("b", i)
		long = append(long, core.UserMessage("q"), core.FunctionCall(a, "f", "{}"), core.FunctionCall(b, "f", "{}"),
			core.FunctionCallOutput(b, "x"), core.FunctionCallOutput(a, "y"), core.AssistantMessage("r"))
	}
	for n := 1; n <= len(long); n++ {
		for cap := 1; cap <= 12; cap++ {
			front := history.Front(long[:n], func(int) int { return 10 }, history.Options{MaxItems: cap, MaxTokens: 10 * cap})
			if o := shownOrphans(long[:n], front); len(o) > 0 {
				t.Fatalf("n=%d cap=%d: front=%d shows outputs %v without their calls", n, cap, front, o)
			}
			if front >= n {
				t.Fatalf("n=%d cap=%d: front=%d shows nothing", n, cap, front)
			}
		}
	}
}

// The same through a session: the assembled history band holds no output
// without its call, and keeps the newest message.
func TestLayerViewParallelCallsAndNewest(t *testing.T) {
	ctx := context.Background()
	h, err := history.Layer(history.Options{MaxItems: 5, LowWatermark: 0.6})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{h}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Append(ctx, core.UserMessage("u1")))
	must(s.Record(ctx, core.FunctionCall("A", "f", `{}`), core.FunctionCall("B", "f", `{}`)))
	must(s.Append(ctx, core.FunctionCallOutput("A", "a"), core.FunctionCallOutput("B", "b")))
	must(s.Record(ctx, core.AssistantMessage("done")))
	must(s.Append(ctx, core.UserMessage("u2")))
	v, err := s.Assemble(ctx)
	must(err)
	band := v.Band(core.BandHistory)
	if o := shownOrphans(band, 0); len(o) > 0 {
		t.Fatalf("view sends outputs %v without their calls", o)
	}
	if len(band) == 0 || band[len(band)-1].Text() != "u2" {
		t.Fatalf("newest message missing from %v", band)
	}
}
