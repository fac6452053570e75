package pgvector

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stratamem/strata/vectorstore"
)

// Upsert throughput by batch size and path: unnest (one INSERT ... SELECT
// FROM unnest) against COPY into a temporary table plus merge, with the HNSW
// index maintained and, for comparison, without an index.
//
//	scripts/pg.sh up && eval "$(scripts/pg.sh env)"
//	go test -run '^$' -bench . -benchtime 3x ./vectorstore/pgvector/
func BenchmarkUpsert(b *testing.B) {
	const dim = 384
	for _, size := range []int{1, 100, 1000, 10000} {
		for _, path := range []struct {
			name  string
			copy  int
			index string
		}{{"unnest", -1, ""}, {"copy", 1, ""}, {"unnest-noindex", -1, IndexNone}, {"copy-noindex", 1, IndexNone}} {
			if size == 1 && path.copy == 1 {
				continue
			}
			b.Run(fmt.Sprintf("batch=%d/%s", size, path.name), func(b *testing.B) {
				pool := testPool(b, testDSN(b))
				name := fmt.Sprintf("bench_up_%08x", rand.Uint32())
				b.Cleanup(func() { dropCollection(b, pool, name) })
				c, err := OpenCollection(ctx, pool, name, &Options{Options: vectorstore.Options{Dimension: dim}, CopyThreshold: path.copy, Index: path.index})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				r := rand.New(rand.NewPCG(1, 2))
				recs := make([]vectorstore.Record, size)
				for i := range recs {
					recs[i] = vectorstore.Record{ID: fmt.Sprint(i), Vector: randUnit(r, dim), Text: "text", CreatedAt: time.Unix(int64(i), 0)}
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for j := range recs {
						recs[j].ID = fmt.Sprintf("%d-%d", i, j)
					}
					if err := c.Upsert(ctx, recs...); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(size*b.N)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

// Query latency, HNSW index search against exact search, on 10000 records
// of 128 dimensions.
func BenchmarkQuery(b *testing.B) {
	const n, dim = 10000, 128
	c, name := loadRandom(b, n, dim, Options{})
	exact, err := OpenCollection(ctx, testPool(b, testDSN(b)), name, &Options{Exact: true})
	if err != nil {
		b.Fatal(err)
	}
	defer exact.Close()
	for _, m := range []struct {
		name string
		c    *vectorstore.Collection
	}{{"hnsw", c}, {"exact", exact}} {
		b.Run(m.name+"/k=10", func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 6))
			for i := 0; i < b.N; i++ {
				if _, err := m.c.Query(ctx, randUnit(r, dim), vectorstore.QueryOptions{K: 10}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The term-search and scoped-query benchmarks share one dataset, shaped
// like a semantic layer at scale: 100,000 message records, two resources
// of 50,000 (u1, u2) in threads of 40 (1,250 per resource), 512-d
// vectors, metadata {"embedding": "bench-512"} on every record (the
// vector side's filter), and a document per message of about 30 terms:
// its own 10 words at weight 1, the previous message's at 0.5 and the
// next one's at 0.25, each word a Zipf draw (s = 1.07) from a vocabulary
// of 20,000. The dataset is loaded once per server under a fixed name and
// reused by later runs (a load takes minutes); pg.sh down discards it
// with the server.
//
//	STRATA_PG_PORT=55471 bash scripts/pg.sh with go test -run '^$' \
//	  -bench 'TermSearch|QueryScope' -benchtime 200x ./vectorstore/pgvector/
const (
	benchDataName     = "bench_terms_100k_v1"
	benchResources    = 2
	benchPerResource  = 50000
	benchThreadLen    = 40
	benchDim          = 512
	benchVocab        = 20000
	benchWordsPerText = 10
)

var (
	benchDataOnce sync.Once
	benchDataErr  error
)

// benchZipf draws word ranks.
func benchZipf(r *rand.Rand) *rand.Zipf { return rand.NewZipf(r, 1.07, 1, benchVocab-1) }

func benchWord(rank uint64) string { return fmt.Sprintf("w%05d", rank) }

// benchData opens the shared dataset, loading it if the server does not
// hold it yet.
func benchData(b *testing.B) *vectorstore.Collection {
	b.Helper()
	pool := testPool(b, testDSN(b))
	benchDataOnce.Do(func() {
		c, err := OpenCollection(ctx, pool, benchDataName, &Options{Options: vectorstore.Options{Dimension: benchDim}, Timeout: -1})
		if err != nil {
			benchDataErr = err
			return
		}
		defer c.Close()
		n, err := c.Count(ctx, vectorstore.Filter{})
		if err != nil || n == benchResources*benchPerResource {
			benchDataErr = err
			return
		}
		if n != 0 {
			benchDataErr = fmt.Errorf("%s holds %d records, not %d: drop it", benchDataName, n, benchResources*benchPerResource)
			return
		}
		started := time.Now()
		recs := benchRecords(true)
		// One batch: COPY into the empty table, one HNSW build.
		if err := c.Upsert(ctx, recs...); err != nil {
			benchDataErr = err
			return
		}
		if _, err := pool.Exec(ctx, "VACUUM ANALYZE "+pgx.Identifier{tableFor(benchDataName)}.Sanitize()+", "+
			pgx.Identifier{tableFor(benchDataName) + "_terms"}.Sanitize()+", "+pgx.Identifier{tableFor(benchDataName) + "_tstats"}.Sanitize()); err != nil {
			benchDataErr = err
			return
		}
		b.Logf("loaded %s: %d records in %s", benchDataName, len(recs), time.Since(started).Round(time.Second))
	})
	if benchDataErr != nil {
		b.Fatal(benchDataErr)
	}
	c, err := OpenCollection(ctx, pool, benchDataName, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// benchRecords generates the benchmark dataset. The vectors are drawn
// from the words' generator: without them the second resource's words
// differ from the loaded dataset's.
func benchRecords(withVectors bool) []vectorstore.Record {
	r := rand.New(rand.NewPCG(11, 12))
	z := benchZipf(r)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := make([]vectorstore.Record, 0, benchResources*benchPerResource)
	for u := 0; u < benchResources; u++ {
		words := make([][]string, benchPerResource)
		for i := range words {
			words[i] = make([]string, benchWordsPerText)
			for j := range words[i] {
				words[i][j] = benchWord(z.Uint64())
			}
		}
		for i := 0; i < benchPerResource; i++ {
			th, pos := i/benchThreadLen, i%benchThreadLen
			var vec []float32
			if withVectors {
				vec = randUnit(r, benchDim)
			}
			terms := vectorstore.Terms{}
			for _, w := range words[i] {
				terms[w] += 1
			}
			if pos > 0 {
				for _, w := range words[i-1] {
					terms[w] += 0.5
				}
			}
			if pos < benchThreadLen-1 && i+1 < benchPerResource {
				for _, w := range words[i+1] {
					terms[w] += 0.25
				}
			}
			recs = append(recs, vectorstore.Record{
				ID: fmt.Sprintf("u%d-m%06d", u+1, i), Layer: "semantic", Kind: "message",
				Scope:     vectorstore.Scope{Resource: fmt.Sprintf("u%d", u+1), Thread: fmt.Sprintf("u%d-t%04d", u+1, th)},
				Text:      strings.Join(words[i], " "),
				Vector:    vec,
				Terms:     terms,
				Metadata:  map[string]string{"embedding": "bench-512"},
				CreatedAt: base.Add(time.Duration(i) * time.Minute),
			})
		}
	}
	return recs
}

// reportLatency reports the p50 and p95 of ds.
func reportLatency(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(ds[len(ds)/2]), "p50-ms")
	b.ReportMetric(ms(ds[len(ds)*95/100]), "p95-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkTermSearch: SearchTerms over one resource of 50,000 documents
// (the other resource's 50,000 in the same tables), K=50, five query terms
// drawn from the documents' Zipf distribution; over one thread; and the
// scores of 100 known ids (the hybrid ranking's second call).
func BenchmarkTermSearch(b *testing.B) {
	c := benchData(b)
	for _, bc := range []struct {
		name   string
		filter vectorstore.Filter
		k, ids int
	}{
		{"resource/k=50/terms=5", vectorstore.Filter{Layer: "semantic", Kind: "message", Resource: "u1"}, 50, 0},
		{"thread/k=50/terms=5", vectorstore.Filter{Layer: "semantic", Kind: "message", Resource: "u1", Thread: "u1-t0600"}, 50, 0},
		{"resource/ids=100/terms=5", vectorstore.Filter{Layer: "semantic", Kind: "message", Resource: "u1"}, 100, 100},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(31, 32))
			z := benchZipf(r)
			ds := make([]time.Duration, 0, b.N)
			matches := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := map[string]float64{}
				for len(q) < 5 {
					q[benchWord(z.Uint64())] = 1
				}
				f := bc.filter
				if bc.ids > 0 {
					f.IDs = make([]string, bc.ids)
					for j := range f.IDs {
						f.IDs[j] = fmt.Sprintf("u1-m%06d", r.IntN(benchPerResource))
					}
				}
				start := time.Now()
				res, err := c.SearchTerms(ctx, vectorstore.TermOptions{Terms: q, K: bc.k, Filter: f})
				ds = append(ds, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				matches += len(res.Matches)
			}
			b.StopTimer()
			b.ReportMetric(float64(matches)/float64(b.N), "matches/op")
			reportLatency(b, ds)
		})
	}
}

// BenchmarkQueryScope: the vector side of a semantic search, K=200 under
// the filter {layer, resource, metadata embedding} that nearly every row of
// the resource passes, with PostgreSQL's default plan cache mode (pgx
// prepares the statement; after five executions the generic plan) and with
// the driver's force_custom_plan.
func BenchmarkQueryScope(b *testing.B) {
	c := benchData(b)
	drv := driverOf(c)
	f := vectorstore.Filter{Layer: "semantic", Resource: "u1", Metadata: map[string]string{"embedding": "bench-512"}}
	for _, mode := range []struct{ name, planCache string }{{"default-plan-cache", ""}, {"force-custom-plan", "force_custom_plan"}} {
		b.Run(mode.name+"/k=200", func(b *testing.B) {
			drv.planCacheMode = mode.planCache
			defer func() { drv.planCacheMode = "force_custom_plan" }()
			r := rand.New(rand.NewPCG(41, 42))
			ds := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v := randUnit(r, benchDim)
				start := time.Now()
				ms, err := c.Query(ctx, v, vectorstore.QueryOptions{K: 200, Filter: f})
				ds = append(ds, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				if len(ms) != 200 {
					b.Fatalf("%d matches, want 200", len(ms))
				}
			}
			b.StopTimer()
			reportLatency(b, ds)
		})
	}
}
