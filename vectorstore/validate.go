package vectorstore

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stratamem/strata/vectorstore/driver"
)

// Limits on record fields. They keep every backend able to store and index a
// record identically (Postgres text cannot hold NUL; Qdrant treats '.' in a
// payload key as a path separator).
const (
	MaxIDBytes          = 512
	MaxFieldBytes       = 512 // Layer, Kind, Thread, Resource
	MaxMetadataKeyBytes = 64
	MaxMetadataEntries  = 64
	MaxMetadataValue    = 8 << 10
	MaxTextBytes        = 1 << 20
	MaxDimension        = 65536
	// MaxTerms bounds the terms of a record's lexical document and of a
	// term query; MaxTermBytes the length of one term.
	MaxTerms     = 4096
	MaxTermBytes = 128
)

// MaxSquaredNorm bounds the squared L2 norm of a vector in a dot or
// Euclidean collection (cosine vectors are normalised, so any finite one
// fits). Backends score in float32: with |a|² and |b|² at most
// math.MaxFloat32/4, every dot product (at most |a||b|) and every squared
// distance (at most (|a|+|b|)² = 4·max(|a|², |b|²)) stays finite, partial
// sums included, where larger finite vectors give +Inf or NaN (Inf-Inf)
// scores that break the result order. It allows components up to about
// 6.5e18/√dimension: far beyond any embedding.
const MaxSquaredNorm = math.MaxFloat32 / 4

var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

// normTime puts t in UTC at microsecond precision, the precision every
// backend keeps (Postgres timestamptz is microseconds).
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

func checkString(op, id, field, s string, max int, code driver.Code) error {
	if len(s) > max {
		return &Error{Code: code, Op: op, ID: id, Field: field, Msg: "longer than " + strconv.Itoa(max) + " bytes"}
	}
	if !utf8.ValidString(s) {
		return &Error{Code: code, Op: op, ID: id, Field: field, Msg: "not valid UTF-8"}
	}
	if strings.IndexByte(s, 0) >= 0 {
		return &Error{Code: code, Op: op, ID: id, Field: field, Msg: "contains a NUL byte"}
	}
	return nil
}

// ValidMetadataKey reports whether k can be a metadata key:
// [A-Za-z_][A-Za-z0-9_-]{0,63}.
func ValidMetadataKey(k string) bool {
	if k == "" || len(k) > MaxMetadataKeyBytes {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c == '-' || c >= '0' && c <= '9'):
		default:
			return false
		}
	}
	return true
}

func checkTime(op, id, field string, t time.Time, code driver.Code) error {
	if t.IsZero() {
		return nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return &Error{Code: code, Op: op, ID: id, Field: field, Msg: "time outside years 1..9999"}
	}
	return nil
}

// checkVector validates v against the collection and returns the vector to
// store (a fresh copy, unit length for cosine).
func (c *Collection) checkVector(op, id string, v []float32) ([]float32, error) {
	if len(v) == 0 {
		return nil, &Error{Code: CodeInvalidVector, Op: op, ID: id, Field: "vector", Msg: "empty vector"}
	}
	if len(v) != c.info.Dimension {
		return nil, &Error{Code: CodeDimensionMismatch, Op: op, ID: id, Field: "vector",
			Msg: "got " + strconv.Itoa(len(v)) + " values, collection dimension is " + strconv.Itoa(c.info.Dimension)}
	}
	var norm float64
	for i, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, &Error{Code: CodeInvalidVector, Op: op, ID: id, Field: "vector[" + strconv.Itoa(i) + "]", Msg: "NaN or Inf"}
		}
		norm += f * f
	}
	out := make([]float32, len(v))
	if c.info.Distance != driver.DistanceCosine {
		if norm > MaxSquaredNorm {
			return nil, &Error{Code: CodeInvalidVector, Op: op, ID: id, Field: "vector",
				Msg: "squared norm " + strconv.FormatFloat(norm, 'g', 3, 64) + " above MaxSquaredNorm: scores would overflow float32"}
		}
		copy(out, v)
		return out, nil
	}
	if norm == 0 {
		return nil, &Error{Code: CodeInvalidVector, Op: op, ID: id, Field: "vector", Msg: "zero vector has no direction (cosine)"}
	}
	n := math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out, nil
}

// prepareRecord validates r and returns the normalised copy a driver gets.
// r.Revision is dropped: revisions belong to the store.
func (c *Collection) prepareRecord(op string, r *Record, now time.Time) (Record, error) {
	if r.ID == "" {
		return Record{}, &Error{Code: CodeInvalidRecord, Op: op, Field: "id", Msg: "empty id"}
	}
	if err := checkString(op, "", "id", r.ID, MaxIDBytes, CodeInvalidRecord); err != nil {
		return Record{}, err
	}
	id := r.ID
	for _, f := range [...]struct{ name, v string }{
		{"layer", r.Layer}, {"kind", r.Kind}, {"scope.thread", r.Scope.Thread}, {"scope.resource", r.Scope.Resource},
	} {
		if err := checkString(op, id, f.name, f.v, MaxFieldBytes, CodeInvalidRecord); err != nil {
			return Record{}, err
		}
	}
	if err := checkString(op, id, "text", r.Text, MaxTextBytes, CodeInvalidRecord); err != nil {
		return Record{}, err
	}
	if len(r.Metadata) > MaxMetadataEntries {
		return Record{}, &Error{Code: CodeInvalidRecord, Op: op, ID: id, Field: "metadata", Msg: "more than " + strconv.Itoa(MaxMetadataEntries) + " entries"}
	}
	var md map[string]string
	if len(r.Metadata) > 0 {
		md = make(map[string]string, len(r.Metadata))
		for k, v := range r.Metadata {
			if !ValidMetadataKey(k) {
				return Record{}, &Error{Code: CodeInvalidRecord, Op: op, ID: id, Field: "metadata", Msg: "invalid key " + quote(k) + " (want [A-Za-z_][A-Za-z0-9_-]{0,63})"}
			}
			if c.keys != nil && !c.keys[k] {
				return Record{}, &Error{Code: CodeInvalidRecord, Op: op, ID: id, Field: "metadata." + k, Msg: "key not in the collection's MetadataKeys"}
			}
			if err := checkString(op, id, "metadata."+k, v, MaxMetadataValue, CodeInvalidRecord); err != nil {
				return Record{}, err
			}
			md[k] = v
		}
	}
	out := Record{
		ID: id, Layer: r.Layer, Kind: r.Kind, Scope: r.Scope, Text: r.Text, Metadata: md,
		CreatedAt: normTime(r.CreatedAt), ValidFrom: normTime(r.ValidFrom), ValidTo: normTime(r.ValidTo),
	}
	if out.CreatedAt.IsZero() {
		out.CreatedAt = normTime(now)
	}
	for _, f := range [...]struct {
		name string
		t    time.Time
	}{{"created_at", out.CreatedAt}, {"valid_from", out.ValidFrom}, {"valid_to", out.ValidTo}} {
		if err := checkTime(op, id, f.name, f.t, CodeInvalidRecord); err != nil {
			return Record{}, err
		}
	}
	if !out.ValidFrom.IsZero() && !out.ValidTo.IsZero() && !out.ValidFrom.Before(out.ValidTo) {
		return Record{}, &Error{Code: CodeInvalidRecord, Op: op, ID: id, Field: "valid_to", Msg: "valid_to must be after valid_from"}
	}
	v, err := c.checkVector(op, id, r.Vector)
	if err != nil {
		return Record{}, err
	}
	out.Vector = v
	if len(r.Terms) > 0 {
		if len(r.Terms) > MaxTerms {
			return Record{}, &Error{Code: CodeInvalidRecord, Op: op, ID: id, Field: "terms", Msg: "more than " + strconv.Itoa(MaxTerms) + " terms"}
		}
		out.Terms = make(driver.Terms, len(r.Terms))
		for t, w := range r.Terms {
			if err := checkTerm(op, id, "terms", t, CodeInvalidRecord); err != nil {
				return Record{}, err
			}
			if !(w > 0) || math.IsInf(float64(w), 0) {
				return Record{}, &Error{Code: CodeInvalidRecord, Op: op, ID: id, Field: "terms." + t, Msg: "weight must be finite and > 0, got " + strconv.FormatFloat(float64(w), 'g', -1, 32)}
			}
			out.Terms[t] = w
		}
	}
	return out, nil
}

// checkTerm validates one term of a document or a query.
func checkTerm(op, id, field, t string, code driver.Code) error {
	if t == "" {
		return &Error{Code: code, Op: op, ID: id, Field: field, Msg: "empty term"}
	}
	return checkString(op, id, field+"."+quote(t), t, MaxTermBytes, code)
}

func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return "\"" + strings.ToValidUTF8(s, "\uFFFD") + "\""
}

// prepareFilter validates f and returns a normalised copy.
func (c *Collection) prepareFilter(op string, f Filter) (Filter, error) {
	out := f
	if len(f.IDs) > 0 {
		out.IDs = make([]string, 0, len(f.IDs))
		seen := make(map[string]bool, len(f.IDs))
		for _, id := range f.IDs {
			if id == "" {
				return Filter{}, &Error{Code: CodeInvalidFilter, Op: op, Field: "ids", Msg: "empty id"}
			}
			if err := checkString(op, "", "ids", id, MaxIDBytes, CodeInvalidFilter); err != nil {
				return Filter{}, err
			}
			if !seen[id] {
				seen[id] = true
				out.IDs = append(out.IDs, id)
			}
		}
	}
	for _, fl := range [...]struct{ name, v string }{
		{"layer", f.Layer}, {"kind", f.Kind}, {"thread", f.Thread}, {"resource", f.Resource},
	} {
		if err := checkString(op, "", fl.name, fl.v, MaxFieldBytes, CodeInvalidFilter); err != nil {
			return Filter{}, err
		}
	}
	if len(f.Metadata) > 0 {
		out.Metadata = make(map[string]string, len(f.Metadata))
		for k, v := range f.Metadata {
			if !ValidMetadataKey(k) {
				return Filter{}, &Error{Code: CodeUnknownFilterField, Op: op, Field: "metadata", Msg: "invalid key " + quote(k)}
			}
			if c.keys != nil && !c.keys[k] {
				return Filter{}, &Error{Code: CodeUnknownFilterField, Op: op, Field: "metadata." + k, Msg: "key not in the collection's MetadataKeys"}
			}
			if v == "" {
				return Filter{}, &Error{Code: CodeInvalidFilter, Op: op, Field: "metadata." + k, Msg: "empty value (a filter value must be non-empty)"}
			}
			if err := checkString(op, "", "metadata."+k, v, MaxMetadataValue, CodeInvalidFilter); err != nil {
				return Filter{}, err
			}
			out.Metadata[k] = v
		}
	} else {
		out.Metadata = nil
	}
	out.CreatedFrom = normTime(f.CreatedFrom)
	out.CreatedBefore = normTime(f.CreatedBefore)
	out.ValidAt = normTime(f.ValidAt)
	for _, ft := range [...]struct {
		name string
		t    time.Time
	}{{"created_from", out.CreatedFrom}, {"created_before", out.CreatedBefore}, {"valid_at", out.ValidAt}} {
		if err := checkTime(op, "", ft.name, ft.t, CodeInvalidFilter); err != nil {
			return Filter{}, err
		}
	}
	return out, nil
}
