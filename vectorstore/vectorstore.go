package vectorstore

import (
	"context"
	"iter"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/stratamem/strata/vectorstore/driver"
	"github.com/stratamem/strata/vectorstore/internal/hook"
)

// Record is one memory record: id, layer, kind, scope keys, text, embedding,
// string metadata and its times. See driver.Record for the fields.
type Record = driver.Record

// Scope holds a record's thread and resource keys; empty means global.
type Scope = driver.Scope

// Filter selects records; every set field must match. See driver.Filter.
type Filter = driver.Filter

// Match is a query result: the record and its Score (higher is better).
type Match = driver.Match

// Distance is a collection's similarity function.
type Distance = driver.Distance

// Info describes an open collection.
type Info = driver.Info

// Distances.
const (
	Cosine    = driver.DistanceCosine
	Dot       = driver.DistanceDot
	Euclidean = driver.DistanceEuclidean
)

// ParseDistance parses "cosine", "dot" or "euclidean" and their aliases
// ("cos"; "ip", "inner_product"; "l2", "euclid"), case-insensitively, into
// the canonical Distance. Options.Distance accepts the same spellings.
func ParseDistance(s string) (Distance, error) { return driver.ParseDistance(s) }

// Options configure a collection. The zero value is useful: dimension and
// distance taken from the existing collection (cosine when creating), any
// metadata keys, the system clock.
type Options struct {
	// Dimension of the vectors; required when the collection does not exist
	// yet, checked against the stored one when it does. 0 means "as stored".
	Dimension int
	// Distance; zero means "as stored", and Cosine when creating. A non-zero
	// value is checked against an existing collection. Any spelling
	// ParseDistance accepts works; the collection stores and reports the
	// canonical one.
	Distance Distance
	// MetadataKeys, when non-nil, closes the set of metadata keys: records
	// carrying other keys fail with ErrInvalidRecord and filters naming
	// other keys fail with ErrUnknownFilterField. Drivers may index these
	// keys. Nil admits any valid key.
	MetadataKeys []string
	// Now stamps CreatedAt on records upserted with a zero CreatedAt;
	// nil means time.Now.
	Now func() time.Time
}

// DefaultListLimit is the page size of List when ListOptions.Limit is 0;
// MaxListLimit bounds it.
const (
	DefaultListLimit = 100
	MaxListLimit     = 10000
	// MaxK bounds QueryOptions.K.
	MaxK = 10000
)

// Collection is the portable handle on one vector collection. It validates
// and normalises every input once, then calls its driver. It is safe for
// concurrent use; Close waits for in-flight calls to finish.
type Collection struct {
	drv  driver.Collection
	info Info
	keys map[string]bool
	now  func() time.Time

	mu     sync.RWMutex // read-held by every call, write-held by Close
	closed bool
}

// WithDriver returns a second handle on the collection whose calls go
// through wrap(driver): middleware over the driver, such as the tracing
// of package telemetry or a fault injector, the way database/sql drivers
// are wrapped. The handle keeps the collection's metadata keys and clock.
// Both handles share the one driver: close one of them (the driver's
// Close runs once, through whichever handle is closed), and use neither
// after. wrap must return a driver of the same collection (the same
// Info); a nil wrap, or one that returns nil, is an invalid argument.
func (c *Collection) WithDriver(wrap func(driver.Collection) driver.Collection) (*Collection, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return nil, &Error{Code: CodeClosed, Op: "wrap"}
	}
	if wrap == nil {
		return nil, &Error{Code: CodeInvalidArgument, Op: "wrap", Field: "wrap", Msg: "nil"}
	}
	d := wrap(c.drv)
	if d == nil {
		return nil, &Error{Code: CodeInvalidArgument, Op: "wrap", Field: "wrap", Msg: "returned a nil driver"}
	}
	if got := d.Info(); got.Dimension != c.info.Dimension {
		return nil, &Error{Code: CodeInvalidArgument, Op: "wrap", Field: "wrap",
			Msg: "the wrapped driver reports dimension " + strconv.Itoa(got.Dimension) + ", the collection's is " + strconv.Itoa(c.info.Dimension)}
	}
	return &Collection{drv: d, info: c.info, keys: c.keys, now: c.now}, nil
}

// NewCollection wraps an open driver collection. Drivers' own constructors
// (e.g. chromem.OpenCollection) and wrapping drivers (vectorstore/faulty)
// call it; users call Open or a driver's OpenCollection instead.
func NewCollection(d driver.Collection, opts *Options) (*Collection, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	info := d.Info()
	if info.Dimension <= 0 || info.Dimension > MaxDimension {
		return nil, &Error{Code: CodeInvalidArgument, Op: "open", Field: "dimension", Msg: "driver reported dimension " + strconv.Itoa(info.Dimension)}
	}
	// "" is cosine; an alias a driver reports is resolved so that the
	// normalisation below keys on the canonical name.
	dist, err := ParseDistance(string(info.Distance))
	if err != nil {
		return nil, &Error{Code: CodeInvalidArgument, Op: "open", Field: "distance", Msg: "driver reported distance " + quote(string(info.Distance))}
	}
	info.Distance = dist
	c := &Collection{drv: d, info: info, now: o.Now}
	if c.now == nil {
		c.now = time.Now
	}
	if o.MetadataKeys != nil {
		c.keys = make(map[string]bool, len(o.MetadataKeys))
		for _, k := range o.MetadataKeys {
			if !ValidMetadataKey(k) {
				return nil, &Error{Code: CodeInvalidArgument, Op: "open", Field: "metadata_keys", Msg: "invalid key " + quote(k)}
			}
			c.keys[k] = true
		}
	}
	return c, nil
}

// WrapOpened is NewCollection for the driver collection d just opened
// with error err, as drivers' constructors return them: it returns err if
// the open failed, and closes d if NewCollection refuses it.
func WrapOpened(d driver.Collection, err error, opts *Options) (*Collection, error) {
	if err != nil {
		return nil, err
	}
	c, err := NewCollection(d, opts)
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	return c, nil
}

func init() {
	hook.DriverOf = func(c any) driver.Collection { return c.(*Collection).drv }
}

// As exposes a driver-specific type behind the collection, in the manner of
// the Go CDK: it sets the value target points to and returns true when the
// driver supports that type, and returns false otherwise (and for a nil
// target). Each driver documents the types it supports (for example
// pgvector: **pgxpool.Pool and *EmbedderRecorder). What As hands out stays
// the collection's: do not close it, and do not use it after Close.
func (c *Collection) As(target any) bool {
	if target == nil {
		return false
	}
	a, ok := c.drv.(driver.Aser)
	return ok && a.As(target)
}

// EmbedderRecorder is implemented by the drivers that keep, beside a
// collection, a record of the embedder that wrote it (pgvector, qdrant);
// get it with As:
//
//	var rec vectorstore.EmbedderRecorder
//	if coll.As(&rec) {
//		model, dim, err := rec.EmbedderRecord(ctx)
//	}
type EmbedderRecorder interface {
	// EmbedderRecord returns the recorded model id and dimension, or ""
	// and 0 when none is recorded.
	EmbedderRecord(ctx context.Context) (model string, dim int, err error)
	// RecordEmbedder records model and dim unless a record exists, and
	// returns the record in place afterwards.
	RecordEmbedder(ctx context.Context, model string, dim int) (string, int, error)
}

// DriverConfig is the driver.Config of the collection name opened with
// opts (which may be nil): the one place the portable options are carried
// over to a driver. Drivers' own constructors call it; Open starts from it
// and adds what the URL says.
func DriverConfig(name string, opts *Options) driver.Config {
	if opts == nil {
		return driver.Config{Name: name}
	}
	return driver.Config{Name: name, Dimension: opts.Dimension, Distance: opts.Distance, MetadataKeys: opts.MetadataKeys}
}

// Info describes the collection: name, dimension, distance and driver.
func (c *Collection) Info() Info { return c.info }

func (c *Collection) enter(op string) error {
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return &Error{Code: CodeClosed, Op: op}
	}
	return nil
}

func (c *Collection) leave() { c.mu.RUnlock() }

func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if driver.CodeOf(err) != "" {
		return err
	}
	return &driverError{op: op, err: err}
}

// driverError wraps a backend failure with the operation name while keeping
// the cause reachable through errors.Is / errors.As.
type driverError struct {
	op  string
	err error
}

func (e *driverError) Error() string { return "vectorstore " + e.op + ": " + e.err.Error() }
func (e *driverError) Unwrap() error { return e.err }

// Upsert inserts or replaces records by ID, unconditionally: it gives every
// record a new revision whatever revision it had (Record.Revision is
// ignored), so a concurrent read-modify-write of the same record may be
// lost; use UpsertIf for those. Every record is validated before anything
// is written: on any invalid record nothing is written and the error names
// the record and field. Within one call a repeated ID keeps its last
// occurrence. Records with a zero CreatedAt are stamped with Options.Now.
// Times are stored in UTC at microsecond precision; cosine vectors are stored
// normalised to unit length.
func (c *Collection) Upsert(ctx context.Context, recs ...Record) error {
	const op = "upsert"
	if err := c.enter(op); err != nil {
		return err
	}
	defer c.leave()
	if len(recs) == 0 {
		return nil
	}
	now := c.now()
	out := make([]Record, 0, len(recs))
	pos := make(map[string]int, len(recs))
	for i := range recs {
		r, err := c.prepareRecord(op, &recs[i], now)
		if err != nil {
			return err
		}
		if j, ok := pos[r.ID]; ok {
			out[j] = r
			continue
		}
		pos[r.ID] = len(out)
		out = append(out, r)
	}
	if err := ctx.Err(); err != nil {
		return wrap(op, err)
	}
	return wrap(op, c.drv.Upsert(ctx, out))
}

// UpsertIf writes rec only if the stored record rec.ID is at revision
// expected, and returns the revision it stored; expected 0 means "only if no
// record rec.ID exists" (create). The check and the write are one atomic
// step of the backend, so of two writers that read the same revision only
// one succeeds: the other gets an error matching ErrConflict, nothing is
// written, and it should re-read the record and retry. This is how to
// change a record without losing a concurrent writer's update:
//
//	for {
//		rec, err := coll.Get(ctx, id)
//		if err != nil {
//			return err
//		}
//		rec.Text = merge(rec.Text, note)
//		if _, err = coll.UpsertIf(ctx, rec, rec.Revision); !errors.Is(err, vectorstore.ErrConflict) {
//			return err
//		}
//	}
//
// rec is validated and normalised like an Upsert record (rec.Revision is
// ignored); a negative expected is ErrInvalidArgument.
func (c *Collection) UpsertIf(ctx context.Context, rec Record, expected int64) (int64, error) {
	const op = "upsert if"
	if err := c.enter(op); err != nil {
		return 0, err
	}
	defer c.leave()
	if expected < 0 {
		return 0, &Error{Code: CodeInvalidArgument, Op: op, ID: rec.ID, Field: "expected", Msg: "negative revision " + strconv.FormatInt(expected, 10)}
	}
	r, err := c.prepareRecord(op, &rec, c.now())
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, wrap(op, err)
	}
	rev, err := c.drv.UpsertIf(ctx, r, expected)
	if err != nil {
		return 0, wrap(op, err)
	}
	return rev, nil
}

// DeleteIf removes the record id only if it is at revision expected (> 0).
// A missing record or another revision is an error matching ErrConflict,
// and nothing is removed.
func (c *Collection) DeleteIf(ctx context.Context, id string, expected int64) error {
	const op = "delete if"
	if err := c.enter(op); err != nil {
		return err
	}
	defer c.leave()
	if id == "" {
		return &Error{Code: CodeInvalidArgument, Op: op, Field: "id", Msg: "empty id"}
	}
	if err := checkString(op, "", "id", id, MaxIDBytes, CodeInvalidArgument); err != nil {
		return err
	}
	if expected <= 0 {
		return &Error{Code: CodeInvalidArgument, Op: op, ID: id, Field: "expected", Msg: "revision must be positive, got " + strconv.FormatInt(expected, 10)}
	}
	return wrap(op, c.drv.DeleteIf(ctx, id, expected))
}

// Get returns the record with id, with its vector, or an error matching
// ErrNotFound.
func (c *Collection) Get(ctx context.Context, id string) (Record, error) {
	const op = "get"
	if err := c.enter(op); err != nil {
		return Record{}, err
	}
	defer c.leave()
	if id == "" {
		return Record{}, &Error{Code: CodeInvalidArgument, Op: op, Field: "id", Msg: "empty id"}
	}
	if err := checkString(op, "", "id", id, MaxIDBytes, CodeInvalidArgument); err != nil {
		return Record{}, err
	}
	r, found, err := c.drv.Get(ctx, id)
	if err != nil {
		return Record{}, wrap(op, err)
	}
	if !found {
		return Record{}, &Error{Code: CodeNotFound, Op: op, ID: id}
	}
	return r, nil
}

// Delete removes the records with these ids. Missing ids are not an error,
// so Delete is idempotent.
func (c *Collection) Delete(ctx context.Context, ids ...string) error {
	const op = "delete"
	if err := c.enter(op); err != nil {
		return err
	}
	defer c.leave()
	if len(ids) == 0 {
		return nil
	}
	uniq := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if id == "" {
			return &Error{Code: CodeInvalidArgument, Op: op, Field: "id", Msg: "empty id"}
		}
		if err := checkString(op, "", "id", id, MaxIDBytes, CodeInvalidArgument); err != nil {
			return err
		}
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	return wrap(op, c.drv.Delete(ctx, uniq))
}

// DeleteWhere removes every record matching f and returns how many it
// removed. The zero Filter is refused (ErrInvalidFilter) so that a missing
// condition never empties a collection by accident.
func (c *Collection) DeleteWhere(ctx context.Context, f Filter) (int, error) {
	const op = "delete where"
	return c.countWhere(ctx, op, f, func(ctx context.Context, nf Filter) (int, error) {
		if nf.IsZero() {
			return 0, &Error{Code: CodeInvalidFilter, Op: op, Msg: "refusing to delete with an empty filter"}
		}
		return c.drv.DeleteWhere(ctx, nf)
	})
}

// Count returns the number of records matching f (all records for the zero
// Filter).
func (c *Collection) Count(ctx context.Context, f Filter) (int, error) {
	return c.countWhere(ctx, "count", f, c.drv.Count)
}

// countWhere runs op, the driver call call that counts what it does with
// the records matching f, with f validated and normalised. A typed error
// call returns is passed on as it is.
func (c *Collection) countWhere(ctx context.Context, op string, f Filter, call func(context.Context, Filter) (int, error)) (int, error) {
	if err := c.enter(op); err != nil {
		return 0, err
	}
	defer c.leave()
	nf, err := c.prepareFilter(op, f)
	if err != nil {
		return 0, err
	}
	n, err := call(ctx, nf)
	return n, wrap(op, err)
}

// QueryOptions configure Query. K is required.
type QueryOptions struct {
	// K is the maximum number of matches, 1..MaxK. A K larger than the
	// number of matching records returns them all.
	K int
	// Filter restricts the candidates before ranking (exact pre-filtering,
	// so a selective filter never yields fewer than K matches when K exist).
	Filter Filter
	// WithVectors fills Record.Vector in the matches.
	WithVectors bool
}

// Query returns the records nearest to vector, best first: Score descending,
// ties broken by ascending ID.
func (c *Collection) Query(ctx context.Context, vector []float32, opts QueryOptions) ([]Match, error) {
	const op = "query"
	if err := c.enter(op); err != nil {
		return nil, err
	}
	defer c.leave()
	if opts.K <= 0 || opts.K > MaxK {
		return nil, &Error{Code: CodeInvalidArgument, Op: op, Field: "k", Msg: "k must be in 1.." + strconv.Itoa(MaxK) + ", got " + strconv.Itoa(opts.K)}
	}
	v, err := c.checkVector(op, "", vector)
	if err != nil {
		return nil, err
	}
	nf, err := c.prepareFilter(op, opts.Filter)
	if err != nil {
		return nil, err
	}
	ms, err := c.drv.Query(ctx, driver.VectorQuery{Vector: v, K: opts.K, Filter: nf, WithVectors: opts.WithVectors})
	if err != nil {
		return nil, wrap(op, err)
	}
	// Re-sort defensively: the order contract is the portable layer's.
	slices.SortStableFunc(ms, func(a, b Match) int { return driver.CompareMatches(&a, &b) })
	if len(ms) > opts.K {
		ms = ms[:opts.K]
	}
	for i := range ms {
		// Matches carry no lexical document (see Record.Terms).
		ms[i].Record.Terms = nil
		if !opts.WithVectors {
			ms[i].Record.Vector = nil
		}
	}
	return ms, nil
}

// Order is the direction of List.
type Order int

// List orders.
const (
	Ascending  Order = iota // oldest first: (CreatedAt, ID) ascending
	Descending              // newest first
)

// ListOptions configure List. The zero value lists the first
// DefaultListLimit records, oldest first, without vectors.
type ListOptions struct {
	Filter Filter
	// Limit is the page size, 0 means DefaultListLimit, at most MaxListLimit.
	Limit int
	// PageToken continues a previous List; it must come with the same
	// Filter and Order (ErrInvalidArgument otherwise).
	PageToken string
	Order     Order
	// WithVectors fills Record.Vector.
	WithVectors bool
}

// List returns one page of records matching opts.Filter in stable
// (CreatedAt, ID) order, and the token of the next page ("" on the last).
// Paging is keyset based: records written while paging never cause another
// record to be skipped or repeated.
func (c *Collection) List(ctx context.Context, opts ListOptions) ([]Record, string, error) {
	const op = "list"
	if err := c.enter(op); err != nil {
		return nil, "", err
	}
	defer c.leave()
	limit := opts.Limit
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit < 0 || limit > MaxListLimit {
		return nil, "", &Error{Code: CodeInvalidArgument, Op: op, Field: "limit", Msg: "limit must be in 0.." + strconv.Itoa(MaxListLimit)}
	}
	if opts.Order != Ascending && opts.Order != Descending {
		return nil, "", &Error{Code: CodeInvalidArgument, Op: op, Field: "order", Msg: "unknown order"}
	}
	nf, err := c.prepareFilter(op, opts.Filter)
	if err != nil {
		return nil, "", err
	}
	desc := opts.Order == Descending
	fp := fingerprint(nf, desc)
	var after *driver.Cursor
	if opts.PageToken != "" {
		cur, err := decodeToken(opts.PageToken, fp)
		if err != nil {
			return nil, "", &Error{Code: CodeInvalidArgument, Op: op, Field: "page_token", Msg: err.Error()}
		}
		after = &cur
	}
	// Ask for one more than the page to know whether a next page exists,
	// so the last page never hands out a token leading to an empty page.
	recs, err := c.drv.List(ctx, driver.ListQuery{Filter: nf, Limit: limit + 1, After: after, Desc: desc, WithVectors: opts.WithVectors})
	if err != nil {
		return nil, "", wrap(op, err)
	}
	next := ""
	if len(recs) > limit {
		recs = recs[:limit]
		last := recs[len(recs)-1]
		next = encodeToken(driver.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}, fp)
	}
	if !opts.WithVectors {
		for i := range recs {
			recs[i].Vector = nil
		}
	}
	return recs, next, nil
}

// All iterates over every record matching opts.Filter in List order, page by
// page (opts.Limit is the page size; opts.PageToken the starting point). The
// iteration stops at the first error, which it yields.
func (c *Collection) All(ctx context.Context, opts ListOptions) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		for {
			recs, next, err := c.List(ctx, opts)
			if err != nil {
				yield(Record{}, err)
				return
			}
			for _, r := range recs {
				if !yield(r, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			opts.PageToken = next
		}
	}
}

// Close closes the collection after in-flight calls finish. Later calls
// return ErrClosed; a second Close returns nil.
func (c *Collection) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return wrap("close", c.drv.Close())
}
