package entity_test

import (
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/layertest"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/vectorstore"
)

// TestFormatIsTheLayers checks that Format describes what the layer
// writes and that what the Go API writes is that record.
func TestFormatIsTheLayers(t *testing.T) {
	store := memtest.NewStore(t, "", nil)
	l := memtest.Layer(t, entity.New, store, entity.Options{})
	run := core.RunOptions{ThreadID: "t1", ResourceID: "alice"}
	s := memtest.Session(t, core.Config{Layers: []core.AnyLayer{l}, Cache: core.CacheConfig{Disabled: true}}, run)
	memtest.Turn(t, s, core.FunctionCall("c1", "entity/update", `{"entities":[{"name":"Ada  Lovelace","type":"Person","notes":["mathematician"]}]}`))
	written := layertest.Written(t, store, entity.Format)
	if sc := entity.Format.ScopeOf(&written); sc != core.ScopeThread {
		t.Errorf("scope %q", sc)
	}

	// The Go API writes what the model's call writes: the same record.
	sc := vectorstore.Scope{Thread: "t1", Resource: "alice"}
	if _, err := l.Put(t.Context(), sc, entity.Update{Name: "ada lovelace", Type: entity.Person, Notes: []string{"wrote the first program"}}); err != nil {
		t.Fatal(err)
	}
	recs := memtest.Records(t, store, vectorstore.Filter{Layer: "entity"})
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if r.ID != written.ID || r.Text != "Ada Lovelace (person): mathematician; wrote the first program" || r.Metadata[entity.MetaMentions] != "2" {
		t.Errorf("update: %+v", r)
	}
	if err := entity.Format.Validate(&r); err != nil {
		t.Error(err)
	}
	if _, err := l.Put(t.Context(), sc, entity.Update{Name: "X", Type: "robot"}); err == nil || !strings.Contains(err.Error(), "type") {
		t.Errorf("bad type: %v", err)
	}
}

func TestFormatPrepare(t *testing.T) {
	old := vectorstore.Record{Layer: "entity", Kind: "entity", Scope: vectorstore.Scope{Thread: "t"},
		Text: "Ada Lovelace (person): mathematician", Metadata: map[string]string{"name": "Ada Lovelace", "type": "person", "scope": "thread"}}
	r := old.Clone()
	r.Metadata[entity.MetaName] = "Ada King"
	entity.Format.Prepare(&r, &old)
	if r.Text != "Ada King (person): mathematician" {
		t.Errorf("rename: %q", r.Text)
	}
	if err := entity.Format.Validate(&r); err != nil {
		t.Error(err)
	}
	n := vectorstore.Record{Layer: "entity", Scope: vectorstore.Scope{Thread: "t1"}, Text: "mathematician",
		Metadata: map[string]string{"name": "Ada  Lovelace", "type": "Person"}}
	entity.Format.Prepare(&n, nil)
	if n.Kind != entity.KindEntity || n.Text != "Ada Lovelace (person): mathematician" || n.Metadata[memory.MetaScope] != "thread" {
		t.Errorf("prepared %+v", n)
	}
	n.Metadata[entity.MetaType] = "robot"
	if err := entity.Format.Validate(&n); err == nil || err.Error() != `invalid memory for layer entity: metadata.type: "robot": want person, organization, place, concept or other` {
		t.Errorf("robot: %v", err)
	}
	n.Metadata[entity.MetaType], n.Metadata[memory.MetaScope] = "person", "global"
	if err := entity.Format.Validate(&n); err == nil || !strings.Contains(err.Error(), "scope global takes no thread") {
		t.Errorf("scope: %v", err)
	}
}
