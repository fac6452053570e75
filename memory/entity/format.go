package entity

import (
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"github.com/stratamem/strata/vectorstore"
)

// Metadata keys of an entity record.
const (
	MetaName      = "name"
	MetaType      = "type"
	MetaMentions  = "mentions"
	MetaPriority  = "priority"
	MetaFirstSeen = "first_seen"
	MetaUpdated   = "updated"
)

// Format is the entity layer's record format: one record per entity of a
// scope, text "Name (type): note; note", metadata name, type, mentions,
// priority, first_seen, updated and the layer scope.
var Format = RecordFormat{layerkit.NewFormat(DefaultID,
	"a person, organization, place, concept or other; metadata name and type, the text holds the notes",
	[]string{KindEntity}, []core.Scope{core.ScopeThread, core.ScopeResource, core.ScopeGlobal}, true)}

// RecordFormat is the type of Format, a memory.RecordFormat. Write
// entities with Layer.Put: it merges them with what the scope holds and
// keeps the scope within MaxEntities.
type RecordFormat struct{ layerkit.Format }

var _ memory.RecordFormat = RecordFormat{}

// Prepare derives the text "Name (type): notes" from metadata name and
// type (a text without that prefix is taken as the notes; the prefix of
// the old name and type is replaced), makes the type canonical, and sets
// the kind and the scope metadata when missing.
func (f RecordFormat) Prepare(r, old *vectorstore.Record) {
	layerkit.Prepare(f.Format, r)
	md := r.Metadata
	if t, ok := ParseType(md[MetaType]); ok {
		md[MetaType] = string(t)
	}
	name := collapseSpaces(md[MetaName])
	if name == "" {
		return
	}
	md[MetaName] = name
	prefix := name + " (" + md[MetaType] + ")"
	if r.Text == prefix || strings.HasPrefix(r.Text, prefix+": ") {
		return
	}
	notes := r.Text
	if old != nil {
		oldPrefix := collapseSpaces(old.Metadata[MetaName]) + " (" + old.Metadata[MetaType] + ")"
		if notes == oldPrefix {
			notes = ""
		} else {
			notes = strings.TrimPrefix(notes, oldPrefix+": ")
		}
	}
	if notes = strings.TrimSpace(notes); notes != "" {
		r.Text = prefix + ": " + notes
	} else {
		r.Text = prefix
	}
}

// Validate checks what the layer reads: the scope, metadata name (at
// most MaxNameBytes) and type, mentions, priority 0..MaxPriority and
// the times.
func (f RecordFormat) Validate(r *vectorstore.Record) error {
	c := layerkit.Check(f.Format, r)
	c.Name(MetaName, MaxNameBytes)
	if _, ok := ParseType(r.Metadata[MetaType]); !ok {
		c.Fail("metadata."+MetaType, "%q: want person, organization, place, concept or other", r.Metadata[MetaType])
	}
	c.Int(MetaMentions, 1, 0)
	c.Int(MetaPriority, 0, MaxPriority)
	c.Time(MetaFirstSeen)
	c.Time(MetaUpdated)
	return c.Err()
}

// RecordID is the id the layer gives the entity of r's metadata name and
// type in r's layer and scope; "" when the type is unknown.
func (f RecordFormat) RecordID(r *vectorstore.Record) string {
	typ, ok := ParseType(r.Metadata[MetaType])
	if !ok {
		return ""
	}
	return recordID(r.Layer, memory.ScopeKey(string(f.ScopeOf(r)), r.Scope), key{NormalizeName(r.Metadata[MetaName]), typ})
}
