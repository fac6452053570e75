package semantic_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
)

// holding lists the records of the layer whose text contains s.
func holding(t *testing.T, store *memory.Store, s string) []vectorstore.Record {
	t.Helper()
	var out []vectorstore.Record
	for _, r := range records(t, store, vectorstore.Filter{Layer: "semantic"}) {
		if strings.Contains(r.Text, s) {
			out = append(out, r)
		}
	}
	return out
}

// A message deleted from the collection while sessions that loaded it
// still run (memctl rm, or another process erasing a user) is not written
// back by their embedding passes, and leaves their lexical index; messages
// appended after the deletion are stored as always.
func TestDeletedFromOutsideNotResurrected(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	l := newLayer(t, store, semantic.Options{})
	rt := newRuntime(t, l)
	a := start(t, rt, "t1", "u1")
	// The secret is the third latest message: its own context is stored,
	// the next message's (which quotes it) is still to be written by a
	// later pass, when the secret itself is no longer anything to embed.
	talk(t, a, clk, append(append([]string{}, trip...),
		"Please remember my bank PIN.", "Your PIN 4711 is noted.", "Thanks!", "You're welcome.")...)
	b := start(t, rt, "t1", "u1") // a second session that loaded the secret too
	if length(t, state(t, b, "semantic")) != len(trip)+4 {
		t.Fatalf("second session loaded %d messages, want %d", length(t, state(t, b, "semantic")), len(trip)+4)
	}

	// From outside: the message and every context quoting it, as memctl
	// rm deletes them.
	gone := holding(t, store, "4711")
	if len(gone) == 0 {
		t.Fatal("the secret was not stored")
	}
	ids := make([]string, len(gone))
	for i, r := range gone {
		ids[i] = r.ID
	}
	if err := store.Records.Delete(ctx, ids...); err != nil {
		t.Fatal(err)
	}

	// Both sessions go on and end: their passes embed the secret's
	// context, which is complete now, and the new messages.
	talk(t, a, clk, "We also adopted a cat called Miso.", "Miso is a lovely name.")
	talk(t, b, clk, "The plumber comes on Monday.", "Monday, noted.")
	for _, s := range []*core.Session{a, b} {
		st := state(t, s, "semantic")
		if err := st.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		hits, err := st.Search(ctx, "bank PIN 4711", semantic.SearchOptions{K: 20, Mode: semantic.ModeLexical})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if strings.Contains(h.Text, "4711") {
				t.Fatalf("a running session still finds the deleted message: %+v", h)
			}
		}
		if err := s.Complete(ctx, "ok"); err != nil {
			t.Fatal(err)
		}
	}
	if back := holding(t, store, "4711"); len(back) > 0 {
		t.Fatalf("the deleted message came back: %d record(s), first %s %q", len(back), back[0].ID, back[0].Text)
	}
	for _, want := range []string{"adopted a cat called Miso", "Miso is a lovely name", "plumber comes on Monday", "Monday, noted."} {
		if len(holding(t, store, want)) == 0 {
			t.Fatalf("message %q written after the deletion is not stored", want)
		}
	}

	// A new session finds what is left, rebuilding the neighbours'
	// contexts the deletion removed.
	c := start(t, rt, "t1", "u1")
	if got := ask(t, c, clk, "semantic", "What is the name of our cat?"); !strings.Contains(got, "Miso") {
		t.Fatalf("recall after the deletion misses the later messages:\n%s", got)
	}
	if err := c.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range records(t, store, vectorstore.Filter{Layer: "semantic", Thread: "t1"}) {
		kinds[r.Kind]++
	}
	if kinds[semantic.KindContext] != kinds[semantic.KindMessage] {
		t.Fatalf("after the next session's run: %v, want one context per message", kinds)
	}
}

// The whole thread deleted from outside (memctl rm --thread) while a
// lexical-mode session runs: Complete writes back only what was appended
// after the deletion.
func TestThreadDeletedWhileRunning(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	l := newLayer(t, store, semantic.Options{Mode: semantic.ModeLexical})
	s := start(t, newRuntime(t, l), "t1", "")
	talk(t, s, clk, "My bank PIN is 4711", "Noted.")
	n, err := store.Records.DeleteWhere(ctx, vectorstore.Filter{Thread: "t1"})
	if err != nil || n != 2 {
		t.Fatalf("DeleteWhere = %d, %v; want the 2 pending messages", n, err)
	}
	clk.Advance(time.Minute)
	if err := s.Append(ctx, core.UserMessage("New topic: the garden needs watering.")); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
	recs := records(t, store, vectorstore.Filter{Thread: "t1"})
	if len(recs) != 1 || recs[0].Text != "New topic: the garden needs watering." || recs[0].Metadata[semantic.MetaEmbedding] != store.Embedder.Model() {
		var texts []string
		for _, r := range recs {
			texts = append(texts, r.Kind+" "+r.Metadata[semantic.MetaEmbedding]+" "+r.Text)
		}
		t.Fatalf("after Complete the store holds %q, want only the message appended after the deletion, embedded", texts)
	}
	if st := state(t, s, "semantic"); length(t, st) != 1 {
		t.Fatalf("the session's mirror holds %d messages, want 1", length(t, st))
	}
}
