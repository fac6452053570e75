package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

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
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}, Tracer: telemetry.NewTracer(tp).StartAssemble})
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
		"strata.context.epoch.age":             "2",
		"strata.context.layer.notes.band":      "anchor",
		"strata.context.layer.notes.served":    "pinned",
		"strata.context.epoch.reanchored":      "false",
		"strata.context.epoch.reanchor_reason": "initial",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// spansOf runs an assembly and a failing one of a run with secret ids
// under the tracer mk builds, and returns the spans.
func spansOf(t *testing.T, mk func(tp trace.TracerProvider) *telemetry.Tracer) tracetest.SpanStubs {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	hook := core.Layer[int]{ID: "notes", Scope: core.ScopeExecution, Placement: core.PlacementAnchor,
		Hooks: core.Hooks[int]{Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
			return core.Text[int]("remember this")
		}}}
	tr := mk(tp)
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{hook}, Tracer: tr.StartAssemble})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, _ := rt.Start(ctx, core.RunOptions{RunID: "run-secret", ThreadID: "th-secret", ResourceID: "user-7"})
	_ = s.Append(ctx, core.UserMessage("hi"))
	if _, err := s.Assemble(ctx); err != nil {
		t.Fatal(err)
	}
	// A failed assembly whose error text names a user's file.
	_, end := tr.StartAssemble(ctx, s.Run(), 1)
	end(nil, fmt.Errorf("load: %w", errors.New("open /home/alice/secret.env: permission denied")))
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	return spans
}

func dump(span tracetest.SpanStub) string {
	var b strings.Builder
	for _, a := range span.Attributes {
		fmt.Fprintf(&b, "%s=%s\n", a.Key, a.Value.Emit())
	}
	for _, e := range span.Events {
		for _, a := range e.Attributes {
			fmt.Fprintf(&b, "%s.%s=%s\n", e.Name, a.Key, a.Value.Emit())
		}
	}
	b.WriteString(span.Status.Description)
	return b.String()
}

func attr(sp tracetest.SpanStub, k string) string {
	for _, kv := range sp.Attributes {
		if string(kv.Key) == k {
			return kv.Value.Emit()
		}
	}
	return ""
}

// Run, thread and resource ids (and the epoch id, which embeds the thread
// id) and error texts used to go into every span. By default none does.
func TestIDsAndErrorTextsAreOptIn(t *testing.T) {
	spans := spansOf(t, func(tp trace.TracerProvider) *telemetry.Tracer { return telemetry.NewTracer(tp) })
	for _, sp := range spans {
		d := dump(sp)
		for _, leak := range []string{"run-secret", "th-secret", "user-7", "alice"} {
			if strings.Contains(d, leak) {
				t.Errorf("default span carries %q:\n%s", leak, d)
			}
		}
	}
	if d := dump(spans[1]); spans[1].Status.Code != codes.Error || !strings.Contains(d, "exception.type=*fmt.wrapError") {
		t.Errorf("failed assembly span: %v\n%s", spans[1].Status, d)
	}
	if d := dump(spans[0]); !strings.Contains(d, "strata.context.epoch.age=1") {
		t.Errorf("usage attributes missing:\n%s", d)
	}

	key := []byte("0123456789abcdef")
	hashed := func(tp trace.TracerProvider) *telemetry.Tracer {
		tr, err := telemetry.New(tp, telemetry.Options{IDs: telemetry.IDsHashed, HashKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	a, b := spansOf(t, hashed), spansOf(t, hashed)
	if strings.Contains(dump(a[0]), "secret") {
		t.Errorf("hashed span carries an id:\n%s", dump(a[0]))
	}
	for _, k := range []string{"strata.thread.id", "strata.resource.id", "strata.run.id", "strata.context.epoch.id"} {
		if v := attr(a[0], k); len(v) != 32 || v != attr(b[0], k) {
			t.Errorf("hashed %s = %q (again %q): want a stable 32-hex-digit hash", k, v, attr(b[0], k))
		}
	}

	raw := spansOf(t, func(tp trace.TracerProvider) *telemetry.Tracer {
		tr, err := telemetry.New(tp, telemetry.Options{IDs: telemetry.IDsRaw, ErrorMessages: true})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	})
	if attr(raw[0], "strata.thread.id") != "th-secret" || attr(raw[0], "strata.context.epoch.id") != "t:th-secret#0" ||
		!strings.Contains(raw[1].Status.Description, "/home/alice/secret.env") {
		t.Errorf("raw spans:\n%s\n%s", dump(raw[0]), dump(raw[1]))
	}

	for _, o := range []telemetry.Options{{IDs: telemetry.IDsHashed}, {IDs: telemetry.IDsHashed, HashKey: []byte("short")}, {IDs: "plain"}} {
		if _, err := telemetry.New(sdktrace.NewTracerProvider(), o); !errors.Is(err, telemetry.ErrInvalidOptions) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
