package observations

import (
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"github.com/stratamem/strata/vectorstore"
)

// Format is the observations layer's record format: one record per
// remembered fact of a thread or resource, metadata MetaImportance,
// MetaSources, MetaLastSeen, MetaMentions and MetaOrigin.
var Format = RecordFormat{layerkit.NewFormat(DefaultID,
	"a remembered fact; a thread (and its resource, if any) or a resource alone, metadata importance 1..5",
	[]string{Kind}, []core.Scope{core.ScopeThread, core.ScopeResource}, false)}

// RecordFormat is the type of Format, a memory.RecordFormat. Write
// observations with Layer.Put: it merges near-duplicates.
type RecordFormat struct{ layerkit.Format }

var _ memory.RecordFormat = RecordFormat{}

// Prepare sets the kind when missing.
func (f RecordFormat) Prepare(r, _ *vectorstore.Record) {
	layerkit.Prepare(f.Format, r)
}

// Validate checks what the layer reads: a thread or a resource,
// importance 1..5, mentions, the last sighting and the sources.
func (f RecordFormat) Validate(r *vectorstore.Record) error {
	c := layerkit.Check(f.Format, r)
	c.ThreadOrResource()
	c.Int(MetaImportance, 1, 5)
	c.Int(MetaMentions, 1, 0)
	c.Time(MetaLastSeen)
	c.JSONStrings(MetaSources)
	return c.Err()
}

// RecordID is the id the layer gives a new observation of r's text in
// r's layer and scope.
func (RecordFormat) RecordID(r *vectorstore.Record) string {
	return recordID(r.Layer, r.Scope, strings.ToLower(canonical(r.Text)))
}
