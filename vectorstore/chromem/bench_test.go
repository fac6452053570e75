package chromem

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

const benchDim = 512

func benchRecords(n int) []vectorstore.Record {
	r := rand.New(rand.NewPCG(1, 2))
	recs := make([]vectorstore.Record, n)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range recs {
		v := make([]float32, benchDim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		recs[i] = vectorstore.Record{ID: fmt.Sprintf("r%05d", i), Layer: "semantic", Kind: "fact",
			Scope: vectorstore.Scope{Thread: fmt.Sprint("t", i%10)}, Text: fmt.Sprintf("memory number %d", i),
			Vector: v, Metadata: map[string]string{"lang": "en"}, CreatedAt: t0.Add(time.Duration(i) * time.Second)}
	}
	return recs
}

// BenchmarkUpsert10k loads 10,000 512-d records in batches of 500 (one
// fsync per batch) into a fresh collection; one op is the whole load.
func BenchmarkUpsert10k(b *testing.B) {
	recs := benchRecords(10000)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c, err := OpenCollection(ctx, b.TempDir(), "bench", &vectorstore.Options{Dimension: benchDim})
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < len(recs); j += 500 {
			if err := c.Upsert(ctx, recs[j:j+500]...); err != nil {
				b.Fatal(err)
			}
		}
		c.Close()
	}
}

// BenchmarkUpsertOne is one single-record Upsert (one fsync) into a
// collection of 10,000.
func BenchmarkUpsertOne(b *testing.B) {
	c := loaded(b)
	recs := benchRecords(1)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		recs[0].ID = fmt.Sprint("new", i%1000)
		if err := c.Upsert(ctx, recs[0]); err != nil {
			b.Fatal(err)
		}
	}
}

func loaded(b *testing.B) *vectorstore.Collection {
	b.Helper()
	ctx := context.Background()
	c, err := OpenCollection(ctx, b.TempDir(), "bench", &vectorstore.Options{Dimension: benchDim})
	if err != nil {
		b.Fatal(err)
	}
	recs := benchRecords(10000)
	for j := 0; j < len(recs); j += 1000 {
		if err := c.Upsert(ctx, recs[j:j+1000]...); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkQueryTop10 queries the top 10 of 10,000 512-d records.
func BenchmarkQueryTop10(b *testing.B) {
	c := loaded(b)
	ctx := context.Background()
	q := benchRecords(1)[0].Vector
	q[0] += 0.5
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, bc := range []struct {
		name string
		f    vectorstore.Filter
	}{
		{"nofilter", vectorstore.Filter{}},
		{"thread", vectorstore.Filter{Thread: "t3"}},                                    // pushed into chromem's where
		{"time", vectorstore.Filter{CreatedFrom: t0.Add(5000 * time.Second)}},           // over-fetch and post-filter
		{"selective-time", vectorstore.Filter{CreatedBefore: t0.Add(50 * time.Second)}}, // widest over-fetch
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ms, err := c.Query(ctx, q, vectorstore.QueryOptions{K: 10, Filter: bc.f})
				if err != nil || len(ms) != 10 {
					b.Fatal(len(ms), err)
				}
			}
		})
	}
	// The driver's own exact scan over the same data, for comparison with
	// chromem-go's parallel search.
	b.Run("driver-scan", func(b *testing.B) {
		d := driverOf(c)
		qq := make([]float32, len(q))
		copy(qq, q)
		var n float64
		for _, x := range qq {
			n += float64(x) * float64(x)
		}
		b.ReportAllocs()
		for b.Loop() {
			d.mu.RLock()
			ms := d.queryScan(&driver.VectorQuery{Vector: qq, K: 10})
			d.mu.RUnlock()
			if len(ms) != 10 {
				b.Fatal(len(ms))
			}
		}
	})
}

// BenchmarkListPage reads one page of 100 records (newest first, after a
// cursor) from 10,000.
func BenchmarkListPage(b *testing.B) {
	c := loaded(b)
	ctx := context.Background()
	_, next, err := c.List(ctx, vectorstore.ListOptions{Limit: 100, Order: vectorstore.Descending})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		recs, _, err := c.List(ctx, vectorstore.ListOptions{Limit: 100, Order: vectorstore.Descending, PageToken: next})
		if err != nil || len(recs) != 100 {
			b.Fatal(len(recs), err)
		}
	}
}
