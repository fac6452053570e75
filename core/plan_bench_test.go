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
func recordSession(b *testing.B, record bool, retention int) *core.Session {
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
	for i := 0; i < 200; i++ {
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

// BenchmarkAssembleRecording measures one assembly of a 6-layer session
// over 200 history items: without recording (off), with
// Config.RecordAssemblies alone (last: the thread's last assembly, one
// store write), and with AssemblyRetention 200 too (plan: the last
// assembly and a per-turn record, sharing one encoding of the bands), in
// a memory store.
func BenchmarkAssembleRecording(b *testing.B) {
	for _, c := range []struct {
		name      string
		record    bool
		retention int
	}{{"off", false, 0}, {"last", true, 0}, {"plan", true, 200}} {
		b.Run(c.name, func(b *testing.B) {
			s := recordSession(b, c.record, c.retention)
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
