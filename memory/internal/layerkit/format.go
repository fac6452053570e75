package layerkit

import (
	"slices"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/vectorstore"
)

// Format is the part of a layer's memory.RecordFormat that describes
// the layer rather than its records' rules: each layer's RecordFormat
// embeds one, made with NewFormat, for Type, Doc, Kinds, Scopes and
// ScopeOf, and starts its Prepare and Validate with Prepare and Check.
type Format struct {
	typ, doc  string
	kinds     []string
	scopes    []core.Scope
	metaScope bool
}

// NewFormat describes the layer of type typ (its default id): doc says
// in a line what a record holds, kinds are the kinds it reads (the one it
// writes by default first), scopes those it can be configured with (its
// default first), and metaScope whether it keeps the layer scope in the
// metadata (memory.MetaScope) rather than in its records' scope keys
// alone.
func NewFormat(typ, doc string, kinds []string, scopes []core.Scope, metaScope bool) Format {
	return Format{typ: typ, doc: doc, kinds: kinds, scopes: scopes, metaScope: metaScope}
}

// Type is the layer type: the layer's default id.
func (f Format) Type() string { return f.typ }

// Doc says in a line what a record of the layer holds.
func (f Format) Doc() string { return f.doc }

// Kinds are the record kinds the layer reads, the one it writes by
// default first.
func (f Format) Kinds() []string { return slices.Clone(f.kinds) }

// Scopes are the scopes New accepts, the layer's default first.
func (f Format) Scopes() []core.Scope { return slices.Clone(f.scopes) }

// ScopeOf is the layer scope of r: its scope metadata for a layer that
// keeps it (else what its scope keys say), what its scope keys say for
// the others.
func (f Format) ScopeOf(r *vectorstore.Record) core.Scope {
	if f.metaScope {
		return memory.MetaScopeOf(r)
	}
	return memory.KeyScope(r.Scope)
}

// Prepare is what every layer's Prepare does first: r gets metadata,
// the scope metadata when the layer keeps it, and the default kind, where
// it has none.
func Prepare(f Format, r *vectorstore.Record) {
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	if f.metaScope && r.Metadata[memory.MetaScope] == "" {
		r.Metadata[memory.MetaScope] = string(f.ScopeOf(r))
	}
	if r.Kind == "" {
		r.Kind = f.kinds[0]
	}
}

// Check starts a layer's Validate: memory.CheckRecord with the layer
// type and kinds, and the rule of the scope metadata for a layer that
// keeps it.
func Check(f Format, r *vectorstore.Record) *memory.RecordCheck {
	c := memory.CheckRecord(f.typ, f.kinds, r)
	if f.metaScope {
		c.MetaScope()
	}
	return c
}
