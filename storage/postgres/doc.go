// Package postgres is the PostgreSQL backend of storage.Store: durable,
// revisioned layer state shared by every process that points at the same
// database.
//
//	s, err := postgres.Open(ctx, "postgres://user@host/db", postgres.Options{})
//
// # Table
//
// One table (Options.Table, default "strata_state") holds every key:
//
//	key_hash   bytea PRIMARY KEY  SHA-256 of the length-prefixed key parts
//	scope      text               "thread", "resource" or "global"
//	scope_id   bytea              the key parts, byte for byte
//	layer      bytea
//	name       bytea
//	value      bytea NOT NULL
//	revision   bigint NOT NULL    from the sequence <table>_revision_seq
//	updated_at timestamptz
//
// Key parts are bytea, not text, because a storage.Key may hold any bytes:
// text would reject NUL bytes and invalid UTF-8 that the other backends
// store, and would compare under the database's collation. The primary key
// is a digest so that keys of any length fit a btree entry (whose limit is
// about 2.7 kB); the parts themselves stay in the row for inspection with
// convert_from(layer, 'UTF8').
//
// Store implements storage.Lister: Keys is one query on the index over
// (scope, scope_id), ordered by layer and name (bytea compares byte by
// byte, the order of storage.CompareKeys). It implements storage.ScopeLister
// too: ScopeIDs is one range scan of the same index, scope_id from the
// prefix up to the prefix's successor (not LIKE, whose wildcards a prefix
// may hold and which uses no btree index on bytea).
//
// # Compare-and-swap
//
// Every write is one statement: INSERT ... ON CONFLICT DO NOTHING to create
// (expected revision 0), UPDATE ... WHERE revision = $expected to replace,
// DELETE ... WHERE revision = $expected to delete. The row lock PostgreSQL
// takes for UPDATE and DELETE, and the unique index for INSERT, make the
// check and the write atomic across connections and processes; a statement
// that matched no row is a conflict, reported as *storage.ConflictError with
// the revision the store holds. Revisions come from one sequence per table,
// so they keep increasing across delete and re-create and a writer holding a
// revision from before a delete can never succeed (no ABA).
//
// # One URL
//
// storage.Open takes the URL of the environment's pgvector collection, so
// one connection string opens records and state:
//
//	postgres://app@db/strata?collection=memories&dimension=512&state_table=app_state&timeout=1m
//
// The state store reads timeout (Options.Timeout, shared with pgvector,
// where it bounds each call too) and state_table (Options.Table; see
// StateParams), checks the form of the vector side's parameters
// (VectorParams: collection, dimension, pgvector's index and bulk options,
// ...) and ignores them; pgvector checks state_table and ignores it. Any
// other parameter goes to pgx as a connection parameter (sslmode,
// application_name, pool_max_conns, ...).
//
// # Several processes
//
// Any number of processes may share one table: every server of a fleet
// behind an HTTP load balancer, workers, memctl. Each opens the same URL
// with its own pool; the schema is migrated once (see Migrations); every
// Put and Delete is a compare-and-swap decided by PostgreSQL's row lock
// and unique index, so of two processes writing a key from the same
// revision exactly one succeeds and the other gets a *storage.ConflictError
// and re-reads. TestCASAcrossProcesses runs two OS processes appending to
// the same keys and checks that no update is lost. Keep the sum of the
// pools (pool_max_conns per process, or Options.MaxConns) under the
// server's max_connections. A hot standby can serve Get and Keys where a
// slightly stale answer is fine; a revision read there is safe to write
// against (a stale one conflicts) but conflicts until the standby catches
// up, so read state you are about to replace from the primary.
//
// # Migrations
//
// Open and New bring the schema up to date under a transaction-scoped
// advisory lock, recording each applied step in strata_schema_migrations
// (component "storage/postgres:<table>"), so concurrent starts are safe and
// re-running is a no-op. A database whose schema is newer than this code
// yields a *SchemaVersionError instead of being touched.
//
// # Failures
//
// Each call runs under ctx and, when ctx has no deadline, under
// Options.Timeout (30 s by default), so a stopped server yields an error,
// never a hang. Errors wrap the pgx error (read it with errors.As into
// *pgconn.PgError) and, when the context ended, the context's error. A call
// is retried once only when pgx reports that nothing reached the server
// (pgconn.SafeToRetry). A call whose context ends sends the server a cancel
// request (CancelOnServer), so a write stuck on a lock is stopped rather
// than applied later. Still, when Put or Delete fails because the
// connection broke or the deadline raced the commit, the write may or may
// not have been applied; re-read before retrying, as for any conflict.
package postgres
