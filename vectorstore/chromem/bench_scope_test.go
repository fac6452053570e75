package chromem

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore"
)

// The scope benchmarks measure calls confined to one resource (user) of
// scopePerResource records in collections of growing size spread over
// n/scopePerResource resources, against the same calls over the whole
// collection. With the scope index the scoped figures stay flat as the
// collection grows; the whole-collection ones grow linearly.
//
//	go test -run '^$' -bench Scope -benchmem -count 5 ./vectorstore/chromem/
//
// Set STRATA_SCOPE_BENCH_MAX (records, default 200000) to skip the larger
// collections on a small machine.
const (
	scopeDim         = 384
	scopePerResource = 500
	scopeThreads     = 5 // per resource
)

var scopeSizes = []int{10_000, 100_000, 200_000}

// scopeColls caches one loaded collection per size for the whole test
// binary, so that -count 5 loads each once. Its directory is removed right
// after loading: the benchmarks only read, and the open (unlinked) log
// keeps working, so nothing is left behind in the temp directory.
var scopeColls = map[int]*vectorstore.Collection{}

func scopeMax() int {
	if s := os.Getenv("STRATA_SCOPE_BENCH_MAX"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return 200_000
}

func randUnit(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	var n float64
	for j := range v {
		x := r.NormFloat64()
		v[j] = float32(x)
		n += x * x
	}
	n = math.Sqrt(n)
	for j := range v {
		v[j] = float32(float64(v[j]) / n)
	}
	return v
}

// scopeResource names the resource of record i in a collection of n; the
// records of one resource are spread evenly over the whole collection (and
// its creation times).
func scopeResource(i, n int) string { return fmt.Sprintf("u%05d", i%(n/scopePerResource)) }

func scopeRecord(r *rand.Rand, i, n int) vectorstore.Record {
	res := n / scopePerResource
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	layer := "semantic"
	if (i/res)%2 == 1 {
		layer = "episodic"
	}
	return vectorstore.Record{
		ID:        fmt.Sprintf("r%07d", i),
		Layer:     layer,
		Kind:      "fact",
		Scope:     vectorstore.Scope{Resource: scopeResource(i, n), Thread: fmt.Sprintf("%s-t%d", scopeResource(i, n), (i/res)%scopeThreads)},
		Text:      fmt.Sprintf("memory number %d", i),
		Vector:    randUnit(r, scopeDim),
		CreatedAt: t0.Add(time.Duration(i) * time.Second),
	}
}

func scopeCollection(b *testing.B, n int) *vectorstore.Collection {
	b.Helper()
	if n > scopeMax() {
		b.Skipf("n=%d above STRATA_SCOPE_BENCH_MAX", n)
	}
	if c, ok := scopeColls[n]; ok {
		return c
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "chromem-scope-bench")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c, err := OpenCollection(ctx, dir, "bench", &vectorstore.Options{Dimension: scopeDim})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(uint64(n), 7))
	const batch = 5000
	recs := make([]vectorstore.Record, 0, batch)
	for i := 0; i < n; i++ {
		recs = append(recs, scopeRecord(r, i, n))
		if len(recs) == batch || i == n-1 {
			if err := c.Upsert(ctx, recs...); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	scopeColls[n] = c
	return c
}

// scopeCase is one benchmarked filter: the scope of one resource, or the
// whole collection as the full-scan baseline.
type scopeCase struct {
	name string
	f    func(n int) vectorstore.Filter
}

const scopeUser = 7 // the benchmarked resource: u00007

var scopeQueryCases = []scopeCase{
	{"resource", func(n int) vectorstore.Filter { return vectorstore.Filter{Resource: scopeResource(scopeUser, n)} }},
	{"resource+layer", func(n int) vectorstore.Filter {
		return vectorstore.Filter{Resource: scopeResource(scopeUser, n), Layer: "semantic"}
	}},
	{"thread", func(n int) vectorstore.Filter {
		return vectorstore.Filter{Thread: scopeResource(scopeUser, n) + "-t1"}
	}},
	// Not a scope: half of the collection, the index's worst case.
	{"layer", func(int) vectorstore.Filter { return vectorstore.Filter{Layer: "semantic"} }},
	{"all", func(int) vectorstore.Filter { return vectorstore.Filter{} }},
}

// BenchmarkScopeQuery is a k=10 vector query within one resource of 500
// records (or its 250 of one layer, or one of its threads, of 100), within
// one of the two layers (half the collection), and over the whole
// collection.
func BenchmarkScopeQuery(b *testing.B) {
	ctx := context.Background()
	q := randUnit(rand.New(rand.NewPCG(3, 4)), scopeDim)
	for _, n := range scopeSizes {
		b.Run(fmt.Sprintf("n=%dk", n/1000), func(b *testing.B) {
			c := scopeCollection(b, n)
			for _, sc := range scopeQueryCases {
				f := sc.f(n)
				b.Run(sc.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						ms, err := c.Query(ctx, q, vectorstore.QueryOptions{K: 10, Filter: f})
						if err != nil || len(ms) != 10 {
							b.Fatal(len(ms), err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkScopeList reads pages of 100 records, newest first: the first
// page of one resource, the page after it (keyset paging), and the first
// page of the whole collection.
func BenchmarkScopeList(b *testing.B) {
	ctx := context.Background()
	for _, n := range scopeSizes {
		b.Run(fmt.Sprintf("n=%dk", n/1000), func(b *testing.B) {
			c := scopeCollection(b, n)
			res := vectorstore.Filter{Resource: scopeResource(scopeUser, n)}
			_, next, err := c.List(ctx, vectorstore.ListOptions{Filter: res, Limit: 100, Order: vectorstore.Descending})
			if err != nil {
				b.Fatal(err)
			}
			for _, bc := range []struct {
				name string
				opts vectorstore.ListOptions
			}{
				{"resource", vectorstore.ListOptions{Filter: res, Limit: 100, Order: vectorstore.Descending}},
				{"resource-page2", vectorstore.ListOptions{Filter: res, Limit: 100, Order: vectorstore.Descending, PageToken: next}},
				{"all", vectorstore.ListOptions{Limit: 100, Order: vectorstore.Descending}},
			} {
				b.Run(bc.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						recs, _, err := c.List(ctx, bc.opts)
						if err != nil || len(recs) != 100 {
							b.Fatal(len(recs), err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkScopeCount counts one resource's records (500), its records of
// one layer (250), and the records of one kind, which no index narrows: a
// full scan (the zero filter is answered from the map size).
func BenchmarkScopeCount(b *testing.B) {
	ctx := context.Background()
	for _, n := range scopeSizes {
		b.Run(fmt.Sprintf("n=%dk", n/1000), func(b *testing.B) {
			c := scopeCollection(b, n)
			u := scopeResource(scopeUser, n)
			for _, bc := range []struct {
				name string
				f    vectorstore.Filter
				want int
			}{
				{"resource", vectorstore.Filter{Resource: u}, scopePerResource},
				{"resource+layer", vectorstore.Filter{Resource: u, Layer: "semantic"}, scopePerResource / 2},
				{"all-kind", vectorstore.Filter{Kind: "fact"}, n},
			} {
				b.Run(bc.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						got, err := c.Count(ctx, bc.f)
						if err != nil || got != bc.want {
							b.Fatal(got, err)
						}
					}
				})
			}
		})
	}
}
