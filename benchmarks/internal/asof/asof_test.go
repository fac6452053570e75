package asof_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stratamem/strata/benchmarks/internal/asof"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/vectorstore"
)

// TestAsOfAccuracy: the ledger's as-of answers on the labelled set must be
// all correct; the logic is deterministic, so anything less is a bug.
func TestAsOfAccuracy(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", nil)
	set := asof.Default()
	rep, err := asof.Evaluate(ctx, store, set)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if rep.Queries != len(set.Queries) || rep.Queries < 30 || rep.Events != len(set.Events) {
		t.Fatalf("report counts: %+v", rep)
	}
	if rep.Accuracy != 1 || rep.Correct != rep.Queries || len(rep.Failures) != 0 {
		t.Fatalf("as-of accuracy %.3f:\n%s", rep.Accuracy, rep)
	}
	// The evaluation cleans up after itself.
	if n, err := store.Records.Count(ctx, vectorstore.Filter{Layer: "temporal-eval"}); err != nil || n != 0 {
		t.Fatalf("left %d records (%v)", n, err)
	}
}

// TestAsOfHarnessDetectsWrongAnswers makes sure the harness can fail.
func TestAsOfHarnessDetectsWrongAnswers(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", nil)
	set := asof.Default()
	set.Queries = append(set.Queries[:0:0], set.Queries...)
	set.Queries[5].Expect = "Berlin" // the corrected value, which never held
	set.Queries[0].Expect = "Lyon"   // before anything was known
	rep, err := asof.Evaluate(ctx, store, set)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Correct != rep.Queries-2 || len(rep.Failures) != 2 || rep.Failures[1].Got[0] != "Munich" {
		t.Fatalf("report: %s", rep)
	}
}

func TestAsOfSetValidation(t *testing.T) {
	ctx := context.Background()
	if _, err := asof.Parse([]byte(`{"name": "x", "events": [], "queries": []}`)); !errors.Is(err, asof.ErrInvalidSet) {
		t.Errorf("empty set: %v", err)
	}
	if _, err := asof.Parse([]byte(`{"name": "x", "bogus": 1}`)); !errors.Is(err, asof.ErrInvalidSet) {
		t.Errorf("unknown field: %v", err)
	}
	set, err := asof.Parse([]byte(`{"name": "bad", "events": [{"at": "2026-01-01T00:00:00Z", "facts": [{"subject": "a", "predicate": "b", "value": "c", "when": "whenever"}]}],
		"queries": [{"subject": "a", "predicate": "b", "date": "2026-01-02", "expect": "c"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := asof.Evaluate(ctx, memtest.NewStore(t, "", nil), set); !errors.Is(err, asof.ErrInvalidSet) {
		t.Errorf("bad event: %v", err)
	}
}
