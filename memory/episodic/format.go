package episodic

import (
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"github.com/stratamem/strata/vectorstore"
)

// Metadata keys of an episode record.
const (
	MetaRun     = "run"
	MetaOutcome = "outcome"
	MetaThread  = "thread"
	MetaTokens  = "tokens"
	MetaSeq     = metaSeq
)

// Format is the episodic layer's record format: one record per run of a
// scope, the text its summary, metadata run, outcome, thread, tokens,
// seq and the layer scope.
var Format = RecordFormat{layerkit.NewFormat(DefaultID,
	"a run summary; metadata run (the run it summarises), outcome optional",
	[]string{KindEpisode}, []core.Scope{core.ScopeResource, core.ScopeThread, core.ScopeGlobal}, true)}

// RecordFormat is the type of Format: a memory.RecordFormat, and
// Episode, the record of one run.
type RecordFormat struct{ layerkit.Format }

var _ memory.RecordFormat = RecordFormat{}

// Prepare sets the kind and the scope metadata when missing, and drops
// the token count of a changed text (the layer counts it again).
func (f RecordFormat) Prepare(r, old *vectorstore.Record) {
	layerkit.Prepare(f.Format, r)
	if old == nil || old.Text != r.Text {
		delete(r.Metadata, MetaTokens)
	}
}

// Validate checks what the layer reads: the scope and the token count.
func (f RecordFormat) Validate(r *vectorstore.Record) error {
	c := layerkit.Check(f.Format, r)
	c.Int(MetaTokens, 0, -1)
	return c.Err()
}

// RecordID is the id the layer gives the episode of r's metadata run in
// r's layer and scope.
func (f RecordFormat) RecordID(r *vectorstore.Record) string {
	return recordID(r.Layer, memory.ScopeKey(string(f.ScopeOf(r)), r.Scope), r.Metadata[MetaRun])
}

// Episode is the record of the episode of run in the layer (id, scope)
// in scope s, as the layer writes it: summary its text, md (which it
// takes) its metadata with the run, the thread of s and the outcome when
// not empty, and the scope. The record has no vector, creation time nor
// token count.
func (RecordFormat) Episode(id string, scope core.Scope, s vectorstore.Scope, run, outcome, summary string, md map[string]string) vectorstore.Record {
	return episodeRecord(id, scope, core.RunInfo{ThreadID: s.Thread, ResourceID: s.Resource, RunID: run}, summary, outcome, md)
}
