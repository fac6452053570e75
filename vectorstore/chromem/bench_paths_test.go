package chromem

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

// BenchmarkQueryPaths compares the two query paths of a cosine collection
// on the same data: chromem-go's parallel search (queryChromem, what Query
// uses for a filter on kind and metadata only, or none) and the driver's
// own exact scan (queryScan, what it uses for every other filter). Records
// are random 512-d unit vectors, half of kind "fact", a tenth of each
// metadata value src=s0..s9; one op is a K=10 query. Both paths are called
// directly, after chromem-go has been given the records, and are checked to
// return the same ten records first.
//
//	go test -run '^$' -bench QueryPaths -count 5 ./vectorstore/chromem/
func BenchmarkQueryPaths(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10_000, 100_000} {
		c := pathsCollection(b, n)
		d := driverOf(c)
		q := randUnit(rand.New(rand.NewPCG(3, 4)), qrDim)
		for _, fc := range []struct {
			name string
			f    driver.Filter
		}{
			{"nofilter", driver.Filter{}},
			{"kind50pct", driver.Filter{Kind: "fact"}},
			{"meta10pct", driver.Filter{Metadata: map[string]string{"src": "s3"}}},
		} {
			vq := driver.VectorQuery{Vector: q, K: 10, Filter: fc.f}
			d.mu.RLock()
			a, err := d.queryChromem(ctx, &vq)
			s := d.queryScan(&vq)
			d.mu.RUnlock()
			// The same ten records; the order of two whose scores differ
			// in the last float32 bits may differ (chromem-go computes in
			// float32, the scan in float64).
			ids := func(ms []driver.Match) []string {
				out := make([]string, len(ms))
				for i := range ms {
					out[i] = ms[i].Record.ID
				}
				slices.Sort(out)
				return out
			}
			if err != nil || len(a) != 10 || !slices.Equal(ids(a), ids(s)) {
				b.Fatalf("%d %s: the paths disagree (%v)", n, fc.name, err)
			}
			b.Run(fmt.Sprintf("%dk/%s/chromem-go", n/1000, fc.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					d.mu.RLock()
					ms, err := d.queryChromem(ctx, &vq)
					d.mu.RUnlock()
					if err != nil || len(ms) != 10 {
						b.Fatal(len(ms), err)
					}
				}
			})
			b.Run(fmt.Sprintf("%dk/%s/scan", n/1000, fc.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					d.mu.RLock()
					ms := d.queryScan(&vq)
					d.mu.RUnlock()
					if len(ms) != 10 {
						b.Fatal(len(ms))
					}
				}
			})
		}
	}
}

// pathsCollection loads n records for BenchmarkQueryPaths and gives them
// to chromem-go.
func pathsCollection(b *testing.B, n int) *vectorstore.Collection {
	b.Helper()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "chromem-paths-bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	c, err := OpenCollection(ctx, dir, "bench", &vectorstore.Options{Dimension: qrDim})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	r := rand.New(rand.NewPCG(21, 22))
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := make([]vectorstore.Record, 0, 5000)
	for i := range n {
		kind := "fact"
		if i%2 == 1 {
			kind = "event"
		}
		recs = append(recs, vectorstore.Record{ID: fmt.Sprintf("r%07d", i), Layer: "semantic", Kind: kind,
			Metadata: map[string]string{"src": fmt.Sprintf("s%d", i%10)}, Vector: randUnit(r, qrDim), CreatedAt: t0.Add(time.Duration(i) * time.Second)})
		if len(recs) == cap(recs) || i == n-1 {
			if err := c.Upsert(ctx, recs...); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	d := driverOf(c)
	d.mu.RLock()
	d.ensureChromem(ctx)
	d.mu.RUnlock()
	return c
}
