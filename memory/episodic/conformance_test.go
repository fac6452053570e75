package episodic_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/memory/layertest"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/vectorstore"
)

func TestConformance(t *testing.T) {
	layertest.Run(t, layertest.Adapter{
		New: func(t testing.TB, store *memory.Store, id string, scope core.Scope) core.AnyLayer {
			return memtest.Layer(t, episodic.New, store, episodic.Options{Common: memory.Common{ID: id, Scope: scope}})
		},
		Scopes: episodic.Format.Scopes(),
		// The run's episode summarises its first and last user requests.
		Write: func(ctx context.Context, s *core.Session, _, _, marker string) error {
			return s.Append(ctx, core.UserMessage("Please look after my "+marker+"."))
		},
		WritesAtComplete: true,
		Child:            layertest.ChildNotPersisted,
		Renders:          true,
		Stored:           layertest.Listed((*episodic.Layer).List, func(e episodic.Episode) string { return e.Summary }),
	})
}

func TestGoAPI(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", nil)
	l := memtest.Layer(t, episodic.New, store, episodic.Options{MaxEpisodes: 2})
	sc := vectorstore.Scope{Resource: "u1"}
	for i, s := range []string{"imported the old notes", "planned the trip", "booked the hotel"} {
		if err := l.Put(ctx, sc, episodic.Episode{RunID: fmt.Sprint("r", i), Summary: s, Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	eps, err := l.List(ctx, sc)
	if err != nil || len(eps) != 2 || eps[0].Summary != "planned the trip" || eps[1].RunID != "r2" || eps[1].Tokens == 0 {
		t.Fatalf("List (the oldest evicted past MaxEpisodes): %+v, %v", eps, err)
	}
	if err := l.Put(ctx, sc, episodic.Episode{Summary: "no run"}); !errors.Is(err, episodic.ErrInvalidEpisode) {
		t.Errorf("no run id: %v", err)
	}
	if n, err := l.Delete(ctx, sc, eps[0].ID, "absent"); n != 1 || err != nil {
		t.Fatalf("Delete: %d, %v", n, err)
	}
	if eps, _ := l.List(ctx, sc); len(eps) != 1 || eps[0].RunID != "r2" {
		t.Fatalf("after Delete: %+v", eps)
	}
}
