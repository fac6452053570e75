// Package telemetry instruments strata with OpenTelemetry.
//
// It emits a span for every assembly of the strata runtime, stamped with
// what anchoring did: the epoch, its age and re-anchor reason, the band
// sizes, and each layer's band, service, tokens and churn. Plug it in with
// core.Config.Tracer:
//
//	rt, err := core.NewRuntime(core.Config{Tracer: telemetry.NewTracer(otel.GetTracerProvider()).StartAssemble, ...})
//
// Attribute names start with "strata.context." so dashboards can find them.
//
// # Memory spans and metrics
//
// Embedder wraps an embed.Embedder so that each call is an "embeddings"
// client span with the GenAI semantic-convention attributes; Driver wraps
// a vector store driver so that each query and write is a client span
// with the database attributes, and writes, write errors and query
// latency are counted by Metrics:
//
//	in := telemetry.Instruments{Tracer: telemetry.NewTracer(tp), Metrics: m}
//	coll, err := vectorstore.NewCollection(telemetry.Driver(d, in), opts)
//	store := &memory.Store{Records: coll, Embedder: telemetry.Embedder(emb, in)}
//
// Metrics (NewMetrics, on any meter provider; NewPrometheus makes one
// served as Prometheus text) also takes what a host knows once per model
// call: RecordUsage with the view's usage report (tokens billed as input,
// rebill estimates) and RecordCache with the provider's cache figures
// (tokens read, written and uncached, hit ratio), per thread under the
// IDs mode below.
//
// # What leaves the process
//
// Spans go to whatever backend the TracerProvider exports to, often a
// third party. Run, thread and resource ids name users and conversations
// (a resource id is often a user id), and the epoch id embeds the thread
// or run id, so by default none of them is emitted (Options.IDs is
// IDsOmit). IDsHashed emits each as a keyed hash (HMAC-SHA256 under
// Options.HashKey, 16 bytes in hex): stable, so spans of one thread still
// group, but not reversible without the key, which a plain hash of a short
// id like "user-7" would be. IDsRaw emits them as they are.
//
// A failed assembly marks the span as an error with the error's Go type
// only: error texts can carry paths, keys and user content. Set
// Options.ErrorMessages to record err.Error() as well.
package telemetry

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/stratamem/strata/core"
)

// ScopeName is the instrumentation scope of the spans.
const ScopeName = "github.com/stratamem/strata"

// IDMode says how run, thread, resource and epoch ids reach spans.
type IDMode string

// ID modes. The zero value omits them.
const (
	// IDsOmit emits no id.
	IDsOmit IDMode = ""
	// IDsHashed emits HMAC-SHA256(Options.HashKey, id), truncated to 16
	// bytes, in hex.
	IDsHashed IDMode = "hashed"
	// IDsRaw emits the ids as they are.
	IDsRaw IDMode = "raw"
)

// ErrInvalidOptions is returned by New for options it cannot use.
var ErrInvalidOptions = errors.New("telemetry: invalid options")

// Options configure a Tracer. The zero value emits no ids and no error
// texts.
type Options struct {
	// IDs says how ids are emitted; IDsOmit by default.
	IDs IDMode
	// HashKey keys the hash of IDsHashed; required (at least 16 bytes)
	// with it. Keep it secret and stable: a new key regroups nothing.
	HashKey []byte
	// ErrorMessages records a failed assembly's err.Error() on its span;
	// off by default (the span says only the error's type).
	ErrorMessages bool
}

// Tracer traces assemblies with OpenTelemetry: its StartAssemble is a
// core.Config.Tracer.
type Tracer struct {
	tracer trace.Tracer
	opts   Options
}

// NewTracer returns a tracer using tp with the default Options: no ids,
// no error texts.
func NewTracer(tp trace.TracerProvider) *Tracer {
	return &Tracer{tracer: tp.Tracer(ScopeName)}
}

// New returns a tracer using tp with opts. An unknown IDs mode, or
// IDsHashed without a HashKey of at least 16 bytes, fails with
// ErrInvalidOptions.
func New(tp trace.TracerProvider, opts Options) (*Tracer, error) {
	opts, err := checkOptions(opts)
	if err != nil {
		return nil, err
	}
	return &Tracer{tracer: tp.Tracer(ScopeName), opts: opts}, nil
}

// checkOptions validates opts and returns them with the key copied.
func checkOptions(opts Options) (Options, error) {
	switch opts.IDs {
	case IDsOmit, IDsRaw:
	case IDsHashed:
		if len(opts.HashKey) < 16 {
			return opts, fmt.Errorf("%w: IDsHashed needs a HashKey of at least 16 bytes, got %d", ErrInvalidOptions, len(opts.HashKey))
		}
	default:
		return opts, fmt.Errorf("%w: unknown IDs mode %q", ErrInvalidOptions, opts.IDs)
	}
	opts.HashKey = append([]byte(nil), opts.HashKey...)
	return opts, nil
}

// id renders one id attribute under the tracer's IDs mode; ok is false
// when it is not emitted (omitted, or empty).
func (t *Tracer) id(key, v string) (attribute.KeyValue, bool) {
	switch {
	case v == "":
		return attribute.KeyValue{}, false
	case t.opts.IDs == IDsRaw:
		return attribute.String(key, v), true
	case t.opts.IDs == IDsHashed:
		m := hmac.New(sha256.New, t.opts.HashKey)
		m.Write([]byte(v))
		return attribute.String(key, hex.EncodeToString(m.Sum(nil)[:16])), true
	}
	return attribute.KeyValue{}, false
}

// StartAssemble is a core.Config.Tracer: one span "strata.assemble" per
// assembly.
func (t *Tracer) StartAssemble(ctx context.Context, run core.RunInfo, turn int) (context.Context, func(*core.Usage, error)) {
	attrs := []attribute.KeyValue{attribute.Int("strata.turn", turn)}
	for _, kv := range [][2]string{{"strata.run.id", run.RunID}, {"strata.thread.id", run.ThreadID}, {"strata.resource.id", run.ResourceID}} {
		if a, ok := t.id(kv[0], kv[1]); ok {
			attrs = append(attrs, a)
		}
	}
	ctx, span := t.tracer.Start(ctx, "strata.assemble", trace.WithAttributes(attrs...))
	return ctx, func(u *core.Usage, err error) {
		defer span.End()
		if err != nil {
			kind := fmt.Sprintf("%T", err)
			if t.opts.ErrorMessages {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			} else {
				span.AddEvent("exception", trace.WithAttributes(attribute.String("exception.type", kind)))
				span.SetStatus(codes.Error, "assembly failed: "+kind)
			}
			return
		}
		if u == nil {
			return
		}
		span.SetAttributes(Attributes(u)...)
		if u.Epoch != nil {
			if a, ok := t.id("strata.context.epoch.id", u.Epoch.ID); ok {
				span.SetAttributes(a)
			}
		}
	}
}

// Attributes renders a usage report as span attributes. It leaves out the
// epoch id, which embeds the thread or run id: the Tracer adds it under
// its Options.IDs.
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
			attribute.Int("strata.context.epoch.age", e.Age),
			attribute.Int("strata.context.epoch.anchor_tokens", e.AnchorTokens),
			attribute.Int("strata.context.epoch.update_tokens", e.UpdateTokens),
			attribute.String("strata.context.epoch.reanchor_reason", string(e.ReanchorReason)),
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
			attrs = append(attrs, attribute.String(p+"update", string(l.Update)))
		}
	}
	return attrs
}
