package pgvector

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/stratamem/strata/vectorstore/internal/driverutil"
)

// EmbedderTable records which embedder wrote each collection: the model id
// (embed.Embedder.Model) and the dimension. It lives in Options.Schema,
// beside the catalog, and is created by the first RecordEmbedder:
//
//	name       text PRIMARY KEY  the collection
//	table_oid  oid               the collection table the record is of
//	model      text              the embedder's model id
//	dimension  integer
//	recorded_at timestamptz
//
// A record whose table_oid is not the collection table's current oid is of
// a collection since dropped (DropCollection, or by hand) and recreated:
// it is ignored and replaced, so a new collection never inherits the
// embedder of an old one of the same name.
//
// Collections written before this table existed have no record: their
// embedder is unknown until a caller records one (the environment package
// does when it opens one, see there).
const EmbedderTable = "strata_vec_embedders"

// EmbedderRecord returns the embedder recorded with the collection: its
// model id and dimension, or "" and 0 when none is (a collection written
// by older code, or never opened through the environment package).
func (c *collection) EmbedderRecord(ctx context.Context) (model string, dim int, err error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	err = c.pool.QueryRow(ctx, c.embedderSQL(`SELECT model, dimension FROM {emb} WHERE name = $1 AND table_oid = to_regclass($2)::oid`),
		c.info.Name, c.n.q(c.n.table)).Scan(&model, &dim)
	switch {
	case errors.Is(err, pgx.ErrNoRows), isUndefinedTable(err):
		return "", 0, nil
	case err != nil:
		return "", 0, fmt.Errorf("pgvector: read the embedder of %q: %w", c.info.Name, withCtx(ctx, err))
	}
	return model, dim, nil
}

// RecordEmbedder records model and dim as the collection's embedder unless
// one is recorded already, creating EmbedderTable if needed, and returns
// the record that stands: the one written, or the one found (written by
// another process in the meantime, say). It runs in one transaction under
// the strata migration lock.
func (c *collection) RecordEmbedder(ctx context.Context, model string, dim int) (string, int, error) {
	if model == "" || dim <= 0 {
		return "", 0, fmt.Errorf("pgvector: record embedder: empty model id or dimension %d", dim)
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var gotModel string
	var gotDim int
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if err := lockMigrations(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, c.embedderSQL(`CREATE TABLE IF NOT EXISTS {emb} (
	name        text COLLATE "C" PRIMARY KEY,
	table_oid   oid         NOT NULL,
	model       text        NOT NULL CHECK (model <> ''),
	dimension   integer     NOT NULL CHECK (dimension > 0),
	recorded_at timestamptz NOT NULL DEFAULT now()
)`)); err != nil {
			return err
		}
		tbl := c.n.q(c.n.table)
		// A record of a dropped table of the same name is stale.
		if _, err := tx.Exec(ctx, c.embedderSQL(`DELETE FROM {emb} WHERE name = $1 AND table_oid IS DISTINCT FROM to_regclass($2)::oid`), c.info.Name, tbl); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, c.embedderSQL(`INSERT INTO {emb} (name, table_oid, model, dimension)
SELECT $1, to_regclass($2)::oid, $3, $4 WHERE to_regclass($2) IS NOT NULL
ON CONFLICT (name) DO NOTHING`), c.info.Name, tbl, model, dim); err != nil {
			return err
		}
		return tx.QueryRow(ctx, c.embedderSQL(`SELECT model, dimension FROM {emb} WHERE name = $1`), c.info.Name).Scan(&gotModel, &gotDim)
	})
	if err != nil {
		return "", 0, fmt.Errorf("pgvector: record the embedder of %q: %w", c.info.Name, withCtx(ctx, err))
	}
	return gotModel, gotDim, nil
}

func (c *collection) embedderSQL(sql string) string {
	return c.n.expand(strings.ReplaceAll(sql, "{emb}", c.n.q(EmbedderTable)))
}

// As implements driver.Aser, for vectorstore.Collection.As: it supports
// **pgxpool.Pool (the collection's pool) and *vectorstore.EmbedderRecorder.
func (c *collection) As(target any) bool {
	return driverutil.As(target, c.pool, c)
}
