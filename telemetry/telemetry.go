// Package telemetry emits an OpenTelemetry span for every assembly of the
// strata runtime, stamped with what anchoring did: the epoch, its age and
// re-anchor reason, the band sizes, and each layer's band, service, tokens
// and churn. Plug it in with core.Config.Tracer:
//
//	rt, err := core.NewRuntime(core.Config{Tracer: telemetry.NewTracer(otel.GetTracerProvider()), ...})
//
// Attribute names start with "strata.context." so dashboards can find them.
package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/stratamem/strata/core"
)

// ScopeName is the instrumentation scope of the spans.
const ScopeName = "github.com/stratamem/strata"

// Tracer implements core.AssembleTracer with OpenTelemetry.
type Tracer struct {
	tracer trace.Tracer
}

// NewTracer returns a tracer using tp.
func NewTracer(tp trace.TracerProvider) *Tracer {
	return &Tracer{tracer: tp.Tracer(ScopeName)}
}

// StartAssemble implements core.AssembleTracer: one span "strata.assemble"
// per assembly.
func (t *Tracer) StartAssemble(ctx context.Context, run core.RunInfo, turn int) (context.Context, func(*core.Usage, error)) {
	ctx, span := t.tracer.Start(ctx, "strata.assemble", trace.WithAttributes(
		attribute.String("strata.run.id", run.RunID),
		attribute.String("strata.thread.id", run.ThreadID),
		attribute.String("strata.resource.id", run.ResourceID),
		attribute.Int("strata.turn", turn),
	))
	return ctx, func(u *core.Usage, err error) {
		defer span.End()
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			return
		}
		if u == nil {
			return
		}
		span.SetAttributes(Attributes(u)...)
	}
}

// Attributes renders a usage report as span attributes.
func Attributes(u *core.Usage) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.Int("strata.context.tokens", u.Total),
		attribute.Int("strata.context.history_items", u.HistoryItems),
		attribute.Int("strata.context.history_dropped", u.HistoryDropped),
		attribute.Int("strata.context.diagnostics", len(u.Diagnostics)),
	}
	for b, n := range u.BandTokens {
		attrs = append(attrs, attribute.Int(fmt.Sprintf("strata.context.band.%s.tokens", core.Band(b)), n))
	}
	if e := u.Epoch; e != nil {
		attrs = append(attrs,
			attribute.String("strata.context.epoch.id", e.ID),
			attribute.Int("strata.context.epoch.age", e.Age),
			attribute.Int("strata.context.epoch.anchor_tokens", e.AnchorTokens),
			attribute.Int("strata.context.epoch.update_tokens", e.UpdateTokens),
			attribute.String("strata.context.epoch.reanchor_reason", e.ReanchorReason),
			attribute.Bool("strata.context.epoch.reanchored", e.Reanchored),
			attribute.Bool("strata.context.epoch.blind", e.Blind),
		)
	}
	for _, l := range u.Layers {
		p := "strata.context.layer." + l.LayerID + "."
		attrs = append(attrs,
			attribute.String(p+"band", l.Band.String()),
			attribute.String(p+"served", string(l.Served)),
			attribute.Int(p+"tokens", l.Tokens),
			attribute.Float64(p+"churn_rate", l.ChurnRate),
			attribute.Int(p+"rebill_tokens", l.RebillTokens),
		)
		if l.Update != "" {
			attrs = append(attrs, attribute.String(p+"update", l.Update))
		}
	}
	return attrs
}
