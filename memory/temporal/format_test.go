package temporal_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/layertest"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
)

func TestFormatIsTheLayers(t *testing.T) {
	store := memtest.NewStore(t, "", nil)
	l := memtest.Layer(t, temporal.New, store, temporal.Options{})
	sc := vectorstore.Scope{Thread: "t1", Resource: "alice"}
	if _, err := l.Put(t.Context(), sc, time.Now(), temporal.Input{Subject: "user", Predicate: "lives in", Value: "Berlin"}); err != nil {
		t.Fatal(err)
	}
	layertest.Written(t, store, temporal.Format)
}

func TestFormatValidate(t *testing.T) {
	fact := func() vectorstore.Record {
		r := vectorstore.Record{Layer: "temporal", Scope: vectorstore.Scope{Resource: "alice"},
			Metadata: map[string]string{"subject": "user", "predicate": "lives in", "value": "Berlin"}}
		temporal.Format.Prepare(&r, nil)
		return r
	}
	r := fact()
	if r.Text != "user lives in: Berlin" || r.Metadata[temporal.MetaSubjectKey] != "user" || r.Kind != temporal.Kind {
		t.Fatalf("prepared fact %+v", r)
	}
	if err := temporal.Format.Validate(&r); err != nil {
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
		err := temporal.Format.Validate(&r)
		var re *memory.RecordError
		if !errors.As(err, &re) || !errors.Is(err, memory.ErrInvalidRecord) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	// A thread-scoped fact of a thread that belongs to a resource carries
	// both, as the layers write it.
	r = fact()
	r.Scope.Thread = "t1"
	if err := temporal.Format.Validate(&r); err != nil {
		t.Errorf("a fact of thread t1 of resource alice: %v", err)
	}
}
