package observations_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
)

// TestMergeThresholdWithDefaultModel checks the figures the package doc
// gives for the default threshold against the real offline model:
// restatements merge, distinct facts in the same frame do not, and one
// attribute with a new value merges as an update.
func TestMergeThresholdWithDefaultModel(t *testing.T) {
	model, err := uselite.Default()
	if errors.Is(err, uselite.ErrModelNotFound) {
		t.Skip("default model not installed (run: make model)")
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	col, err := chromem.OpenCollection(ctx, t.TempDir(), "quality", &vectorstore.Options{Dimension: model.Dimension()})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	l, err := observations.New(&memory.Store{Records: col, Embedder: model}, observations.Options{DisableExtraction: true})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		a, b  string
		merge bool
	}{
		{"User's dog is called Rex", "User's dog is named Rex", true},
		// The grey zone below the threshold: a restatement that stays a
		// second line (a missed merge costs a line, a wrong one a fact).
		{"User works at Acme", "User works at Acme Corp", false},
		{"User likes green tea", "User loves green tea", true},
		{"User is a vegetarian", "User is vegetarian", true},
		{"User lives in Berlin", "User lives in Berlin.", true},
		{"User lives in Berlin", "user lives in berlin", true},
		{"User is 34 years old", "User is 35 years old", true},
		{"User lives in Berlin", "User lives in Paris", false},
		{"User likes tea", "User likes coffee", false},
		{"User's wife is Anna", "User's sister is Anna", false},
		{"User is allergic to peanuts", "User is allergic to shellfish", false},
		{"User drives a Toyota", "User drives a Honda", false},
		{"User speaks French", "User speaks German", false},
	}
	for i, c := range cases {
		scope := vectorstore.Scope{Thread: fmt.Sprint("pair-", i)}
		if _, err := l.Put(ctx, scope, observations.Observation{Text: c.a}); err != nil {
			t.Fatal(err)
		}
		res, err := l.Put(ctx, scope, observations.Observation{Text: c.b})
		if err != nil {
			t.Fatal(err)
		}
		if merged := res.Added == 0; merged != c.merge {
			t.Errorf("%q then %q: merged=%v, want %v", c.a, c.b, merged, c.merge)
		}
	}
}
