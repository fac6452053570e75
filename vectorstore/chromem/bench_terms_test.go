package chromem

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore/driver"
)

// The term benchmarks run over a collection of 100,000 message-like
// records: two resources of 50,000, threads of 40 (1,250 per resource),
// one layer and kind, each record a document of about 30 distinct terms
// drawn Zipf-like from a 20,000-term vocabulary, weighted 1, 0.5 or 0.25
// (a message's own words, its neighbours'). The vectors are tiny: they play
// no part here.
//
//	go test -run '^$' -bench 'TermSearch|TermIndex' -benchmem ./vectorstore/chromem/
const (
	termBenchN       = 100_000
	termBenchPerRes  = 50_000
	termBenchThread  = 40
	termBenchVocab   = 20_000
	termBenchPerDoc  = 30
	termBenchQueries = 64
)

var termBenchColl *collection

func termBenchZipf(r *rand.Rand) *rand.Zipf {
	return rand.NewZipf(r, 1.1, 1, termBenchVocab-1)
}

// termBenchRecord is record i: resource i/50,000, thread (i%50,000)/40.
func termBenchRecord(r *rand.Rand, z *rand.Zipf, i int) driver.Record {
	res := i / termBenchPerRes
	terms := make(driver.Terms, termBenchPerDoc)
	for len(terms) < termBenchPerDoc {
		terms[fmt.Sprintf("v%d", z.Uint64())] = genWeights[r.IntN(len(genWeights))]
	}
	return driver.Record{
		ID:        fmt.Sprintf("m%06d", i),
		Layer:     "episodic",
		Kind:      "message",
		Scope:     driver.Scope{Resource: fmt.Sprintf("u%d", res), Thread: fmt.Sprintf("u%d-t%04d", res, (i%termBenchPerRes)/termBenchThread)},
		Vector:    []float32{1, 0, 0, 0},
		Terms:     terms,
		CreatedAt: scopeT0.Add(time.Duration(i) * time.Second),
	}
}

// termBenchCollection loads the collection once per test binary; its
// directory goes right after loading (the benchmarks only read).
func termBenchCollection(b testing.TB) *collection {
	if termBenchColl != nil {
		return termBenchColl
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "chromem-terms-bench")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	d, err := openDriver(ctx, dir, driver.Config{Name: "bench", Dimension: 4})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	z := termBenchZipf(r)
	const batch = 5000
	recs := make([]driver.Record, 0, batch)
	for i := 0; i < termBenchN; i++ {
		recs = append(recs, termBenchRecord(r, z, i))
		if len(recs) == batch {
			if err := d.Upsert(ctx, recs); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	termBenchColl = d.(*collection)
	return termBenchColl
}

// termBenchQueries are queries of 5 distinct terms drawn from the
// documents' own distribution, so most hold a few of the commonest terms
// (in most documents) and some rarer ones: the postings of a query over
// one resource run to some 60,000 entries.
func termBenchQueryTerms() []map[string]float64 {
	r := rand.New(rand.NewPCG(13, 14))
	z := termBenchZipf(r)
	qs := make([]map[string]float64, termBenchQueries)
	for i := range qs {
		q := map[string]float64{}
		for len(q) < 5 {
			q[fmt.Sprintf("v%d", z.Uint64())] = 1
		}
		qs[i] = q
	}
	return qs
}

var termBenchCases = []struct {
	name      string
	f         driver.Filter
	noPruning bool // score every posting (scoreGroups), for comparison
}{
	// 50,000 documents over 1,250 thread groups.
	{"resource", driver.Filter{Layer: "episodic", Resource: "u1"}, false},
	{"resource-nopruning", driver.Filter{Layer: "episodic", Resource: "u1"}, true},
	// 40 documents.
	{"thread", driver.Filter{Layer: "episodic", Resource: "u1", Thread: "u1-t0007"}, false},
	// All 100,000.
	{"layer", driver.Filter{Layer: "episodic"}, false},
	// A filter no document passes: every candidate is tested.
	{"resource+metadata", driver.Filter{Layer: "episodic", Resource: "u1", Metadata: map[string]string{"lang": "en"}}, false},
}

// BenchmarkTermSearch is SearchTerms (K=50, 5 terms) with every group
// built (the steady state: warmed up by one pass over the queries). It
// reports the corpus size and the postings of the query's terms in it
// (what scoreGroups reads; scorePruned reads some 7% of them here), and,
// on Linux, the CPU time of the searching thread per search (cpu-ns/op),
// which a machine shared with other work inflates less than ns/op.
func BenchmarkTermSearch(b *testing.B) {
	c := termBenchCollection(b)
	ctx := context.Background()
	queries := termBenchQueryTerms()
	for _, tc := range termBenchCases {
		b.Run(tc.name, func(b *testing.B) {
			if tc.noPruning {
				defer func(v int) { prunedMinPostings = v }(prunedMinPostings)
				prunedMinPostings = math.MaxInt
			}
			q := driver.TermQuery{K: 50, K1: 1.2, B: 0.75, Filter: tc.f}
			var docs, postings int
			for _, terms := range queries { // warm-up: builds the groups
				q.Terms = terms
				res, err := c.SearchTerms(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				docs = res.Docs
				for _, n := range res.DocFreq {
					postings += n
				}
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0, cpuOK := threadCPU()
			i := 0
			for b.Loop() {
				q.Terms = queries[i%len(queries)]
				i++
				if _, err := c.SearchTerms(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
			if cpu1, ok := threadCPU(); ok && cpuOK {
				b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
			}
			b.ReportMetric(float64(docs), "docs")
			b.ReportMetric(float64(postings)/float64(len(queries)), "postings/op")
		})
	}
}

// BenchmarkTermSearchFirst is the first SearchTerms after open (or after
// the index was dropped): it registers the layer's groups (a pass over the
// layer's 100,000 records) and builds the postings of the corpus' groups,
// then answers. The thread case builds one group of 40 documents.
func BenchmarkTermSearchFirst(b *testing.B) {
	c := termBenchCollection(b)
	ctx := context.Background()
	terms := termBenchQueryTerms()[0]
	for _, i := range []int{0, 2, 3} {
		tc := termBenchCases[i]
		b.Run(tc.name, func(b *testing.B) {
			q := driver.TermQuery{Terms: terms, K: 50, K1: 1.2, B: 0.75, Filter: tc.f}
			for b.Loop() {
				b.StopTimer()
				c.mu.Lock()
				c.terms.reset()
				c.mu.Unlock()
				runtime.GC()
				b.StartTimer()
				if _, err := c.SearchTerms(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
			c.mu.Lock()
			c.terms.reset()
			c.mu.Unlock()
		})
	}
}

// BenchmarkTermIndexMemory reports the heap the term index takes per
// document once the whole layer is built: 3,000,000 postings for 100,000
// documents in 2,500 groups (the records' own Terms not included).
func BenchmarkTermIndexMemory(b *testing.B) {
	c := termBenchCollection(b)
	ctx := context.Background()
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	q := driver.TermQuery{Terms: map[string]float64{"v1": 1}, K: 1, K1: 1.2, B: 0.75, Filter: driver.Filter{Layer: "episodic"}}
	var perDoc float64
	for b.Loop() {
		c.mu.Lock()
		c.terms.reset()
		c.mu.Unlock()
		before := heap()
		if _, err := c.SearchTerms(ctx, q); err != nil {
			b.Fatal(err)
		}
		perDoc = float64(heap()-before) / termBenchN
	}
	c.mu.Lock()
	c.terms.reset()
	c.mu.Unlock()
	b.ReportMetric(perDoc, "B/doc")
}
