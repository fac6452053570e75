package layerrules

import (
	"errors"
	"strings"
	"testing"

	"github.com/stratamem/strata/vectorstore"
)

func TestPrepareRenames(t *testing.T) {
	old := vectorstore.Record{Layer: "entity", Kind: "entity", Scope: vectorstore.Scope{Thread: "t"},
		Text: "Ada Lovelace (person): mathematician", Metadata: map[string]string{"name": "Ada Lovelace", "type": "person", "scope": "thread"}}
	r := old.Clone()
	r.Metadata["name"] = "Ada King"
	Prepare(Entity, &r, &old)
	if r.Text != "Ada King (person): mathematician" {
		t.Errorf("entity rename: %q", r.Text)
	}
	if err := Check(Entity, &r); err != nil {
		t.Error(err)
	}

	old = vectorstore.Record{Layer: "scratchpad", Kind: "note", Text: "plan: ship", Metadata: map[string]string{"key": "plan", "scope": "global"}}
	r = old.Clone()
	r.Metadata["key"] = "goal"
	Prepare(Scratchpad, &r, &old)
	if r.Text != "goal: ship" {
		t.Errorf("scratchpad rename: %q", r.Text)
	}
	r = old.Clone()
	r.Text = "ship v2"
	Prepare(Scratchpad, &r, &old)
	if r.Text != "plan: ship v2" {
		t.Errorf("scratchpad value: %q", r.Text)
	}
}

func TestCheck(t *testing.T) {
	fact := func() vectorstore.Record {
		r := vectorstore.Record{Layer: "temporal", Scope: vectorstore.Scope{Resource: "alice"},
			Metadata: map[string]string{"subject": "user", "predicate": "lives in", "value": "Berlin"}}
		Prepare(Temporal, &r, nil)
		return r
	}
	r := fact()
	if r.Text != "user lives in: Berlin" || r.Metadata["subject_key"] != "user" || r.Kind != "fact" {
		t.Fatalf("prepared fact %+v", r)
	}
	if err := Check(Temporal, &r); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(*vectorstore.Record){
		"scope":              func(r *vectorstore.Record) { r.Scope = vectorstore.Scope{} },
		"metadata.value":     func(r *vectorstore.Record) { r.Metadata["value"] = ""; r.Text = "user lives in: " },
		"kind":               func(r *vectorstore.Record) { r.Kind = "note" },
		"text":               func(r *vectorstore.Record) { r.Text = "something else" },
		"valid_to":           func(r *vectorstore.Record) { r.ValidTo = r.CreatedAt.AddDate(1, 0, 0); r.ValidFrom = r.ValidTo },
		"metadata.sources":   func(r *vectorstore.Record) { r.Metadata["sources"] = "not json" },
		"invalid key":        func(r *vectorstore.Record) { r.Metadata["a.b"] = "x" },
		"metadata.predicate": func(r *vectorstore.Record) { r.Metadata["predicate"] = strings.Repeat("p", 300) },
	}
	for want, mutate := range cases {
		r := fact()
		mutate(&r)
		err := Check(Temporal, &r)
		var le *Error
		if !errors.As(err, &le) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	// A thread-scoped fact of a thread that belongs to a resource carries
	// both, as the layers write it.
	r = fact()
	r.Scope.Thread = "t1"
	if err := Check(Temporal, &r); err != nil {
		t.Errorf("a fact of thread t1 of resource alice: %v", err)
	}
	if err := Check("memories", &r); err == nil || !strings.Contains(err.Error(), "unknown layer type") {
		t.Errorf("unknown type: %v", err)
	}
	if id := EpisodeID("episodic", ScopeKey(ScopeResource, vectorstore.Scope{Resource: "alice"}), "r1"); !strings.HasPrefix(id, "episode-") || len(id) != len("episode-")+40 {
		t.Errorf("episode id %q", id)
	}
}
