package pgvector

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore"
)

// BenchmarkBulkMigrate is the load of memctl migrate into pgvector: N
// (STRATA_BULK_N, required: the benchmark skips without it) synthetic
// chat messages, each a random unit 512-d vector (the USE-lite model's
// dimension), a text of about 200 bytes, metadata, and the lexical
// document the semantic layer writes (the message's words at weight 1,
// the two neighbours on each side at 0.5 and 0.25: about 80 terms), into
// a fresh collection opened with DeferIndex, in batches of 10,000
// (STRATA_BULK_BATCH), Close building the indexes. One load per
// iteration; the log line splits the wall time into the batches and the
// index build (the driver's own log line splits the build).
//
//	STRATA_BULK_N=100000 STRATA_PG_PORT=55482 bash scripts/pg.sh with \
//	  go test -run '^$' -bench BulkMigrate -benchtime 1x -count 3 ./vectorstore/pgvector/
//
// STRATA_BULK_TERMS=0 loads the records without documents (to tell the
// term index's share from the vectors').
func BenchmarkBulkMigrate(b *testing.B) {
	s := os.Getenv("STRATA_BULK_N")
	if s == "" {
		b.Skip("STRATA_BULK_N is not set")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("STRATA_BULK_N=%q: want a positive number", s)
	}
	batch := 10000
	if s := os.Getenv("STRATA_BULK_BATCH"); s != "" {
		if batch, err = strconv.Atoi(s); err != nil || batch < 1 {
			b.Fatalf("STRATA_BULK_BATCH=%q: want a positive number", s)
		}
	}
	recs := migrateRecords(n, os.Getenv("STRATA_BULK_TERMS") != "0")
	terms := 0
	for i := range recs {
		terms += len(recs[i].Terms)
	}
	pool := testPool(b, testDSN(b))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := fmt.Sprintf("bench_migrate_%08x", rand.Uint32())
		c, err := OpenCollection(ctx, pool, name, &Options{Options: vectorstore.Options{Dimension: benchDim}, DeferIndex: true})
		if err != nil {
			b.Fatal(err)
		}
		cpu0, cpuOK := serverCPU(b, pool)
		b.StartTimer()
		start := time.Now()
		var slowest time.Duration
		for j := 0; j < n; j += batch {
			t0 := time.Now()
			if err := c.Upsert(ctx, recs[j:min(j+batch, n)]...); err != nil {
				b.Fatal(err)
			}
			slowest = max(slowest, time.Since(t0))
		}
		loaded := time.Since(start)
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		b.StopTimer()
		cpu1, _ := serverCPU(b, pool)
		load, _ := os.ReadFile("/proc/loadavg")
		b.Logf("%d records (%.0f terms each), batch %d: %.1f s = batches %.1f s (slowest %.1f s) + index build at Close %.1f s; server CPU %.1f s; load average %s",
			n, float64(terms)/float64(n), batch, el.Seconds(), loaded.Seconds(), slowest.Seconds(), (el - loaded).Seconds(),
			(cpu1 - cpu0).Seconds(), strings.Join(strings.Fields(string(load))[:3], " "))
		if cpuOK {
			// The wall time depends on what else the machine runs; the
			// server's CPU time much less.
			b.ReportMetric((cpu1 - cpu0).Seconds(), "server-cpu-s")
		}
		b.ReportMetric(el.Seconds(), "s/load")
		b.ReportMetric(loaded.Seconds(), "batches-s")
		b.ReportMetric((el - loaded).Seconds(), "build-s")
		b.ReportMetric(0, "ns/op")
		dropCollection(b, pool, name)
		b.StartTimer()
	}
}

// migrateRecords makes n chat messages in threads of 50, two resources,
// with the semantic layer's documents when withTerms.
func migrateRecords(n int, withTerms bool) []vectorstore.Record {
	r := rand.New(rand.NewPCG(21, 22))
	z := benchZipf(r)
	const threadLen = 50
	words := make([][]string, n)
	for i := range words {
		// About 200 bytes: word lengths 3 to 9, a space after each.
		var w []string
		for size := 0; size < 200; {
			rank := z.Uint64()
			word := migrateWord(rank)
			w = append(w, word)
			size += len(word) + 1
		}
		words[i] = w
	}
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := make([]vectorstore.Record, n)
	for i := range recs {
		th, pos := i/threadLen, i%threadLen
		var terms vectorstore.Terms
		if withTerms {
			terms = vectorstore.Terms{}
			for d, w := range []float32{1, 0.5, 0.25} {
				for _, j := range []int{i - d, i + d} {
					if j < 0 || j >= n || j/threadLen != th {
						continue
					}
					for _, word := range words[j] {
						terms[word] += w
					}
					if d == 0 {
						break
					}
				}
			}
		}
		v := randUnit(r, benchDim)
		var norm float64
		for _, x := range v {
			norm += float64(x) * float64(x)
		}
		norm = math.Sqrt(norm)
		for k := range v {
			v[k] = float32(float64(v[k]) / norm)
		}
		res := fmt.Sprintf("u%d", th%2+1)
		recs[i] = vectorstore.Record{
			ID: fmt.Sprintf("m%07d", i), Layer: "semantic", Kind: "message",
			Scope:     vectorstore.Scope{Resource: res, Thread: fmt.Sprintf("%s-t%05d", res, th)},
			Text:      strings.Join(words[i], " "),
			Vector:    v,
			Terms:     terms,
			Metadata:  map[string]string{"embedding": "use-lite-512", "role": []string{"user", "assistant"}[pos%2]},
			CreatedAt: base.Add(time.Duration(i) * time.Second),
		}
	}
	return recs
}

// migrateWord is the word of a Zipf rank: its letters in base 26, padded
// to 3 to 9 letters.
func migrateWord(rank uint64) string {
	b := make([]byte, 3+rank%7)
	for i := range b {
		b[i] = 'a' + byte(rank%26)
		rank /= 26
	}
	return string(b)
}
