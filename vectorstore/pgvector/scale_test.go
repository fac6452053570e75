package pgvector

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore/driver"
)

// BenchmarkScaleSearchTerms replays the lexical reads of semantic searches
// against an existing collection, STRATA_SCALE_COLLECTION (scalebench's
// scale_one_50000, say) in resource STRATA_SCALE_RESOURCE (default
// user-0000): per query, the ranking of the scope's messages (K 100) and
// the ranking of 200 records by id (the vector side's candidates, here
// the next query's lexical top 200). It reports the median of each, in ms.
func BenchmarkScaleSearchTerms(b *testing.B) {
	name := os.Getenv("STRATA_SCALE_COLLECTION")
	if name == "" {
		b.Skip("STRATA_SCALE_COLLECTION not set")
	}
	res := os.Getenv("STRATA_SCALE_RESOURCE")
	if res == "" {
		res = "user-0000"
	}
	ctx := context.Background()
	pool := testPool(b, testDSN(b))
	d, err := openDriver(ctx, pool, driver.Config{Name: name}, nil)
	if err != nil {
		b.Fatal(err)
	}
	c := d.(*collection)
	// Query terms of scalebench's searches (the semantic layer's analyzer
	// output).
	queries := [][]string{
		{"kemal", "kitten"}, {"anniversari", "berlin", "sister"}, {"annoy", "blood", "wednesday"},
		{"cost", "kitchen", "much", "septemb"}, {"esm", "exam"}, {"fionn", "run"}, {"mortgag", "transfer"},
		{"porto", "refund", "save"}, {"1627", "5th", "book", "cost", "euro", "ferri", "hugo", "januari"},
	}
	query := func(terms []string, k int, ids []string) (driver.TermResult, time.Duration) {
		q := driver.TermQuery{Terms: map[string]float64{}, K: k, K1: 1.2, B: 0.75,
			Filter: driver.Filter{Layer: "semantic", Kind: "message", Resource: res, IDs: ids}}
		for _, t := range terms {
			q.Terms[t] = 1
		}
		start := time.Now()
		r, err := c.SearchTerms(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		return r, time.Since(start)
	}
	others := make([][]string, len(queries))
	for i := range queries {
		r, _ := query(queries[(i+1)%len(queries)], 200, nil)
		for _, m := range r.Matches {
			others[i] = append(others[i], m.Record.ID)
		}
		slices.Sort(others[i])
	}
	var scope, byID []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, q := range queries {
			_, t := query(q, 100, nil)
			scope = append(scope, t)
			_, t = query(q, len(others[j]), others[j])
			byID = append(byID, t)
		}
	}
	med := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	b.ReportMetric(med(scope), "scope-p50-ms")
	b.ReportMetric(med(byID), "ids-p50-ms")
}
