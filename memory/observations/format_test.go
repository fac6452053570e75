package observations_test

import (
	"testing"

	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/layertest"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/vectorstore"
)

func TestFormatIsTheLayers(t *testing.T) {
	store := memtest.NewStore(t, "", nil)
	l := memtest.Layer(t, observations.New, store, observations.Options{Common: memory.Common{}, DisableExtraction: true})
	sc := vectorstore.Scope{Thread: "t1", Resource: "alice"}
	if _, err := l.Put(t.Context(), sc, observations.Observation{Text: "User is vegetarian.", Importance: 4}); err != nil {
		t.Fatal(err)
	}
	rec := layertest.Written(t, store, observations.Format)
	rec.Metadata[observations.MetaImportance] = "9"
	if err := observations.Format.Validate(&rec); err == nil {
		t.Error("importance 9 accepted")
	}
}
