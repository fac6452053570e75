// Package driver defines the small interface a vectorstore backend
// implements, and the plain data types shared by the portable package
// (github.com/stratamem/strata/vectorstore) and every driver.
//
// Users do not call drivers directly: they hold a *vectorstore.Collection,
// which validates and normalises every input once and then calls the
// driver. A driver may therefore assume that:
//
//   - every Record it receives is valid: non-empty ID, Vector of exactly
//     Info().Dimension finite float32 values (unit length for DistanceCosine),
//     times in UTC truncated to the microsecond, no NUL bytes in strings,
//     metadata keys matching [A-Za-z_][A-Za-z0-9_-]{0,63};
//   - an Upsert batch holds no duplicate IDs;
//   - a Filter is valid (see Filter for the semantics every driver must
//     implement exactly, and Filter.Matches for the reference implementation);
//   - a query vector has the collection's dimension and is finite;
//   - calls after Close are not made (the portable type returns ErrClosed),
//     and Close is not called concurrently with other methods.
//
// Drivers must be safe for concurrent use, must return records with times in
// UTC, and must make every write durable before the call returns (a write
// that returned nil survives a process crash and a Close/reopen).
//
// # Revisions and conditional writes
//
// Every record carries a Revision that the driver owns: the Revision of a
// Record passed to Upsert or UpsertIf is ignored, and every successful
// write of a record (Upsert or UpsertIf) stores a new revision, at least 1
// and greater than every revision the id had before, including before a
// Delete: a revision never comes back for an id, so a stale one can never
// match again (no ABA). Get, List and Query return the stored revision.
// Revisions need not be consecutive. Drivers draw them from a counter of
// the collection (chromem, pgvector) or from a clock (Qdrant; see its
// package documentation for what that guarantees across processes).
//
// UpsertIf and DeleteIf are the compare-and-swap on a revision that makes a
// read-modify-write safe against concurrent writers: read the record, change
// it, write it back with UpsertIf(rec, rec.Revision); on a CodeConflict
// error re-read and retry. The comparison and the write must be one atomic
// step of the backend: no other write of that id may come between them.
// A conflict writes nothing.
//
// Determinism rules every driver follows (the conformance suite in
// vectorstore/vectortest checks them):
//
//   - Query returns the K best matches by Score (higher is better), ties
//     broken by ascending ID, also at the K boundary.
//   - List returns records ordered by (CreatedAt, ID), ascending unless
//     Desc, starting strictly after the cursor.
package driver

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
)

// Distance is the similarity function of a collection.
type Distance string

// Supported distances. In Config the zero value means "as stored, cosine
// when creating".
const (
	// DistanceCosine scores by cosine similarity in [-1, 1]. Vectors are
	// normalised to unit length on write, so a read returns the unit vector.
	DistanceCosine Distance = "cosine"
	// DistanceDot scores by the dot product; vectors are stored as given.
	DistanceDot Distance = "dot"
	// DistanceEuclidean scores by the negated L2 distance (so higher is still
	// better, 0 is identical); vectors are stored as given.
	DistanceEuclidean Distance = "euclidean"
)

// ParseDistance parses "cosine", "dot" or "euclidean" (case-insensitive;
// "" means cosine; "l2" is accepted for euclidean, "ip" for dot).
func ParseDistance(s string) (Distance, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "cosine", "cos":
		return DistanceCosine, nil
	case "dot", "ip", "inner_product":
		return DistanceDot, nil
	case "euclidean", "l2", "euclid":
		return DistanceEuclidean, nil
	}
	return "", Errorf(CodeInvalidArgument, "parse distance", "distance", "unknown distance %q (want cosine, dot or euclidean)", s)
}

// Config is what a collection is opened with.
type Config struct {
	// Name of the collection inside the backend (a chromem collection, a
	// Postgres table suffix, a Qdrant collection). Never empty when a driver
	// is called through the portable package.
	Name string
	// Dimension of the vectors. 0 means "use the dimension the existing
	// collection was created with"; a driver returns a CodeInvalidArgument
	// error if the collection does not exist yet and Dimension is 0, and a
	// CodeConfigMismatch error if it exists with another dimension.
	Dimension int
	// Distance of the collection. "" means "as stored", and DistanceCosine
	// when the collection is created. An existing collection with another
	// (non-empty) distance is a CodeConfigMismatch error.
	Distance Distance
	// MetadataKeys, when non-nil, is the closed set of metadata keys the
	// portable layer admits. Drivers may use it to create indexes (Qdrant
	// payload indexes, Postgres expression indexes). It is not persisted.
	MetadataKeys []string
}

// Info describes an open collection.
type Info struct {
	Name      string
	Dimension int
	Distance  Distance
	// Driver is the registered scheme or driver name, e.g. "chromem".
	Driver string
}

// Scope holds the scope keys of a record. Empty fields mean "not scoped on
// this axis"; a record with an empty Scope is global.
type Scope struct {
	Thread   string `json:"thread,omitempty"`
	Resource string `json:"resource,omitempty"`
}

// Record is one memory record.
type Record struct {
	// ID identifies the record; Upsert with an existing ID replaces it.
	ID string `json:"id"`
	// Layer is the memory layer that owns the record, e.g. "semantic".
	Layer string `json:"layer,omitempty"`
	// Kind is the layer-defined record kind, e.g. "fact" or "summary".
	Kind string `json:"kind,omitempty"`
	// Scope are the thread/resource keys; empty means global.
	Scope Scope `json:"scope,omitzero"`
	// Text is the remembered content.
	Text string `json:"text,omitempty"`
	// Vector is the embedding of Text.
	Vector []float32 `json:"vector,omitempty"`
	// Terms is the record's lexical document, indexed for SearchTerms;
	// nil for a record that is not lexically searchable. See Terms.
	// Every read returns it, except the matches of Query and
	// SearchTerms, which leave it nil.
	Terms Terms `json:"terms,omitempty"`
	// Metadata is free-form string metadata, filterable by equality. Values
	// are strings only, by design: every backend can store, index and compare
	// them identically, and typed values (numbers, times) that need range
	// filters have first-class fields instead.
	Metadata map[string]string `json:"metadata,omitempty"`
	// CreatedAt is when the record was written; zero on Upsert means "now".
	CreatedAt time.Time `json:"created_at"`
	// ValidFrom is the start of the period the record is true; zero means
	// "since always".
	ValidFrom time.Time `json:"valid_from,omitzero"`
	// ValidTo is the exclusive end of that period; zero means "still valid".
	ValidTo time.Time `json:"valid_to,omitzero"`
	// Revision identifies the stored version of the record. The store sets
	// it on every write and returns it on every read; a value given to a
	// write is ignored. Pass it back to UpsertIf or DeleteIf to write only
	// if nobody else wrote the record since it was read. See the package
	// documentation for its guarantees.
	Revision int64 `json:"revision,omitempty"`
}

// Clone returns a deep copy of r (vector and metadata are copied; the
// revision is kept).
func (r Record) Clone() Record {
	if r.Vector != nil {
		r.Vector = append([]float32(nil), r.Vector...)
	}
	if r.Terms != nil {
		t := make(Terms, len(r.Terms))
		for k, v := range r.Terms {
			t[k] = v
		}
		r.Terms = t
	}
	if r.Metadata != nil {
		m := make(map[string]string, len(r.Metadata))
		for k, v := range r.Metadata {
			m[k] = v
		}
		r.Metadata = m
	}
	return r
}

// Filter selects records. Every set field must match (AND); zero fields do
// not constrain. String fields compare by exact equality, so an empty string
// means "any", not "empty".
type Filter struct {
	// IDs, if non-empty, restricts to records whose ID is in the list.
	IDs []string `json:"ids,omitempty"`
	// Layer, Kind, Thread, Resource: equality on the record's fields.
	Layer    string `json:"layer,omitempty"`
	Kind     string `json:"kind,omitempty"`
	Thread   string `json:"thread,omitempty"`
	Resource string `json:"resource,omitempty"`
	// Metadata: for every pair, the record's metadata must hold the key with
	// exactly that value. Values must be non-empty.
	Metadata map[string]string `json:"metadata,omitempty"`
	// CreatedFrom (inclusive) and CreatedBefore (exclusive) bound CreatedAt.
	CreatedFrom   time.Time `json:"created_from,omitzero"`
	CreatedBefore time.Time `json:"created_before,omitzero"`
	// ValidAt keeps records valid at that instant:
	// (ValidFrom zero or ValidFrom <= ValidAt) and (ValidTo zero or ValidAt < ValidTo).
	ValidAt time.Time `json:"valid_at,omitzero"`
}

// IsZero reports whether the filter constrains nothing.
func (f Filter) IsZero() bool {
	return len(f.IDs) == 0 && f.Layer == "" && f.Kind == "" && f.Thread == "" &&
		f.Resource == "" && len(f.Metadata) == 0 && f.CreatedFrom.IsZero() &&
		f.CreatedBefore.IsZero() && f.ValidAt.IsZero()
}

// Matches reports whether r passes f. It is the reference semantics of
// Filter; drivers that filter in memory use it directly, drivers that push
// filters down to a backend must agree with it.
func (f *Filter) Matches(r *Record) bool {
	if len(f.IDs) > 0 {
		found := false
		for _, id := range f.IDs {
			if id == r.ID {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if f.Layer != "" && r.Layer != f.Layer {
		return false
	}
	if f.Kind != "" && r.Kind != f.Kind {
		return false
	}
	if f.Thread != "" && r.Scope.Thread != f.Thread {
		return false
	}
	if f.Resource != "" && r.Scope.Resource != f.Resource {
		return false
	}
	for k, v := range f.Metadata {
		if got, ok := r.Metadata[k]; !ok || got != v {
			return false
		}
	}
	if !f.CreatedFrom.IsZero() && r.CreatedAt.Before(f.CreatedFrom) {
		return false
	}
	if !f.CreatedBefore.IsZero() && !r.CreatedAt.Before(f.CreatedBefore) {
		return false
	}
	if !f.ValidAt.IsZero() {
		if !r.ValidFrom.IsZero() && f.ValidAt.Before(r.ValidFrom) {
			return false
		}
		if !r.ValidTo.IsZero() && !f.ValidAt.Before(r.ValidTo) {
			return false
		}
	}
	return true
}

// Cursor is a keyset position in List order.
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// ListQuery asks a driver for one page of records.
type ListQuery struct {
	Filter Filter
	// Limit is the maximum number of records to return; always > 0.
	Limit int
	// After, if non-nil, starts the page strictly after this position in the
	// requested order.
	After *Cursor
	// Desc orders by (CreatedAt, ID) descending instead of ascending.
	Desc bool
	// WithVectors asks for Record.Vector to be filled; drivers may leave it
	// nil otherwise.
	WithVectors bool
}

// VectorQuery asks a driver for the nearest records to Vector.
type VectorQuery struct {
	// Vector has the collection's dimension (unit length for cosine).
	Vector []float32
	// K is the maximum number of matches; always > 0. K larger than the
	// number of matching records returns all of them (never an error).
	K      int
	Filter Filter
	// WithVectors asks for Record.Vector to be filled.
	WithVectors bool
}

// Match is one query result.
type Match struct {
	Record Record
	// Score is the similarity, higher is better: cosine similarity, dot
	// product, or negated Euclidean distance, depending on the Distance.
	Score float64
}

// Aser is implemented by a driver collection that exposes driver-specific
// types through vectorstore.Collection.As: As sets *target and returns
// true when target is a pointer to one of the types the driver documents,
// and returns false otherwise. It must never hand out the driver
// collection itself (the portable layer's validation would be bypassed).
type Aser interface {
	As(target any) bool
}

// Collection is the interface a backend implements. See the package
// documentation for the guarantees the portable layer gives a driver and the
// ones a driver owes back.
type Collection interface {
	// Info describes the open collection; Dimension is never 0.
	Info() Info
	// Upsert inserts or replaces recs by ID, atomically where the backend
	// allows, giving each a new revision. Returning nil means every record
	// is durable.
	Upsert(ctx context.Context, recs []Record) error
	// UpsertIf writes rec only if the stored revision of rec.ID is
	// expected, where expected 0 means "no record with this id exists", and
	// returns the new revision. The check and the write are atomic. On a
	// mismatch nothing is written and the error is a CodeConflict *Error
	// (see Conflict). expected is never negative.
	UpsertIf(ctx context.Context, rec Record, expected int64) (rev int64, err error)
	// Get returns the record with id (with its vector); found is false if
	// there is none.
	Get(ctx context.Context, id string) (rec Record, found bool, err error)
	// Delete removes the records with these ids; missing ids are ignored.
	Delete(ctx context.Context, ids []string) error
	// DeleteIf removes the record id only if its stored revision is
	// expected (always > 0), atomically. A missing record or another
	// revision is a CodeConflict error, and nothing is removed.
	DeleteIf(ctx context.Context, id string, expected int64) error
	// DeleteWhere removes every record matching f (never the zero filter)
	// and returns how many it removed.
	DeleteWhere(ctx context.Context, f Filter) (int, error)
	// Count returns the number of records matching f.
	Count(ctx context.Context, f Filter) (int, error)
	// List returns up to q.Limit records matching q.Filter in (CreatedAt, ID)
	// order after q.After.
	List(ctx context.Context, q ListQuery) ([]Record, error)
	// Query returns up to q.K matches ordered by Score descending, then ID.
	Query(ctx context.Context, q VectorQuery) ([]Match, error)
	// Close releases the collection. Every acknowledged write must survive it.
	Close() error
}

// ComesAfter reports whether r lies strictly after c in List order (desc
// selects descending order).
func ComesAfter(r *Record, c *Cursor, desc bool) bool {
	cmp := r.CreatedAt.Compare(c.CreatedAt)
	if cmp == 0 {
		cmp = strings.Compare(r.ID, c.ID)
	}
	if desc {
		return cmp < 0
	}
	return cmp > 0
}

// CompareRecords orders two records by (CreatedAt, ID) ascending; it returns
// a negative number, zero or a positive number like strings.Compare.
func CompareRecords(a, b *Record) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// CompareMatches orders matches by Score descending, then ID ascending.
func CompareMatches(a, b *Match) int {
	switch {
	case a.Score > b.Score:
		return -1
	case a.Score < b.Score:
		return 1
	}
	return strings.Compare(a.Record.ID, b.Record.ID)
}

// Score computes the similarity of a and b under d, in float64 so that ties
// between identical stored vectors are exact. Drivers that score in memory
// use it; it is the reference the conformance suite compares against.
func Score(d Distance, a, b []float32) float64 {
	switch d {
	case DistanceEuclidean:
		var s float64
		for i := range a {
			x := float64(a[i]) - float64(b[i])
			s += x * x
		}
		return -math.Sqrt(s)
	default: // cosine vectors are unit length, so cosine is the dot product
		var s float64
		for i := range a {
			s += float64(a[i]) * float64(b[i])
		}
		return s
	}
}

// String implements fmt.Stringer for diagnostics.
func (c Cursor) String() string {
	return fmt.Sprintf("%s/%s", c.CreatedAt.Format(time.RFC3339Nano), c.ID)
}
