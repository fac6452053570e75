package temporal

import (
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"github.com/stratamem/strata/vectorstore"
)

// Format is the temporal layer's record format: one record per fact of a
// thread or resource, valid from ValidFrom to ValidTo, the text
// "subject predicate: value" derived from metadata MetaSubject,
// MetaPredicate and MetaValue, chained by MetaSubjectKey and
// MetaPredicateKey.
var Format = RecordFormat{layerkit.NewFormat(DefaultID,
	"a fact with validity; a thread (and its resource, if any) or a resource alone, metadata subject, predicate, value",
	[]string{Kind, KindCorrected}, []core.Scope{core.ScopeThread, core.ScopeResource}, false)}

// RecordFormat is the type of Format, a memory.RecordFormat. Write facts
// with Layer.Record: it closes or corrects the facts they supersede.
type RecordFormat struct{ layerkit.Format }

var _ memory.RecordFormat = RecordFormat{}

// Prepare sets the kind when missing and derives, from metadata subject,
// predicate and value, the chain keys and (unless the text itself was
// edited: Validate refuses that, the value is edited in the metadata)
// the text.
func (f RecordFormat) Prepare(r, old *vectorstore.Record) {
	layerkit.Prepare(f.Format, r)
	md := r.Metadata
	if md[MetaSubject] == "" || md[MetaPredicate] == "" || md[MetaValue] == "" {
		return
	}
	md[MetaSubjectKey] = SubjectKey(md[MetaSubject])
	md[MetaPredicateKey] = PredicateKey(md[MetaPredicate])
	if old == nil || old.Text == r.Text {
		r.Text = factText(Fact{Subject: md[MetaSubject], Predicate: md[MetaPredicate], Value: md[MetaValue]})
	}
}

// Validate checks what the layer reads: a thread or a resource, metadata
// subject and predicate (at most MaxFieldBytes) and value, the times,
// the sources, and the text derived from them.
func (f RecordFormat) Validate(r *vectorstore.Record) error {
	md := r.Metadata
	c := layerkit.Check(f.Format, r)
	c.ThreadOrResource()
	c.Name(MetaSubject, MaxFieldBytes)
	c.Name(MetaPredicate, MaxFieldBytes)
	if strings.TrimSpace(md[MetaValue]) == "" {
		c.Fail("metadata."+MetaValue, "required")
	}
	c.Time(MetaRecordedAt)
	c.Time(MetaRefersTo)
	c.JSONStrings(MetaSources)
	if want := factText(Fact{Subject: md[MetaSubject], Predicate: md[MetaPredicate], Value: md[MetaValue]}); r.Text != want {
		c.Fail("text", "is derived from subject, predicate and value (%q): change those in the metadata", want)
	}
	return c.Err()
}

// RecordID is the id the layer gives a new record of r's fact in r's
// layer and scope.
func (RecordFormat) RecordID(r *vectorstore.Record) string {
	return recordID(r.Layer, r.Scope, fromRecord(*r))
}
