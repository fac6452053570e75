package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/vectorstore"
)

// RecordFormat is a memory layer's record format: the records the layer
// reads back, what it derives in them, and the ids it gives them. Each
// layer package exports its own (entity.Format, episodic.Format, ...),
// built from the layer's constants and id functions, so a tool that
// edits a layer's records from outside (memctl) keeps them in the shape
// the layer reads and follows any change of the layer's format. New
// memories go through the layer's Go API (Put), or, for the layers that
// write a record per run or message, the builders of its Format.
type RecordFormat interface {
	// Type is the layer type: the layer's default id ("entity").
	Type() string
	// Doc says in a line what a record of the layer holds.
	Doc() string
	// Kinds are the record kinds the layer reads, the one it writes by
	// default first.
	Kinds() []string
	// Scopes are the scopes the layer can be configured with, its default
	// first.
	Scopes() []core.Scope
	// ScopeOf is the layer scope r belongs to.
	ScopeOf(r *vectorstore.Record) core.Scope
	// Prepare brings r into the shape the layer reads back, deriving
	// what the layer derives (text, keys, kind) from the metadata, so
	// an operator edits the meaningful parts only. old is the record
	// before an edit, nil for a new one.
	Prepare(r, old *vectorstore.Record)
	// Validate reports the first rule r breaks as a *RecordError naming
	// the field. It does not modify r; call Prepare first.
	Validate(r *vectorstore.Record) error
	// RecordID is the id the layer gives the record r describes (its
	// layer, scope and natural key), "" for a layer whose write path
	// names records otherwise.
	RecordID(r *vectorstore.Record) string
}

// MetaScope is the metadata key of the layer scope on the records of
// the layers that keep it (episodic, entity, scratchpad): they select
// their records by it.
const MetaScope = "scope"

// MaxRecordTextBytes bounds the text of a record written from outside a
// layer (a layer's own bound on one note, observation or fact value).
const MaxRecordTextBytes = 8 << 10

// ErrInvalidRecord is wrapped by every *RecordError.
var ErrInvalidRecord = errors.New("invalid memory")

// RecordError is a rule of its layer's format a record breaks. It wraps
// ErrInvalidRecord.
type RecordError struct {
	Layer string // the layer type whose rule it is
	Field string // text, kind, scope, metadata.KEY, valid_to...
	Msg   string
}

func (e *RecordError) Error() string {
	s := "invalid memory"
	if e.Layer != "" {
		s += " for layer " + e.Layer
	}
	return s + ": " + e.Field + ": " + e.Msg
}

// Unwrap makes errors.Is(err, ErrInvalidRecord) true.
func (e *RecordError) Unwrap() error { return ErrInvalidRecord }

// KeyScope is the layer scope a record's scope keys name: thread when it
// has a thread, else resource when it has a resource, else global.
func KeyScope(s vectorstore.Scope) core.Scope {
	switch {
	case s.Thread != "":
		return core.ScopeThread
	case s.Resource != "":
		return core.ScopeResource
	}
	return core.ScopeGlobal
}

// MetaScopeOf is the layer scope of a record of a layer that keeps it in
// MetaScope: the metadata, else what the scope keys say.
func MetaScopeOf(r *vectorstore.Record) core.Scope {
	if s := r.Metadata[MetaScope]; s != "" {
		return core.Scope(s)
	}
	return KeyScope(r.Scope)
}

// RecordCheck validates one record of a layer: CheckRecord applies the
// rules every layer's records share, the methods a layer's own, and Err
// returns the first rule broken.
type RecordCheck struct {
	layer string
	r     *vectorstore.Record
	err   error
}

// CheckRecord starts the validation of r, a record of layer type
// layerType that reads kinds, with the common rules: a layer, a kind the
// layer reads, text that is not blank and at most MaxRecordTextBytes of
// valid UTF-8 without NUL, scope keys and metadata the vector store
// takes, valid_to after valid_from.
func CheckRecord(layerType string, kinds []string, r *vectorstore.Record) *RecordCheck {
	c := &RecordCheck{layer: layerType, r: r}
	c.err = c.common(kinds)
	return c
}

// Err is the first rule broken, a *RecordError, or nil.
func (c *RecordCheck) Err() error { return c.err }

// Fail records a broken rule of field unless one was recorded already.
func (c *RecordCheck) Fail(field, format string, args ...any) {
	if c.err == nil {
		c.err = c.bad(field, format, args...)
	}
}

func (c *RecordCheck) bad(field, format string, args ...any) error {
	return &RecordError{Layer: c.layer, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func (c *RecordCheck) common(kinds []string) error {
	r := c.r
	if r.Layer == "" {
		return c.bad("layer", "empty")
	}
	if !slices.Contains(kinds, r.Kind) {
		return c.bad("kind", "%q is not a kind this layer reads (want %s)", r.Kind, strings.Join(kinds, " or "))
	}
	if strings.TrimSpace(r.Text) == "" {
		return c.bad("text", "empty")
	}
	if len(r.Text) > MaxRecordTextBytes {
		return c.bad("text", "%d bytes, at most %d", len(r.Text), MaxRecordTextBytes)
	}
	if err := cleanString(r.Text); err != "" {
		return c.bad("text", "%s", err)
	}
	for _, f := range []struct{ name, v string }{{"scope.thread", r.Scope.Thread}, {"scope.resource", r.Scope.Resource}, {"kind", r.Kind}, {"layer", r.Layer}} {
		if err := cleanString(f.v); err != "" {
			return c.bad(f.name, "%s", err)
		}
		if len(f.v) > vectorstore.MaxFieldBytes {
			return c.bad(f.name, "longer than %d bytes", vectorstore.MaxFieldBytes)
		}
	}
	if len(r.Metadata) > vectorstore.MaxMetadataEntries {
		return c.bad("metadata", "more than %d entries", vectorstore.MaxMetadataEntries)
	}
	keys := make([]string, 0, len(r.Metadata))
	for k := range r.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !vectorstore.ValidMetadataKey(k) {
			return c.bad("metadata", "invalid key %q (want [A-Za-z_][A-Za-z0-9_-]{0,63})", k)
		}
		v := r.Metadata[k]
		if err := cleanString(v); err != "" {
			return c.bad("metadata."+k, "%s", err)
		}
		if len(v) > vectorstore.MaxMetadataValue {
			return c.bad("metadata."+k, "longer than %d bytes", vectorstore.MaxMetadataValue)
		}
	}
	if !r.ValidFrom.IsZero() && !r.ValidTo.IsZero() && !r.ValidTo.After(r.ValidFrom) {
		return c.bad("valid_to", "%s is not after valid_from %s", r.ValidTo.Format(time.RFC3339), r.ValidFrom.Format(time.RFC3339))
	}
	return nil
}

// MetaScope checks the rule of the layers that keep their scope in
// MetaScope: thread, resource or global, agreeing with the scope keys (a
// resource-scoped record has no thread, a global one neither).
func (c *RecordCheck) MetaScope() {
	if c.err != nil {
		return
	}
	th, res := c.r.Scope.Thread, c.r.Scope.Resource
	switch s := c.r.Metadata[MetaScope]; core.Scope(s) {
	case core.ScopeThread:
		if th == "" {
			c.Fail("scope", "scope thread needs a thread")
		}
	case core.ScopeResource:
		if res == "" || th != "" {
			c.Fail("scope", "scope resource needs a resource and no thread")
		}
	case core.ScopeGlobal:
		if th != "" || res != "" {
			c.Fail("scope", "scope global takes no thread or resource")
		}
	default:
		c.Fail("metadata."+MetaScope, "%q: want thread, resource or global", s)
	}
}

// ThreadOrResource checks the rule of a layer scoped to the thread (a
// thread, with the resource it belongs to if any) or to the resource (a
// resource alone).
func (c *RecordCheck) ThreadOrResource() {
	if c.r.Scope.Thread == "" && c.r.Scope.Resource == "" {
		c.Fail("scope", "give a thread (with its resource, if any) or a resource (the layer is thread- or resource-scoped)")
	}
}

// Int checks that metadata key, when present, is an integer in lo..hi
// (hi < lo: no upper bound).
func (c *RecordCheck) Int(key string, lo, hi int) {
	v, ok := c.r.Metadata[key]
	if !ok {
		return
	}
	n, err := strconv.Atoi(v)
	switch {
	case hi < lo && (err != nil || n < lo):
		c.Fail("metadata."+key, "%q is not an integer >= %d", v, lo)
	case hi >= lo && (err != nil || n < lo || n > hi):
		c.Fail("metadata."+key, "%q is not an integer in %d..%d", v, lo, hi)
	}
}

// Time checks that metadata key, when present, is an RFC 3339 time.
func (c *RecordCheck) Time(key string) {
	if v, ok := c.r.Metadata[key]; ok {
		if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
			c.Fail("metadata."+key, "%q is not an RFC 3339 time", v)
		}
	}
}

// Name checks that metadata key holds a name: not blank, at most max
// bytes, no control character.
func (c *RecordCheck) Name(key string, max int) {
	v := strings.TrimSpace(c.r.Metadata[key])
	switch {
	case v == "":
		c.Fail("metadata."+key, "required")
	case len(v) > max:
		c.Fail("metadata."+key, "%d bytes, at most %d", len(v), max)
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		c.Fail("metadata."+key, "contains a control character")
	}
}

// JSONStrings checks that metadata key, when present, is a JSON array of
// strings.
func (c *RecordCheck) JSONStrings(key string) {
	if v, ok := c.r.Metadata[key]; ok {
		var out []string
		if json.Unmarshal([]byte(v), &out) != nil {
			c.Fail("metadata."+key, "must be a JSON array of strings")
		}
	}
}

func cleanString(s string) string {
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "contains a NUL byte"
	}
	return ""
}
