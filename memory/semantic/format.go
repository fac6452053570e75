package semantic

import (
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"github.com/stratamem/strata/vectorstore"
)

// DefaultID is the layer id when Options.ID is empty: the layer type of
// Format.
const DefaultID = "semantic"

// Format is the semantic layer's record format: one record per message
// of a thread (KindMessage, metadata MetaRole, MetaSeq, MetaRun,
// MetaItemID, MetaEmbedding...), and the derived KindContext records,
// which the layer rewrites when the messages around them change. A
// resource-scoped layer recalls from every thread of the resource: its
// messages still belong to a thread, and carry both.
var Format = RecordFormat{layerkit.NewFormat(DefaultID,
	"a conversation message; thread required (and the resource for a resource-scoped layer), metadata role user|assistant",
	[]string{KindMessage, KindContext}, []core.Scope{core.ScopeThread, core.ScopeResource}, false)}

// RecordFormat is the type of Format: a memory.RecordFormat, and Message,
// the record of one message.
type RecordFormat struct{ layerkit.Format }

var _ memory.RecordFormat = RecordFormat{}

// Prepare sets the kind when missing and drops MetaTruncated when the
// text changed.
func (f RecordFormat) Prepare(r, old *vectorstore.Record) {
	layerkit.Prepare(f.Format, r)
	if old == nil || old.Text != r.Text {
		delete(r.Metadata, MetaTruncated)
	}
}

// Validate checks what the layer reads: a thread, the role, the
// sequence number.
func (f RecordFormat) Validate(r *vectorstore.Record) error {
	c := layerkit.Check(f.Format, r)
	if r.Scope.Thread == "" {
		c.Fail("scope", "a message belongs to a thread")
	}
	if role := r.Metadata[MetaRole]; role != string(core.RoleUser) && role != string(core.RoleAssistant) {
		c.Fail("metadata."+MetaRole, "%q: want user or assistant", role)
	}
	c.Int(MetaSeq, 0, -1)
	return c.Err()
}

// RecordID is the id the layer gives the message of r's MetaItemID in
// r's layer and thread; "" without one.
func (RecordFormat) RecordID(r *vectorstore.Record) string {
	item := r.Metadata[MetaItemID]
	if item == "" {
		return ""
	}
	return recordID(r.Layer, core.RunInfo{ThreadID: r.Scope.Thread, ResourceID: r.Scope.Resource}, core.Item{ID: item}, 0, "")
}

// Message is the record of a message of the layer id in scope s (a
// thread, with its resource if any), as the layer writes it: md (which
// it takes) is its metadata; its MetaItemID, MetaRun and MetaSeq, when
// missing, are itemID, run and 0, MetaRole is role and MetaEmbedding the
// model of the vector to be stored with it. The record has no vector nor
// creation time.
func (f RecordFormat) Message(id string, s vectorstore.Scope, role, text, itemID, run, model string, md map[string]string) vectorstore.Record {
	if md == nil {
		md = map[string]string{}
	}
	for k, v := range map[string]string{MetaItemID: itemID, MetaRun: run, MetaSeq: "0"} {
		if md[k] == "" {
			md[k] = v
		}
	}
	md[MetaRole], md[MetaEmbedding] = role, model
	r := vectorstore.Record{Layer: id, Kind: KindMessage, Scope: s, Text: text, Metadata: md}
	r.ID = f.RecordID(&r)
	return r
}
