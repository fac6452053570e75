package episodic_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
)

// TestRelevanceQualityWithDefaultModel checks relevance recall with the
// real default model on queries that share almost no words with the
// episode they should find, which the hashing embedder cannot do. It skips
// when the model is not installed, unless STRATA_REQUIRE_MODEL is set.
func TestRelevanceQualityWithDefaultModel(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the default model")
	}
	model, err := uselite.Default()
	if err != nil {
		if errors.Is(err, uselite.ErrModelNotFound) && os.Getenv("STRATA_REQUIRE_MODEL") == "" {
			t.Skipf("default model not installed (%v)", err)
		}
		t.Fatal(err)
	}
	ctx := context.Background()
	col, err := chromem.OpenCollection(ctx, t.TempDir(), "memories", &vectorstore.Options{Dimension: model.Dimension()})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	clock := &memtest.Clock{T: time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)}
	store := &memory.Store{Records: col, Embedder: model, Now: clock.Now}
	// Room for about one episode, so the ranking decides what is shown.
	rt, _ := newRuntime(t, store, episodic.Options{Common: memory.Common{Budget: core.Fixed(70)}, Mode: episodic.Relevance})

	episodes := []struct{ request, answer string }{
		{"Our Postgres server keeps running out of disk space", "Vacuumed the tables and archived old rows."},
		{"Book me a flight to Tokyo for the conference", "Booked a window seat for March 12."},
		{"My tomato plants have yellow leaves", "Suggested less watering and some fertiliser."},
		{"Write a birthday poem for my grandmother", "Wrote a four-stanza poem about her garden."},
		{"The quarterly sales report numbers look wrong", "Fixed a double-counted region in the spreadsheet."},
	}
	for _, ep := range episodes {
		clock.Advance(time.Hour)
		runEpisode(t, rt, core.RunOptions{ThreadID: "t", ResourceID: "user-1"}, ep.request, ep.answer)
	}
	for _, tc := range []struct{ query, want string }{
		{"Is the database storage issue solved?", "Postgres"},
		{"Which airline am I travelling with to Japan?", "Tokyo"},
		{"How are my vegetables in the garden doing?", "tomato"},
		{"Can you recite the verses you made for grandma?", "poem"},
		{"Did we correct the revenue figures?", "sales report"},
	} {
		got, _ := episodesBlock(t, rt, core.RunOptions{ThreadID: "q", ResourceID: "user-1"}, tc.query)
		if strings.Count(got, "\n[") != 1 || !strings.Contains(got, tc.want) {
			t.Errorf("%q recalled\n%s\nwant the %q episode", tc.query, got, tc.want)
		}
	}
}
