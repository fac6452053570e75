package pgvector

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/vectorstore"
)

// TestBulkUpsertMixed: a COPY batch into a non-empty collection that
// inserts some records and replaces others (another document, no
// document, a document for one that had none, the same document) leaves
// the term index exactly as the records say, and every written record
// gets a fresh revision.
func TestBulkUpsertMixed(t *testing.T) {
	pool := testPool(t, testDSN(t))
	for _, deferIndex := range []bool{false, true} {
		t.Run("defer_index="+strconv.FormatBool(deferIndex), func(t *testing.T) {
			c, _ := openTermColl(t, pool, "bulk_mixed", &Options{CopyThreshold: 10, DeferIndex: deferIndex})
			r := rand.New(rand.NewPCG(7, 8))
			recs := termCorpus(r, 400)
			if err := c.Upsert(ctx, recs[:200]...); err != nil {
				t.Fatal(err)
			}
			checkTermIndex(t, c)
			before := map[string]int64{}
			for rec, err := range c.All(ctx, vectorstore.ListOptions{Limit: 1000}) {
				if err != nil {
					t.Fatal(err)
				}
				before[rec.ID] = rec.Revision
			}
			// 100 replacements of loaded records and 100 new ones, in one
			// batch.
			var batch []vectorstore.Record
			for i := 100; i < 200; i++ {
				rec := recs[i].Clone()
				switch i % 4 {
				case 0:
					rec.Terms = vectorstore.Terms{"w001": 2, fmt.Sprintf("bulk%d", i): 1}
				case 1:
					rec.Terms = nil
				case 2:
					rec.Scope = vectorstore.Scope{Resource: "u2", Thread: "u2-t7"}
					if rec.Terms == nil {
						rec.Terms = vectorstore.Terms{"w003": 0.5}
					}
				}
				batch = append(batch, rec)
			}
			batch = append(batch, recs[200:300]...)
			if err := c.Upsert(ctx, batch...); err != nil {
				t.Fatal(err)
			}
			checkTermIndex(t, c)
			n := 0
			for rec, err := range c.All(ctx, vectorstore.ListOptions{Limit: 1000}) {
				if err != nil {
					t.Fatal(err)
				}
				n++
				old, had := before[rec.ID]
				i := slices.IndexFunc(batch, func(b vectorstore.Record) bool { return b.ID == rec.ID })
				switch {
				case i >= 0 && had && rec.Revision <= old:
					t.Errorf("%s rewritten at revision %d, was %d", rec.ID, rec.Revision, old)
				case i < 0 && rec.Revision != old:
					t.Errorf("%s not written, revision %d -> %d", rec.ID, old, rec.Revision)
				}
			}
			if n != 300 {
				t.Fatalf("%d records, want 300", n)
			}
			// The rest, then everything again (all replacements, same
			// content), then a delete: still exact.
			if err := c.Upsert(ctx, recs[300:]...); err != nil {
				t.Fatal(err)
			}
			if err := c.Upsert(ctx, recs...); err != nil {
				t.Fatal(err)
			}
			checkTermIndex(t, c)
			if _, err := c.DeleteWhere(ctx, vectorstore.Filter{Resource: "u1"}); err != nil {
				t.Fatal(err)
			}
			checkTermIndex(t, c)
		})
	}
}

// indexDefs returns the definitions of the HNSW and postings indexes of
// collection name ("" for a missing one), with the table name replaced by
// T so that two collections' compare.
func indexDefs(t *testing.T, pool *pgxpool.Pool, name string) (hnsw, tix string) {
	t.Helper()
	table := tableFor(name)
	if err := pool.QueryRow(ctx, "SELECT coalesce(pg_get_indexdef(to_regclass($1)), ''), coalesce(pg_get_indexdef(to_regclass($2)), '')",
		table+"_hnsw", table+"_tix").Scan(&hnsw, &tix); err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(hnsw, table, "T"), strings.ReplaceAll(tix, table, "T")
}

func hnswExists(t *testing.T, pool *pgxpool.Pool, name string) bool {
	t.Helper()
	h, x := indexDefs(t, pool, name)
	if (h == "") != (x == "") {
		t.Fatalf("HNSW index %q, postings index %q: dropped or built one without the other", h, x)
	}
	return h != ""
}

// TestDeferIndex: a DeferIndex load drops the HNSW and postings indexes
// with its first batch, answers queries exactly meanwhile, and Close
// builds them as the migrations define them; a DeferIndex handle that finds the index missing (an
// interrupted load) builds it at Close too, and a handle without the
// option leaves an existing index to every write.
func TestDeferIndex(t *testing.T) {
	pool := testPool(t, testDSN(t))
	const dim = 16
	name := fmt.Sprintf("bulk_defer_%08x", rand.Uint32())
	t.Cleanup(func() { dropCollection(t, pool, name) })
	r := rand.New(rand.NewPCG(9, 10))
	recs := make([]vectorstore.Record, 3000)
	for i := range recs {
		recs[i] = vectorstore.Record{ID: fmt.Sprintf("d%05d", i), Vector: randUnit(r, dim), Text: "t", CreatedAt: time.Unix(int64(i), 0)}
	}
	open := func(o Options) *vectorstore.Collection {
		t.Helper()
		o.Dimension = dim
		c, err := OpenCollection(ctx, pool, name, &o)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Without the option: an existing index stays through a large batch.
	c := open(Options{})
	wantH, wantX := indexDefs(t, pool, name) // as the migrations create them
	if wantH == "" || wantX == "" {
		t.Fatalf("new collection's indexes: %q, %q", wantH, wantX)
	}
	if err := c.Upsert(ctx, recs[:1000]...); err != nil {
		t.Fatal(err)
	}
	if err := c.Upsert(ctx, recs[1000:2000]...); err != nil {
		t.Fatal(err)
	}
	if !hnswExists(t, pool, name) {
		t.Fatal("index missing after loads without DeferIndex")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	d := open(Options{DeferIndex: true})
	// Any batch, below CopyThreshold too, drops the indexes.
	if err := d.Upsert(ctx, recs[2000:2010]...); err != nil {
		t.Fatal(err)
	}
	if hnswExists(t, pool, name) {
		t.Fatal("a DeferIndex batch kept the indexes")
	}
	if err := d.Upsert(ctx, recs[2010:]...); err != nil {
		t.Fatal(err)
	}
	// Meanwhile queries are exact: the nearest record to a stored vector
	// is itself.
	for _, i := range []int{0, 1500, 2999} {
		ms, err := d.Query(ctx, recs[i].Vector, vectorstore.QueryOptions{K: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 1 || ms[0].Record.ID != recs[i].ID {
			t.Fatalf("query for %s during the load: %+v", recs[i].ID, ms)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if h, x := indexDefs(t, pool, name); h != wantH || x != wantX {
		t.Fatalf("indexes built at Close:\n%s\n%s\nwant, as the migrations create them:\n%s\n%s", h, x, wantH, wantX)
	}
	n, err := open(Options{}).Count(ctx, vectorstore.Filter{})
	if err != nil || n != len(recs) {
		t.Fatalf("count %d, %v", n, err)
	}

	// An interrupted load: the index is missing when a DeferIndex handle
	// opens; it writes nothing large and still builds it at Close.
	if _, err := pool.Exec(ctx, "DROP INDEX "+tableFor(name)+"_hnsw"); err != nil {
		t.Fatal(err)
	}
	d = open(Options{DeferIndex: true})
	if err := d.Upsert(ctx, recs[:5]...); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if !hnswExists(t, pool, name) {
		t.Fatal("Close of a DeferIndex handle did not build a missing index")
	}
}

// TestBulkTimeout: a large batch is bounded by BulkTimeout, not by the
// per-call Timeout, and a small one by Timeout.
func TestBulkTimeout(t *testing.T) {
	pool := testPool(t, testDSN(t))
	c, _ := openTermColl(t, pool, "bulk_timeout", &Options{BulkTimeout: time.Minute, CopyThreshold: 1000})
	driverOf(c).opts.Timeout = time.Millisecond // after the open, which it bounds too
	r := rand.New(rand.NewPCG(11, 12))
	recs := termCorpus(r, 3000)
	if err := c.Upsert(ctx, recs[:2000]...); err != nil {
		t.Fatalf("a 2000-record batch under BulkTimeout 1m: %v", err)
	}
	var err error
	// A 1 ms bound may, on a fast enough server, be met by a write of a
	// few records: try several; one must time out.
	for i := 2000; i < 3000; i += 10 {
		if err = c.Upsert(ctx, recs[i:i+10]...); err != nil {
			break
		}
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("small batches under Timeout 1ms: %v, want a deadline error", err)
	}
}

// BenchmarkBulkLoad loads the 100,000 records of the term benchmarks'
// dataset (512 dimensions, the default embedder's; about 24 terms each)
// into a fresh collection in batches of STRATA_BULK_BATCH records (default
// 10000), as memctl migrate does, with the HNSW index maintained by every
// batch or, with STRATA_BULK_DEFER=1, built once at Close (DeferIndex).
// STRATA_BULK_N loads fewer records.
//
//	STRATA_PG_PORT=55411 bash scripts/pg.sh with go test -run '^$' \
//	  -bench BulkLoad -benchtime 1x -count 3 ./vectorstore/pgvector/
func BenchmarkBulkLoad(b *testing.B) {
	n, batch := 100000, 10000
	if s := os.Getenv("STRATA_BULK_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("STRATA_BULK_BATCH"); s != "" {
		batch, _ = strconv.Atoi(s)
	}
	deferIndex := os.Getenv("STRATA_BULK_DEFER") == "1"
	pool := testPool(b, testDSN(b))
	recs := benchRecords(true)[:n]
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := fmt.Sprintf("bench_bulk_%08x", rand.Uint32())
		c, err := OpenCollection(ctx, pool, name, &Options{Options: vectorstore.Options{Dimension: benchDim}, DeferIndex: deferIndex})
		if err != nil {
			b.Fatal(err)
		}
		cpu0, cpuOK := serverCPU(b, pool)
		var ru0 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		b.StartTimer()
		start := time.Now()
		for j := 0; j < n; j += batch {
			if err := c.Upsert(ctx, recs[j:min(j+batch, n)]...); err != nil {
				b.Fatal(err)
			}
		}
		loaded := time.Since(start)
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		b.StopTimer()
		cpu1, _ := serverCPU(b, pool)
		var ru1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		client := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
		load, _ := os.ReadFile("/proc/loadavg")
		b.Logf("%d records, batch %d, defer_index=%v: %.1f s (writes %.1f s, index build at Close %.1f s), %.0f records/s; CPU: server %.1f s, client %.1f s; load average %s",
			n, batch, deferIndex, el.Seconds(), loaded.Seconds(), (el - loaded).Seconds(), float64(n)/el.Seconds(),
			(cpu1 - cpu0).Seconds(), client.Seconds(), strings.Join(strings.Fields(string(load))[:3], " "))
		if cpuOK {
			b.ReportMetric((cpu1 - cpu0).Seconds(), "server-cpu-s")
		}
		b.ReportMetric(client.Seconds(), "client-cpu-s")
		b.ReportMetric(el.Seconds(), "s/load")
		b.ReportMetric(float64(n)/el.Seconds(), "records/s")
		dropCollection(b, pool, name)
		b.StartTimer()
	}
}

// serverCPU is the CPU time the test server has used so far, when it runs
// on this machine (pg.sh): its postmaster's reaped children (backends and
// parallel workers that exited) plus its live children. A load's wall time
// depends on what else the machine runs; its CPU time much less. ok is
// false where /proc does not show the server.
func serverCPU(b *testing.B, pool *pgxpool.Pool) (d time.Duration, ok bool) {
	var backend int
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		b.Fatal(err)
	}
	// /proc/<pid>/stat: fields after the command's closing parenthesis,
	// from field 3 (state): ppid is field 4, utime 14, stime 15, cutime 16,
	// cstime 17, in clock ticks (100 a second on Linux).
	stat := func(pid int) []string {
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return nil
		}
		s := string(raw)
		return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	}
	tick := func(f []string, i int) time.Duration {
		n, _ := strconv.ParseInt(f[i-3], 10, 64)
		return time.Duration(n) * 10 * time.Millisecond
	}
	f := stat(backend)
	if f == nil {
		return 0, false
	}
	postmaster, _ := strconv.Atoi(f[1])
	pf := stat(postmaster)
	if pf == nil {
		return 0, false
	}
	d = tick(pf, 14) + tick(pf, 15) + tick(pf, 16) + tick(pf, 17)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cf := stat(pid); cf != nil && cf[1] == strconv.Itoa(postmaster) {
			d += tick(cf, 14) + tick(cf, 15)
		}
	}
	return d, true
}
