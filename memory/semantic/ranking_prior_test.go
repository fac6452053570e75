package semantic_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/semantic"
)

// topHits opens a fresh session with opts and returns the first k hits
// for q.
func topHits(t *testing.T, st func(opts semantic.Options) semantic.State, opts semantic.Options, q string, k int) []semantic.Hit {
	t.Helper()
	hits, err := st(opts).Search(context.Background(), q, semantic.SearchOptions{K: k})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// TestNamedSpeakerPrior: in a transcript between two named people
// ("Name: text"), a question naming one of them favours that person's
// own statement over the other's message echoing its words, whichever
// role recorded it; with the prior off the echo wins.
func TestNamedSpeakerPrior(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	s := start(t, newRuntime(t, newLayer(t, store, semantic.Options{})), "t1", "u1")
	talk(t, s, clk,
		"Anna: Ben, did you rescue the ginger kitten from the animal home?", "Ben: I did rescue the ginger kitten, she is called Mist.",
		"Anna: I joined a choir that rehearses on Tuesdays.", "Ben: A choir sounds fun, Anna.",
		"Anna: My cousin visits in spring.", "Ben: Say hi to him from me.",
		"Anna: The ferry was late again.", "Ben: Ferries here are never on time.",
	)
	open := func(opts semantic.Options) semantic.State {
		s := start(t, newRuntime(t, newLayer(t, store, opts)), "t1", "u1")
		t.Cleanup(func() { s.Close(ctx) })
		return state(t, s, "semantic")
	}
	const q = "Which ginger kitten did Ben rescue from the animal home?"
	if h := topHits(t, open, semantic.Options{Ranking: semantic.Ranking{SpeakerPrior: -1}}, q, 1); !strings.HasPrefix(h[0].Text, "Anna:") {
		t.Fatalf("prior off: first hit %q, want Anna's echo (else this test shows nothing)", h[0].Text)
	}
	if h := topHits(t, open, semantic.Options{}, q, 1); !strings.HasPrefix(h[0].Text, "Ben: I did") {
		t.Fatalf("default prior: first hit %q, want Ben's statement (recorded as the assistant's)", h[0].Text)
	}
	// Other capitalised words ("Benny") name no speaker; "Ben" does.
	if h := topHits(t, open, semantic.Options{}, "Which ginger kitten did Benny's friend Ben rescue from the animal home?", 1); !strings.HasPrefix(h[0].Text, "Ben: I did") {
		t.Fatalf("named in full: first hit %q", h[0].Text)
	}
	// Naming nobody, in a conversation between named people, favours
	// nobody (not the person recorded as the user): the echo, with more
	// of the words, wins.
	if h := topHits(t, open, semantic.Options{}, "Which ginger kitten was rescued from the animal home?", 1); !strings.HasPrefix(h[0].Text, "Anna:") {
		t.Fatalf("no one named: first hit %q", h[0].Text)
	}
}

// TestDatePrior: a question naming a day favours the messages of that
// day over a message of another day that shares more of its words; with
// the prior off the other day's message wins.
func TestDatePrior(t *testing.T) {
	ctx := context.Background()
	clk := newClock() // Monday 4 March 2024
	store := memtest.NewStore(t, "", clk)
	s := start(t, newRuntime(t, newLayer(t, store, semantic.Options{})), "t1", "u1")
	talk(t, s, clk, "I planned the garden beds today.", "Nice, which vegetables?")
	clk.Advance(9 * 24 * time.Hour) // 13 March
	talk(t, s, clk, "I planned the garden beds and the garden shed and the garden path.", "That is a lot of garden.")
	open := func(opts semantic.Options) semantic.State {
		s := start(t, newRuntime(t, newLayer(t, store, opts)), "t1", "u1")
		t.Cleanup(func() { s.Close(ctx) })
		return state(t, s, "semantic")
	}
	const q = "What did I plan for the garden on 4 March 2024?"
	if h := topHits(t, open, semantic.Options{Ranking: semantic.Ranking{DatePrior: -1}}, q, 1); !strings.Contains(h[0].Text, "shed") {
		t.Fatalf("prior off: first hit %q, want the 13 March message (else this test shows nothing)", h[0].Text)
	}
	h := topHits(t, open, semantic.Options{}, q, 1)
	if h[0].Text != "I planned the garden beds today." {
		t.Fatalf("default prior: first hit %q, want the message of 4 March", h[0].Text)
	}
	// The day is the calendar day where the layer renders dates: at
	// UTC-10 the first message (09:01 UTC) was written on 3 March.
	west := time.FixedZone("UTC-10", -10*3600)
	h = topHits(t, open, semantic.Options{Location: west}, q, 1)
	if !strings.Contains(h[0].Text, "shed") {
		t.Fatalf("UTC-10: first hit %q, want the 13 March message (no message of 4 March there)", h[0].Text)
	}
}

// TestDenseOneSided: the vector score never goes below 0, so a message
// below the crowd's similarity is not pushed under the messages that
// match no word.
func TestDenseOneSided(t *testing.T) {
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	s := start(t, newRuntime(t, newLayer(t, store, semantic.Options{})), "t1", "u1")
	talk(t, s, clk, trip...)
	hits, err := state(t, s, "semantic").Search(context.Background(), "flights to Lisbon", semantic.SearchOptions{K: 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.Dense < 0 {
			t.Fatalf("hit %q has a negative vector score %v", h.Text, h.Dense)
		}
	}
}
