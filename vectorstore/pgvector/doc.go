// Package pgvector is the PostgreSQL + pgvector driver of strata's
// vectorstore: the scale-out backend for memory records.
//
// Import it for its side effect and open a collection by URL:
//
//	import _ "github.com/stratamem/strata/vectorstore/pgvector"
//
//	coll, err := vectorstore.Open(ctx, "postgres://app@db:5432/strata?collection=memories&dimension=384", nil)
//
// or over a pool you own with OpenCollection / OpenDriver. Both schemes,
// postgres:// and postgresql://, are registered. URL parameters beyond the
// common ones are listed at Options (schema, index, m, ef_construction,
// ef_search, exact, copy_threshold, timeout); the connection parameters of
// PgxParams (libpq's: sslmode, connect_timeout, target_session_attrs, ...;
// pgx's: default_query_exec_mode, statement_cache_capacity, ...; pgxpool's
// pool_max_conns, pool_max_conn_lifetime, ...; and the server settings
// application_name, search_path, timezone, statement_timeout, lock_timeout,
// idle_in_transaction_session_timeout and options) go to pgx after a local
// check of their value. Any other parameter, which pgx would send to the
// server as a setting and the server refuse only as "failed to connect", is
// refused before connecting with vectorstore.ErrInvalidArgument naming it;
// other server settings go through options=-c%20name%3Dvalue. The query is
// decoded the Go way ('+' is a space: write %2B for a plus).
//
// # Layout: one table per collection
//
// Each collection is a table named strata_vec_<name> (names that are not
// short lower-case identifiers get a sanitised prefix and a hash suffix),
// listed with its dimension, distance and index parameters in the catalog
// table strata_vec_collections. A table per collection rather than one
// shared table with a collection column, because:
//
//   - the embedding column is vector(dimension), and an HNSW index needs a
//     fixed dimension: collections of different dimensions could share a
//     table only through per-collection partial expression indexes;
//   - each collection gets its own HNSW graph and planner statistics, so a
//     small collection is not searched through a large one's graph, and a
//     filter's selectivity is estimated per collection;
//   - dropping a collection is DROP TABLE, not a bulk DELETE and vacuum.
//
// Columns: id (text COLLATE "C", primary key, so ORDER BY id is byte order
// like every other driver's), layer, kind, thread, resource, content, metadata
// (jsonb object of strings), created_at, valid_from, valid_to (timestamptz,
// NULL for "unbounded"), embedding (vector), revision (bigint, from the
// sequence strata_vec_<name>_rev). Indexes: (created_at, id) for
// keyset pagination, thread, resource, (layer, kind), a GIN jsonb_path_ops
// index for metadata containment, and HNSW on the embedding with the
// operator class of the distance (vector_cosine_ops, vector_ip_ops,
// vector_l2_ops).
//
// # Migrations
//
// Schema changes are versioned steps recorded in strata_schema_migrations
// (shared with storage/postgres): component "vectorstore/pgvector" for the
// catalog and "vectorstore/pgvector:<table>" for each collection. Opening
// applies missing steps in one transaction under a transaction-scoped
// advisory lock, so concurrent first opens create a collection once; a
// schema newer than this code is refused with CodeConfigMismatch. A
// collection table dropped outside strata (its catalog row and migration
// records left behind) is re-created, empty, by the next open, with a
// warning logged through log/slog; handles open meanwhile get errors saying
// that the table is missing.
//
// # Writes
//
// Upsert of a small batch is one INSERT ... SELECT FROM unnest($1, ...)
// ON CONFLICT (id) DO UPDATE. From Options.CopyThreshold records up (1000
// by default), the batch is COPYed in binary into a temporary table and
// merged with one INSERT ... ON CONFLICT DO UPDATE, in a transaction: COPY
// streams a bulk load but cannot upsert by itself. Either way a batch
// is atomic and durable when Upsert returns (the commit waits for the WAL
// flush).
//
// # Revisions and conditional writes
//
// Every insert takes its revision from the collection's sequence (the
// column default) and every update sets revision = nextval, so revisions
// grow per collection and never come back, not even for an id deleted and
// written again; the sequence is not owned by the table, so it also
// survives a table dropped outside strata. Rows of tables created before
// revisions existed are at revision 1 (migration 2 adds the column with a
// constant default, without rewriting the table) and the sequence starts
// at 2. UpsertIf is one statement: INSERT ... ON CONFLICT (id) DO NOTHING
// RETURNING revision to create (it waits for a concurrent insert of the id,
// then does nothing), or UPDATE ... WHERE id = $1 AND revision = $2
// RETURNING revision (READ COMMITTED re-checks the condition on the row
// version it locks); DeleteIf is DELETE ... WHERE id AND revision. No row
// returned is a conflict. Unlike the idempotent calls, they are not retried
// after a connection failure that pgx cannot prove harmless: run again, an
// applied write would conflict with itself.
//
// # Search
//
// Filters become parameterised WHERE clauses (equality on the scope and
// kind columns, id = ANY($n), metadata @> $n::jsonb, time bounds); no value
// is ever spliced into SQL text. By default Query asks for ORDER BY distance
// LIMIT n, which the planner serves from the HNSW index once a collection is
// large enough, with hnsw.ef_search (Options.EfSearch, raised to n),
// hnsw.iterative_scan = strict_order and hnsw.max_scan_tuples (raised with
// n) set by set_config(..., true), i.e. SET LOCAL: the settings end with
// the query's transaction and never leak to the next user of the pooled
// connection. Index search is approximate;
// ties are resolved as the portable API requires by widening the request
// until the K-th match scores strictly better than the last row. Options.
// Exact (URL exact=true) orders by (distance, id) through the distance
// functions, which no index serves: exact top-k at the cost of a scan.
//
// # Failures
//
// Every call runs under ctx and, without a deadline, under Options.Timeout.
// Connections opened by URL send the server a cancel request when a context
// ends (CancelOnServer). Idempotent calls (Get, Count, List, Query, Upsert,
// Delete) are retried once after a connection failure, as after a server
// restart; DeleteWhere, UpsertIf and DeleteIf only when nothing reached
// the server.
//
// The driver interface has no way to drop or list collections; this package
// offers DropCollection and ListCollections for tools such as memctl.
package pgvector
