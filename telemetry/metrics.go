package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/stratamem/strata/core"
)

// Metric names. The Prometheus exporter writes them with underscores and
// unit suffixes (strata_recall_duration_seconds, ...).
const (
	MetricRecallDuration      = "strata.recall.duration"
	MetricVectorQueryDuration = "strata.vector.query.duration"
	MetricWrites              = "strata.memory.writes"
	MetricWriteErrors         = "strata.memory.write.errors"
	MetricContextTokens       = "strata.context.tokens"
	MetricRebillTokens        = "strata.context.rebill_tokens"
	MetricCacheTokens         = "strata.cache.tokens"
	MetricCacheHitRatio       = "strata.cache.hit_ratio"
)

// Metrics records strata's figures with an OpenTelemetry meter: recall
// latency, vector query latency, memory writes and write errors, and,
// fed by the host once per model call, the tokens each assembly sends and
// the provider's cache figures. Attributes that name a thread or resource
// follow the IDs mode of the options (omitted by default: one series per
// thread is a cardinality a metrics backend pays for).
//
// A nil *Metrics records nothing, so hosts can pass one around
// unconditionally.
type Metrics struct {
	ids     *Tracer // renders ids under Options.IDs; its tracer is unused
	recall  metric.Float64Histogram
	vquery  metric.Float64Histogram
	writes  metric.Int64Counter
	wfail   metric.Int64Counter
	ctxTok  metric.Int64Counter
	rebill  metric.Int64Counter
	cache   metric.Int64Counter
	hitRate metric.Float64Histogram
}

// NewMetrics makes the instruments on mp with opts (only IDs and HashKey
// are read, with the rules of New).
func NewMetrics(mp metric.MeterProvider, opts Options) (*Metrics, error) {
	opts, err := checkOptions(opts)
	if err != nil {
		return nil, err
	}
	ids := &Tracer{opts: opts}
	m := mp.Meter(ScopeName)
	var errs []error
	hist := func(name, desc, unit string, bounds ...float64) metric.Float64Histogram {
		o := []metric.Float64HistogramOption{metric.WithDescription(desc), metric.WithUnit(unit)}
		if len(bounds) > 0 {
			o = append(o, metric.WithExplicitBucketBoundaries(bounds...))
		}
		h, err := m.Float64Histogram(name, o...)
		errs = append(errs, err)
		return h
	}
	counter := func(name, desc, unit string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(unit))
		errs = append(errs, err)
		return c
	}
	// Latency buckets from 1 ms to 10 s: an embedded search takes
	// milliseconds, a remote embedder's round trip hundreds.
	lat := []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	out := &Metrics{
		ids:     ids,
		recall:  hist(MetricRecallDuration, "Time to answer a memory search (embedding the query included).", "s", lat...),
		vquery:  hist(MetricVectorQueryDuration, "Time of one vector store query.", "s", lat...),
		writes:  counter(MetricWrites, "Records written or deleted by memory writes.", "{record}"),
		wfail:   counter(MetricWriteErrors, "Memory writes the store refused.", "{write}"),
		ctxTok:  counter(MetricContextTokens, "Input tokens of the assembled views (what each model call is billed as input).", "{token}"),
		rebill:  counter(MetricRebillTokens, "Tokens that layer changes would have re-billed had they not been pinned.", "{token}"),
		cache:   counter(MetricCacheTokens, "Input tokens by prompt-cache outcome, as the provider reported them.", "{token}"),
		hitRate: hist(MetricCacheHitRatio, "Share of a model call's input tokens served from the prompt cache.", "1", 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1),
	}
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("telemetry: make instruments: %w", err)
		}
	}
	return out, nil
}

// runAttrs returns the thread and resource attributes of run under the IDs
// mode.
func (m *Metrics) runAttrs(run core.RunInfo) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	for _, kv := range [][2]string{{"strata.thread.id", run.ThreadID}, {"strata.resource.id", run.ResourceID}} {
		if a, ok := m.ids.id(kv[0], kv[1]); ok {
			attrs = append(attrs, a)
		}
	}
	return attrs
}

// RecordRecall records the latency of one memory search of layer ("" for
// a search over every layer); err marks a failed one (error.type).
func (m *Metrics) RecordRecall(ctx context.Context, layer string, d time.Duration, err error) {
	if m == nil {
		return
	}
	m.recall.Record(ctx, d.Seconds(), metric.WithAttributes(opAttrs("", layer, err)...))
}

// RecordVectorQuery records the latency of one vector store query.
func (m *Metrics) RecordVectorQuery(ctx context.Context, layer string, d time.Duration, err error) {
	if m == nil {
		return
	}
	m.vquery.Record(ctx, d.Seconds(), metric.WithAttributes(opAttrs("", layer, err)...))
}

// RecordWrite counts a memory write of n records by operation op (an Op
// constant) to layer ("" when not one layer's); a failed write counts
// as a write error instead, with its error.type.
func (m *Metrics) RecordWrite(ctx context.Context, op, layer string, n int, err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.wfail.Add(ctx, 1, metric.WithAttributes(opAttrs(op, layer, err)...))
		return
	}
	m.writes.Add(ctx, int64(n), metric.WithAttributes(opAttrs(op, layer, nil)...))
}

func opAttrs(op, layer string, err error) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	if op != "" {
		attrs = append(attrs, attribute.String("db.operation.name", op))
	}
	if layer != "" {
		attrs = append(attrs, attribute.String("strata.memory.layer", layer))
	}
	if err != nil {
		attrs = append(attrs, attribute.String("error.type", errorType(err)))
	}
	return attrs
}

// RecordUsage feeds one assembly's usage report (view.Usage): the view's
// tokens, which the model call bills as input, and the layers' rebill
// estimates, per thread under the IDs mode. Call it once per assembly
// that is sent to a model. A nil u records nothing.
func (m *Metrics) RecordUsage(ctx context.Context, run core.RunInfo, u *core.Usage) {
	if m == nil || u == nil {
		return
	}
	attrs := metric.WithAttributes(m.runAttrs(run)...)
	m.ctxTok.Add(ctx, int64(u.Total), attrs)
	rebill := 0
	for _, l := range u.Layers {
		rebill += l.RebillTokens
	}
	if rebill > 0 {
		m.rebill.Add(ctx, int64(rebill), attrs)
	}
}

// RecordCache feeds the provider's cache figures of one model call (the
// core.CacheReport a provider adapter returns): tokens by outcome
// (strata.cache.outcome read, write, uncached) and the call's hit ratio,
// read over all input tokens. A report without figures records nothing.
func (m *Metrics) RecordCache(ctx context.Context, run core.RunInfo, r core.CacheReport) {
	if m == nil || !r.Reported {
		return
	}
	base := m.runAttrs(run)
	for _, o := range []struct {
		outcome string
		n       int
	}{{"read", r.ReadTokens}, {"write", r.WriteTokens}, {"uncached", r.UncachedTokens}} {
		if o.n > 0 {
			m.cache.Add(ctx, int64(o.n), metric.WithAttributes(append(base[:len(base):len(base)], attribute.String("strata.cache.outcome", o.outcome))...))
		}
	}
	if total := r.ReadTokens + r.WriteTokens + r.UncachedTokens; total > 0 {
		m.hitRate.Record(ctx, float64(r.ReadTokens)/float64(total), metric.WithAttributes(base...))
	}
}

// Prometheus is a meter provider whose metrics are served in the
// Prometheus text format by its Handler, from a registry of its own (the
// process's default registry is left alone).
type Prometheus struct {
	// Provider is the meter provider to make instruments on (NewMetrics,
	// the server's request metrics).
	Provider *sdkmetric.MeterProvider
	// Registry holds the exporter's collector; add the Go and process
	// collectors to it if you want them.
	Registry *prometheus.Registry
}

// NewPrometheus makes a meter provider exporting to a new Prometheus
// registry, with the names translated to Prometheus conventions
// (underscores, unit and _total suffixes).
func NewPrometheus() (*Prometheus, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes))
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	return &Prometheus{Provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)), Registry: reg}, nil
}

// Handler serves the metrics (GET /metrics).
func (p *Prometheus) Handler() http.Handler {
	return promhttp.HandlerFor(p.Registry, promhttp.HandlerOpts{})
}

// Shutdown flushes and stops the meter provider.
func (p *Prometheus) Shutdown(ctx context.Context) error { return p.Provider.Shutdown(ctx) }
