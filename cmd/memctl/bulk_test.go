package main_test

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// hnswState reads, for the pgvector collection of URL u, whether it has
// its HNSW index and whether that index was built after every row was
// written: its catalog row is newer (smaller age(xmin)) than the newest
// row of the table. An index a batch built (a COPY into the empty table)
// or that was there before the load is older than the rows of the
// batches after it; a load that deferred its indexes builds them at
// Close, after the last batch.
func hnswState(t *testing.T, dsn, u string) (present, builtAfterRows bool) {
	t.Helper()
	ctx := context.Background()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var table string
	if err := pool.QueryRow(ctx, "SELECT table_name FROM strata_vec_collections WHERE name = $1", pu.Query().Get("collection")).Scan(&table); err != nil {
		t.Fatal(err)
	}
	var indexAge *int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT age(c.xmin) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
		WHERE i.indrelid = to_regclass($1) AND am.amname = 'hnsw')`, table).Scan(&indexAge); err != nil {
		t.Fatal(err)
	}
	if indexAge == nil {
		return false, false
	}
	var rowAge int64
	if err := pool.QueryRow(ctx, "SELECT min(age(xmin)) FROM "+table).Scan(&rowAge); err != nil {
		t.Fatal(err)
	}
	return true, *indexAge < rowAge
}

type migrateReport struct {
	Source, Written, Verified int
	Batch                     int  `json:"batch"`
	DeferredIndex             bool `json:"deferred_index"`
}

func TestMigrateBulkPostgres(t *testing.T) {
	dsn := pgDSN(t)
	e := newEnv(t)
	a := filepath.Join(e.dir, "a")
	seedMany(t, e, a, 2500)

	// Into a new collection: deferred indexes, built once after the
	// last of three batches.
	pg := pgCollection(t, dsn)
	r := e.ok("--store", a, "--json", "migrate", "--to", pg, "--batch", "1000")
	var rep migrateReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if rep.Source != 2500 || rep.Written != 2500 || rep.Verified != 2500 || rep.Batch != 1000 || !rep.DeferredIndex {
		t.Errorf("migrate: %+v", rep)
	}
	if !strings.Contains(r.stderr, "building the indexes of") {
		t.Errorf("no word of the index build: %s", r.stderr)
	}
	if present, after := hnswState(t, dsn, pg); !present || !after {
		t.Errorf("deferred load: HNSW index present %v, built after the rows %v", present, after)
	}
	// The URL's defer_index=false is kept: the index built with the first
	// batch (into the empty table) takes the next batches' rows one by
	// one. This is what tells the two apart.
	pg2 := pgCollection(t, dsn)
	r = e.ok("--store", a, "--json", "migrate", "--to", pg2+"&defer_index=false", "--batch", "1000")
	rep = migrateReport{}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Verified != 2500 || rep.DeferredIndex {
		t.Errorf("migrate with defer_index=false: %v %+v", err, rep)
	}
	if present, after := hnswState(t, dsn, pg2); !present || after {
		t.Errorf("defer_index=false: HNSW index present %v, built after the rows %v", present, after)
	}
	// Run again into a collection that holds the records: nothing to
	// write, the indexes stay (no defer into a collection in use).
	r = e.ok("--store", a, "--json", "migrate", "--to", pg2)
	rep = migrateReport{}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Written != 0 || rep.DeferredIndex || rep.Batch != 10000 {
		t.Errorf("migrate into a full collection: %v %+v", err, rep)
	}
	if present, after := hnswState(t, dsn, pg2); !present || after {
		t.Errorf("second migrate: HNSW index present %v, rebuilt %v", present, after)
	}
	e.fails(2, "--batch must be in 1..10000", "--store", a, "migrate", "--to", pg2, "--batch", "0")
	e.fails(2, "--batch must be in 1..10000", "--store", a, "migrate", "--to", pg2, "--batch", "10001")
}

// TestMigrateIndexBuildFails makes the index build at the target's Close
// fail, and the migrate with it. The collection is left as an interrupted
// deferred load leaves it, its rows in and its HNSW and postings indexes
// dropped; the test holds the table in ROW EXCLUSIVE mode, as any writer
// does, which lets the load's reads and writes through but not CREATE
// INDEX (SHARE mode), and the URL's lock_timeout ends the wait. Run again
// without the lock, the migrate finds the index missing and builds it.
func TestMigrateIndexBuildFails(t *testing.T) {
	dsn := pgDSN(t)
	ctx := context.Background()
	e := newEnv(t)
	a := filepath.Join(e.dir, "a")
	seedMany(t, e, a, 1200)
	pg := pgCollection(t, dsn)
	e.ok("--store", a, "migrate", "--to", pg, "--no-state")
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	pu, _ := url.Parse(pg)
	var table string
	if err := pool.QueryRow(ctx, "SELECT table_name FROM strata_vec_collections WHERE name = $1", pu.Query().Get("collection")).Scan(&table); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "DROP INDEX "+table+"_hnsw, "+table+"_tix"); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+table+" IN ROW EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	r := e.run("--store", a, "migrate", "--to", pg+"&lock_timeout=1s", "--no-state")
	if r.code != 1 || !strings.Contains(r.stderr, "building its indexes after the load failed") || !strings.Contains(r.stderr, "lock timeout") ||
		!strings.Contains(r.stderr, "run the migrate again") || strings.Contains(r.stdout, "migrated") {
		t.Errorf("migrate whose index build fails: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if lines := strings.Count(strings.TrimSpace(r.stderr), "\n") + 1; lines != 2 {
		t.Errorf("want 2 lines on stderr (the build, the failure), got %d: %s", lines, r.stderr)
	}
	// Without lock_timeout the build waits for the lock until the bulk
	// timeout, which a --timeout given on the command line sets (the
	// driver's default is 10 minutes).
	r = e.run("--store", a, "--timeout", "2s", "migrate", "--to", pg, "--no-state")
	if r.code != 1 || !strings.Contains(r.stderr, "building its indexes after the load failed") || !strings.Contains(r.stderr, "deadline exceeded") {
		t.Errorf("migrate --timeout 2s whose index build waits: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if present, _ := hnswState(t, dsn, pg); present {
		t.Fatal("the HNSW index is there after its build failed")
	}
	r = e.ok("--store", a, "--json", "migrate", "--to", pg, "--no-state")
	var rep migrateReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Verified != 1200 || rep.Written != 0 || !rep.DeferredIndex {
		t.Errorf("migrate again: %v %+v", err, rep)
	}
	if present, _ := hnswState(t, dsn, pg); !present {
		t.Error("the migrate run again did not build the missing index")
	}
}
