package pgvector

import (
	"context"
	"errors"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/internal/pgurl"
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
	vectorstore.RegisterURLOpener(Scheme, &URLOpener{})
	vectorstore.RegisterURLOpener(SchemeAlt, &URLOpener{})
}

// URLOpener opens postgres:// and postgresql:// URLs; its zero value is
// registered for both schemes. Options are the defaults of the driver's
// options (schema, index, ...): a URL parameter overrides its field. The
// embedded vectorstore.Options are not read (vectorstore.Open takes those
// from the URL and its opts argument), and the opener always closes the
// pool it creates. Register a configured opener under a scheme of your own
// or in a vectorstore.URLMux:
//
//	vectorstore.RegisterURLOpener("pgmemory", &pgvector.URLOpener{Options: pgvector.Options{Schema: "memory"}})
type URLOpener struct {
	Options Options
}

// OpenCollectionURL implements vectorstore.URLOpener; see openURL.
func (o *URLOpener) OpenCollectionURL(ctx context.Context, u *url.URL, cfg driver.Config) (driver.Collection, error) {
	return openURL(ctx, u, cfg, o.Options)
}

// driverParams are the URL parameters this driver reads (and removes before
// the rest goes to pgx).
var driverParams = []string{"schema", "index", "m", "ef_construction", "ef_search", "exact", "copy_threshold", "timeout",
	"bulk_timeout", "defer_index"}

// DriverParams returns the names of this driver's own URL parameters
// (those of Options), sorted.
func DriverParams() []string { return slices.Sorted(slices.Values(driverParams)) }

// StateParams are the URL parameters of the PostgreSQL state store
// (storage/postgres) that this driver checks and ignores, so that one URL
// opens the records and the state of an environment: state_table
// ([schema.]name; the state store checks it in full). The state store's
// timeout is this driver's too, with the same meaning.
var StateParams = []string{"state_table"}

// stateTableRE is the form of a state table name.
var stateTableRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]{0,62}\.)?[A-Za-z_][A-Za-z0-9_]{0,48}$`)

// check validates one parameter value locally; nil accepts any value.
type check func(v string) error

func intIn(lo, hi int64) check {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errors.New("not an integer")
		}
		if n < lo || n > hi {
			if hi == math.MaxInt32 || hi == math.MaxInt64 {
				return errors.New("must be at least " + strconv.FormatInt(lo, 10))
			}
			return errors.New("must be in " + strconv.FormatInt(lo, 10) + ".." + strconv.FormatInt(hi, 10))
		}
		return nil
	}
}

func oneOf(vals ...string) check {
	return func(v string) error {
		if slices.Contains(vals, v) {
			return nil
		}
		return errors.New("want one of " + strings.Join(vals, ", "))
	}
}

func nonNegDuration(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return errors.New("not a duration (e.g. 30s, 1h)")
	}
	if d < 0 {
		return errors.New("negative duration")
	}
	return nil
}

// ports checks a port or, for several hosts, a comma-separated list.
func ports(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p == "" {
			continue // pgx: an empty entry means the default port
		}
		if intIn(1, 65535)(p) != nil {
			return errors.New("not a port (1..65535)")
		}
	}
	return nil
}

// pgxParams are the connection parameters passed on to pgx, with the checks
// that catch a bad value here instead of as pgx's "cannot parse" (whose
// message cannot be shown: it quotes the URL). They are the libpq keywords
// pgconn.ParseConfig knows (v5.12), pgx's own (statement and description
// cache, query exec mode), pgxpool's pool_* settings, and a few PostgreSQL
// run-time settings commonly given at connection time. pgx sends any other
// name to the server as a run-time setting, where a misspelt one fails only
// when connecting, as "failed to connect": so any other name is refused
// here; set other server settings with options=-c name=value, as libpq
// does.
var pgxParams = map[string]check{
	// libpq connection parameters.
	"host": nil, "port": ports, "dbname": nil, "database": nil, "user": nil, "password": nil, "passfile": nil,
	"connect_timeout":      intIn(0, math.MaxInt32),
	"sslmode":              oneOf("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
	"sslkey":               nil,
	"sslcert":              nil,
	"sslrootcert":          nil,
	"sslpassword":          nil,
	"sslcertmode":          oneOf("disable", "allow", "require"),
	"sslnegotiation":       oneOf("postgres", "direct"),
	"sslsni":               oneOf("0", "1"),
	"krbspn":               nil,
	"krbsrvname":           nil,
	"target_session_attrs": oneOf("any", "read-write", "read-only", "primary", "standby", "prefer-standby"),
	"service":              nil,
	"servicefile":          nil,
	"min_protocol_version": oneOf("3.0", "3.2", "latest"),
	"max_protocol_version": oneOf("3.0", "3.2", "latest"),
	"channel_binding":      oneOf("disable", "prefer", "require"),
	"require_auth":         nil,
	// pgx.
	"statement_cache_capacity":   intIn(0, math.MaxInt32),
	"description_cache_capacity": intIn(0, math.MaxInt32),
	"default_query_exec_mode":    oneOf("cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"),
	// pgxpool.
	"pool_max_conns":                intIn(1, math.MaxInt32),
	"pool_min_conns":                intIn(0, math.MaxInt32),
	"pool_min_idle_conns":           intIn(0, math.MaxInt32),
	"pool_max_conn_lifetime":        nonNegDuration,
	"pool_max_conn_idle_time":       nonNegDuration,
	"pool_health_check_period":      nonNegDuration,
	"pool_max_conn_lifetime_jitter": nonNegDuration,
	"pool_ping_timeout":             nonNegDuration,
	// Server run-time settings sent in the startup message.
	"application_name": nil, "options": nil, "search_path": nil, "timezone": nil,
	"statement_timeout": nil, "lock_timeout": nil, "idle_in_transaction_session_timeout": nil,
}

// PgxParams returns the names of the connection parameters a URL may carry
// besides the common ones and this driver's own, sorted. Each goes to pgx
// unchanged.
func PgxParams() []string { return slices.Sorted(maps.Keys(pgxParams)) }

// parseURL splits the query of u into the driver's Options and the
// connection string for pgx, validating every parameter locally. The
// driver's options start from base.
func parseURL(u *url.URL, base Options) (Options, string, error) {
	bad := func(field, format string, args ...any) error {
		return driver.Errorf(driver.CodeInvalidArgument, "open", field, format, args...)
	}
	o := base
	o.Options = vectorstore.Options{}
	o.ClosePool = true
	q, err := vectorstore.Params(u)
	if err != nil {
		return o, "", err
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		v := q.Get(k)
		if slices.Contains(driverParams, k) {
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
			case "bulk_timeout":
				o.BulkTimeout, err = time.ParseDuration(v)
				if err == nil && o.BulkTimeout <= 0 {
					err = strconv.ErrRange
				}
			case "defer_index":
				o.DeferIndex, err = strconv.ParseBool(v)
			}
			if err != nil {
				return o, "", bad(k, "bad value %q: %v", v, err)
			}
			continue
		}
		if slices.Contains(StateParams, k) {
			q.Del(k)
			if !stateTableRE.MatchString(v) {
				return o, "", bad(k, "state table %q must be [schema.]name with parts matching [A-Za-z_][A-Za-z0-9_]* (name at most 49 bytes)", v)
			}
			continue
		}
		chk, known := pgxParams[k]
		if known && strings.IndexByte(v, 0) >= 0 {
			return o, "", bad(k, "value contains a NUL byte")
		}
		if !known {
			return o, "", bad(k, "unknown postgres URL parameter %q (driver parameters: %s; state store's: %s; connection parameters: see pgvector.PgxParams; set other server settings with options=-c name=value)",
				k, strings.Join(driverParams, ", "), strings.Join(StateParams, ", "))
		}
		if chk != nil {
			if err := chk(v); err != nil { // no secret has a check: v may be shown
				return o, "", bad(k, "bad value %q: %v", v, err)
			}
		}
	}
	if q.Has("pool_min_conns") && q.Has("pool_max_conns") {
		lo, _ := strconv.Atoi(q.Get("pool_min_conns"))
		hi, _ := strconv.Atoi(q.Get("pool_max_conns"))
		if lo > hi {
			return o, "", bad("pool_min_conns", "pool_min_conns %d is greater than pool_max_conns %d", lo, hi)
		}
	}
	u2 := *u
	u2.RawQuery = pgurl.Query(q)
	return o, u2.String(), nil
}

// openURL opens "postgres://user@host:5432/db?collection=memories&dimension=384".
// Besides the common parameters it reads schema, index (hnsw|none), m,
// ef_construction, ef_search, exact (true|false), copy_threshold and timeout
// (a Go duration); see Options. The connection parameters of PgxParams
// (sslmode, application_name, pool_max_conns, ...) go to pgx, after a local
// check of their value. Any other parameter is refused before connecting.
func openURL(ctx context.Context, u *url.URL, cfg driver.Config, base Options) (driver.Collection, error) {
	o, conn, err := parseURL(u, base)
	if err != nil {
		return nil, err
	}
	pcfg, err := pgxpool.ParseConfig(conn)
	if err != nil {
		// pgx's message quotes the URL, password included. Its cause
		// (e.g. a strconv error) usually does not, except url.Parse's.
		msg := "cannot parse PostgreSQL URL"
		var uerr *url.Error
		if cause := errors.Unwrap(err); cause != nil && !errors.As(cause, &uerr) {
			if pw, _ := u.User.Password(); pw == "" || !strings.Contains(cause.Error(), pw) {
				msg += ": " + cause.Error()
			}
		}
		return nil, driver.Errorf(driver.CodeInvalidArgument, "open", "url", "%s", msg)
	}
	pcfg.ConnConfig.BuildContextWatcherHandler = CancelOnServer
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	d, err := openDriver(ctx, pool, cfg, &o)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return d, nil
}
