package anthropic

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
)

// benchView is a 400-item conversation with an anchored layer, a live
// layer and tool calls, assembled by a real runtime.
func benchView(b *testing.B) *core.View {
	b.Helper()
	ctx := context.Background()
	doc := strings.Repeat("reference text ", 200)
	layer := func(id string, p core.Placement) core.Layer[int] {
		return core.Layer[int]{ID: id, Scope: core.ScopeExecution, Placement: p,
			Hooks: core.Hooks[int]{Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
				return core.Text[int](doc)
			}}}
	}
	rt, err := core.NewRuntime(core.Config{System: []core.Item{core.SystemMessage("sys")},
		Layers: []core.AnyLayer{layer("ref", core.PlacementAnchor), layer("live", core.PlacementLive)}})
	if err != nil {
		b.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		id := fmt.Sprint("call_", i)
		if err := s.Append(ctx, core.UserMessage(fmt.Sprint("question ", i)),
			core.FunctionCall(id, "tools/search", `{"q":"x"}`), core.FunctionCallOutput(id, "result"),
			core.AssistantMessage(fmt.Sprint("answer ", i))); err != nil {
			b.Fatal(err)
		}
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

func BenchmarkBuildParams(b *testing.B) {
	v := benchView(b)
	m, err := New(Options{Model: "claude-sonnet-4-5", APIKey: "k"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := m.buildParams(v, 1024); err != nil {
			b.Fatal(err)
		}
	}
}
