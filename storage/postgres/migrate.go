package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// MigrationsTable is the table, in the schema of Options.Table, that
// records applied schema steps. The pgvector driver shares it.
const MigrationsTable = "strata_schema_migrations"

// migrationLock is the advisory lock (two int4 keys) held while migrating.
// One lock for all strata components: migrations are rare and short, and a
// single lock also serialises creating MigrationsTable itself (concurrent
// CREATE TABLE IF NOT EXISTS can fail on the catalog's unique index).
const (
	migrationLockClass = 0x53545241 // "STRA"
	migrationLockID    = 1
)

// step is one schema migration. Its SQL may use the placeholders of
// (*names).expand.
type step struct {
	version int
	name    string
	sql     string
}

// steps are the migrations of the state table, in order. Never edit a
// released step: append a new one.
var steps = []step{
	{1, "create state table", `
CREATE SEQUENCE IF NOT EXISTS {seq};
CREATE TABLE IF NOT EXISTS {table} (
	key_hash   bytea       PRIMARY KEY,
	scope      text        NOT NULL CHECK (scope IN ('thread', 'resource', 'global')),
	scope_id   bytea       NOT NULL,
	layer      bytea       NOT NULL,
	name       bytea       NOT NULL,
	value      bytea       NOT NULL,
	revision   bigint      NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS {index_scope} ON {table} (scope, scope_id);
`},
}

// SchemaVersion is the schema version this package writes and reads.
var SchemaVersion = steps[len(steps)-1].version

// migrate brings the schema of component up to date. The common case, an
// up-to-date schema, costs one query and takes no lock.
func migrate(ctx context.Context, pool *pgxpool.Pool, n *names, component string, steps []step) error {
	latest := steps[len(steps)-1].version
	have, err := appliedVersion(ctx, pool, n, component)
	if err == nil {
		if have == latest {
			return nil
		}
		if have > latest {
			return &SchemaVersionError{Component: component, Found: have, Known: latest}
		}
	} else if !isUndefinedTable(err) {
		return fmt.Errorf("read schema version: %w", err)
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, $2)", int32(migrationLockClass), int32(migrationLockID)); err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, n.expand(`CREATE TABLE IF NOT EXISTS {migrations} (
	component  text        NOT NULL,
	version    integer     NOT NULL,
	name       text        NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (component, version)
)`)); err != nil {
			return fmt.Errorf("create %s: %w", MigrationsTable, err)
		}
		// Re-read under the lock: another process may have migrated while
		// this one waited.
		have, err := appliedVersion(ctx, tx, n, component)
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if have > latest {
			return &SchemaVersionError{Component: component, Found: have, Known: latest}
		}
		for _, s := range steps {
			if s.version <= have {
				continue
			}
			if _, err := tx.Exec(ctx, n.expand(s.sql)); err != nil {
				return fmt.Errorf("migration %d (%s) of %s: %w", s.version, s.name, component, err)
			}
			if _, err := tx.Exec(ctx, n.expand("INSERT INTO {migrations} (component, version, name) VALUES ($1, $2, $3)"),
				component, s.version, s.name); err != nil {
				return fmt.Errorf("record migration %d of %s: %w", s.version, component, err)
			}
		}
		return nil
	})
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func appliedVersion(ctx context.Context, q querier, n *names, component string) (int, error) {
	var v int
	err := q.QueryRow(ctx, n.expand("SELECT coalesce(max(version), 0) FROM {migrations} WHERE component = $1"), component).Scan(&v)
	return v, err
}

func isUndefinedTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}
