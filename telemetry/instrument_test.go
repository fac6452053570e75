package telemetry_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/telemetry"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
	"github.com/stratamem/strata/vectorstore/driver"
)

// instrumented opens a chromem collection in a temporary directory with
// its driver behind telemetry.Driver, and the hashing embedder behind
// telemetry.Embedder, as a memory store.
func instrumented(t *testing.T, in telemetry.Instruments) *memory.Store {
	t.Helper()
	u, _ := url.Parse("chromem://" + filepath.Join(t.TempDir(), "records"))
	d, err := new(chromem.URLOpener).OpenCollectionURL(context.Background(), u, driver.Config{Name: "memories", Dimension: 64})
	if err != nil {
		t.Fatal(err)
	}
	col, err := vectorstore.NewCollection(telemetry.Driver(d, in), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = col.Close() })
	return &memory.Store{Records: col, Embedder: telemetry.Embedder(hashing.New(64), in)}
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// TestMemorySpans: a fact written and searched through a real layer and a
// real engine yields an embeddings span with the GenAI attributes, write
// spans with the layer, and a query span with the returned rows.
func TestMemorySpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	prom, err := telemetry.NewPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	m, err := telemetry.NewMetrics(prom.Provider, telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := telemetry.Instruments{Tracer: telemetry.NewTracer(tp), Metrics: m}
	st := instrumented(t, in)
	facts, err := temporal.New(st, temporal.Options{Common: memory.Common{Scope: core.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sc := vectorstore.Scope{Resource: "user-7"}
	if _, err := facts.Put(ctx, sc, time.Time{}, temporal.Input{Subject: "user", Predicate: "lives in", Value: "Lisbon"}); err != nil {
		t.Fatal(err)
	}
	vs, err := st.Embedder.Embed(ctx, []string{"where does the user live"})
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := st.Records.Query(ctx, vs[0], vectorstore.QueryOptions{K: 3, Filter: vectorstore.Filter{Resource: "user-7"}}); err != nil || len(ms) != 1 {
		t.Fatalf("query: %v %v", ms, err)
	}
	var embeds, writes, queries int
	for _, s := range exp.GetSpans().Snapshots() {
		a := attrs(s)
		switch {
		case strings.HasPrefix(s.Name(), "embeddings "):
			embeds++
			if a["gen_ai.operation.name"].AsString() != "embeddings" || a["gen_ai.request.model"].AsString() != "hash-64" ||
				a["gen_ai.embeddings.dimension.count"].AsInt64() != 64 {
				t.Errorf("embeddings span %s: %v", s.Name(), a)
			}
		case a["db.operation.name"].AsString() == telemetry.OpUpsertIf || a["db.operation.name"].AsString() == telemetry.OpUpsert:
			writes++
			if a["db.system.name"].AsString() != "chromem" || a["db.collection.name"].AsString() != "memories" || a["strata.memory.layer"].AsString() != "temporal" {
				t.Errorf("write span %s: %v", s.Name(), a)
			}
		case a["db.operation.name"].AsString() == telemetry.OpQuery:
			queries++
			if a["db.response.returned_rows"].AsInt64() != 1 {
				t.Errorf("query span: %v", a)
			}
		}
	}
	if embeds < 2 || writes < 1 || queries != 1 {
		t.Errorf("spans: %d embeddings, %d writes, %d queries", embeds, writes, queries)
	}
	body := scrape(t, prom)
	for _, want := range []string{`strata_memory_writes_total{db_operation_name="upsert_if"`, "strata_vector_query_duration_seconds_count"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s:\n%s", want, body)
		}
	}
}

// TestFailedWriteCounted: a write the engine refuses (a closed
// collection's driver) marks its span as failed with the error type only,
// and counts as a write error.
func TestFailedWriteCounted(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	prom, _ := telemetry.NewPrometheus()
	m, _ := telemetry.NewMetrics(prom.Provider, telemetry.Options{})
	in := telemetry.Instruments{Tracer: telemetry.NewTracer(tp), Metrics: m}
	u, _ := url.Parse("chromem://" + filepath.Join(t.TempDir(), "records"))
	d, err := new(chromem.URLOpener).OpenCollectionURL(context.Background(), u, driver.Config{Name: "memories", Dimension: 8})
	if err != nil {
		t.Fatal(err)
	}
	td := telemetry.Driver(d, in)
	_ = d.Close()
	rec := driver.Record{ID: "r1", Layer: "scratchpad", Text: "secret text", Vector: []float32{1, 0, 0, 0, 0, 0, 0, 0}, CreatedAt: time.Now().UTC()}
	if err := td.Upsert(context.Background(), []driver.Record{rec}); err == nil {
		t.Fatal("upsert on a closed driver succeeded")
	}
	spans := exp.GetSpans().Snapshots()
	if len(spans) != 1 || spans[0].Status().Code != codes.Error || strings.Contains(spans[0].Status().Description, "secret") {
		t.Fatalf("spans %+v", spans)
	}
	if a := attrs(spans[0]); a["error.type"].AsString() == "" {
		t.Errorf("no error.type: %v", a)
	}
	if body := scrape(t, prom); !strings.Contains(body, `strata_memory_write_errors_total{db_operation_name="upsert"`) {
		t.Errorf("no write error counted:\n%s", body)
	}
}

// TestUsageAndCacheMetrics: what a host feeds per model call reaches the
// Prometheus text: the view's tokens, the cache's tokens by outcome and
// the hit ratio; thread ids only under a hashed IDs mode.
func TestUsageAndCacheMetrics(t *testing.T) {
	prom, _ := telemetry.NewPrometheus()
	m, err := telemetry.NewMetrics(prom.Provider, telemetry.Options{IDs: telemetry.IDsHashed, HashKey: []byte("0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := core.RunInfo{ThreadID: "t-42", ResourceID: "user-7"}
	m.RecordUsage(ctx, run, &core.Usage{Total: 1200, Layers: []core.LayerUsage{{LayerID: "facts", RebillTokens: 300}}})
	m.RecordCache(ctx, run, core.CacheReport{Reported: true, ReadTokens: 900, WriteTokens: 100, UncachedTokens: 200})
	m.RecordCache(ctx, run, core.CacheReport{}) // unreported: nothing
	body := scrape(t, prom)
	for _, want := range []string{"strata_context_tokens_total{", "} 1200", "strata_context_rebill_tokens_total{",
		`strata_cache_outcome="read"`, "} 900", "strata_cache_hit_ratio_count{", "strata_cache_hit_ratio_sum{"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "t-42") || strings.Contains(body, "user-7") {
		t.Errorf("raw ids in metrics:\n%s", body)
	}
	if !strings.Contains(body, "strata_thread_id=") {
		t.Errorf("no hashed thread id:\n%s", body)
	}
	var nilM *telemetry.Metrics
	nilM.RecordUsage(ctx, run, &core.Usage{Total: 1}) // a nil Metrics records nothing, without panicking
	if _, err := telemetry.NewMetrics(prom.Provider, telemetry.Options{IDs: telemetry.IDsHashed}); !errors.Is(err, telemetry.ErrInvalidOptions) {
		t.Errorf("hashed without a key: %v", err)
	}
}

func scrape(t *testing.T, p *telemetry.Prometheus) string {
	t.Helper()
	hs := httptest.NewServer(p.Handler())
	defer hs.Close()
	resp, err := hs.Client().Get(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
