package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/pgvector"
)

// The pgvector driver loads a batch of its copy threshold or more with
// COPY, and a handle opened with defer_index=true (a bulk loader) drops
// the collection's HNSW and term indexes at its first write and builds
// them once at Close: inserting every row into the HNSW graph costs
// milliseconds a row, one build over the rows a fraction of that. memctl
// migrate asks for it when the target collection is empty, where nobody
// searches what is not there yet, and when the indexes are missing
// already (an interrupted deferred load, whose next DeferIndex handle
// builds them); never into a collection in use, whose searches would scan
// until the load ends.

// bulkTarget reopens a postgres migrate target as a bulk loader: with
// defer_index=true when the collection is empty or lacks its HNSW index,
// and bulk_timeout=--timeout when --timeout was given, unless the URL
// sets them. It returns the target to write (dst itself when nothing
// changes, or when it is not postgres) and whether its indexes are
// deferred to its Close.
func (a *app) bulkTarget(ctx context.Context, f *migrateFlags, dst *store, spec *createSpec) (*store, bool, error) {
	if dst.ref.Scheme != "postgres" {
		return dst, false, nil
	}
	// The URL opened, so it parses.
	u, err := url.Parse(dst.ref.URL)
	var q url.Values
	if err == nil {
		q, err = url.ParseQuery(u.RawQuery)
	}
	if err != nil {
		_ = dst.Close()
		return nil, false, fmt.Errorf("migrate: %s: %w", dst.ref, err)
	}
	var add url.Values = map[string][]string{}
	if !q.Has("bulk_timeout") && f.timeoutSet {
		add.Set("bulk_timeout", a.flags.timeout.String())
	}
	deferred := false
	if v := q.Get("defer_index"); v != "" {
		deferred, _ = strconv.ParseBool(v) // the driver checked it
	} else {
		empty := dst.created
		if !empty {
			var n int
			n, err = dst.coll.Count(ctx, vectorstore.Filter{})
			empty = err == nil && n == 0
		}
		if err == nil && !empty {
			empty, err = missingHNSW(ctx, dst.coll, q.Get("schema"))
		}
		if err != nil {
			_ = dst.Close()
			return nil, false, fmt.Errorf("migrate: %s: %w", dst.ref, err)
		}
		if empty {
			add.Set("defer_index", "true")
			deferred = true
		}
	}
	if len(add) == 0 {
		return dst, deferred, nil
	}
	if err := dst.Close(); err != nil {
		return nil, false, fmt.Errorf("migrate: %s: %w", dst.ref, err)
	}
	// Appended to the query as it is: re-encoding the user's parameters
	// (url.Values.Encode) would turn an escaped space into a '+', which
	// pgx reads as a plus. The values added need no escaping.
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += add.Encode()
	ref := dst.ref
	ref.URL = u.String()
	bulk, err := a.openRef(ctx, ref, openCreate, spec, false)
	if err != nil {
		return nil, false, err
	}
	bulk.ref, bulk.created = dst.ref, dst.created // messages name the URL as given
	return bulk, deferred, nil
}

// missingHNSW reports whether a pgvector collection created with an HNSW
// index has none: a deferred load was interrupted before its Close built
// it. A collection without index (index=none) has none to miss. schema is
// the URL's (the driver's Options.Schema): "" finds the catalog and the
// table on the search path, as the driver does.
func missingHNSW(ctx context.Context, coll *vectorstore.Collection, schema string) (bool, error) {
	var pool *pgxpool.Pool
	if !coll.As(&pool) {
		return false, nil
	}
	qual := func(name string) string { return pgx.Identifier{name}.Sanitize() }
	if schema != "" {
		qual = func(name string) string { return pgx.Identifier{schema, name}.Sanitize() }
	}
	var table, method string
	err := pool.QueryRow(ctx, "SELECT table_name, index_method FROM "+qual(pgvector.CatalogTable)+" WHERE name = $1", coll.Info().Name).Scan(&table, &method)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the collection catalog: %w", err)
	}
	if method != "hnsw" {
		return false, nil
	}
	var has bool
	err = pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
		WHERE i.indrelid = to_regclass($1) AND am.amname = 'hnsw')`, qual(table)).Scan(&has)
	if err != nil {
		return false, fmt.Errorf("look for the collection's HNSW index: %w", err)
	}
	return !has, nil
}
