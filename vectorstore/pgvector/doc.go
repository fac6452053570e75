// Package pgvector is the PostgreSQL + pgvector driver of strata's
// vectorstore: the scale-out backend for memory records.
//
// Import it for its side effect and open a collection by URL:
//
//	import _ "github.com/stratamem/strata/vectorstore/pgvector"
//
//	coll, err := vectorstore.Open(ctx, "postgres://app@db:5432/strata?collection=memories&dimension=384", nil)
//
// or over a pool you own with OpenCollection. To open URLs with other
// defaults for the driver's options, register a configured URLOpener (see
// vectorstore.URLOpener). Both schemes,
// postgres:// and postgresql://, are registered. URL parameters beyond the
// common ones are listed at Options (schema, index, m, ef_construction,
// ef_search, exact, copy_threshold, timeout, bulk_timeout, defer_index);
// the connection parameters of
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
// # One URL for records and state
//
// The URL of a collection also opens the layer state of the same database
// with storage.Open (package storage/postgres), and the other way round:
//
//	const db = "postgres://app@db:5432/strata?collection=memories&dimension=512&state_table=app_state"
//	coll, err := vectorstore.Open(ctx, db, nil) // records
//	state, err := storage.Open(ctx, db)         // layer state (core.Config.Store)
//
// The state store checks the vector side's parameters (postgres.VectorParams)
// and ignores them; this driver checks the state store's (StateParams:
// state_table, the state table, default strata_state) and ignores them.
// timeout means the same on both sides: the bound of one call. collection
// defaults to "memories" and dimension is needed only to create a
// collection, so postgres://app@db/strata alone opens both once the
// collection exists (environment.Open passes the embedder's dimension).
//
// # As
//
// vectorstore.Collection.As supports **pgxpool.Pool (the collection's
// pool, still owned by the collection) and *vectorstore.EmbedderRecorder
// (see EmbedderTable).
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
// sequence strata_vec_<name>_rev), terms (the lexical document: a jsonb
// object term -> weight, NULL without one; float32 weights round trip
// exactly) and term_sketch (bytea, see below). Indexes: (created_at, id)
// for keyset pagination, thread, resource, (layer, kind), a GIN
// jsonb_path_ops index for metadata containment, and HNSW on the embedding
// with the operator class of the distance (vector_cosine_ops,
// vector_ip_ops, vector_l2_ops).
//
// # Term index
//
// Record.Terms is indexed in two more tables per collection, both with
// COLLATE "C" text (byte order, memcmp comparisons):
//
//   - strata_vec_<name>_terms, the postings: one row per (record, term)
//     with the weight (tf, real), the document length (dl, float8: the sum
//     of the weights in byte order of the terms, as driver.Terms.Len adds
//     them), the document's sketch and, denormalised, the record's layer,
//     kind, resource and thread. Primary key (id, term) INCLUDE (tf, dl);
//     index (layer, term, resource, thread, kind) INCLUDE (id, tf, dl,
//     sketch): a corpus naming a resource (and a thread) is one index
//     range per query term, read index-only, whatever other resources
//     hold.
//   - strata_vec_<name>_tstats, the statistics, keyed (layer, term,
//     resource, thread, kind): for the empty term, the group's document
//     count (n) and total length (len, numeric, so that increments and
//     decrements cancel exactly); for a term, its document frequency (n)
//     and two bounds for pruning, maxtf (at least every weight of the term)
//     and mindl (at most the length of every document holding it); bounds
//     only, a delete does not tighten them, a row back from zero starts
//     afresh. Rows of the empty thread roll a resource up (every thread
//     and the records without one), the others count one thread, so the
//     statistics of any corpus are a few index rows.
//
// A document's sketch (64 bytes) is computed here when it is written:
// for 32 buckets of terms (FNV-1a), a logarithmic code of the largest
// weight in the bucket, and a 256-bit Bloom filter of the terms (three
// bits each). From any one posting of a document, it bounds what every
// other query term can give that document.
//
// Every write (Upsert, UpsertIf, Delete, DeleteIf, DeleteWhere) keeps the
// term index in its transaction: the write's first statement takes the
// records' row locks (in id order: batches are sorted, deletes lock with
// SELECT ... ORDER BY id FOR UPDATE), and a second statement, run once the
// locks are held, reconciles the postings of those ids with their terms
// column and applies the difference to the statistics, in one INSERT ... ON
// CONFLICT in key order. Under READ COMMITTED its snapshot sees what the
// last writer of each record committed, so the difference is exact; the
// statistics are the only rows writers of different records share, always
// locked after the record rows and in one order, so writers do not
// deadlock. Small writes send both statements in one pipelined batch (one
// round trip, one implicit transaction); COPY loads and DeleteWhere run
// them in an explicit transaction. Statistics rows left at zero are deleted
// afterwards by a statement that never waits (FOR UPDATE SKIP LOCKED); one
// a concurrent writer held stays, harmless, until a later write sweeps it.
// Term tables dropped outside strata are rebuilt from the terms column on
// the next open.
//
// SearchTerms reads the corpus' statistics and ranks in the engine, in a
// read-only REPEATABLE READ transaction (one snapshot for both; two round
// trips, BEGIN pipelined with the first statement and COMMIT with the
// last), as described at the method: by primary key for Filter.IDs,
// exhaustively (each document scored in one pass) for queries whose terms
// hold few postings, and otherwise with max-score pruning, where the
// threshold comes from the exact scores of the likely best documents of
// the rarest terms, the common terms' postings are not read, and candidate
// postings are checked against their documents' sketches before any
// aggregation. Scores are those of driver.RankTerms up
// to float rounding (the same formula in float8, terms added in the same
// order, so equal documents tie exactly and are ordered by id). Measured by
// BenchmarkTermSearch: 5 ms p50 over a resource of 50,000 documents (with
// 50,000 more of another resource in the same tables), under 1 ms for a
// thread, 2 ms for the scores of 100 given ids.
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
// that the table is missing. Step 3 added the term index (terms column,
// postings and statistics tables; records written before have no terms, so
// there is nothing to backfill), step 4 the sketches (term_sketch, and the
// postings' sketch in their index; postings written before have none and
// are bounded by the statistics alone until their record is written
// again).
//
// # Writes
//
// Upsert of a small batch is one INSERT ... SELECT FROM unnest($1, ...)
// ON CONFLICT (id) DO UPDATE, pipelined with the term index's
// reconciliation. From Options.CopyThreshold records up (1000 by default),
// the batch is COPYed in binary into a temporary table and merged with one
// INSERT ... ON CONFLICT DO UPDATE that reports which rows it inserted;
// the postings of those records are computed in Go and COPYed straight
// into the postings table, and their statistics' deltas aggregated in Go,
// so that SQL reconciles only the records the batch replaced (bulk.go). A
// load into an empty table COPYs straight into it and builds the HNSW and
// postings indexes once, after the rows. Either way a batch is atomic with
// its term index (see Term index) and durable when Upsert returns (the
// commit waits for the WAL flush). Write transactions switch JIT
// compilation off: the planner cannot estimate id = ANY($1) over
// thousands of ids, priced the reconciliation high enough to compile it,
// and the compilation took 3.3 s of an 11 s statement.
//
// A large batch is bounded by Options.BulkTimeout (URL bulk_timeout, 10
// minutes by default) instead of the per-call Options.Timeout (timeout,
// 30 s), when its context has no deadline; a deadline on the context wins.
//
// Loading into a collection that is not empty, the graph is the cost: each
// row inserted into the HNSW index cost about 8 ms on the test server
// (512 dimensions, m 16, ef_construction 64), against a fraction of that
// for one build over the rows afterwards. A bulk loader (memctl migrate,
// an import) opens its target with Options.DeferIndex (URL
// defer_index=true): its first Upsert drops the HNSW and postings indexes,
// every Upsert takes the COPY path, and Close builds the indexes once,
// under BulkTimeout. Meanwhile searches scan, exactly; an interrupted load
// leaves the indexes missing until a DeferIndex handle is closed (run the
// load again). BenchmarkBulkLoad measures both ways.
//
// What a DeferIndex load costs (BenchmarkBulkMigrate: 100,000 chat
// messages, 512-d vectors, about 100 terms each, so ten million postings,
// batches of 10,000, on the 2-core test machine while other work ran on
// it): 165 to 330 s, the batches 50 to 130 s and the build at Close 115
// to 200 s, of which the HNSW graph 80 to 150 s and the postings index 27
// to 60 s. Since the postings go straight to their table and their
// statistics are aggregated in Go, a batch costs a tenth to a fifth less
// (run back to back with the code before: 89 s of batches against 100 s
// for 100,000 records; 10.5 s against 13.1 s for 20,000, medians of
// three). The build is the floor of a synchronous load: the HNSW build
// alone takes more than a minute there (80 s at the quietest), so a
// 100,000-record load cannot finish in a minute on two cores however fast
// the batches are. It runs with the server's max_parallel_maintenance_workers
// (PostgreSQL's default of 2, plus the leader; pgvector builds HNSW in
// parallel since 0.6) and maintenance_work_mem 1GB for the transaction,
// which holds the graph of 100,000 512-d vectors (2 KB each plus their
// neighbour lists); more workers would need more cores, not other settings. Where a load must end sooner, the alternative
// is to take the HNSW graph out of its critical path: Close would build
// the postings index (term search indexed again) and leave the graph to
// CREATE INDEX CONCURRENTLY afterwards, which blocks no reader or writer,
// while vector queries scan exactly (correct, 100,000 distances a query).
// Close does not do that today, as it would need a caller that waits for
// or watches a build outliving the handle; it always builds both.
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
// at 2. UpsertIf is one conditional statement (pipelined with the term
// index's reconciliation, which changes nothing after a conflict): INSERT
// ... ON CONFLICT (id) DO NOTHING
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
// large enough, with hnsw.ef_search (Options.EfSearch, raised to n) and,
// where pgvector has iterative index scans (0.8 and later, detected at
// open), hnsw.iterative_scan = strict_order and hnsw.max_scan_tuples
// (raised with n), so that a selective filter still yields n rows; without
// them, an index answer short of n rows under a filter is asked again
// exactly. The settings are made by set_config(..., true), i.e. SET LOCAL,
// in the query's implicit transaction (one pipelined batch, one round
// trip): they end with it and never leak to the next user of the pooled
// connection. They include plan_cache_mode = force_custom_plan: pgx
// prepares statements and PostgreSQL moves a prepared statement to a
// generic plan after five executions, which cannot see the filter's
// values; for the memory layers' filters (metadata @> {"embedding": ...},
// true of nearly every row) it estimated 1% of the rows, read the GIN index
// and sorted every match by distance, 167 ms against 35 ms for the custom
// plan's HNSW scan (BenchmarkQueryScope, K=200, 50,000 of 100,000 records).
// Index search is approximate; ties are resolved as the portable API
// requires by widening the request until the K-th match scores strictly
// better than the last row. Options.Exact (URL exact=true) orders by
// (distance, id) through the distance functions, which no index serves:
// exact top-k at the cost of a scan.
//
// # Several processes
//
// Any number of processes (servers behind a load balancer, workers, cron
// jobs, memctl) may open the same collections of one database, each with
// its own pool: the first opens create the catalog, tables and indexes
// under a transaction-scoped advisory lock, once. Upsert and Delete are
// last-writer-wins per record; UpsertIf and DeleteIf are compare-and-swap
// by revision in one statement, so two processes updating one record
// never both succeed from the same revision (TestRecordCASAcrossProcesses
// runs two OS processes doing it and checks that no update is lost and
// that the term index is exact afterwards). The term index stays exact
// under writers of any process: record rows are locked in id order and the
// statistics rows after them in key order, so writers do not deadlock.
// Size each process's pool (pool_max_conns) so that their sum stays under
// the server's max_connections, or put a pooler in between; in transaction
// pooling mode use default_query_exec_mode=exec unless the pooler keeps
// prepared statements (the driver's settings are transaction-local and
// survive it). Reads (Query, SearchTerms, List, Get) may go to a hot
// standby through a second handle where a slightly stale answer is fine,
// for recall; a revision read there and used for UpsertIf is safe (a stale
// one conflicts) but conflicts until the standby catches up, so read
// before a compare-and-swap through the primary. Only the primary takes
// writes, and it must have opened the collection first (opening migrates).
// Standby reads were not tested here.
//
// # Failures
//
// Every call runs under ctx and, without a deadline, under Options.Timeout.
// Connections opened by URL send the server a cancel request when a context
// ends (CancelOnServer). Idempotent calls (Get, Count, List, Query,
// SearchTerms, Upsert, Delete) are retried once after a connection failure,
// as after a server restart; DeleteWhere, UpsertIf and DeleteIf only when
// nothing reached the server.
//
// The driver interface has no way to drop or list collections; this package
// offers DropCollection and ListCollections for tools such as memctl.
package pgvector
