package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/internal/ctxutil"
	"github.com/stratamem/strata/storage"
)

// DefaultTable is the table used when Options.Table is empty.
const DefaultTable = "strata_state"

// DefaultTimeout bounds each call whose context has no deadline, when
// Options.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Options configure a Store. The zero value is useful: table strata_state in
// the connection's search_path, a 30 s bound per call, pgxpool's default
// pool size.
type Options struct {
	// Table is the state table, optionally schema-qualified ("app.state").
	// Each part must match [A-Za-z_][A-Za-z0-9_]* and the table name be at
	// most 49 bytes (its sequence adds "_revision_seq" within PostgreSQL's
	// 63-byte identifier limit). Empty means DefaultTable.
	Table string
	// Timeout bounds each call whose context carries no deadline. Zero means
	// DefaultTimeout; a negative value means no bound beyond ctx.
	Timeout time.Duration
	// MaxConns is the pool size Open uses; zero keeps pgxpool's default
	// (and any pool_max_conns in the DSN). New ignores it.
	MaxConns int32
}

var (
	// ErrInvalidOptions reports a bad DSN or Options value.
	ErrInvalidOptions = errors.New("postgres: invalid options")
	// ErrSchemaVersion is wrapped by *SchemaVersionError.
	ErrSchemaVersion = errors.New("postgres: unsupported schema version")
)

// SchemaVersionError reports a database whose schema was migrated by a newer
// version of this package. The store refuses it rather than write rows the
// newer schema may not expect. It wraps ErrSchemaVersion.
type SchemaVersionError struct {
	Component string
	Found     int // version recorded in the database
	Known     int // newest version this code knows
}

func (e *SchemaVersionError) Error() string {
	return fmt.Sprintf("postgres: schema of %s is at version %d, this code knows up to %d (upgrade strata)", e.Component, e.Found, e.Known)
}

// Unwrap lets errors.Is(err, ErrSchemaVersion) match.
func (e *SchemaVersionError) Unwrap() error { return ErrSchemaVersion }

// Store is a storage.Store in a PostgreSQL table. It is safe for concurrent
// use by many goroutines, and many processes may share one table.
type Store struct {
	pool    *pgxpool.Pool
	ownPool bool
	timeout time.Duration
	n       *names
	closed  atomic.Bool

	// Statements, expanded once.
	qGet, qCreate, qUpdate, qDelete, qRevision, qKeys string
	// qScopeIDs lists the scope ids in [$2, $3), qScopeIDsFrom those from
	// $2 on (a prefix with no upper bound: empty, or all 0xff bytes).
	qScopeIDs, qScopeIDsFrom string
}

var (
	_ storage.Store       = (*Store)(nil)
	_ storage.Lister      = (*Store)(nil)
	_ storage.ScopeLister = (*Store)(nil)
)

// Open connects to the database at dsn (a postgres:// URL or a key=value
// connection string), migrates the schema and returns a Store that owns its
// connection pool: Close closes the pool.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	n, err := newNames(opts.Table)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message can quote the DSN, password included: keep only the
		// classification.
		return nil, fmt.Errorf("%w: cannot parse DSN", ErrInvalidOptions)
	}
	if opts.MaxConns < 0 {
		return nil, fmt.Errorf("%w: MaxConns %d is negative", ErrInvalidOptions, opts.MaxConns)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	cfg.ConnConfig.BuildContextWatcherHandler = CancelOnServer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	s, err := newStore(ctx, pool, n, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownPool = true
	return s, nil
}

// CancelOnServer makes a connection whose context ends send PostgreSQL a
// cancel request, so the statement stops on the server too, and close the
// socket only if the server has not answered a second later. pgx's default
// just closes the socket, and the server then finishes the statement on its
// own: a write that timed out on a lock would still be applied once the lock
// is released. Open sets it; callers of New set it on their pool config:
//
//	cfg.ConnConfig.BuildContextWatcherHandler = postgres.CancelOnServer
func CancelOnServer(c *pgconn.PgConn) ctxwatch.Handler {
	return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: time.Second}
}

// New returns a Store over a pool the caller owns (and closes after the
// Store): Close marks the Store closed but leaves the pool open. The schema
// is migrated as in Open. See CancelOnServer for a setting the pool should
// have.
func New(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Store, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: nil pool", ErrInvalidOptions)
	}
	n, err := newNames(opts.Table)
	if err != nil {
		return nil, err
	}
	return newStore(ctx, pool, n, opts)
}

func newStore(ctx context.Context, pool *pgxpool.Pool, n *names, opts Options) (*Store, error) {
	s := &Store{pool: pool, timeout: opts.Timeout, n: n}
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := migrate(ctx, pool, n, n.component(), steps); err != nil {
		var sv *SchemaVersionError
		if errors.As(err, &sv) {
			return nil, err
		}
		return nil, fmt.Errorf("postgres: migrate %s: %w", n.table, withCtx(ctx, err))
	}
	s.qGet = n.expand(`SELECT value, revision FROM {table} WHERE key_hash = $1`)
	// Each write reports, besides its own result, the revision the table
	// held when the statement started, so a conflict names it without a
	// second round trip.
	s.qCreate = n.expand(`WITH w AS (
	INSERT INTO {table} (key_hash, scope, scope_id, layer, name, value, revision)
	VALUES ($1, $2, $3, $4, $5, $6, nextval({seq_literal}))
	ON CONFLICT (key_hash) DO NOTHING
	RETURNING revision)
SELECT (SELECT revision FROM w), (SELECT revision FROM {table} WHERE key_hash = $1)`)
	s.qUpdate = n.expand(`WITH w AS (
	UPDATE {table} SET value = $2, revision = nextval({seq_literal}), updated_at = now()
	WHERE key_hash = $1 AND revision = $3
	RETURNING revision)
SELECT (SELECT revision FROM w), (SELECT revision FROM {table} WHERE key_hash = $1)`)
	s.qDelete = n.expand(`WITH w AS (
	DELETE FROM {table} WHERE key_hash = $1 AND revision = $2
	RETURNING revision)
SELECT (SELECT revision FROM w), (SELECT revision FROM {table} WHERE key_hash = $1)`)
	s.qRevision = n.expand(`SELECT revision FROM {table} WHERE key_hash = $1`)
	// The (scope, scope_id) index serves this; bytea sorts byte by byte,
	// the order of storage.CompareKeys.
	s.qKeys = n.expand(`SELECT layer, name FROM {table} WHERE scope = $1 AND scope_id = $2 ORDER BY layer, name`)
	// A prefix is a range of the same index: the ids from the prefix up to
	// (not including) the prefix's successor. LIKE would need its
	// wildcards escaped and, on bytea, uses no btree index.
	s.qScopeIDs = n.expand(`SELECT DISTINCT scope_id FROM {table} WHERE scope = $1 AND scope_id >= $2 AND scope_id < $3 ORDER BY scope_id`)
	s.qScopeIDsFrom = n.expand(`SELECT DISTINCT scope_id FROM {table} WHERE scope = $1 AND scope_id >= $2 ORDER BY scope_id`)
	return s, nil
}

// Table returns the quoted, possibly schema-qualified name of the table.
func (s *Store) Table() string { return s.n.table }

// Pool returns the connection pool, for callers that share it.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Get returns the entry at key, or an error wrapping storage.ErrNotFound.
func (s *Store) Get(ctx context.Context, key storage.Key) (storage.Entry, error) {
	if err := s.enter(ctx, key); err != nil {
		return storage.Entry{}, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	h := keyHash(key)
	var e storage.Entry
	err := retryRead(ctx, func() error {
		return s.pool.QueryRow(ctx, s.qGet, h[:]).Scan(&e.Value, &e.Revision)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.Entry{}, storage.ErrNotFound
	}
	if err != nil {
		return storage.Entry{}, fmt.Errorf("postgres: get %s: %w", key, withCtx(ctx, err))
	}
	if e.Value == nil {
		e.Value = []byte{}
	}
	return e, nil
}

// Put writes value at key if the stored revision equals expected.
func (s *Store) Put(ctx context.Context, key storage.Key, value []byte, expected int64) (int64, error) {
	if err := s.enter(ctx, key); err != nil {
		return 0, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	h := keyHash(key)
	if value == nil {
		value = []byte{} // nil would encode as SQL NULL
	}
	var written, actual *int64
	var err error
	switch {
	case expected < 0:
		// No stored revision is negative: report the conflict.
		a, err := s.revision(ctx, h)
		if err != nil {
			return 0, fmt.Errorf("postgres: put %s: %w", key, err)
		}
		return 0, &storage.ConflictError{Key: key, Expected: expected, Actual: a}
	case expected == 0:
		err = retry(ctx, func() error {
			return s.pool.QueryRow(ctx, s.qCreate, h[:], key.Scope, []byte(key.ScopeID), []byte(key.Layer), []byte(key.Name), value).Scan(&written, &actual)
		})
	default:
		err = retry(ctx, func() error {
			return s.pool.QueryRow(ctx, s.qUpdate, h[:], value, expected).Scan(&written, &actual)
		})
	}
	if isSerializationFailure(err) {
		return 0, s.raced(ctx, key, h, expected)
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: put %s: %w", key, withCtx(ctx, err))
	}
	if written != nil {
		return *written, nil
	}
	return 0, s.conflict(ctx, key, h, expected, actual)
}

// Delete removes key if its revision equals expected.
func (s *Store) Delete(ctx context.Context, key storage.Key, expected int64) error {
	if err := s.enter(ctx, key); err != nil {
		return err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	h := keyHash(key)
	if expected <= 0 {
		a, err := s.revision(ctx, h)
		if err != nil {
			return fmt.Errorf("postgres: delete %s: %w", key, err)
		}
		if a == 0 && expected == 0 {
			return nil // absent, as expected
		}
		return &storage.ConflictError{Key: key, Expected: expected, Actual: a}
	}
	var deleted, actual *int64
	err := retry(ctx, func() error {
		return s.pool.QueryRow(ctx, s.qDelete, h[:], expected).Scan(&deleted, &actual)
	})
	if isSerializationFailure(err) {
		return s.raced(ctx, key, h, expected)
	}
	if err != nil {
		return fmt.Errorf("postgres: delete %s: %w", key, withCtx(ctx, err))
	}
	if deleted != nil {
		return nil
	}
	return s.conflict(ctx, key, h, expected, actual)
}

// Keys returns the keys of one scope, ordered by storage.CompareKeys, with
// one query on the (scope, scope_id) index.
func (s *Store) Keys(ctx context.Context, scope, scopeID string) ([]storage.Key, error) {
	if s.closed.Load() {
		return nil, storage.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := storage.ValidateScope(scope, scopeID); err != nil {
		return nil, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var keys []storage.Key
	err := retryRead(ctx, func() error {
		rows, err := s.pool.Query(ctx, s.qKeys, scope, []byte(scopeID))
		if err != nil {
			return err
		}
		keys, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (storage.Key, error) {
			var layer, name []byte
			err := r.Scan(&layer, &name)
			return storage.Key{Scope: scope, ScopeID: scopeID, Layer: string(layer), Name: string(name)}, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: keys of %s/%s: %w", scope, scopeID, withCtx(ctx, err))
	}
	if keys == nil {
		keys = []storage.Key{}
	}
	return keys, nil
}

// ScopeIDs returns the scope ids of scope that start with prefix, sorted
// byte by byte, with one range scan of the (scope, scope_id) index.
func (s *Store) ScopeIDs(ctx context.Context, scope, prefix string) ([]string, error) {
	if s.closed.Load() {
		return nil, storage.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := storage.ValidateScopeName(scope); err != nil {
		return nil, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	q, args := s.qScopeIDsFrom, []any{scope, []byte(prefix)}
	if end, ok := prefixEnd([]byte(prefix)); ok {
		q, args = s.qScopeIDs, append(args, end)
	}
	var ids []string
	err := retryRead(ctx, func() error {
		rows, err := s.pool.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			var id []byte
			err := r.Scan(&id)
			return string(id), err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: scope ids of %s with prefix %q: %w", scope, prefix, withCtx(ctx, err))
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}

// prefixEnd returns the smallest byte string above every string that
// starts with prefix: prefix without its trailing 0xff bytes, its last
// byte incremented. ok is false when there is none (prefix is empty or all
// 0xff): every string from prefix on starts with it.
func prefixEnd(prefix []byte) (end []byte, ok bool) {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			end = append([]byte{}, prefix[:i+1]...)
			end[i]++
			return end, true
		}
	}
	return nil, false
}

// conflict builds the ConflictError of a write that matched no row. The
// revision read by the write's own statement comes from its start snapshot;
// when a concurrent writer committed meanwhile it can still equal expected
// (the write waited on the row, then found it changed), so read again.
func (s *Store) conflict(ctx context.Context, key storage.Key, h [sha256.Size]byte, expected int64, actual *int64) error {
	a := int64(0)
	if actual != nil {
		a = *actual
	}
	if a == expected {
		var err error
		if a, err = s.revision(ctx, h); err != nil {
			return fmt.Errorf("postgres: read revision of %s after conflict: %w", key, err)
		}
	}
	return &storage.ConflictError{Key: key, Expected: expected, Actual: a}
}

// isSerializationFailure reports SQLSTATE 40001: under REPEATABLE READ or
// SERIALIZABLE (a server's or role's default_transaction_isolation) a
// write that races another fails with it instead of matching no row.
func isSerializationFailure(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40001"
}

// raced is the ConflictError of a write that lost a race with a
// serialization failure, with the revision that won.
func (s *Store) raced(ctx context.Context, key storage.Key, h [sha256.Size]byte, expected int64) error {
	a, err := s.revision(ctx, h)
	if err != nil {
		return fmt.Errorf("postgres: read revision of %s after conflict: %w", key, err)
	}
	return &storage.ConflictError{Key: key, Expected: expected, Actual: a}
}

// revision returns the stored revision at h, 0 when absent.
func (s *Store) revision(ctx context.Context, h [sha256.Size]byte) (int64, error) {
	var rev int64
	err := retryRead(ctx, func() error { return s.pool.QueryRow(ctx, s.qRevision, h[:]).Scan(&rev) })
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, withCtx(ctx, err)
	}
	return rev, nil
}

// Close closes the pool if Open created it. Later calls return
// storage.ErrClosed.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return storage.ErrClosed
	}
	if s.ownPool {
		s.pool.Close()
	}
	return nil
}

func (s *Store) enter(ctx context.Context, key storage.Key) error {
	if s.closed.Load() {
		return storage.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return key.Validate()
}

// bound applies Options.Timeout to a context without a deadline.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return ctxutil.Bound(ctx, s.timeout)
}

// retry runs fn again once if its error says no byte reached the server
// (for example a pooled connection that the server closed while idle), the
// one case where repeating a write cannot apply it twice.
func retry(ctx context.Context, fn func() error) error {
	err := fn()
	if err != nil && ctx.Err() == nil && pgconn.SafeToRetry(err) {
		err = fn()
	}
	return err
}

// retryRead runs a read again once after any failure that is not the
// server's answer (a *pgconn.PgError) or the context's end: typically a
// pooled connection that died with a server restart. Reads are idempotent,
// so unlike writes they need no proof that nothing was sent.
func retryRead(ctx context.Context, fn func() error) error {
	err := fn()
	var pe *pgconn.PgError
	if err != nil && ctx.Err() == nil && !errors.Is(err, pgx.ErrNoRows) && !errors.As(err, &pe) {
		err = fn()
	}
	return err
}

// withCtx makes errors.Is(err, context.DeadlineExceeded / Canceled) hold
// when the call failed because its context ended, whatever pgx wrapped.
func withCtx(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", err, cerr)
	}
	return err
}

// keyHash digests the key parts, each prefixed by its length so that no two
// keys share an encoding ("a/b"+"c" and "a"+"b/c" differ).
func keyHash(k storage.Key) [sha256.Size]byte {
	h := sha256.New()
	var buf [binary.MaxVarintLen64]byte
	for _, p := range [...]string{k.Scope, k.ScopeID, k.Layer, k.Name} {
		h.Write(buf[:binary.PutUvarint(buf[:], uint64(len(p)))])
		h.Write([]byte(p))
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// names holds the quoted identifiers of one table and its companions.
type names struct {
	schema, bare string // unquoted parts; schema may be ""
	table        string // quoted, possibly qualified
	repl         *strings.Replacer
}

func newNames(table string) (*names, error) {
	if table == "" {
		table = DefaultTable
	}
	schema, bare, qualified := strings.Cut(table, ".")
	if !qualified {
		schema, bare = "", table
	}
	if qualified && !identRE.MatchString(schema) || !identRE.MatchString(bare) || len(schema) > 63 || len(bare) > 49 {
		return nil, fmt.Errorf("%w: table %q must be [schema.]name with parts matching [A-Za-z_][A-Za-z0-9_]* (name at most 49 bytes)", ErrInvalidOptions, table)
	}
	q := func(name string) string {
		if schema == "" {
			return pgx.Identifier{name}.Sanitize()
		}
		return pgx.Identifier{schema, name}.Sanitize()
	}
	n := &names{schema: schema, bare: bare, table: q(bare)}
	seq := q(bare + "_revision_seq")
	n.repl = strings.NewReplacer(
		"{table}", n.table,
		"{seq}", seq,
		// Identifiers are validated above, so the quoted name contains no
		// single quote and can sit in a string literal.
		"{seq_literal}", "'"+seq+"'::regclass",
		"{index_scope}", pgx.Identifier{bare + "_scope_idx"}.Sanitize(),
		"{migrations}", q(MigrationsTable),
	)
	return n, nil
}

func (n *names) expand(sql string) string { return n.repl.Replace(sql) }

// component names the table in the migrations table.
func (n *names) component() string {
	if n.schema == "" {
		return "storage/postgres:" + n.bare
	}
	return "storage/postgres:" + n.schema + "." + n.bare
}
