package environment_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/vectorstore"
)

func TestCopyRecords(t *testing.T) {
	ctx := context.Background()
	open := func(name string) *environment.Env {
		env, err := environment.Open(ctx, filepath.Join(t.TempDir(), name), environment.Options{Embedder: hashing.New(16)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Close() })
		return env
	}
	src, dst := open("src"), open("dst")
	for _, id := range []string{"keep-1", "keep-2", "keep-3", "skip-1"} {
		put(t, src, id)
	}
	opts := environment.CopyOptions{Include: func(r *vectorstore.Record) bool { return strings.HasPrefix(r.ID, "keep") }, Batch: 2}
	var done int
	opts.Progress = func(n int) { done += n }
	res, err := environment.CopyRecords(ctx, src.Records(), dst.Records(), opts)
	if err != nil || res != (environment.CopyResult{Source: 3, Written: 3}) || done != 3 {
		t.Fatalf("copy: %+v, %d done, %v", res, done, err)
	}
	verified, target, err := environment.VerifyCopy(ctx, src.Records(), dst.Records(), opts, nil)
	if err != nil || verified != 3 || target != 3 {
		t.Fatalf("verify: %d/%d, %v", verified, target, err)
	}
	// Again: everything is there already.
	opts.Progress = nil
	if res, err := environment.CopyRecords(ctx, src.Records(), dst.Records(), opts); err != nil || res != (environment.CopyResult{Source: 3, Skipped: 3}) {
		t.Fatalf("second copy: %+v, %v", res, err)
	}
	a, err := src.Records().Get(ctx, "keep-1")
	if err != nil {
		t.Fatal(err)
	}
	b := a
	b.Text = "changed"
	if environment.SameContent(&a, &b) || environment.SameRecord(&a, &b) || !environment.SameRecord(&a, &a) {
		t.Error("SameContent/SameRecord")
	}
}

func TestDefaultBatch(t *testing.T) {
	ctx := context.Background()
	env, err := environment.Open(ctx, filepath.Join(t.TempDir(), "d"), environment.Options{Embedder: hashing.New(16)})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if got := environment.DefaultBatch(env.Records()); got != environment.SmallBatch {
		t.Errorf("embedded: DefaultBatch %d, want %d", got, environment.SmallBatch)
	}
}

// hnswOID is the oid of the HNSW index of the pgvector collection name in
// schema, 0 when it has none.
func hnswOID(t *testing.T, admin *pgxpool.Pool, schema, name string) uint32 {
	t.Helper()
	var oid uint32
	err := admin.QueryRow(context.Background(), `SELECT coalesce((SELECT i.indexrelid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		JOIN pg_am am ON am.oid = c.relam WHERE i.indrelid = to_regclass($1 || '.' || (SELECT table_name FROM `+schema+`.strata_vec_collections WHERE name = $2))
		AND am.amname = 'hnsw'), 0)`, schema, name).Scan(&oid)
	if err != nil {
		t.Fatal(err)
	}
	return oid
}

// TestCopyRecordsBulkPath copies into pgvector with the default batch,
// which must take the driver's COPY path: a load into an empty table
// drops the HNSW index and builds it once after the rows, so the index
// is a new one afterwards; the INSERT path of a batch under the copy
// threshold (the old default of 500) keeps the index the table was
// created with.
func TestCopyRecordsBulkPath(t *testing.T) {
	ctx := context.Background()
	base, admin, schema := pgURL(t)
	src, err := environment.Open(ctx, filepath.Join(t.TempDir(), "src"), environment.Options{Embedder: hashing.New(16)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	const n = 1500 // one default batch, three of 500
	recs := make([]vectorstore.Record, n)
	for i := range recs {
		v := make([]float32, 16)
		v[i%16], v[(i+1)%16] = 1, float32(i%7)/7
		recs[i] = vectorstore.Record{ID: fmt.Sprintf("r%05d", i), Layer: "x", Text: fmt.Sprintf("record %d", i), Vector: v}
	}
	if err := src.Records().Upsert(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		batch   int
		newHNSW bool
	}{{"bulk", 0, true}, {"small", 500, false}} {
		t.Run(c.name, func(t *testing.T) {
			dst, err := environment.Open(ctx, withCollection(base, c.name), environment.Options{Embedder: hashing.New(16), NoState: true})
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			if c.batch == 0 {
				if got := environment.DefaultBatch(dst.Records()); got != environment.BulkBatch {
					t.Fatalf("pgvector: DefaultBatch %d, want %d", got, environment.BulkBatch)
				}
			}
			before := hnswOID(t, admin, schema, c.name)
			if before == 0 {
				t.Fatal("a new collection has no HNSW index")
			}
			batches := 0
			res, err := environment.CopyRecords(ctx, src.Records(), dst.Records(), environment.CopyOptions{Batch: c.batch, Progress: func(int) { batches++ }})
			if err != nil || res != (environment.CopyResult{Source: n, Written: n}) {
				t.Fatalf("copy: %+v, %v", res, err)
			}
			after := hnswOID(t, admin, schema, c.name)
			if want := map[bool]int{true: 1, false: 3}[c.newHNSW]; batches != want {
				t.Errorf("%d batches, want %d", batches, want)
			}
			if after == 0 || (after != before) != c.newHNSW {
				t.Errorf("HNSW index oid %d before the copy, %d after: want a new index %v", before, after, c.newHNSW)
			}
			verified, target, err := environment.VerifyCopy(ctx, src.Records(), dst.Records(), environment.CopyOptions{Batch: c.batch}, nil)
			if err != nil || verified != n || target != n {
				t.Errorf("verify: %d/%d, %v", verified, target, err)
			}
		})
	}
}
