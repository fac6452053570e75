package telemetry_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/telemetry"
)

func TestSpanPerAssembly(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	layer := core.Layer[int]{ID: "notes", Scope: core.ScopeExecution, Placement: core.PlacementAnchor,
		Hooks: core.Hooks[int]{Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
			return core.Text[int]("remember this")
		}}}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}, Tracer: telemetry.NewTracer(tp)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, _ := rt.Start(ctx, core.RunOptions{ThreadID: "th"})
	for i := 0; i < 2; i++ {
		_ = s.Append(ctx, core.UserMessage("hi"))
		if _, err := s.Assemble(ctx); err != nil {
			t.Fatal(err)
		}
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("spans = %d, want 2", len(spans))
	}
	got := map[string]string{}
	for _, a := range spans[1].Attributes {
		got[string(a.Key)] = a.Value.Emit()
	}
	want := map[string]string{
		"strata.context.epoch.id":              "t:th#0",
		"strata.context.epoch.age":             "2",
		"strata.context.layer.notes.band":      "anchor",
		"strata.context.layer.notes.served":    "pinned",
		"strata.context.epoch.reanchored":      "false",
		"strata.context.epoch.reanchor_reason": "initial",
		"strata.thread.id":                     "th",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}
