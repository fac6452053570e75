package pgvector

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stratamem/strata/vectorstore/driver"
)

// Schema bookkeeping shared with storage/postgres: the same migrations table
// and the same advisory lock, so every strata component migrates under one
// lock and records its steps in one place.
const (
	migrationsTable    = "strata_schema_migrations"
	migrationLockClass = 0x53545241 // "STRA"
	migrationLockID    = 1
)

// CatalogTable records every collection: name, table, dimension, distance
// and index parameters. It lives in Options.Schema.
const CatalogTable = "strata_vec_collections"

// TablePrefix starts the name of every collection table.
const TablePrefix = "strata_vec_"

// step is one schema migration; its SQL uses the placeholders of names.
type step struct {
	version int
	name    string
	sql     string
}

// catalogSteps migrate the catalog (component "vectorstore/pgvector").
var catalogSteps = []step{
	{1, "create collection catalog", `
CREATE TABLE IF NOT EXISTS {catalog} (
	name                 text COLLATE "C" PRIMARY KEY,
	table_name           text        NOT NULL UNIQUE,
	dimension            integer     NOT NULL CHECK (dimension > 0),
	distance             text        NOT NULL CHECK (distance IN ('cosine', 'dot', 'euclidean')),
	index_method         text        NOT NULL CHECK (index_method IN ('hnsw', 'none')),
	hnsw_m               integer,
	hnsw_ef_construction integer,
	created_at           timestamptz NOT NULL DEFAULT now()
)`},
}

// collectionSteps migrate one collection table (component
// "vectorstore/pgvector:<table>"). Never edit a released step: append one.
//
// Scope and kind columns are NOT NULL with ” for "unset" because a filter's
// empty string means "any" and a record's means "none": equality on ” never
// has to special-case NULL. id is COLLATE "C" so that ORDER BY id is byte
// order, the order Go's string comparison and every other driver use,
// whatever the database's default collation.
var collectionSteps = []step{
	{1, "create collection table", `
CREATE TABLE IF NOT EXISTS {table} (
	id         text COLLATE "C" PRIMARY KEY,
	layer      text        NOT NULL DEFAULT '',
	kind       text        NOT NULL DEFAULT '',
	thread     text        NOT NULL DEFAULT '',
	resource   text        NOT NULL DEFAULT '',
	content    text        NOT NULL DEFAULT '',
	metadata   jsonb       NOT NULL DEFAULT '{}',
	created_at timestamptz NOT NULL,
	valid_from timestamptz,
	valid_to   timestamptz,
	embedding  vector({dim}) NOT NULL
);
CREATE INDEX IF NOT EXISTS {idx_created} ON {table} (created_at, id);
CREATE INDEX IF NOT EXISTS {idx_thread} ON {table} (thread) WHERE thread <> '';
CREATE INDEX IF NOT EXISTS {idx_resource} ON {table} (resource) WHERE resource <> '';
CREATE INDEX IF NOT EXISTS {idx_layer} ON {table} (layer, kind);
CREATE INDEX IF NOT EXISTS {idx_meta} ON {table} USING gin (metadata jsonb_path_ops);
{hnsw}`},
	// Revisions for conditional writes. Rows written before this step
	// count as revision 1 (a constant default: no table rewrite), and the
	// sequence starts above them. Every later insert takes nextval from the
	// column default and every update sets it, so revisions grow per
	// collection, not per row. The sequence is deliberately not OWNED BY
	// the column: it outlives a table dropped out of band, and a table
	// re-created from the catalog continues above every revision handed
	// out before (DropCollection drops it).
	{2, "add revision column", `
CREATE SEQUENCE IF NOT EXISTS {seq} AS bigint START 2;
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS revision bigint NOT NULL DEFAULT 1;
ALTER TABLE {table} ALTER COLUMN revision SET DEFAULT nextval({seq_lit}::regclass)`},
	// The lexical index (see termsSQL). Rows written before this step have
	// no terms (NULL), hence no postings: nothing to backfill.
	{3, "add term index", termsSQL},
	// Document sketches (sketch.go) in the records and the postings, the
	// latter in the postings index. Postings written before have none
	// (NULL): rankings bound their terms by the corpus' maxtf, as without
	// sketches, until the record is written again.
	{4, "add term sketches", sketchSQL},
}

// termsSQL creates the lexical index of a collection: the terms column of
// the records table (a jsonb object term -> weight, NULL for a record
// without a document), the postings table and the statistics table. It is
// idempotent, so termTablesMissing can run it again (with sketchSQL).
//
// Postings ({terms}): one row per (record, term) with the weight and,
// denormalised from the record, the document length and the corpus fields,
// so that scoring reads one index and joins nothing. Its index leads with
// (layer, term, resource, thread): a corpus that names a resource (and a
// thread) is one range per query term, whatever the other resources hold;
// INCLUDE makes the scan index-only.
//
// Statistics ({tstats}): keyed by (layer, term, resource, thread, kind).
// Rows of the empty term count the documents (n) and sum their lengths (len, numeric:
// increments and decrements cancel exactly, no drift); the other rows hold
// a term's document frequency (n) and bounds for pruning: maxtf is at least
// the largest weight and mindl at most the smallest document length among
// the documents that hold the term (bounds only: a delete does not tighten
// them; a row that fell to n = 0 starts afresh). Rows of the empty thread roll up the
// whole resource (every thread, and records without one); the others
// count one thread. Every text column is COLLATE "C": byte order and
// memcmp comparisons, like Go's.
//
// Released as step 3: append changes as new steps (sketchSQL).
const termsSQL = `
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS terms jsonb;
CREATE TABLE IF NOT EXISTS {terms} (
	id       text COLLATE "C" NOT NULL,
	term     text COLLATE "C" NOT NULL,
	tf       real             NOT NULL,
	dl       double precision NOT NULL,
	layer    text COLLATE "C" NOT NULL,
	kind     text COLLATE "C" NOT NULL,
	resource text COLLATE "C" NOT NULL,
	thread   text COLLATE "C" NOT NULL,
	CONSTRAINT {idx_tpk} PRIMARY KEY (id, term) INCLUDE (tf, dl)
);
CREATE INDEX IF NOT EXISTS {idx_tix} ON {terms} (layer, term, resource, thread, kind) INCLUDE (id, tf, dl);
CREATE TABLE IF NOT EXISTS {tstats} (
	layer    text COLLATE "C" NOT NULL,
	term     text COLLATE "C" NOT NULL,
	resource text COLLATE "C" NOT NULL,
	thread   text COLLATE "C" NOT NULL,
	kind     text COLLATE "C" NOT NULL,
	n        bigint           NOT NULL,
	len      numeric          NOT NULL DEFAULT 0,
	maxtf    real,
	mindl    double precision,
	CONSTRAINT {idx_tspk} PRIMARY KEY (layer, term, resource, thread, kind)
) WITH (fillfactor = 80)`

// sketchSQL adds the document sketch (sketch.go): term_sketch in the
// records table (written with the terms; NULL without a document), sketch
// in the postings (copied from the record) and in the postings index's
// INCLUDE, rebuilt for that. Idempotent, like termsSQL.
const sketchSQL = `
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS term_sketch bytea;
ALTER TABLE {terms} ADD COLUMN IF NOT EXISTS sketch bytea;
DROP INDEX IF EXISTS {idx_tix_q};
CREATE INDEX {idx_tix} ON {terms} (layer, term, resource, thread, kind) INCLUDE (id, tf, dl, sketch)`

// latest returns the last version of steps.
func latest(steps []step) int { return steps[len(steps)-1].version }

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// simpleNameRE are collection names used verbatim in the table name.
var simpleNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,43}$`)

// tableFor maps a collection name to its table name (unquoted). Simple
// lower-case names are kept readable ("memories" -> strata_vec_memories);
// any other name gets a sanitised prefix and 12 hex digits of its SHA-256,
// so every name maps to a distinct valid identifier within PostgreSQL's
// 63-byte limit: at most 55 bytes for a simple name, 54 for a hashed one.
//
// Index names append a suffix of up to 9 bytes ("_resource"), which fits
// except for the longest simple names: 55+9 is one byte over the limit, and
// PostgreSQL truncates that index name to 63 bytes (with a NOTICE). The
// truncation is the same on every CREATE INDEX IF NOT EXISTS, and the
// truncated name is still unique (no other table's name or index can
// produce it), so those collections work. The limit is not lowered
// because the catalog records each collection's table name and an existing
// collection must keep mapping to it.
func tableFor(name string) string {
	if simpleNameRE.MatchString(name) {
		return TablePrefix + name
	}
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if b.Len() >= 30 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		}
	}
	sum := sha256.Sum256([]byte(name))
	return TablePrefix + b.String() + "_" + hex.EncodeToString(sum[:6])
}

// names quotes the identifiers of one collection.
type names struct {
	schema string // unquoted, may be ""
	table  string // unquoted table name
	repl   *strings.Replacer
}

func (n *names) q(name string) string {
	if n.schema == "" {
		return pgx.Identifier{name}.Sanitize()
	}
	return pgx.Identifier{n.schema, name}.Sanitize()
}

func newNames(schema, table string, dim int, hnsw string) *names {
	n := &names{schema: schema, table: table}
	idx := func(suffix string) string { return pgx.Identifier{table + suffix}.Sanitize() }
	pairs := []string{
		"{table}", n.q(table),
		// The revision sequence, as an identifier and as a text literal
		// for nextval. Schema and table names are plain identifiers
		// (identRE, tableFor), so the literal needs no quote escaping.
		"{seq}", n.q(table + "_rev"),
		"{seq_lit}", "'" + n.q(table+"_rev") + "'",
		"{catalog}", n.q(CatalogTable),
		"{migrations}", n.q(migrationsTable),
		"{dim}", strconv.Itoa(dim),
		"{idx_created}", idx("_created"),
		"{idx_thread}", idx("_thread"),
		"{idx_resource}", idx("_resource"),
		"{idx_layer}", idx("_layer"),
		"{idx_meta}", idx("_meta"),
		"{idx_hnsw}", idx("_hnsw"),
		// The lexical index: suffixes short enough that even the longest
		// table name (55 bytes) gives names within the 63-byte limit.
		"{terms}", n.q(table + "_terms"),
		"{tstats}", n.q(table + "_tstats"),
		"{idx_tpk}", idx("_tpk"),
		"{idx_tix}", idx("_tix"),
		"{idx_tspk}", idx("_tspk"),
		// Schema-qualified, for DROP INDEX: an index lives in its table's
		// schema, which need not be on the search path.
		"{idx_tix_q}", n.q(table + "_tix"),
		"{idx_hnsw_q}", n.q(table + "_hnsw"),
	}
	// The index statement has placeholders of its own: expand it first.
	hnsw = strings.NewReplacer(pairs...).Replace(hnsw)
	n.repl = strings.NewReplacer(append(pairs, "{hnsw}", hnsw)...)
	return n
}

func (n *names) expand(sql string) string { return n.repl.Replace(sql) }

// ident is the collection table as a pgx identifier (for COPY).
func (n *names) ident() pgx.Identifier {
	if n.schema == "" {
		return pgx.Identifier{n.table}
	}
	return pgx.Identifier{n.schema, n.table}
}

// opclass is the HNSW operator class of each distance.
var opclass = map[driver.Distance]string{
	driver.DistanceCosine:    "vector_cosine_ops",
	driver.DistanceDot:       "vector_ip_ops",
	driver.DistanceEuclidean: "vector_l2_ops",
}

// hnswSQL is the index statement of collectionSteps' {hnsw} placeholder.
func hnswSQL(d driver.Distance, m, efc int) string {
	return fmt.Sprintf("CREATE INDEX IF NOT EXISTS {idx_hnsw} ON {table} USING hnsw (embedding %s) WITH (m = %d, ef_construction = %d);",
		opclass[d], m, efc)
}

// ensureMigrationsTable creates the migrations table; call it in a
// transaction that holds the migration lock.
func ensureMigrationsTable(ctx context.Context, tx pgx.Tx, n *names) error {
	_, err := tx.Exec(ctx, n.expand(`CREATE TABLE IF NOT EXISTS {migrations} (
	component  text        NOT NULL,
	version    integer     NOT NULL,
	name       text        NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (component, version)
)`))
	return err
}

func lockMigrations(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, $2)", int32(migrationLockClass), int32(migrationLockID))
	return err
}

// applied returns the schema version of component (0 when none).
func applied(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, n *names, component string) (int, error) {
	var v int
	err := q.QueryRow(ctx, n.expand("SELECT coalesce(max(version), 0) FROM {migrations} WHERE component = $1"), component).Scan(&v)
	return v, err
}

// migrateTx applies the steps of component that are not yet recorded. The
// caller holds the migration lock in tx.
func migrateTx(ctx context.Context, tx pgx.Tx, n *names, component string, steps []step) error {
	have, err := applied(ctx, tx, n, component)
	if err != nil {
		return fmt.Errorf("read schema version of %s: %w", component, err)
	}
	if have > latest(steps) {
		return &driver.Error{Code: driver.CodeConfigMismatch, Op: "open", Field: "schema",
			Msg: fmt.Sprintf("schema of %s is at version %d, this code knows up to %d (upgrade strata)", component, have, latest(steps))}
	}
	for _, s := range steps {
		if s.version <= have {
			continue
		}
		if _, err := tx.Exec(ctx, n.expand(s.sql)); err != nil {
			return fmt.Errorf("migration %d (%s) of %s: %w", s.version, s.name, component, err)
		}
		if _, err := tx.Exec(ctx, n.expand("INSERT INTO {migrations} (component, version, name) VALUES ($1, $2, $3)"), component, s.version, s.name); err != nil {
			return fmt.Errorf("record migration %d of %s: %w", s.version, component, err)
		}
	}
	return nil
}

func isUndefinedTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}
