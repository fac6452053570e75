package core_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/storage"
)

// recordSession is a realistic session for the cost of recording: 6
// layers (4 anchored, 2 live) of a few hundred tokens each, a tool, and a
// thread log of 200 items of user questions, tool round trips and
// answers.
func recordSession(b *testing.B, record bool, retention, logItems int) *core.Session {
	b.Helper()
	ctx := context.Background()
	var layers []core.AnyLayer
	for i := 0; i < 6; i++ {
		text := fmt.Sprintf("<layer%d>%s</layer%d>", i, strings.Repeat(fmt.Sprintf("fact %d of layer %d; ", i, i), 40), i)
		placement := core.PlacementAnchor
		if i >= 4 {
			placement = core.PlacementLive
		}
		layers = append(layers, core.Layer[int]{ID: fmt.Sprintf("layer%d", i), Slot: 100 + i, Scope: core.ScopeExecution,
			Placement: placement, Budget: core.Range(10, 2000),
			Functions: []core.Function[int]{{Spec: core.ToolSpec{Name: "note", Description: "keep a note",
				Parameters: []byte(`{"type":"object","properties":{"text":{"type":"string"}}}`)}}},
			Hooks: core.Hooks[int]{Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
				return core.Text[int](text)
			}}})
	}
	var history []core.Item
	for i := 0; i < logItems; i++ {
		switch i % 4 {
		case 0:
			history = append(history, core.UserMessage(fmt.Sprintf("question %d about the quarterly report and its figures", i)))
		case 1:
			history = append(history, core.FunctionCall(fmt.Sprint("c", i), "search", `{"q":"quarterly report figures"}`))
		case 2:
			history = append(history, core.FunctionCallOutput(fmt.Sprint("c", i-1), strings.Repeat("a result about the report. ", 10)))
		default:
			history = append(history, core.AssistantMessage("Here is what I found in the report: revenue grew and costs held."))
		}
	}
	rt, err := core.NewRuntime(core.Config{Layers: layers, System: []core.Item{core.SystemMessage("You are a benchmark.")},
		Store: storage.NewMemory(), RecordAssemblies: record, AssemblyRetention: retention,
		Policy: &core.Policy{TokenBudget: 1 << 20, ResponseReserve: 4096}, LayerPool: 6 * 2000})
	if err != nil {
		b.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t1", History: history})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkAssembleRecording measures one turn (a user message appended,
// the view assembled, the answer recorded) of a 6-layer session over a
// log of 200 and 5,000 items: without recording (off), and with
// Config.RecordAssemblies (plan: a record per assembly, the retention
// bound's default of 200 records), in a memory store. The difference is
// what recording costs; it should not grow with the log.
func BenchmarkAssembleRecording(b *testing.B) {
	for _, n := range []int{200, 5000} {
		for _, c := range []struct {
			name   string
			record bool
		}{{"off", false}, {"plan", true}} {
			b.Run(fmt.Sprintf("log=%d/%s", n, c.name), func(b *testing.B) {
				s := recordSession(b, c.record, 0, n)
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := s.Append(ctx, core.UserMessage(fmt.Sprintf("follow-up %d on the report", i))); err != nil {
						b.Fatal(err)
					}
					if _, err := s.Assemble(ctx); err != nil {
						b.Fatal(err)
					}
					if err := s.Record(ctx, core.AssistantMessage("Noted.")); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
