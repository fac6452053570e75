package pgvector

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

// Scheme is the URL scheme of this driver; SchemeAlt is the other spelling
// libpq accepts.
const (
	Scheme    = "postgres"
	SchemeAlt = "postgresql"
)

func init() {
	vectorstore.Register(Scheme, openURL)
	vectorstore.Register(SchemeAlt, openURL)
}

// driverParams are the URL parameters this driver reads (and removes before
// the rest goes to pgx).
var driverParams = []string{"schema", "index", "m", "ef_construction", "ef_search", "exact", "copy_threshold", "timeout"}

// openURL opens "postgres://user@host:5432/db?collection=memories&dimension=384".
// Besides the common parameters it reads schema, index (hnsw|none), m,
// ef_construction, ef_search, exact (true|false), copy_threshold and timeout
// (a Go duration); see Options. Every other parameter goes to pgx as a
// connection setting (sslmode, application_name, pool_max_conns, ...);
// pgx sends names it does not know to the server as run-time parameters,
// and the server rejects a misspelt one when connecting.
func openURL(ctx context.Context, u *url.URL, cfg driver.Config) (driver.Collection, error) {
	bad := func(field, format string, args ...any) error {
		return driver.Errorf(driver.CodeInvalidArgument, "open", field, format, args...)
	}
	q := u.Query()
	o := Options{ClosePool: true}
	for _, k := range driverParams {
		if !q.Has(k) {
			continue
		}
		v := q.Get(k)
		q.Del(k)
		var err error
		switch k {
		case "schema":
			o.Schema = v
		case "index":
			o.Index = strings.ToLower(v)
		case "m":
			o.M, err = strconv.Atoi(v)
		case "ef_construction":
			o.EfConstruction, err = strconv.Atoi(v)
		case "ef_search":
			o.EfSearch, err = strconv.Atoi(v)
		case "exact":
			o.Exact, err = strconv.ParseBool(v)
		case "copy_threshold":
			o.CopyThreshold, err = strconv.Atoi(v)
		case "timeout":
			o.Timeout, err = time.ParseDuration(v)
			if err == nil && o.Timeout <= 0 {
				err = strconv.ErrRange
			}
		}
		if err != nil {
			return nil, bad(k, "bad value %q: %v", v, err)
		}
	}
	u2 := *u
	u2.RawQuery = q.Encode()
	pcfg, err := pgxpool.ParseConfig(u2.String())
	if err != nil {
		// pgx's message may quote the URL, password included.
		return nil, bad("url", "cannot parse PostgreSQL URL")
	}
	pcfg.ConnConfig.BuildContextWatcherHandler = CancelOnServer
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	d, err := OpenDriver(ctx, pool, cfg, &o)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return d, nil
}
