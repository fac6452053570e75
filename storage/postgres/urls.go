package postgres

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stratamem/strata/internal/pgurl"
	"github.com/stratamem/strata/storage"
)

// Schemes of this driver, as for the pgvector vector store.
const (
	Scheme    = "postgres"
	SchemeAlt = "postgresql"
)

func init() {
	storage.Register(Scheme, openURL)
	storage.Register(SchemeAlt, openURL)
}

// One URL opens the records (vectorstore.Open with the pgvector driver)
// and the state (storage.Open) of an environment: each side checks the
// other's parameters and ignores them.
//
// VectorParams are the parameters of the vector side (vectorstore's common
// ones and pgvector's own): a state store opened by URL checks the form of
// their values (an integer, a duration, a boolean, a known distance) and
// ignores them. The state table is DefaultTable in the connection's
// search_path, whatever the pgvector schema, unless state_table names
// another. TestOneURL in package pgvector keeps the list in step with the
// driver's.
var VectorParams = []string{"collection", "dimension", "distance", "metadata_keys",
	"schema", "index", "m", "ef_construction", "ef_search", "exact", "copy_threshold",
	"bulk_timeout", "defer_index"}

// StateParams are the parameters of the state side: timeout
// (Options.Timeout, a positive Go duration; pgvector reads it too, with
// the same meaning for its calls) and state_table (Options.Table). The
// pgvector driver checks state_table's form and ignores it.
var StateParams = []string{"timeout", "state_table"}

// openURL opens "postgres://user@host/db". Parameters: StateParams, the
// VectorParams (checked, ignored), and the connection parameters pgx
// reads (sslmode, application_name, pool_max_conns, ...), passed on
// unchanged.
func openURL(ctx context.Context, u *url.URL) (storage.Store, error) {
	bad := func(k, format string, args ...any) error {
		return fmt.Errorf("%w: parameter %q: "+format, append([]any{storage.ErrInvalidURL, k}, args...)...)
	}
	q, err := storage.Params(u)
	if err != nil {
		return nil, err
	}
	var o Options
	for _, k := range slices.Sorted(maps.Keys(q)) {
		v := q.Get(k)
		switch k {
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return nil, bad(k, "want a positive duration (e.g. 30s), got %q", v)
			}
			o.Timeout = d
		case "state_table":
			if _, err := newNames(v); err != nil {
				return nil, bad(k, "want [schema.]name, parts matching [A-Za-z_][A-Za-z0-9_]*, the name at most 49 bytes; got %q", v)
			}
			o.Table = v
		case "dimension", "m", "ef_construction", "ef_search", "copy_threshold":
			if _, err := strconv.Atoi(v); err != nil {
				return nil, bad(k, "not an integer: %q", v)
			}
		case "bulk_timeout":
			if d, err := time.ParseDuration(v); err != nil || d <= 0 {
				return nil, bad(k, "want a positive duration (e.g. 10m), got %q", v)
			}
		case "exact", "defer_index":
			if _, err := strconv.ParseBool(v); err != nil {
				return nil, bad(k, "not a boolean: %q", v)
			}
		case "distance":
			switch strings.ToLower(v) {
			case "cosine", "cos", "dot", "ip", "inner_product", "euclidean", "l2", "euclid": // vectorstore's names
			default:
				return nil, bad(k, "unknown distance %q", v)
			}
		default:
			if !slices.Contains(VectorParams, k) {
				continue // a connection parameter: pgx's
			}
		}
		q.Del(k)
	}
	u2 := *u
	u2.RawQuery = pgurl.Query(q)
	return Open(ctx, u2.String(), o)
}
