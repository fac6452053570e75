package chromem

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore"
)

// BenchmarkQueryResource is the semantic search of one user at scale: a
// collection of 100,000 semantic records of random 512-d unit vectors,
// 50,000 in each of two resources, tagged with their embedding model and a
// role, plus 10,000 episodic records spread over both resources; one op is
// a K=280 query within one resource and layer, restricted to one embedding
// model (50,000 matching records of the resource's 55,000). The other
// cases query the whole layer, and one user holding every record.
//
//	go test -run '^$' -bench QueryResource -benchmem -count 3 ./vectorstore/chromem/
const (
	qrDim       = 512
	qrSemantic  = 100_000
	qrEpisodic  = 10_000
	qrK         = 280
	qrResources = 2
)

// qrColls caches the loaded collections for the whole test binary.
var qrColls = map[[2]int]*vectorstore.Collection{}

// qrCollection loads qrSemantic semantic records spread evenly over
// resources, plus the episodic ones, with Upsert; reopened, it then closes
// the collection and opens it again, as a process serving a store finds
// it: replayed from the log.
func qrCollection(b *testing.B, resources int, reopened bool) *vectorstore.Collection {
	b.Helper()
	key := [2]int{resources, 0}
	if reopened {
		key[1] = 1
	}
	if c := qrColls[key]; c != nil {
		return c
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "chromem-query-bench")
	if err != nil {
		b.Fatal(err)
	}
	// The benchmarks only read; the open, unlinked log keeps working.
	defer os.RemoveAll(dir)
	c, err := OpenCollection(ctx, dir, "bench", &vectorstore.Options{Dimension: qrDim})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 13))
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const batch = 5000
	recs := make([]vectorstore.Record, 0, batch)
	flush := func() {
		if err := c.Upsert(ctx, recs...); err != nil {
			b.Fatal(err)
		}
		recs = recs[:0]
	}
	for i := 0; i < qrSemantic+qrEpisodic; i++ {
		rec := vectorstore.Record{
			ID:        fmt.Sprintf("r%07d", i),
			Scope:     vectorstore.Scope{Resource: fmt.Sprintf("u%d", i%resources)},
			Vector:    randUnit(r, qrDim),
			CreatedAt: t0.Add(time.Duration(i) * time.Second),
		}
		role := "user"
		if i/resources%2 == 1 {
			role = "assistant"
		}
		if i < qrSemantic {
			rec.Layer, rec.Kind = "semantic", "message"
			rec.Metadata = map[string]string{"embedding": "m", "role": role}
		} else {
			rec.Layer, rec.Kind = "episodic", "event"
			rec.Metadata = map[string]string{"role": role}
		}
		recs = append(recs, rec)
		if len(recs) == batch {
			flush()
		}
	}
	if len(recs) > 0 {
		flush()
	}
	if reopened {
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		if c, err = OpenCollection(ctx, dir, "bench", nil); err != nil {
			b.Fatal(err)
		}
	}
	qrColls[key] = c
	return c
}

func BenchmarkQueryResource(b *testing.B) {
	ctx := context.Background()
	q := randUnit(rand.New(rand.NewPCG(5, 6)), qrDim)
	md := map[string]string{"embedding": "m"}
	for _, bc := range []struct {
		name      string
		resources int
		reopened  bool
		f         vectorstore.Filter
	}{
		// The semantic search of one user: 50,000 semantic records of the
		// resource's 55,000.
		{"resource", qrResources, false, vectorstore.Filter{Layer: "semantic", Resource: "u0", Metadata: md}},
		// The whole layer, 100,000 records: no resource chain to read.
		{"layer", qrResources, false, vectorstore.Filter{Layer: "semantic", Metadata: md}},
		// One user with all 100,000 semantic records (and 10,000 more),
		// written, then replayed by a reopen.
		{"resource100k", 1, false, vectorstore.Filter{Layer: "semantic", Resource: "u0", Metadata: md}},
		{"resource100k-reopened", 1, true, vectorstore.Filter{Layer: "semantic", Resource: "u0", Metadata: md}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := qrCollection(b, bc.resources, bc.reopened)
			b.ReportAllocs()
			cpu0, cpuOK := processCPU()
			for b.Loop() {
				ms, err := c.Query(ctx, q, vectorstore.QueryOptions{K: qrK, Filter: bc.f})
				if err != nil || len(ms) != qrK {
					b.Fatal(len(ms), err)
				}
			}
			// CPU of the whole process, worker goroutines and GC included:
			// on a shared machine, wall time also counts waiting for a core.
			if cpu1, ok := processCPU(); ok && cpuOK {
				b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
