package telemetry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/vectorstore/driver"
)

// Operation names of the memory spans: the GenAI embeddings operation, and
// the db.operation.name of the vector store calls.
const (
	OpEmbeddings  = "embeddings"
	OpQuery       = "query"
	OpSearchTerms = "search_terms"
	OpUpsert      = "upsert"
	OpUpsertIf    = "upsert_if"
	OpDelete      = "delete"
	OpDeleteIf    = "delete_if"
	OpDeleteWhere = "delete_where"
)

// Instruments are what the wrappers report to: spans to a tracer, and the
// write and recall figures to Metrics. The zero value reports nothing;
// either part may be nil.
type Instruments struct {
	// Tracer starts the spans; nil starts none.
	Tracer *Tracer
	// Metrics counts writes, write errors and vector query latency; nil
	// counts nothing.
	Metrics *Metrics
}

// start starts a span when there is a tracer.
func (in Instruments) start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if in.Tracer == nil {
		return ctx, trace.SpanFromContext(ctx) // a no-op when ctx carries none: End and SetAttributes on it are harmless
	}
	return in.Tracer.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// end ends a span the wrappers started, marking a failure as the tracer's
// options allow.
func (in Instruments) end(span trace.Span, err error) {
	if in.Tracer == nil {
		return
	}
	if err != nil {
		in.Tracer.fail(span, err)
	}
	span.End()
}

// fail marks span as failed: the error's Go type always (error.type), its
// text only with Options.ErrorMessages, which can carry user content.
func (t *Tracer) fail(span trace.Span, err error) {
	kind := fmt.Sprintf("%T", err)
	span.SetAttributes(semconv.ErrorTypeKey.String(kind))
	if t.opts.ErrorMessages {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return
	}
	span.SetStatus(codes.Error, kind)
}

// Embedder wraps e so that every Embed call is a client span named
// "embeddings MODEL" with the GenAI semantic-convention attributes
// (gen_ai.operation.name "embeddings", gen_ai.request.model,
// gen_ai.embeddings.dimension.count) and the batch size
// (strata.embed.batch_size). No text is recorded. A nil tracer in
// Instruments returns e unchanged.
func Embedder(e embed.Embedder, in Instruments) embed.Embedder {
	if in.Tracer == nil || e == nil {
		return e
	}
	return &tracedEmbedder{Embedder: e, in: in}
}

type tracedEmbedder struct {
	embed.Embedder
	in Instruments
}

func (t *tracedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	model := t.Model()
	ctx, span := t.in.start(ctx, OpEmbeddings+" "+model, trace.SpanKindClient,
		semconv.GenAIOperationNameKey.String(OpEmbeddings),
		semconv.GenAIRequestModelKey.String(model),
		attribute.Int("strata.embed.batch_size", len(texts)))
	vs, err := t.Embedder.Embed(ctx, texts)
	if err == nil && len(vs) > 0 {
		span.SetAttributes(semconv.GenAIEmbeddingsDimensionCountKey.Int(len(vs[0])))
	}
	t.in.end(span, err)
	return vs, err
}

// Driver wraps a vector store driver so that every query and write is a
// client span with the database semantic-convention attributes
// (db.system.name, db.collection.name, db.operation.name and, for reads,
// db.response.returned_rows), and so that writes and their failures are
// counted by Metrics (strata.memory.writes, strata.memory.write.errors,
// keyed by operation and, for single-layer batches, layer) and vector
// queries timed (strata.vector.query.duration). Reads that are not
// queries (Get, List, Count) pass through untraced: they are the
// bookkeeping of every write and would drown the spans that matter.
//
// Wrap the driver, then make the portable collection over it:
//
//	coll, err := vectorstore.NewCollection(telemetry.Driver(d, in), opts)
//
// The wrapper forwards driver.TermSearcher (so lexical search stays on
// the backend's index) and driver.Aser (Collection.As) when d has them.
func Driver(d driver.Collection, in Instruments) driver.Collection {
	base := &tracedDriver{d: d, in: in, system: d.Info().Driver, coll: d.Info().Name}
	if _, ok := d.(driver.TermSearcher); ok {
		return &tracedTermDriver{base}
	}
	return base
}

type tracedDriver struct {
	d      driver.Collection
	in     Instruments
	system string
	coll   string
}

// tracedTermDriver is tracedDriver over a driver with a term index.
type tracedTermDriver struct{ *tracedDriver }

var (
	_ driver.Collection   = (*tracedDriver)(nil)
	_ driver.Aser         = (*tracedDriver)(nil)
	_ driver.TermSearcher = (*tracedTermDriver)(nil)
)

func (t *tracedDriver) span(ctx context.Context, op string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	attrs = append(attrs,
		semconv.DBSystemNameKey.String(t.system),
		semconv.DBCollectionNameKey.String(t.coll),
		semconv.DBOperationNameKey.String(op))
	return t.in.start(ctx, op+" "+t.coll, trace.SpanKindClient, attrs...)
}

// write runs one write, traced and counted; layer is the layer of the
// records written when they are all of one ("" otherwise).
func (t *tracedDriver) write(ctx context.Context, op, layer string, n int, fn func(context.Context) error) error {
	attrs := []attribute.KeyValue{attribute.Int("strata.memory.records", n)}
	if layer != "" {
		attrs = append(attrs, attribute.String("strata.memory.layer", layer))
	}
	ctx, span := t.span(ctx, op, attrs...)
	err := fn(ctx)
	t.in.end(span, err)
	if m := t.in.Metrics; m != nil {
		m.RecordWrite(ctx, op, layer, n, err)
	}
	return err
}

func (t *tracedDriver) Info() driver.Info { return t.d.Info() }
func (t *tracedDriver) Close() error      { return t.d.Close() }

// As forwards to the wrapped driver's As, so Collection.As still finds
// the backend's types.
func (t *tracedDriver) As(target any) bool {
	a, ok := t.d.(driver.Aser)
	return ok && a.As(target)
}

func (t *tracedDriver) Upsert(ctx context.Context, recs []driver.Record) error {
	return t.write(ctx, OpUpsert, layerOf(recs), len(recs), func(ctx context.Context) error { return t.d.Upsert(ctx, recs) })
}

func (t *tracedDriver) UpsertIf(ctx context.Context, rec driver.Record, expected int64) (int64, error) {
	var rev int64
	err := t.write(ctx, OpUpsertIf, rec.Layer, 1, func(ctx context.Context) error {
		var err error
		rev, err = t.d.UpsertIf(ctx, rec, expected)
		return err
	})
	return rev, err
}

func (t *tracedDriver) Delete(ctx context.Context, ids []string) error {
	return t.write(ctx, OpDelete, "", len(ids), func(ctx context.Context) error { return t.d.Delete(ctx, ids) })
}

func (t *tracedDriver) DeleteIf(ctx context.Context, id string, expected int64) error {
	return t.write(ctx, OpDeleteIf, "", 1, func(ctx context.Context) error { return t.d.DeleteIf(ctx, id, expected) })
}

func (t *tracedDriver) DeleteWhere(ctx context.Context, f driver.Filter) (int, error) {
	var n int
	err := t.write(ctx, OpDeleteWhere, f.Layer, 0, func(ctx context.Context) error {
		var err error
		n, err = t.d.DeleteWhere(ctx, f)
		return err
	})
	return n, err
}

func (t *tracedDriver) Get(ctx context.Context, id string) (driver.Record, bool, error) {
	return t.d.Get(ctx, id)
}

func (t *tracedDriver) Count(ctx context.Context, f driver.Filter) (int, error) {
	return t.d.Count(ctx, f)
}

func (t *tracedDriver) List(ctx context.Context, q driver.ListQuery) ([]driver.Record, error) {
	return t.d.List(ctx, q)
}

func (t *tracedDriver) Query(ctx context.Context, q driver.VectorQuery) ([]driver.Match, error) {
	ctx, span := t.span(ctx, OpQuery, attribute.Int("strata.vector.k", q.K))
	if q.Filter.Layer != "" {
		span.SetAttributes(attribute.String("strata.memory.layer", q.Filter.Layer))
	}
	start := time.Now()
	ms, err := t.d.Query(ctx, q)
	if err == nil {
		span.SetAttributes(semconv.DBResponseReturnedRowsKey.Int(len(ms)))
	}
	t.in.end(span, err)
	if m := t.in.Metrics; m != nil {
		m.RecordVectorQuery(ctx, q.Filter.Layer, time.Since(start), err)
	}
	return ms, err
}

func (t *tracedTermDriver) SearchTerms(ctx context.Context, q driver.TermQuery) (driver.TermResult, error) {
	ctx, span := t.span(ctx, OpSearchTerms, attribute.Int("strata.vector.k", q.K))
	res, err := t.d.(driver.TermSearcher).SearchTerms(ctx, q)
	if err == nil {
		span.SetAttributes(semconv.DBResponseReturnedRowsKey.Int(len(res.Matches)))
	}
	t.in.end(span, err)
	return res, err
}

// layerOf is the layer of recs when they all have one, else "".
func layerOf(recs []driver.Record) string {
	if len(recs) == 0 {
		return ""
	}
	l := recs[0].Layer
	for i := range recs[1:] {
		if recs[i+1].Layer != l {
			return ""
		}
	}
	return l
}

// errorType is the error.type of err: "" for nil, the driver's error code
// for a *driver.Error, else the Go type.
func errorType(err error) string {
	if err == nil {
		return ""
	}
	var de *driver.Error
	if errors.As(err, &de) {
		return string(de.Code)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	return fmt.Sprintf("%T", err)
}
