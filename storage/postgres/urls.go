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

// VectorParams are the URL parameters of the vector side of an environment
// (vectorstore's common ones and pgvector's own): a state store opened with
// the URL of a pgvector collection checks and ignores them, so one URL
// opens both. The state table is DefaultTable in the connection's
// search_path whatever the pgvector schema.
var VectorParams = []string{"collection", "dimension", "distance", "metadata_keys",
	"schema", "index", "m", "ef_construction", "ef_search", "exact", "copy_threshold"}

// openURL opens "postgres://user@host/db". Parameters: timeout (a Go
// duration, Options.Timeout; shared with pgvector, where it has the same
// meaning), the VectorParams (checked, ignored), and the connection
// parameters pgx reads (sslmode, application_name, pool_max_conns, ...),
// passed on unchanged.
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
		case "dimension", "m", "ef_construction", "ef_search", "copy_threshold":
			if _, err := strconv.Atoi(v); err != nil {
				return nil, bad(k, "not an integer: %q", v)
			}
		case "exact":
			if _, err := strconv.ParseBool(v); err != nil {
				return nil, bad(k, "not a boolean: %q", v)
			}
		case "distance":
			switch strings.ToLower(v) {
			case "cosine", "dot", "euclidean", "l2", "ip", "inner_product":
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
