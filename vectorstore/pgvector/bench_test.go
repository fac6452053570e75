package pgvector

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

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
				c, err := OpenCollection(ctx, pool, name, &vectorstore.Options{Dimension: dim}, &Options{CopyThreshold: path.copy, Index: path.index})
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
	exact, err := OpenCollection(ctx, testPool(b, testDSN(b)), name, nil, &Options{Exact: true})
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
