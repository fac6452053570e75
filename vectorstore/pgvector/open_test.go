package pgvector

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

func TestOpenInvalidOptions(t *testing.T) {
	pool := testPool(t, testDSN(t))
	cfg := driver.Config{Name: "never_created", Dimension: 4}
	for _, o := range []Options{
		{Index: "ivfflat"}, {M: 1}, {M: 101}, {EfConstruction: 3}, {M: 40, EfConstruction: 64},
		{EfSearch: -1}, {EfSearch: 1001}, {Schema: "bad-schema"}, {Schema: `a"b`},
	} {
		_, err := openDriver(ctx, pool, cfg, &o)
		if !errors.Is(err, driver.ErrInvalidArgument) {
			t.Errorf("options %+v: %v, want ErrInvalidArgument", o, err)
		}
	}
	for _, c := range []driver.Config{
		{Name: "", Dimension: 4},
		{Name: "x\x00y", Dimension: 4},
		{Name: "never_created", Dimension: 16001},
		{Name: "never_created", Dimension: 0}, // does not exist: needs a dimension
		{Name: "never_created", Dimension: 4, Distance: "manhattan"},
	} {
		if _, err := openDriver(ctx, pool, c, nil); !errors.Is(err, driver.ErrInvalidArgument) {
			t.Errorf("config %+v: %v, want ErrInvalidArgument", c, err)
		}
	}
	if _, err := openDriver(ctx, nil, cfg, nil); !errors.Is(err, driver.ErrInvalidArgument) {
		t.Errorf("nil pool: %v", err)
	}
	// An explicit HNSW index beyond pgvector's 2000 dimensions is refused...
	if _, err := openDriver(ctx, pool, driver.Config{Name: "never_created", Dimension: 2001}, &Options{Index: IndexHNSW}); !errors.Is(err, driver.ErrInvalidArgument) {
		t.Errorf("hnsw at 2001 dimensions: %v", err)
	}
	// ...and the default falls back to no index.
	name := fmt.Sprintf("wide_%08x", rand.Uint32())
	t.Cleanup(func() { dropCollection(t, pool, name) })
	c, err := OpenCollection(ctx, pool, name, &Options{Options: vectorstore.Options{Dimension: 3000}})
	if err != nil {
		t.Fatalf("3000 dimensions without index: %v", err)
	}
	defer c.Close()
	v := make([]float32, 3000)
	v[7] = 1
	if err := c.Upsert(ctx, vectorstore.Record{ID: "w", Vector: v}); err != nil {
		t.Fatal(err)
	}
	if ms, err := c.Query(ctx, v, vectorstore.QueryOptions{K: 1}); err != nil || len(ms) != 1 || ms[0].Record.ID != "w" {
		t.Fatalf("query 3000-d: %v, %v", ms, err)
	}
	var index string
	if err := pool.QueryRow(ctx, "SELECT index_method FROM strata_vec_collections WHERE name = $1", name).Scan(&index); err != nil || index != IndexNone {
		t.Fatalf("index_method %q, %v; want none", index, err)
	}
}

// Any collection name maps to its own valid table; the catalog lists it and
// DropCollection removes it.
func TestCollectionNames(t *testing.T) {
	pool := testPool(t, testDSN(t))
	suffix := fmt.Sprintf("%08x", rand.Uint32())
	names := []string{
		"Memories-EN/" + suffix, "memories-en/" + suffix, "mémoire " + suffix, "🧠" + suffix,
		strings.Repeat("x", 200) + suffix, "plain_" + suffix, `"; DROP TABLE x; --` + suffix,
	}
	tables := map[string]string{}
	for _, name := range names {
		tb := tableFor(name)
		if !identRE.MatchString(tb) || len(tb) > 55 {
			t.Fatalf("table %q for %q is not a short identifier", tb, name)
		}
		if other, dup := tables[tb]; dup {
			t.Fatalf("names %q and %q share table %q", name, other, tb)
		}
		tables[tb] = name
		c, err := OpenCollection(ctx, pool, name, &Options{Options: vectorstore.Options{Dimension: 2}})
		if err != nil {
			t.Fatalf("open %q: %v", name, err)
		}
		if err := c.Upsert(ctx, vectorstore.Record{ID: name, Vector: []float32{1, 2}}); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	infos, err := ListCollections(ctx, pool, "")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, in := range infos {
		listed[in.Name] = in.Dimension == 2 && in.Distance == driver.DistanceCosine
	}
	for _, name := range names {
		if !listed[name] {
			t.Errorf("ListCollections misses %q", name)
		}
		c, err := OpenCollection(ctx, pool, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := c.Count(ctx, vectorstore.Filter{}); err != nil || n != 1 {
			t.Fatalf("%q holds %d records, %v; want its own 1", name, n, err)
		}
		c.Close()
		if err := DropCollection(ctx, pool, "", name); err != nil {
			t.Fatalf("drop %q: %v", name, err)
		}
		if err := DropCollection(ctx, pool, "", name); !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("second drop of %q: %v, want ErrNotFound", name, err)
		}
	}
}

// Collections can live in a schema of their own. The collection name is
// unique to the run: the test must not depend on what the database's
// public schema already holds (a "memories" collection, say).
func TestSchemaOption(t *testing.T) {
	pool := testPool(t, testDSN(t))
	schema := fmt.Sprintf("strata_s%08x", rand.Uint32())
	name := fmt.Sprintf("schemaopt_%08x", rand.Uint32())
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	c, err := OpenCollection(ctx, pool, name, &Options{Options: vectorstore.Options{Dimension: 2}, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Upsert(ctx, vectorstore.Record{ID: "a", Vector: []float32{1, 0}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpsertIf(ctx, vectorstore.Record{ID: "b", Vector: []float32{1, 0}}, 0); err != nil {
		t.Fatalf("conditional write in a schema (its sequence lives there too): %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, tableFor(name)}.Sanitize()).Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows in %s.%s: %d, %v", schema, tableFor(name), n, err)
	}
	var public bool
	err = pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM strata_vec_collections WHERE name = $1)", name).Scan(&public)
	if err != nil && !isUndefinedTable(err) {
		t.Fatal(err)
	}
	if public {
		t.Fatal("collection registered in the public catalog too")
	}
	if err := pool.QueryRow(ctx, "SELECT to_regclass($1) IS NULL", tableFor(name)+"_rev").Scan(&public); err != nil || !public {
		t.Fatalf("revision sequence created outside the schema (%v)", err)
	}
}

// TestDroppedTable: a collection table dropped out of band leaves its
// catalog row and migration records. An open handle reports the missing
// table plainly; the next open re-creates it (empty, with its indexes),
// and revisions continue above those handed out before.
func TestDroppedTable(t *testing.T) {
	pool := testPool(t, testDSN(t))
	name := fmt.Sprintf("dropped_%08x", rand.Uint32())
	t.Cleanup(func() { dropCollection(t, pool, name) })
	c, err := OpenCollection(ctx, pool, name, &Options{Options: vectorstore.Options{Dimension: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Upsert(ctx, vectorstore.Record{ID: "a", Vector: []float32{1, 0}}); err != nil {
		t.Fatal(err)
	}
	old, err := c.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "DROP TABLE "+pgx.Identifier{tableFor(name)}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Count(ctx, vectorstore.Filter{}); err == nil || !strings.Contains(err.Error(), "dropped outside strata") {
		t.Fatalf("count on the dropped table: %v, want an error saying the table is missing", err)
	}
	c2, err := OpenCollection(ctx, pool, name, nil)
	if err != nil {
		t.Fatalf("reopen after the table was dropped: %v", err)
	}
	defer c2.Close()
	if in := c2.Info(); in.Dimension != 2 {
		t.Fatalf("re-created collection: %+v", in)
	}
	if n, err := c2.Count(ctx, vectorstore.Filter{}); err != nil || n != 0 {
		t.Fatalf("count after re-creation: %d %v", n, err)
	}
	rev, err := c2.UpsertIf(ctx, vectorstore.Record{ID: "a", Vector: []float32{1, 0}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rev <= old.Revision {
		t.Fatalf("revision %d in the re-created table, %d before the drop", rev, old.Revision)
	}
	var idx int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_indexes WHERE tablename = $1", tableFor(name)).Scan(&idx); err != nil || idx != 7 {
		t.Fatalf("%d indexes on the re-created table (%v), want 7", idx, err)
	}
	// The handle opened before the drop works again too.
	if n, err := c.Count(ctx, vectorstore.Filter{}); err != nil || n != 1 {
		t.Fatalf("old handle after re-creation: %d %v", n, err)
	}
}

// TestRevisionMigration: a table created before revisions existed gains
// the column on open; its rows are at revision 1 and later writes above.
func TestRevisionMigration(t *testing.T) {
	pool := testPool(t, testDSN(t))
	name := fmt.Sprintf("premig_%08x", rand.Uint32())
	t.Cleanup(func() { dropCollection(t, pool, name) })
	c, err := OpenCollection(ctx, pool, name, &Options{Options: vectorstore.Options{Dimension: 2}, Index: IndexNone})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Upsert(ctx, vectorstore.Record{ID: "old", Text: "before", Vector: []float32{1, 0}}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	// Back to the schema of version 1.
	table := pgx.Identifier{tableFor(name)}.Sanitize()
	for _, sql := range []string{
		"ALTER TABLE " + table + " DROP COLUMN revision, DROP COLUMN terms",
		"DROP SEQUENCE " + pgx.Identifier{tableFor(name) + "_rev"}.Sanitize(),
		"DROP TABLE " + pgx.Identifier{tableFor(name) + "_terms"}.Sanitize() + ", " + pgx.Identifier{tableFor(name) + "_tstats"}.Sanitize(),
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, "DELETE FROM strata_schema_migrations WHERE component = $1 AND version >= 2", "vectorstore/pgvector:"+tableFor(name)); err != nil {
		t.Fatal(err)
	}
	c, err = OpenCollection(ctx, pool, name, nil)
	if err != nil {
		t.Fatalf("open of a version 1 table: %v", err)
	}
	defer c.Close()
	got, err := c.Get(ctx, "old")
	if err != nil || got.Revision != 1 || got.Text != "before" {
		t.Fatalf("row written before the migration: %+v %v, want revision 1", got, err)
	}
	rev, err := c.UpsertIf(ctx, vectorstore.Record{ID: "old", Text: "after", Vector: []float32{1, 0}}, 1)
	if err != nil || rev <= 1 {
		t.Fatalf("UpsertIf at revision 1: %d %v", rev, err)
	}
	// New records draw from the sequence, above the migrated ones.
	if err := c.Upsert(ctx, vectorstore.Record{ID: "new", Vector: []float32{0, 1}}); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Get(ctx, "new"); err != nil || n.Revision <= rev {
		t.Fatalf("new record: %+v %v, want a revision above %d", n, err, rev)
	}
}

// Concurrent first opens of one new collection create it once.
func TestConcurrentCreate(t *testing.T) {
	pool := testPool(t, testDSN(t))
	name := fmt.Sprintf("race_%08x", rand.Uint32())
	t.Cleanup(func() { dropCollection(t, pool, name) })
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := openDriver(ctx, pool, driver.Config{Name: name, Dimension: 5}, nil)
			if err == nil {
				err = d.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var rows int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM strata_schema_migrations WHERE component = $1", "vectorstore/pgvector:"+tableFor(name)).Scan(&rows); err != nil || rows != latest(collectionSteps) {
		t.Fatalf("migration rows %d, %v; want %d", rows, err, latest(collectionSteps))
	}
}

// A collection migrated by a newer strata is refused, not modified.
func TestSchemaFromTheFuture(t *testing.T) {
	pool := testPool(t, testDSN(t))
	name := fmt.Sprintf("future_%08x", rand.Uint32())
	t.Cleanup(func() { dropCollection(t, pool, name) })
	d, err := openDriver(ctx, pool, driver.Config{Name: name, Dimension: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if _, err := pool.Exec(ctx, "INSERT INTO strata_schema_migrations (component, version, name) VALUES ($1, 99, 'future')", "vectorstore/pgvector:"+tableFor(name)); err != nil {
		t.Fatal(err)
	}
	_, err = openDriver(ctx, pool, driver.Config{Name: name}, nil)
	if !errors.Is(err, driver.ErrConfigMismatch) || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("open over a newer schema: %v, want ErrConfigMismatch naming version 99", err)
	}
}

func TestOpenByURL(t *testing.T) {
	dsn := testDSN(t)
	pool := testPool(t, dsn)
	name := fmt.Sprintf("url_%08x", rand.Uint32())
	t.Cleanup(func() { dropCollection(t, pool, name) })
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	with := func(scheme string, kv ...string) string {
		u2 := *u
		u2.Scheme = scheme
		q := u2.Query()
		for i := 0; i < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		u2.RawQuery = q.Encode()
		return u2.String()
	}
	c, err := vectorstore.Open(ctx, with("postgres", "collection", name, "dimension", "3", "distance", "euclidean",
		"ef_search", "80", "m", "8", "ef_construction", "32", "copy_threshold", "2", "timeout", "5s", "application_name", "strata-url-test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if in := c.Info(); in.Driver != "postgres" || in.Dimension != 3 || in.Distance != vectorstore.Euclidean {
		t.Fatalf("Info = %+v", in)
	}
	if err := c.Upsert(ctx, vectorstore.Record{ID: "a", Vector: []float32{1, 2, 3}}, vectorstore.Record{ID: "b", Vector: []float32{3, 2, 1}}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	var m int
	if err := pool.QueryRow(ctx, "SELECT hnsw_m FROM strata_vec_collections WHERE name = $1", name).Scan(&m); err != nil || m != 8 {
		t.Fatalf("stored m %d, %v; want 8", m, err)
	}
	// The other spelling reopens it, dimension and distance as stored.
	c, err = vectorstore.Open(ctx, with("postgresql", "collection", name, "exact", "true"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := c.Query(ctx, []float32{1, 2, 3}, vectorstore.QueryOptions{K: 1})
	if err != nil || len(ms) != 1 || ms[0].Record.ID != "a" || ms[0].Score != 0 {
		t.Fatalf("query after reopen: %+v, %v", ms, err)
	}
	c.Close()

	for _, kv := range [][]string{{"exact", "maybe"}, {"m", "x"}, {"timeout", "-1s"}, {"index", "ivf"}, {"ef_search", "5000"}} {
		_, err := vectorstore.Open(ctx, with("postgres", append([]string{"collection", name}, kv...)...), nil)
		if !errors.Is(err, vectorstore.ErrInvalidArgument) {
			t.Errorf("%v: %v, want ErrInvalidArgument", kv, err)
		}
	}
	// A misspelt parameter is refused before connecting, by name.
	_, err = vectorstore.Open(ctx, with("postgres", "collection", name, "exakt", "true"), nil)
	if e := (*driver.Error)(nil); !errors.As(err, &e) || e.Code != driver.CodeInvalidArgument || e.Field != "exakt" {
		t.Errorf("unknown parameter: %v, want CodeInvalidArgument on exakt", err)
	}
	// A URL pgx cannot parse is reported without echoing the password.
	_, err = vectorstore.Open(ctx, "postgres://u:hunter2@127.0.0.1/db?collection=x&sslmode=bogus", nil)
	if !errors.Is(err, vectorstore.ErrInvalidArgument) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("bad URL: %v", err)
	}
}

// On a database without the extension, opening creates it (the test server
// runs as a superuser) and registers the types on the connection.
func TestCreatesExtension(t *testing.T) {
	dsn := testDSN(t)
	admin := testPool(t, dsn)
	db := fmt.Sprintf("strata_noext_%08x", rand.Uint32())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()+" TEMPLATE template0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "DROP DATABASE "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	pool := testPool(t, u.String())
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ { // concurrently: the extension is created once
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := OpenCollection(ctx, pool, "memories", &Options{Options: vectorstore.Options{Dimension: 2}})
			if err == nil {
				err = c.Upsert(ctx, vectorstore.Record{ID: fmt.Sprint("r", i), Vector: []float32{1, float32(i)}})
				c.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestLongestSimpleName: a 44-byte simple name gives a 55-byte table name,
// whose "_resource" index name is one byte over PostgreSQL's 63-byte limit
// and truncated by the server. Creating, reopening (which re-runs the
// CREATE INDEX IF NOT EXISTS migrations against the catalog) and dropping
// such a collection works, and every index exists.
func TestLongestSimpleName(t *testing.T) {
	pool := testPool(t, testDSN(t))
	name := fmt.Sprintf("%s%08x", strings.Repeat("n", 36), rand.Uint32())
	if len(name) != 44 || !simpleNameRE.MatchString(name) || len(tableFor(name)) != 55 {
		t.Fatalf("test name %q is not a longest simple name (table %q)", name, tableFor(name))
	}
	t.Cleanup(func() { dropCollection(t, pool, name) })
	for round := 0; round < 2; round++ {
		c, err := OpenCollection(ctx, pool, name, &Options{Options: vectorstore.Options{Dimension: 2}})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		id := fmt.Sprint("r", round)
		if err := c.Upsert(ctx, vectorstore.Record{ID: id, Scope: vectorstore.Scope{Resource: "res"}, Vector: []float32{1, float32(round)}}); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Count(ctx, vectorstore.Filter{Resource: "res"}); err != nil || n != round+1 {
			t.Fatalf("round %d: count %d, %v", round, n, err)
		}
		c.Close()
	}
	var idx []string
	rows, err := pool.Query(ctx, "SELECT indexname FROM pg_indexes WHERE tablename = $1 ORDER BY indexname", tableFor(name))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		idx = append(idx, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	table := tableFor(name)
	want := []string{table + "_created", table + "_hnsw", table + "_layer", table + "_meta", table + "_pkey", (table + "_resource")[:63], table + "_thread"}
	if !slices.Equal(idx, want) {
		t.Fatalf("indexes %v, want %v", idx, want)
	}
}
