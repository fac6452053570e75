package core_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stratamem/strata/core"
)

// benchRuntime builds 12 layers with trivial recall hooks and a session
// whose log holds n items, with a budget policy that fits the history.
func benchSession(b *testing.B, n int) *core.Session {
	b.Helper()
	ctx := context.Background()
	var layers []core.AnyLayer
	for i := 0; i < 12; i++ {
		text := fmt.Sprintf("<layer%d>static content of layer %d</layer%d>", i, i, i)
		placement := core.PlacementAnchor
		if i%4 == 0 {
			placement = core.PlacementLive
		}
		layers = append(layers, core.Layer[int]{ID: fmt.Sprintf("layer%02d", i), Slot: 100 + i, Scope: core.ScopeExecution,
			Placement: placement, Budget: core.Range(10, 200),
			Hooks: core.Hooks[int]{Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
				return core.Text[int](text)
			}}})
	}
	var history []core.Item
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0:
			history = append(history, core.UserMessage(fmt.Sprintf("question %d about the quarterly report", i)))
		case 1:
			history = append(history, core.FunctionCall(fmt.Sprint("c", i), "search", `{"q":"report"}`))
		case 2:
			history = append(history, core.FunctionCallOutput(fmt.Sprint("c", i-1), "three results about the report"))
		default:
			history = append(history, core.AssistantMessage("Here is what I found in the report."))
		}
	}
	rt, err := core.NewRuntime(core.Config{Layers: layers, System: []core.Item{core.SystemMessage("You are a benchmark.")},
		Policy: &core.Policy{TokenBudget: 1 << 22, ResponseReserve: 4096}, LayerPool: 12 * 200})
	if err != nil {
		b.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{History: history})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkAssemble measures one assembly (12 recalls, projection) over a
// log of n items.
func BenchmarkAssemble(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			s := benchSession(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Assemble(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTurn measures a full turn: append the user's message, assemble,
// record the model's answer. The log grows by two items per turn; token
// counting covers only those. The session is rebuilt every 100 turns
// (outside the timer) so the log stays near n items.
func BenchmarkTurn(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			s := benchSession(b, n)
			ctx := context.Background()
			user := core.UserMessage("and what about the next quarter?")
			answer := core.AssistantMessage("The next quarter looks similar.")
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i > 0 && i%100 == 0 {
					b.StopTimer()
					s = benchSession(b, n)
					b.StartTimer()
				}
				if err := s.Append(ctx, user); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Assemble(ctx); err != nil {
					b.Fatal(err)
				}
				if err := s.Record(ctx, answer); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
