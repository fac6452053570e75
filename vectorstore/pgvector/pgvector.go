package pgvector

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	pgv "github.com/pgvector/pgvector-go"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/stratamem/strata/internal/ctxutil"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
	"github.com/stratamem/strata/vectorstore/internal/driverutil"
)

// Defaults of Options.
const (
	DefaultM              = 16
	DefaultEfConstruction = 64
	DefaultEfSearch       = 160
	DefaultCopyThreshold  = 1000
	DefaultTimeout        = 30 * time.Second
	DefaultBulkTimeout    = 10 * time.Minute
)

// Index methods for Options.Index.
const (
	IndexHNSW = "hnsw"
	IndexNone = "none"
)

// Limits of pgvector 0.8: the vector type holds up to 16000 dimensions, an
// HNSW index up to 2000, and hnsw.ef_search tops out at 1000.
const (
	maxVectorDim = 16000
	maxHNSWDim   = 2000
	maxEfSearch  = 1000
)

// Options configure a pgvector collection: the portable options
// (vectorstore.Options, embedded) and the driver's own. The zero value is
// useful: dimension and distance as stored, the connection's current schema, an HNSW index (m 16, ef_construction 64) for
// collections of at most 2000 dimensions, ef_search 160 (DefaultEfSearch),
// COPY from 1000 records up, 30 s per call and 10 minutes per bulk write,
// the HNSW index maintained by every write.
type Options struct {
	// Options are the portable options: dimension, distance, metadata
	// keys, clock. The URL opener does not read them (vectorstore.Open
	// takes them from the URL and its own opts argument).
	vectorstore.Options

	// Schema holds the catalog and collection tables; "" means the
	// connection's current schema (the first of search_path, usually public).
	Schema string
	// Index is the index built when a collection is created: IndexHNSW or
	// IndexNone. "" means HNSW when the dimension allows it (at most 2000),
	// none otherwise. An existing collection keeps the index it was created
	// with; M and EfConstruction too apply only at creation.
	Index          string
	M              int // HNSW max connections per layer; 0 means DefaultM
	EfConstruction int // HNSW build candidate list; 0 means DefaultEfConstruction
	// EfSearch is the HNSW candidate list of a query, set per query with a
	// transaction-local setting; it is raised to the number of rows the
	// query asks for (up to pgvector's 1000). 0 means DefaultEfSearch,
	// 160: on clustered 512-d vectors pgvector's own default of 40 found
	// 0.87-0.91 of the exact top 10 at 100k records, 160 found 0.97 at
	// 2.5 ms (benchmarks/results/recall-backends.md, the ef sweep).
	EfSearch int
	// Exact makes Query scan exactly (ORDER BY distance, id) instead of
	// letting the planner use the HNSW index. PostgreSQL scans small or
	// selectively filtered collections exactly anyway; set it when exact
	// top-k matters more than latency on large ones.
	Exact bool
	// CopyThreshold is the batch size from which Upsert loads with COPY into
	// a temporary table, merges with INSERT ... ON CONFLICT and COPYs the
	// postings of the records it inserted (bulk.go); smaller batches use
	// one INSERT ... SELECT FROM unnest(...), one round trip. COPY streams,
	// so a huge batch is not one huge bind message held in server memory.
	// 0 means DefaultCopyThreshold; negative means never COPY (except
	// with DeferIndex).
	CopyThreshold int
	// Timeout bounds each call whose context has no deadline; 0 means
	// DefaultTimeout, negative means no bound beyond ctx. Bulk writes have
	// their own bound, BulkTimeout.
	Timeout time.Duration
	// BulkTimeout bounds, instead of Timeout, an Upsert of CopyThreshold
	// records or more (any Upsert with DeferIndex) and the index build at
	// Close of DeferIndex, when the context has no deadline: a
	// 10,000-record batch takes longer than a call should (10 to 17 s on
	// the loaded test server with the indexes deferred, minutes with the
	// HNSW graph maintained). 0 means DefaultBulkTimeout (10 minutes),
	// negative means no bound beyond ctx. A deadline on the context always
	// wins, in both directions. The server's own statement_timeout (a URL
	// parameter, or the role's setting) still applies to every statement.
	BulkTimeout time.Duration
	// DeferIndex makes the handle a bulk loader (memctl migrate, an
	// import): every Upsert takes the COPY path, whatever its size; the
	// first drops the collection's HNSW index and the postings' term
	// index, later writes do not maintain them, and Close builds them
	// once over every row (also when this handle found them missing,
	// after an interrupted load: run the load again, or open and close a
	// DeferIndex handle). Inserting into the HNSW graph row by row cost
	// about 8 ms a record on the test server (512 dimensions); one build
	// afterwards a fraction of that (BenchmarkBulkLoad). Until Close,
	// queries and term searches of every process scan: correct, slower
	// on a large collection. The batch that drops the indexes holds the
	// table's exclusive lock until it commits: readers and writers wait
	// for it. Close is then bounded by BulkTimeout.
	DeferIndex bool
	// ClosePool makes Close also close the pool (set by Open by URL, which
	// creates the pool).
	ClosePool bool
}

// OpenCollection opens, creating if needed, the collection name over pool
// and wraps it in the portable type. opts may be nil.
func OpenCollection(ctx context.Context, pool *pgxpool.Pool, name string, opts *Options) (*vectorstore.Collection, error) {
	o := *cmp.Or(opts, &Options{})
	d, err := openDriver(ctx, pool, vectorstore.DriverConfig(name, &o.Options), &o)
	return vectorstore.WrapOpened(d, err, &o.Options)
}

// CancelOnServer makes a connection whose context ends send PostgreSQL a
// cancel request, so the statement stops on the server too; pgx's default
// only closes the socket and lets the server finish the statement. Open by
// URL sets it; set it on pools passed to OpenCollection:
//
//	cfg.ConnConfig.BuildContextWatcherHandler = pgvector.CancelOnServer
func CancelOnServer(c *pgconn.PgConn) ctxwatch.Handler {
	return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: time.Second}
}

type collection struct {
	pool  *pgxpool.Pool
	info  driver.Info
	n     *names
	opts  Options
	exact bool
	hnsw  bool
	// iterative: the installed pgvector has iterative index scans
	// (hnsw.iterative_scan, hnsw.max_scan_tuples: 0.8 and later).
	iterative bool
	// planCacheMode is set for the statements of Query and SearchTerms
	// ("force_custom_plan"; see Query). Benchmarks clear it to measure
	// PostgreSQL's default.
	planCacheMode string
	ownsPool      bool

	// SQL expanded once per collection.
	qGet, qUpsert, qMergeReturning, qTemp, distExact, distIndex string
	qBulkReconcile                                              string
	qInsertIf, qUpdateIf, qDeleteIf                             string
	qDelete, qReconcile, qSweep                                 string
	// Bulk loads (bulk.go): drop the HNSW and postings indexes, load,
	// build them once over all rows (much faster than inserting into the
	// graph row by row), in the load's transaction or at Close.
	qEmpty, qDropHNSW, qCreateHNSW, qDropTix, qCreateTix, qAnalyze string
	qLockTable, qIndexesPresent, qIndexesComplete                  string
}

// openDriver opens the driver-level collection cfg.Name over pool. It makes
// sure the vector extension exists (creating it needs the CREATE privilege
// on the database), migrates the catalog, then creates the collection's
// table and indexes or checks dimension and distance against the catalog.
// All of it runs in one transaction under the strata migration lock, so
// concurrent opens of a new collection create it once.
func openDriver(ctx context.Context, pool *pgxpool.Pool, cfg driver.Config, popts *Options) (driver.Collection, error) {
	const op = "open"
	bad := func(field, format string, args ...any) error {
		return driver.Errorf(driver.CodeInvalidArgument, op, field, format, args...)
	}
	if pool == nil {
		return nil, bad("pool", "nil pool")
	}
	var o Options
	if popts != nil {
		o = *popts
	}
	if cfg.Name == "" {
		return nil, bad("collection", "empty collection name")
	}
	if strings.ContainsRune(cfg.Name, 0) || !utf8.ValidString(cfg.Name) {
		return nil, bad("collection", "collection name must be valid UTF-8 without NUL")
	}
	if cfg.Dimension < 0 || cfg.Dimension > maxVectorDim {
		return nil, bad("dimension", "dimension %d out of range (pgvector stores 1..%d)", cfg.Dimension, maxVectorDim)
	}
	if cfg.Distance != "" {
		// The catalog stores, and the queries use, the canonical name only.
		d, err := driver.ParseDistance(string(cfg.Distance))
		if err != nil {
			return nil, err
		}
		cfg.Distance = d
	}
	if o.Schema != "" && (!identRE.MatchString(o.Schema) || len(o.Schema) > 63) {
		return nil, bad("schema", "schema %q must match [A-Za-z_][A-Za-z0-9_]*", o.Schema)
	}
	switch o.Index {
	case "", IndexHNSW, IndexNone:
	default:
		return nil, bad("index", "unknown index %q (want hnsw or none)", o.Index)
	}
	if o.M == 0 {
		o.M = DefaultM
	}
	if o.EfConstruction == 0 {
		o.EfConstruction = DefaultEfConstruction
	}
	if o.EfSearch == 0 {
		o.EfSearch = DefaultEfSearch
	}
	// pgvector's own bounds, checked here for a clear error.
	if o.M < 2 || o.M > 100 {
		return nil, bad("m", "HNSW m %d out of range 2..100", o.M)
	}
	if o.EfConstruction < 4 || o.EfConstruction > 1000 || o.EfConstruction < 2*o.M {
		return nil, bad("ef_construction", "HNSW ef_construction %d out of range (4..1000 and at least 2*m)", o.EfConstruction)
	}
	if o.EfSearch < 1 || o.EfSearch > maxEfSearch {
		return nil, bad("ef_search", "HNSW ef_search %d out of range 1..%d", o.EfSearch, maxEfSearch)
	}
	if o.CopyThreshold == 0 {
		o.CopyThreshold = DefaultCopyThreshold
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.BulkTimeout == 0 {
		o.BulkTimeout = DefaultBulkTimeout
	}
	c := &collection{pool: pool, opts: o, exact: o.Exact, ownsPool: o.ClosePool, planCacheMode: "force_custom_plan"}
	ctx, cancel := c.bound(ctx)
	defer cancel()

	table := tableFor(cfg.Name)
	var info driver.Info
	var hnsw string
	// A plain connection: the vector type may not exist before the
	// transaction creates the extension.
	err := c.withConn(ctx, false, func(conn *pgx.Conn) error {
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var err error
			info, hnsw, err = openInTx(ctx, tx, &o, cfg, table)
			return err
		}); err != nil {
			return err
		}
		var version string
		if err := conn.QueryRow(ctx, "SELECT extversion FROM pg_extension WHERE extname = 'vector'").Scan(&version); err != nil {
			return fmt.Errorf("read pgvector version: %w", err)
		}
		c.iterative = driverutil.VersionAtLeast(version, 0, 8)
		return registerTypes(ctx, conn)
	})
	if err != nil {
		if driver.CodeOf(err) != "" {
			return nil, err
		}
		return nil, fmt.Errorf("pgvector: open collection %q: %w", cfg.Name, withCtx(ctx, err))
	}
	c.info = info
	c.hnsw = hnsw != ""
	c.n = newNames(o.Schema, table, info.Dimension, hnsw)
	c.prepareSQL()
	return c, nil
}

// ensureExtension creates the vector extension if it is missing. The check
// comes first because CREATE EXTENSION IF NOT EXISTS still needs the CREATE
// privilege, which an application role often lacks when an administrator
// installed the extension.
// It runs under the migration lock, since concurrent CREATE EXTENSION IF NOT
// EXISTS can fail on the catalog's unique index.
func ensureExtension(ctx context.Context, tx pgx.Tx) error {
	var ok bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')").Scan(&ok); err != nil {
		return err
	}
	if !ok {
		if _, err := tx.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS vector"); err != nil {
			return fmt.Errorf("create extension vector (install pgvector, or have an administrator run CREATE EXTENSION vector): %w", err)
		}
	}
	return nil
}

// openInTx runs under the migration lock: catalog migration, catalog row,
// collection table migration. It returns the HNSW index statement of the
// collection, "" when it has none.
func openInTx(ctx context.Context, tx pgx.Tx, o *Options, cfg driver.Config, table string) (driver.Info, string, error) {
	const op = "open"
	info := driver.Info{Name: cfg.Name, Driver: Scheme}
	if err := lockMigrations(ctx, tx); err != nil {
		return info, "", fmt.Errorf("take migration lock: %w", err)
	}
	if err := ensureExtension(ctx, tx); err != nil {
		return info, "", err
	}
	cn := newNames(o.Schema, table, 0, "")
	if err := ensureMigrationsTable(ctx, tx, cn); err != nil {
		return info, "", fmt.Errorf("create %s: %w", migrationsTable, err)
	}
	if err := migrateTx(ctx, tx, cn, "vectorstore/pgvector", catalogSteps); err != nil {
		return info, "", err
	}
	var (
		storedTable, dist, index string
		dim                      int
		m, efc                   *int
	)
	err := tx.QueryRow(ctx, cn.expand("SELECT table_name, dimension, distance, index_method, hnsw_m, hnsw_ef_construction FROM {catalog} WHERE name = $1"), cfg.Name).
		Scan(&storedTable, &dim, &dist, &index, &m, &efc)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if cfg.Dimension == 0 {
			return info, "", driver.Errorf(driver.CodeInvalidArgument, op, "dimension", "collection %q does not exist and no dimension was given to create it", cfg.Name)
		}
		dim = cfg.Dimension
		dist = string(cfg.Distance)
		if dist == "" {
			dist = string(driver.DistanceCosine)
		}
		index = o.Index
		if index == "" {
			index = IndexHNSW
			if dim > maxHNSWDim {
				index = IndexNone
			}
		}
		if index == IndexHNSW && dim > maxHNSWDim {
			return info, "", driver.Errorf(driver.CodeInvalidArgument, op, "index", "an HNSW index holds at most %d dimensions, the collection has %d; use index=none", maxHNSWDim, dim)
		}
		storedTable = table
		if index == IndexHNSW {
			m, efc = &o.M, &o.EfConstruction
		}
		if _, err := tx.Exec(ctx, cn.expand("INSERT INTO {catalog} (name, table_name, dimension, distance, index_method, hnsw_m, hnsw_ef_construction) VALUES ($1, $2, $3, $4, $5, $6, $7)"),
			cfg.Name, storedTable, dim, dist, index, m, efc); err != nil {
			return info, "", fmt.Errorf("register collection: %w", err)
		}
	case err != nil:
		return info, "", fmt.Errorf("read catalog: %w", err)
	default:
		if cfg.Dimension != 0 && cfg.Dimension != dim {
			return info, "", driver.Errorf(driver.CodeConfigMismatch, op, "dimension", "collection %q has dimension %d, opened with %d", cfg.Name, dim, cfg.Dimension)
		}
		if cfg.Distance != "" && string(cfg.Distance) != dist {
			return info, "", driver.Errorf(driver.CodeConfigMismatch, op, "distance", "collection %q has distance %s, opened with %s", cfg.Name, dist, cfg.Distance)
		}
		if storedTable != table {
			return info, "", driver.Errorf(driver.CodeCorrupt, op, "table", "catalog maps collection %q to table %q, expected %q", cfg.Name, storedTable, table)
		}
	}
	d, err := driver.ParseDistance(dist)
	if err != nil || dim <= 0 {
		return info, "", driver.Errorf(driver.CodeCorrupt, op, "", "catalog row of %q: dimension %d, distance %q", cfg.Name, dim, dist)
	}
	hnsw := ""
	if index == IndexHNSW {
		if m == nil || efc == nil {
			return info, "", driver.Errorf(driver.CodeCorrupt, op, "", "catalog row of %q: hnsw index without parameters", cfg.Name)
		}
		hnsw = hnswSQL(d, *m, *efc)
	}
	tn := newNames(o.Schema, table, dim, hnsw)
	component := "vectorstore/pgvector:" + table
	if err := recreateIfDropped(ctx, tx, tn, component); err != nil {
		return info, "", err
	}
	if err := migrateTx(ctx, tx, tn, component, collectionSteps); err != nil {
		return info, "", err
	}
	if err := termTablesMissing(ctx, tx, tn); err != nil {
		return info, "", err
	}
	info.Dimension, info.Distance = dim, d
	return info, hnsw, nil
}

// recreateIfDropped handles a collection table dropped out of band (DROP
// TABLE by hand, a restore that skipped it): its catalog row and migration
// records remain, so the migrations would be skipped and every call would
// fail with "relation does not exist". The migration records are removed
// so that migrateTx creates the table again, empty, with its indexes; the
// records it held are gone in any case. It is logged, since it means data
// was lost outside strata. The caller holds the migration lock.
func recreateIfDropped(ctx context.Context, tx pgx.Tx, n *names, component string) error {
	have, err := applied(ctx, tx, n, component)
	if err != nil || have == 0 {
		return err
	}
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", n.expand("{table}")).Scan(&exists); err != nil {
		return fmt.Errorf("look up table of %s: %w", component, err)
	}
	if exists {
		return nil
	}
	slog.Warn("pgvector: collection table is missing (dropped outside strata?); re-creating it empty", "table", n.expand("{table}"))
	if _, err := tx.Exec(ctx, n.expand("DELETE FROM {migrations} WHERE component = $1"), component); err != nil {
		return fmt.Errorf("reset migrations of %s: %w", component, err)
	}
	// The term index of the lost records goes with them.
	if _, err := tx.Exec(ctx, n.expand("DROP TABLE IF EXISTS {terms}, {tstats}")); err != nil {
		return fmt.Errorf("drop term index of %s: %w", component, err)
	}
	return nil
}

// cols are the columns a write sets; selCols what a read returns. The
// revision is never written from a record: inserts take it from the
// column default (nextval of the collection's sequence), updates set it to
// nextval.
//
// matchCols are what Query and SearchTerms matches return: no terms (the
// portable API leaves Record.Terms nil there, and a document is the
// largest column after the embedding).
const (
	cols      = "id, layer, kind, thread, resource, content, metadata, created_at, valid_from, valid_to, terms"
	writeCols = cols + ", term_sketch"
	selCols   = cols + ", revision"
	matchCols = "id, layer, kind, thread, resource, content, metadata, created_at, valid_from, valid_to, revision"
)

func (c *collection) prepareSQL() {
	n := c.n
	c.qGet = n.expand("SELECT " + selCols + ", embedding FROM {table} WHERE id = $1")
	set := `ON CONFLICT (id) DO UPDATE SET layer = EXCLUDED.layer, kind = EXCLUDED.kind, thread = EXCLUDED.thread,
	resource = EXCLUDED.resource, content = EXCLUDED.content, metadata = EXCLUDED.metadata, created_at = EXCLUDED.created_at,
	valid_from = EXCLUDED.valid_from, valid_to = EXCLUDED.valid_to, terms = EXCLUDED.terms, term_sketch = EXCLUDED.term_sketch, embedding = EXCLUDED.embedding,
	revision = nextval({seq_lit}::regclass)`
	c.qUpsert = n.expand(`INSERT INTO {table} (` + writeCols + `, embedding)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]::jsonb[],
	$8::timestamptz[], $9::timestamptz[], $10::timestamptz[], $11::text[]::jsonb[], $12::bytea[], $13::vector[])
` + set)
	c.qTemp = n.expand(`CREATE TEMP TABLE strata_vec_load (LIKE {table} INCLUDING DEFAULTS) ON COMMIT DROP`)
	c.qEmpty = n.expand(`SELECT NOT EXISTS (SELECT 1 FROM {table})`)
	c.qDropHNSW = n.expand(`DROP INDEX IF EXISTS {idx_hnsw_q}`)
	c.qCreateHNSW = n.expand(`{hnsw}`)
	c.qDropTix = n.expand(`DROP INDEX IF EXISTS {idx_tix_q}`)
	c.qLockTable = n.expand(`LOCK TABLE {table} IN EXCLUSIVE MODE`)
	// $1: the collection has no HNSW index to look for.
	c.qIndexesPresent = n.expand(`SELECT (NOT $1 AND to_regclass('{idx_hnsw_q}') IS NOT NULL) OR to_regclass('{idx_tix_q}') IS NOT NULL`)
	c.qIndexesComplete = n.expand(`SELECT ($1 OR to_regclass('{idx_hnsw_q}') IS NOT NULL) AND to_regclass('{idx_tix_q}') IS NOT NULL`)
	c.qCreateTix = n.expand(createTixSQL)
	c.qAnalyze = n.expand(`ANALYZE {table}, {terms}`)
	// The temporary table has the revision default too: its rows drew
	// their revision when copied in, and a row inserted by the merge keeps
	// it rather than drawing another.
	// ORDER BY id: every writer locks records in id order (see terms.go).
	// RETURNING xmax = 0 tells the rows this statement inserted (a row
	// version it updated carries its transaction as xmax, the lock ON
	// CONFLICT took), so that the term index is computed only for the
	// updated ones (bulk.go).
	c.qMergeReturning = n.expand(`INSERT INTO {table} AS t (` + writeCols + `, embedding, revision) SELECT ` + writeCols + `, embedding, revision FROM strata_vec_load
ORDER BY id
` + set + `
RETURNING t.id, t.xmax = 0`)
	c.qBulkReconcile = n.expand(bulkReconcileSQL)
	// Conditional writes: one statement each, atomic under PostgreSQL's
	// row locking. INSERT ... ON CONFLICT DO NOTHING waits for a concurrent
	// insert of the id and then does nothing; UPDATE ... WHERE revision =
	// re-checks the condition on the row version it finally locks. The
	// second column reads the revision as of the statement's snapshot, for
	// the conflict message only.
	c.qInsertIf = n.expand(`WITH w AS (
	INSERT INTO {table} (` + writeCols + `, embedding) VALUES ($1, $2, $3, $4, $5, $6, $7::text::jsonb, $8, $9, $10, $11::text::jsonb, $12, $13)
	ON CONFLICT (id) DO NOTHING RETURNING revision)
SELECT (SELECT revision FROM w), (SELECT revision FROM {table} WHERE id = $1)`)
	c.qUpdateIf = n.expand(`WITH w AS (
	UPDATE {table} SET layer = $2, kind = $3, thread = $4, resource = $5, content = $6, metadata = $7::text::jsonb,
		created_at = $8, valid_from = $9, valid_to = $10, terms = $11::text::jsonb, term_sketch = $12, embedding = $13,
		revision = nextval({seq_lit}::regclass)
	WHERE id = $1 AND revision = $14 RETURNING revision)
SELECT (SELECT revision FROM w), (SELECT revision FROM {table} WHERE id = $1)`)
	c.qDeleteIf = n.expand(`WITH w AS (DELETE FROM {table} WHERE id = $1 AND revision = $2 RETURNING revision)
SELECT (SELECT revision FROM w), (SELECT revision FROM {table} WHERE id = $1)`)
	// Deletes lock their rows in id order, like every write (terms.go).
	c.qDelete = n.expand(`DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE id = ANY($1) ORDER BY id FOR UPDATE)`)
	c.qReconcile = n.expand(reconcileSQL)
	c.qSweep = n.expand(sweepSQL)
	// Exact search calls the distance functions, which no index can serve:
	// the planner must scan and sort, so ORDER BY distance, id is exact even
	// where an incremental sort over the HNSW index would be cheaper. Index
	// search uses the operators the HNSW operator class orders by.
	switch c.info.Distance {
	case driver.DistanceDot:
		c.distExact, c.distIndex = "(-inner_product(embedding, $1))", "(embedding <#> $1)"
	case driver.DistanceEuclidean:
		c.distExact, c.distIndex = "l2_distance(embedding, $1)", "(embedding <-> $1)"
	default:
		c.distExact, c.distIndex = "cosine_distance(embedding, $1)", "(embedding <=> $1)"
	}
}

func (c *collection) Info() driver.Info { return c.info }

// Upsert inserts or replaces recs in one transaction, with their term
// index (see terms.go).
func (c *collection) Upsert(ctx context.Context, recs []driver.Record) error {
	if len(recs) == 0 {
		return nil
	}
	bulk := c.opts.DeferIndex || c.opts.CopyThreshold > 0 && len(recs) >= c.opts.CopyThreshold
	bound := c.opts.Timeout
	if bulk {
		bound = c.opts.BulkTimeout
	}
	ctx, cancel := ctxutil.Bound(ctx, bound)
	defer cancel()
	// Every writer locks records in id order (terms.go); the caller's
	// slice keeps its order.
	recs = slices.Clone(recs)
	slices.SortFunc(recs, func(a, b driver.Record) int { return strings.Compare(a.ID, b.ID) })
	ids := make([]string, len(recs))
	for i := range recs {
		ids[i] = recs[i].ID
	}
	// Upserting the same records again is idempotent, so a failure before
	// the commit reached the server can be retried as a whole.
	err := c.withConnRetry(ctx, true, func(conn *pgx.Conn) error {
		var z zeroKeys
		var err error
		if bulk {
			err = c.upsertCopy(ctx, conn, recs, ids, &z)
		} else {
			err = c.upsertUnnest(ctx, conn, recs, ids, &z)
		}
		if err == nil {
			c.sweep(ctx, conn, &z)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("pgvector: upsert %d records: %w", len(recs), withCtx(ctx, err))
	}
	return nil
}

// writeBatch runs a write statement and the reconciliation of ids in one
// pipelined batch, after jitOff: one round trip, one implicit transaction
// (atomic: an error in either rolls both back). scan reads the write's
// row, if it returns one; nil for a statement without rows.
func (c *collection) writeBatch(ctx context.Context, conn *pgx.Conn, sql string, args []any, scan []any, ids []string, z *zeroKeys) error {
	var batch pgx.Batch
	batch.Queue(jitOff)
	batch.Queue(sql, args...)
	batch.Queue(c.qReconcile, ids)
	br := conn.SendBatch(ctx, &batch)
	_, err := br.Exec() // jitOff
	switch {
	case err != nil: // the batch failed at its first statement
	case scan == nil:
		_, err = br.Exec()
	default:
		err = br.QueryRow().Scan(scan...)
	}
	if err == nil {
		err = br.QueryRow().Scan(z.scanDest()...)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

func metaJSON(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(m) // map[string]string always marshals
	return string(b)
}

func tstz(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}

// upsertUnnest writes a small batch with one statement and reconciles its
// term index, in one batch (see writeBatch).
func (c *collection) upsertUnnest(ctx context.Context, conn *pgx.Conn, recs []driver.Record, ids []string, z *zeroKeys) error {
	n := len(recs)
	layers, kinds, threads, resources, contents, metas := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	created, from, to := make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n)
	terms, sketches := make([]*string, n), make([][]byte, n)
	vecs := make([]pgv.Vector, n)
	for i := range recs {
		r := &recs[i]
		layers[i], kinds[i], threads[i], resources[i], contents[i] = r.Layer, r.Kind, r.Scope.Thread, r.Scope.Resource, r.Text
		metas[i] = metaJSON(r.Metadata)
		created[i], from[i], to[i] = tstz(r.CreatedAt), tstz(r.ValidFrom), tstz(r.ValidTo)
		terms[i], sketches[i] = termsJSON(r.Terms), termSketch(r.Terms)
		vecs[i] = pgv.NewVector(r.Vector)
	}
	return c.writeBatch(ctx, conn, c.qUpsert, []any{ids, layers, kinds, threads, resources, contents, metas, created, from, to, terms, sketches, vecs}, nil, ids, z)
}

// UpsertIf writes rec if its stored revision is expected, in one
// statement. It is not retried after a connection failure unless pgx
// proves nothing reached the server: a write that was applied would, run
// again, report a conflict with itself.
func (c *collection) UpsertIf(ctx context.Context, rec driver.Record, expected int64) (int64, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	r := &rec
	args := []any{r.ID, r.Layer, r.Kind, r.Scope.Thread, r.Scope.Resource, r.Text, metaJSON(r.Metadata),
		tstz(r.CreatedAt), tstz(r.ValidFrom), tstz(r.ValidTo), termsJSON(r.Terms), termSketch(r.Terms), pgv.NewVector(r.Vector)}
	sql := c.qInsertIf
	if expected > 0 {
		sql = c.qUpdateIf
		args = append(args, expected)
	}
	var written, seen *int64
	err := c.withConnRetry(ctx, false, func(conn *pgx.Conn) error {
		var z zeroKeys
		err := c.writeBatch(ctx, conn, sql, args, []any{&written, &seen}, []string{rec.ID}, &z)
		if err == nil {
			c.sweep(ctx, conn, &z)
		}
		return err
	})
	if err != nil {
		return 0, c.fail(ctx, "upsert if", err)
	}
	if written == nil {
		return 0, driver.Conflict("upsert if", rec.ID, expected, revOrZero(seen))
	}
	return *written, nil
}

// DeleteIf deletes id if its stored revision is expected, in one statement
// (not retried, like UpsertIf).
func (c *collection) DeleteIf(ctx context.Context, id string, expected int64) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var deleted, seen *int64
	err := c.withConnRetry(ctx, false, func(conn *pgx.Conn) error {
		var z zeroKeys
		err := c.writeBatch(ctx, conn, c.qDeleteIf, []any{id, expected}, []any{&deleted, &seen}, []string{id}, &z)
		if err == nil {
			c.sweep(ctx, conn, &z)
		}
		return err
	})
	if err != nil {
		return c.fail(ctx, "delete if", err)
	}
	if deleted == nil {
		return driver.Conflict("delete if", id, expected, revOrZero(seen))
	}
	return nil
}

func revOrZero(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// Get returns the record with id.
func (c *collection) Get(ctx context.Context, id string) (driver.Record, bool, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var rec driver.Record
	found := false
	err := c.withConnRetry(ctx, true, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, c.qGet, id)
		if err != nil {
			return err
		}
		recs, err := scanRecords(rows, true, true, false)
		if err != nil {
			return err
		}
		found = len(recs) == 1
		if found {
			rec = recs[0].Record
		}
		return nil
	})
	if err != nil {
		return driver.Record{}, false, c.fail(ctx, "get", err)
	}
	return rec, found, nil
}

// Delete removes the records with these ids.
func (c *collection) Delete(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	err := c.withConnRetry(ctx, true, func(conn *pgx.Conn) error {
		var z zeroKeys
		err := c.writeBatch(ctx, conn, c.qDelete, []any{ids}, nil, ids, &z)
		if err == nil {
			c.sweep(ctx, conn, &z)
		}
		return err
	})
	return c.fail(ctx, "delete", err)
}

// DeleteWhere removes the records matching f. It is not retried after a
// connection failure: a second run would report 0 for a delete that
// happened.
func (c *collection) DeleteWhere(ctx context.Context, f driver.Filter) (int, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var b sqlBuilder
	where := b.filter(&f)
	// The rows are locked in id order (terms.go), then their postings
	// reconciled, in one transaction.
	sql := c.n.expand("DELETE FROM {table} WHERE id IN (SELECT id FROM {table}" + where + " ORDER BY id FOR UPDATE) RETURNING id")
	var n int
	err := c.withConnRetry(ctx, false, func(conn *pgx.Conn) error {
		var z zeroKeys
		err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, jitOff); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, sql, b.args...)
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			n = len(ids)
			if n == 0 {
				return nil
			}
			return tx.QueryRow(ctx, c.qReconcile, ids).Scan(z.scanDest()...)
		})
		if err == nil {
			c.sweep(ctx, conn, &z)
		}
		return err
	})
	if err != nil {
		return 0, c.fail(ctx, "delete where", err)
	}
	return n, nil
}

// Count returns the number of records matching f.
func (c *collection) Count(ctx context.Context, f driver.Filter) (int, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var b sqlBuilder
	where := b.filter(&f)
	var n int64
	err := c.withConnRetry(ctx, true, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, c.n.expand("SELECT count(*) FROM {table}"+where), b.args...).Scan(&n)
	})
	if err != nil {
		return 0, c.fail(ctx, "count", err)
	}
	return int(n), nil
}

// List returns one keyset page in (created_at, id) order; the index on
// (created_at, id) serves both the order and the cursor comparison.
func (c *collection) List(ctx context.Context, q driver.ListQuery) ([]driver.Record, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var b sqlBuilder
	where := b.filter(&q.Filter)
	if q.After != nil {
		cmp := ">"
		if q.Desc {
			cmp = "<"
		}
		where = b.and(where, fmt.Sprintf("(created_at, id) %s (%s, %s)", cmp, b.arg(q.After.CreatedAt), b.arg(q.After.ID)))
	}
	order := " ORDER BY created_at, id"
	if q.Desc {
		order = " ORDER BY created_at DESC, id DESC"
	}
	sel := "SELECT " + selCols
	if q.WithVectors {
		sel += ", embedding"
	}
	sql := c.n.expand(sel + " FROM {table}" + where + order + " LIMIT " + b.arg(q.Limit))
	var out []driver.Record
	err := c.withConnRetry(ctx, true, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, sql, b.args...)
		if err != nil {
			return err
		}
		ms, err := scanRecords(rows, true, q.WithVectors, false)
		out = out[:0]
		for _, m := range ms {
			out = append(out, m.Record)
		}
		return err
	})
	if err != nil {
		return nil, c.fail(ctx, "list", err)
	}
	return out, nil
}

// Query returns the K nearest records.
//
// Exact mode orders by (distance, id) in SQL. Index mode asks the planner for
// ORDER BY distance LIMIT n, which it may serve from the HNSW index, with
// hnsw.ef_search raised to n and, where pgvector has them (0.8 and later),
// hnsw.iterative_scan = strict_order so that a filter that rejects many
// candidates still yields n rows in distance order. Without iterative
// scans, an index answer short of n rows under a filter is asked again
// exactly: the index may have dropped matching rows after its ef_search
// candidates. The index does not order equal distances, so, as the Qdrant
// driver does, the request widens until the K-th match scores strictly
// better than the last row returned (no unseen row can then tie it) or the
// table ran out of matching rows, and ties are broken by id here.
//
// Both run with plan_cache_mode = force_custom_plan: pgx prepares
// statements, and after five executions PostgreSQL may switch to a generic
// plan, which cannot see the filter's values. For the filters of the
// memory layers (metadata @> {"embedding": ...} or {"scope": ...}, true of
// nearly every row) the generic plan estimated 1% of the rows, took the
// GIN index and sorted every matching row by distance: 492 ms against 56 ms
// for the custom plan's HNSW scan in bench-scale (100k records of one
// resource); BenchmarkQueryScope, K=200 over 50,000 of 100,000 records:
// 167 ms against 35 ms p50.
func (c *collection) Query(ctx context.Context, q driver.VectorQuery) ([]driver.Match, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	vec := pgv.NewVector(q.Vector)
	var b sqlBuilder
	b.arg(vec) // $1, referenced by the distance expressions
	where := b.filter(&q.Filter)
	sel := "SELECT " + matchCols
	if q.WithVectors {
		sel += ", embedding"
	}
	var settings []string
	if c.planCacheMode != "" {
		settings = append(settings, "plan_cache_mode", c.planCacheMode)
	}
	var out []driver.Match
	scan := func(rows pgx.Rows) (err error) {
		out, err = scanRecords(rows, false, q.WithVectors, true)
		return err
	}
	if c.exact || !c.hnsw {
		limit := b.arg(q.K)
		sql := c.n.expand(sel + ", " + c.distExact + " AS d FROM {table}" + where + " ORDER BY d, id LIMIT " + limit)
		err := c.withConnRetry(ctx, true, func(conn *pgx.Conn) error {
			return readWith(ctx, conn, settings, sql, b.args, scan)
		})
		if err != nil {
			return nil, c.fail(ctx, "query", err)
		}
		c.scores(out)
		return out, nil
	}
	limitArg := b.arg(0) // placeholder, set per round
	limitIdx := len(b.args) - 1
	sql := c.n.expand(sel + ", " + c.distIndex + " AS d FROM {table}" + where + " ORDER BY " + c.distIndex + " LIMIT " + limitArg)
	n := q.K + 1
	for {
		b.args[limitIdx] = n
		ef := min(max(c.opts.EfSearch, n), maxEfSearch)
		// The settings are SET LOCAL (set_config(..., true)): they end
		// with the query's transaction, so a pooled connection never
		// carries them to another query. max_scan_tuples bounds the
		// iterative scan (20000 by default); it is raised with the
		// request so a large K under a selective filter is not cut short.
		set := append(slices.Clone(settings), "hnsw.ef_search", strconv.Itoa(ef))
		if c.iterative {
			set = append(set, "hnsw.iterative_scan", "strict_order", "hnsw.max_scan_tuples", strconv.Itoa(max(20000, 4*n)))
		}
		err := c.withConnRetry(ctx, true, func(conn *pgx.Conn) error {
			return readWith(ctx, conn, set, sql, b.args, scan)
		})
		if err != nil {
			return nil, c.fail(ctx, "query", err)
		}
		if !c.iterative && len(out) < n && !q.Filter.IsZero() {
			// Without iterative scans a short answer may be the filter
			// rejecting the index's candidates: ask exactly.
			exact := *c
			exact.exact = true
			return exact.Query(ctx, q)
		}
		c.scores(out)
		if top, ok := driverutil.TopK(out, q.K, len(out) < n); ok {
			return top, nil
		}
		n *= 2
	}
}

// readWith runs sql after set_config(name, value, true) of each name/value
// pair of settings, in one pipelined batch: one round trip and one implicit
// transaction, which is what the settings last. scan reads the rows.
func readWith(ctx context.Context, conn *pgx.Conn, settings []string, sql string, args []any, scan func(pgx.Rows) error) error {
	var batch pgx.Batch
	if len(settings) > 0 {
		var sb sqlBuilder
		calls := make([]string, 0, len(settings)/2)
		for i := 0; i+1 < len(settings); i += 2 {
			calls = append(calls, "set_config("+sb.arg(settings[i])+", "+sb.arg(settings[i+1])+", true)")
		}
		batch.Queue("SELECT "+strings.Join(calls, ", "), sb.args...)
	}
	batch.Queue(sql, args...)
	br := conn.SendBatch(ctx, &batch)
	if len(settings) > 0 {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
	}
	rows, err := br.Query()
	if err == nil {
		err = scan(rows)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// scores turns the distances scanned into Match.Score into similarities.
func (c *collection) scores(ms []driver.Match) {
	for i := range ms {
		switch c.info.Distance {
		case driver.DistanceCosine:
			ms[i].Score = 1 - ms[i].Score
		default: // dot: -(negative inner product); euclidean: -distance
			ms[i].Score = -ms[i].Score
		}
	}
}

// Close builds the indexes a DeferIndex load left out (see
// Options.DeferIndex), then closes the pool when the collection owns it.
func (c *collection) Close() error {
	err := c.finishDeferred()
	if c.ownsPool {
		c.pool.Close()
	}
	return err
}

// scanRecords reads rows of selCols (withTerms) or matchCols, then
// [, embedding] [, d]. With dist, the distance (or score) goes to
// Match.Score.
func scanRecords(rows pgx.Rows, withTerms, withVec, dist bool) ([]driver.Match, error) {
	defer rows.Close()
	var out []driver.Match
	for rows.Next() {
		var (
			m        driver.Match
			r        = &m.Record
			meta     []byte
			terms    []byte
			from, to *time.Time
			vec      pgv.Vector
		)
		dst := []any{&r.ID, &r.Layer, &r.Kind, &r.Scope.Thread, &r.Scope.Resource, &r.Text, &meta, &r.CreatedAt, &from, &to}
		if withTerms {
			dst = append(dst, &terms)
		}
		dst = append(dst, &r.Revision)
		if withVec {
			dst = append(dst, &vec)
		}
		if dist {
			dst = append(dst, &m.Score)
		}
		if err := rows.Scan(dst...); err != nil {
			return nil, err
		}
		if len(meta) > 2 { // not "{}"
			if m, ok := flatStrings(meta); ok {
				r.Metadata = m
			} else if err := json.Unmarshal(meta, &r.Metadata); err != nil {
				return nil, driver.Errorf(driver.CodeCorrupt, "read", "metadata", "record %q: metadata is not an object of strings: %v", r.ID, err)
			}
		}
		if withTerms {
			t, err := decodeTerms(r.ID, terms)
			if err != nil {
				return nil, err
			}
			r.Terms = t
		}
		r.CreatedAt = r.CreatedAt.UTC()
		if from != nil {
			r.ValidFrom = from.UTC()
		}
		if to != nil {
			r.ValidTo = to.UTC()
		}
		if withVec {
			r.Vector = vec.Slice()
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// bound applies Options.Timeout to a context without a deadline.
func (c *collection) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return ctxutil.Bound(ctx, c.opts.Timeout)
}

// withConn runs fn on a pooled connection; with register, one whose type
// map knows pgvector's types. Registering per connection, on first use,
// works with any pool, including ones whose AfterConnect the caller wrote.
func (c *collection) withConn(ctx context.Context, register bool, fn func(*pgx.Conn) error) error {
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if register {
		if err := registerTypes(ctx, conn.Conn()); err != nil {
			return err
		}
	}
	return fn(conn.Conn())
}

func registerTypes(ctx context.Context, conn *pgx.Conn) error {
	if _, ok := conn.TypeMap().TypeForName("vector"); ok {
		return nil
	}
	if err := pgxvec.RegisterTypes(ctx, conn); err != nil {
		return fmt.Errorf("register pgvector types: %w", err)
	}
	return nil
}

// withConnRetry runs fn once more after a failure that is not the server's
// answer nor the context's end (typically a pooled connection that died
// with a server restart), if the operation is idempotent, or if pgx proves
// that nothing reached the server.
func (c *collection) withConnRetry(ctx context.Context, idempotent bool, fn func(*pgx.Conn) error) error {
	err := c.withConn(ctx, true, fn)
	if err == nil || ctx.Err() != nil {
		return err
	}
	var pe *pgconn.PgError
	if driver.CodeOf(err) == "" && !errors.As(err, &pe) && (idempotent || pgconn.SafeToRetry(err)) {
		err = c.withConn(ctx, true, fn)
	}
	return err
}

func (c *collection) fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if driver.CodeOf(err) != "" {
		return err
	}
	if isUndefinedTable(err) {
		// Not a typed error: nothing the caller passed is wrong, and no
		// code says "the backend lost the table".
		return fmt.Errorf("pgvector: %s: table %s of collection %q is missing (dropped outside strata?); reopening the collection re-creates it: %w",
			op, c.n.expand("{table}"), c.info.Name, withCtx(ctx, err))
	}
	return fmt.Errorf("pgvector: %s: %w", op, withCtx(ctx, err))
}

// withCtx makes errors.Is(err, context.DeadlineExceeded / Canceled) hold
// when the call failed because its context ended, whatever pgx wrapped.
func withCtx(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", err, cerr)
	}
	return err
}

// DropCollection deletes the collection name in schema ("" for the current
// schema): its table with every record, its catalog row and its migration
// records. A missing collection is a CodeNotFound error. Close open
// handles on the collection first.
func DropCollection(ctx context.Context, pool *pgxpool.Pool, schema, name string) error {
	const op = "drop"
	if schema != "" && (!identRE.MatchString(schema) || len(schema) > 63) {
		return driver.Errorf(driver.CodeInvalidArgument, op, "schema", "schema %q must match [A-Za-z_][A-Za-z0-9_]*", schema)
	}
	table := tableFor(name)
	n := newNames(schema, table, 0, "")
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := lockMigrations(ctx, tx); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, n.expand("DELETE FROM {catalog} WHERE name = $1"), name)
		if isUndefinedTable(err) || err == nil && tag.RowsAffected() == 0 {
			return driver.Errorf(driver.CodeNotFound, op, "collection", "no collection %q", name)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, n.expand("DROP TABLE IF EXISTS {table}, {terms}, {tstats}")); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, n.expand("DROP SEQUENCE IF EXISTS {seq}")); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, n.expand("DELETE FROM {migrations} WHERE component = $1"), "vectorstore/pgvector:"+table)
		return err
	})
	if err != nil && driver.CodeOf(err) == "" {
		return fmt.Errorf("pgvector: drop collection %q: %w", name, withCtx(ctx, err))
	}
	return err
}

// ListCollections describes the collections in schema ("" for the current
// schema), ordered by name.
func ListCollections(ctx context.Context, pool *pgxpool.Pool, schema string) ([]driver.Info, error) {
	if schema != "" && (!identRE.MatchString(schema) || len(schema) > 63) {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "list collections", "schema", "schema %q must match [A-Za-z_][A-Za-z0-9_]*", schema)
	}
	n := newNames(schema, "", 0, "")
	rows, err := pool.Query(ctx, n.expand("SELECT name, dimension, distance FROM {catalog} ORDER BY name"))
	if err != nil {
		if isUndefinedTable(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("pgvector: list collections: %w", withCtx(ctx, err))
	}
	defer rows.Close()
	var out []driver.Info
	for rows.Next() {
		var in driver.Info
		var dist string
		if err := rows.Scan(&in.Name, &in.Dimension, &dist); err != nil {
			return nil, fmt.Errorf("pgvector: list collections: %w", err)
		}
		in.Distance, in.Driver = driver.Distance(dist), Scheme
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgvector: list collections: %w", withCtx(ctx, err))
	}
	return out, nil
}
