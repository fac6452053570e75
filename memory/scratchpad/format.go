package scratchpad

import (
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"github.com/stratamem/strata/vectorstore"
)

// Metadata keys of a note record.
const (
	MetaKey     = "key"
	MetaUpdated = "updated"
)

// Format is the scratchpad layer's record format: one record per key of
// a scope, text "key: value", metadata key, updated and the layer scope.
var Format = RecordFormat{layerkit.NewFormat(DefaultID,
	"a working note; metadata key, the text is \"key: value\"",
	[]string{KindNote}, []core.Scope{core.ScopeThread, core.ScopeResource, core.ScopeGlobal}, true)}

// RecordFormat is the type of Format, a memory.RecordFormat. Write notes
// with Layer.Put: it keeps the scope within MaxKeys and replaces the
// records a key was read from.
type RecordFormat struct{ layerkit.Format }

var _ memory.RecordFormat = RecordFormat{}

// Prepare derives the text "key: value" from metadata key (a text without
// the prefix is taken as the value; the old key's prefix is replaced),
// and sets the kind and the scope metadata when missing.
func (f RecordFormat) Prepare(r, old *vectorstore.Record) {
	layerkit.Prepare(f.Format, r)
	md := r.Metadata
	key := strings.TrimSpace(md[MetaKey])
	if key == "" || r.Text == key+":" || strings.HasPrefix(r.Text, key+": ") {
		return
	}
	md[MetaKey] = key
	value := r.Text
	if old != nil {
		if ok := strings.TrimSpace(old.Metadata[MetaKey]); ok != "" {
			if value == ok+":" {
				value = ""
			} else {
				value = strings.TrimPrefix(value, ok+": ")
			}
		}
	}
	r.Text = key + ": " + value
}

// Validate checks what the layer reads: the scope, metadata key (at most
// MaxKeyBytes) and the text "key: value".
func (f RecordFormat) Validate(r *vectorstore.Record) error {
	c := layerkit.Check(f.Format, r)
	c.Name(MetaKey, MaxKeyBytes)
	if k := r.Metadata[MetaKey]; k != "" && r.Text != k+":" && !strings.HasPrefix(r.Text, k+": ") {
		c.Fail("text", "must start with %q", k+": ")
	}
	return c.Err()
}

// RecordID is the id the layer gives the note of r's metadata key in r's
// layer and scope.
func (f RecordFormat) RecordID(r *vectorstore.Record) string {
	key := strings.TrimSpace(r.Metadata[MetaKey])
	if key == "" {
		return ""
	}
	return recordID(r.Layer, memory.ScopeKey(string(f.ScopeOf(r)), r.Scope), key)
}
