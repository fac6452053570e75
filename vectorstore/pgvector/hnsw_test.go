package pgvector

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	pgv "github.com/pgvector/pgvector-go"

	"github.com/stratamem/strata/vectorstore"
)

var ctx = context.Background()

func randUnit(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// loadRandom fills a fresh collection with n random records (threads t0..t9)
// in batches of 1000, so the COPY path loads them, and returns its name.
func loadRandom(t testing.TB, n, dim int, opts Options) (*vectorstore.Collection, string) {
	t.Helper()
	pool := testPool(t, testDSN(t))
	name := fmt.Sprintf("ann_%d_%08x", n, rand.Uint32())
	t.Cleanup(func() { dropCollection(t, pool, name) })
	opts.Dimension = dim
	c, err := OpenCollection(ctx, pool, name, &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := rand.New(rand.NewPCG(1, uint64(n)))
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var batch []vectorstore.Record
	for i := 0; i < n; i++ {
		batch = append(batch, vectorstore.Record{
			ID: fmt.Sprintf("r%06d", i), Vector: randUnit(r, dim), CreatedAt: base.Add(time.Duration(i) * time.Second),
			Scope: vectorstore.Scope{Thread: fmt.Sprintf("t%d", i%10)}, Text: "record " + fmt.Sprint(i),
		})
		if len(batch) == 1000 || i == n-1 {
			if err := c.Upsert(ctx, batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, err := pool.Exec(ctx, "ANALYZE "+pgx.Identifier{tableFor(name)}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return c, name
}

// On a collection large enough for the planner to prefer it, index search
// really goes through the HNSW index, and its recall against exact search
// is high, also under a selective filter (iterative scan).
func TestHNSWIndexSearch(t *testing.T) {
	const n, dim = 5000, 32
	c, name := loadRandom(t, n, dim, Options{EfSearch: 64})
	exact, err := OpenCollection(ctx, testPool(t, testDSN(t)), name, &Options{Exact: true})
	if err != nil {
		t.Fatal(err)
	}
	defer exact.Close()

	// The plan of the index query names the HNSW index; the exact query's
	// does not.
	drv := driverOf(c)
	q := randUnit(rand.New(rand.NewPCG(7, 7)), dim)
	plan := explain(t, drv, "SELECT id FROM {table} ORDER BY "+drv.distIndex+" LIMIT 10", q)
	if !strings.Contains(plan, "Index Scan using "+tableFor(name)+"_hnsw") {
		t.Fatalf("index query does not use the HNSW index:\n%s", plan)
	}
	plan = explain(t, drv, "SELECT id, "+drv.distExact+" AS d FROM {table} ORDER BY d, id LIMIT 10", q)
	if strings.Contains(plan, "_hnsw") || !strings.Contains(plan, "Seq Scan") {
		t.Fatalf("exact query uses the HNSW index:\n%s", plan)
	}

	r := rand.New(rand.NewPCG(3, 4))
	for _, f := range []vectorstore.Filter{{}, {Thread: "t3"}} {
		hits, total := 0, 0
		for i := 0; i < 30; i++ {
			q := randUnit(r, dim)
			got, err := c.Query(ctx, q, vectorstore.QueryOptions{K: 10, Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			want, err := exact.Query(ctx, q, vectorstore.QueryOptions{K: 10, Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 10 {
				t.Fatalf("filter %+v: %d matches, want 10", f, len(got))
			}
			in := map[string]bool{}
			for _, m := range want {
				in[m.Record.ID] = true
			}
			for _, m := range got {
				if f.Thread != "" && m.Record.Scope.Thread != f.Thread {
					t.Fatalf("filter %+v returned %s of thread %s", f, m.Record.ID, m.Record.Scope.Thread)
				}
				if in[m.Record.ID] {
					hits++
				}
			}
			total += len(want)
		}
		recall := float64(hits) / float64(total)
		t.Logf("thread filter %q: recall@10 %.3f over 30 queries (n=%d, dim=%d, ef_search=64)", f.Thread, recall, n, dim)
		if recall < 0.9 {
			t.Fatalf("thread filter %q: recall@10 %.3f below 0.9", f.Thread, recall)
		}
	}
}

func explain(t *testing.T, c *collection, sql string, q []float32) string {
	t.Helper()
	var lines []string
	err := c.withConn(ctx, true, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, "EXPLAIN "+c.n.expand(sql), pgv.NewVector(q))
		if err != nil {
			return err
		}
		lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// The ef_search and iterative_scan settings of a query end with its
// transaction: the pooled connection goes back with the defaults.
func TestSearchSettingsAreTransactionLocal(t *testing.T) {
	dsn := testDSN(t)
	cfg := testPool(t, dsn).Config()
	cfg.MaxConns = 1 // one connection: the next query sees what the last left
	pool := testPoolFromConfig(t, cfg)
	name := fmt.Sprintf("efs_%08x", rand.Uint32())
	t.Cleanup(func() { dropCollection(t, pool, name) })
	c, err := OpenCollection(ctx, pool, name, &Options{Options: vectorstore.Options{Dimension: 3}, EfSearch: 321})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Upsert(ctx, vectorstore.Record{ID: "a", Vector: []float32{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Query(ctx, []float32{1, 0, 0}, vectorstore.QueryOptions{K: 1}); err != nil {
		t.Fatal(err)
	}
	var ef, scan, tuples string
	if err := pool.QueryRow(ctx, "SELECT current_setting('hnsw.ef_search'), current_setting('hnsw.iterative_scan'), current_setting('hnsw.max_scan_tuples')").Scan(&ef, &scan, &tuples); err != nil {
		t.Fatal(err)
	}
	if ef != "40" || scan != "off" || tuples != "20000" {
		t.Fatalf("after a query the connection has ef_search=%s iterative_scan=%s max_scan_tuples=%s, want the defaults 40/off/20000", ef, scan, tuples)
	}
}

// Unit check of the widening rule on a collection where HNSW would cut a
// tie: 50 identical vectors, K=3 must return the three smallest ids.
func TestIndexSearchTiesWiden(t *testing.T) {
	pool := testPool(t, testDSN(t))
	name := fmt.Sprintf("ties_%08x", rand.Uint32())
	t.Cleanup(func() { dropCollection(t, pool, name) })
	c, err := OpenCollection(ctx, pool, name, &Options{Options: vectorstore.Options{Dimension: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var recs []vectorstore.Record
	for i := 49; i >= 0; i-- {
		recs = append(recs, vectorstore.Record{ID: fmt.Sprintf("id%02d", i), Vector: []float32{1, 1}})
	}
	if err := c.Upsert(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	ms, err := c.Query(ctx, []float32{1, 0.5}, vectorstore.QueryOptions{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Record.ID)
	}
	if strings.Join(got, ",") != "id00,id01,id02" {
		t.Fatalf("tied top-3 = %v, want [id00 id01 id02]", got)
	}
}

// Without iterative index scans (pgvector before 0.8), an index answer
// short of the rows asked for under a filter is asked again exactly: a
// selective filter still gets its K best, the exact ones.
func TestIndexSearchWithoutIterativeScans(t *testing.T) {
	const n, dim = 5000, 32
	c, name := loadRandom(t, n, dim, Options{EfSearch: 40})
	exact, err := OpenCollection(ctx, testPool(t, testDSN(t)), name, &Options{Exact: true})
	if err != nil {
		t.Fatal(err)
	}
	defer exact.Close()
	if !driverOf(c).iterative {
		t.Fatal("the test server's pgvector (0.8) has iterative scans: the driver did not detect them")
	}
	// A pool whose planner takes the HNSW index whatever the filter (no
	// sorts, no bitmap scans), over the same collection, without
	// iterative scans.
	cfg := testPool(t, testDSN(t)).Config()
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "SET enable_sort = off; SET enable_bitmapscan = off; SET enable_seqscan = off")
		return err
	}
	c, err = OpenCollection(ctx, testPoolFromConfig(t, cfg), name, &Options{EfSearch: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	drv := driverOf(c)
	drv.iterative = false
	r := rand.New(rand.NewPCG(9, 10))
	f := vectorstore.Filter{Thread: "t3", CreatedBefore: time.Date(2025, 1, 1, 0, 30, 0, 0, time.UTC)} // 180 of 5000
	for i := 0; i < 10; i++ {
		q := randUnit(r, dim)
		got, err := c.Query(ctx, q, vectorstore.QueryOptions{K: 50, Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		want, err := exact.Query(ctx, q, vectorstore.QueryOptions{K: 50, Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 50 || len(want) != 50 {
			t.Fatalf("%d matches, exact %d; want 50", len(got), len(want))
		}
		if i == 0 {
			// The index alone, post-filtered, comes back short: the
			// answer above is the exact fallback's.
			plan := explain(t, drv, "SELECT id FROM {table} WHERE thread = 't3' ORDER BY "+drv.distIndex+" LIMIT 51", q)
			if !strings.Contains(plan, tableFor(name)+"_hnsw") {
				t.Fatalf("the planner does not take the HNSW index:\n%s", plan)
			}
			var short int
			err := drv.withConn(ctx, true, func(conn *pgx.Conn) error {
				return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, "SET LOCAL hnsw.ef_search = 40; SET LOCAL hnsw.iterative_scan = off"); err != nil {
						return err
					}
					return tx.QueryRow(ctx, drv.n.expand("SELECT count(*) FROM (SELECT id FROM {table} WHERE thread = 't3' AND created_at < '2025-01-01 00:30:00+00' ORDER BY "+drv.distIndex+" LIMIT 51) x"), pgv.NewVector(q)).Scan(&short)
				})
			})
			if err != nil || short >= 51 {
				t.Fatalf("the index alone returned %d rows (%v): the fallback is not exercised", short, err)
			}
		}
		for j := range want {
			if got[j].Record.ID != want[j].Record.ID {
				t.Fatalf("query %d: match %d is %s, exact %s", i, j, got[j].Record.ID, want[j].Record.ID)
			}
		}
	}
}
