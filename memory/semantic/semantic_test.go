package semantic_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/layers/history"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
)

var trip = []string{
	"I booked the flights to Lisbon for the conference, leaving on the 14th.", "Great, do you need a hotel near the venue?",
	"Yes, somewhere in Alfama would be lovely.", "Alfama is charming but hilly; I can look for places near a tram stop.",
	"Also my dentist moved my appointment to Thursday.", "Noted: dentist on Thursday.",
	"The sourdough starter is finally bubbling.", "Lovely, feed it once a day and bake this weekend.",
}

func TestRecallAcrossRuns(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	l := newLayer(t, store, semantic.Options{})
	rt := newRuntime(t, l)

	s1 := start(t, rt, "t1", "u1")
	talk(t, s1, clk, trip...)
	if err := s1.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}

	clk.Advance(48 * time.Hour)
	s2 := start(t, rt, "t1", "u1")
	got := ask(t, s2, clk, "semantic", "Which day do my flights to Lisbon leave?")
	want := "[Mon 2024-03-04 09:01 UTC] user: I booked the flights to Lisbon for the conference, leaving on the 14th.\n" +
		"[Mon 2024-03-04 09:02 UTC] assistant: Great, do you need a hotel near the venue?\n"
	if !strings.Contains(got, want) {
		t.Fatalf("recall does not show the flight message with its date and neighbour:\n%s", got)
	}
	if !strings.HasPrefix(got, "<semantic_recall>\n") || !strings.HasSuffix(got, "</semantic_recall>") {
		t.Fatalf("recall not wrapped:\n%s", got)
	}
	if strings.Contains(got, "Which day do my flights") {
		t.Fatalf("recall repeats the visible question:\n%s", got)
	}
	if n := length(t, state(t, s2, "semantic")); n != len(trip)+1 {
		t.Fatalf("Len = %d, want %d", n, len(trip)+1)
	}
	if u := s2.LastUsage().Layer("semantic"); u.Band != core.BandLive {
		t.Fatalf("band %v, want live", u.Band)
	}
}

func TestSkipsVisibleWindow(t *testing.T) {
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	l := newLayer(t, store, semantic.Options{Mode: semantic.ModeLexical, MessageRange: &semantic.MessageRange{}})
	cap, err := history.Layer(history.Options{MaxItems: 4})
	if err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, l, cap)
	s := start(t, rt, "t1", "u1")
	talk(t, s, clk,
		"My bike is a green Trek.", "Nice bike.",
		"Filler about the weather.", "Sunny.",
		"More filler about lunch.", "Soup.",
		"Even more filler.", "Okay.",
		"The Trek needs new brakes soon.", "I can find a bike shop.",
	)
	// Assemble once so the runtime knows the window.
	if _, err := s.Assemble(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := ask(t, s, clk, "semantic", "Tell me about my Trek bike")
	if !strings.Contains(got, "My bike is a green Trek.") {
		t.Fatalf("the old message outside the window is not recalled:\n%s", got)
	}
	if strings.Contains(got, "needs new brakes") {
		t.Fatalf("a message inside the visible window is recalled again:\n%s", got)
	}
}

func TestReopenSurvives(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := newClock()
	store := memtest.NewStore(t, dir, clk)
	l := newLayer(t, store, semantic.Options{})
	s := start(t, newRuntime(t, l), "t1", "u1")
	talk(t, s, clk, trip...)
	if err := s.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
	if err := store.Records.Close(); err != nil {
		t.Fatal(err)
	}

	store2 := memtest.NewStore(t, dir, clk)
	l2 := newLayer(t, store2, semantic.Options{})
	s2 := start(t, newRuntime(t, l2), "t1", "u1")
	st := state(t, s2, "semantic")
	if length(t, st) != len(trip) || pending(t, st) != 0 {
		t.Fatalf("after reopen: Len %d Pending %d, want %d and 0", length(t, st), pending(t, st), len(trip))
	}
	got := ask(t, s2, clk, "semantic", "When is the dentist appointment?")
	if !strings.Contains(got, "dentist moved my appointment to Thursday") {
		t.Fatalf("reopened store does not recall:\n%s", got)
	}
	// Every message's vector is the embedding of its text; a context's
	// is the normalised sum of its window's message vectors (its message
	// and the neighbours its text quotes).
	recs := records(t, store2, vectorstore.Filter{Layer: "semantic"})
	kinds := map[string]int{}
	byID := map[string]vectorstore.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	for _, r := range recs {
		kinds[r.Kind]++
		if r.Metadata[semantic.MetaEmbedding] != store2.Embedder.Model() {
			continue // the question just asked may still be pending
		}
		want := r.Vector
		if r.Kind == semantic.KindMessage {
			v, err := store2.Embedder.Embed(ctx, []string{r.Text})
			if err != nil {
				t.Fatal(err)
			}
			want = v[0]
		} else {
			msg := byID[r.Metadata[semantic.MetaMessage]]
			sum := make([]float64, len(msg.Vector))
			for _, id := range []string{msg.Metadata[semantic.MetaPrev], msg.ID, msg.Metadata[semantic.MetaNext]} {
				m, ok := byID[id]
				if !ok || !strings.Contains(r.Text, m.Text) {
					continue
				}
				for i, x := range m.Vector {
					sum[i] += float64(x)
				}
			}
			want = make([]float32, len(sum))
			for i, x := range sum {
				want[i] = float32(x)
			}
		}
		if c := embed.Cosine(want, r.Vector); c < 0.9999 {
			t.Fatalf("record %s (%s): vector is not what its text says (cos %v)", r.ID, r.Kind, c)
		}
	}
	if kinds[semantic.KindMessage] != len(trip)+1 || kinds[semantic.KindContext] != len(trip) {
		t.Fatalf("record kinds %v, want %d messages and %d contexts", kinds, len(trip)+1, len(trip))
	}
}

// A process that stops after Append returned, before any embedding pass,
// loses nothing: the message is stored pending, found by words after
// reopening, and embedded by the next session's flush.
func TestCrashBeforeEmbedding(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := newClock()
	store := memtest.NewStore(t, dir, clk)
	l := newLayer(t, store, semantic.Options{})
	s := start(t, newRuntime(t, l), "t1", "u1")
	clk.Advance(time.Minute)
	if err := s.Append(ctx, core.UserMessage("The spare key is under the blue flowerpot.")); err != nil {
		t.Fatal(err)
	}
	// The "crash": no Record, no Complete, no Close; the collection is
	// closed as the process would leave it.
	if err := store.Records.Close(); err != nil {
		t.Fatal(err)
	}

	store2 := memtest.NewStore(t, dir, clk)
	recs := records(t, store2, vectorstore.Filter{Layer: "semantic"})
	if len(recs) != 1 || recs[0].Metadata[semantic.MetaEmbedding] != semantic.EmbeddingPending {
		t.Fatalf("want one pending record, got %+v", recs)
	}
	l2 := newLayer(t, store2, semantic.Options{})
	s2 := start(t, newRuntime(t, l2), "t1", "u1")
	st := state(t, s2, "semantic")
	if pending(t, st) != 1 {
		t.Fatalf("Pending = %d, want 1", pending(t, st))
	}
	find := func(modes ...semantic.Mode) {
		t.Helper()
		for _, mode := range modes {
			hits, err := st.Search(ctx, "where is the spare key", semantic.SearchOptions{K: 3, Mode: mode})
			if err != nil {
				t.Fatalf("%s: %v", mode, err)
			}
			if len(hits) == 0 || !strings.Contains(hits[0].Text, "spare key") {
				t.Fatalf("%s: the message written before the crash is not found: %+v", mode, hits)
			}
		}
	}
	find(semantic.ModeLexical, semantic.ModeHybrid)
	if hits, err := st.Search(ctx, "where is the spare key", semantic.SearchOptions{K: 3, Mode: semantic.ModeDense}); err != nil || len(hits) != 0 {
		t.Fatalf("dense search before the embedding pass: %v %+v, want no hits (a search embeds only its query)", err, hits)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	find(semantic.ModeLexical, semantic.ModeDense, semantic.ModeHybrid)
	if pending(t, st) != 0 {
		t.Fatalf("Pending after Flush = %d, want 0", pending(t, st))
	}
	recs = records(t, store2, vectorstore.Filter{Layer: "semantic", Kind: semantic.KindMessage})
	if got := recs[0].Metadata[semantic.MetaEmbedding]; got != store2.Embedder.Model() {
		t.Fatalf("stored record still %q after embedding", got)
	}
}

func TestEmbedderFailure(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	fl := &flaky{Embedder: store.Embedder}
	store.Embedder = fl
	// EmbedBatch 1: every Record embeds what has a complete context.
	l := newLayer(t, store, semantic.Options{EmbedBatch: 1})
	s := start(t, newRuntime(t, l), "t1", "u1")
	talk(t, s, clk, trip[:4]...)
	before := pending(t, state(t, s, "semantic"))

	fl.setFail(true)
	clk.Advance(time.Minute)
	if err := s.Append(ctx, core.UserMessage("My passport expires in June.")); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, core.AssistantMessage("Renew it before the trip.")); err != nil {
		t.Fatal(err)
	}
	// The failed embedding is a diagnostic; the messages are stored.
	if d := s.Diagnostics(); len(d) != 1 || d[0].Hook != "store" || !strings.Contains(d[0].Message, "unavailable") {
		t.Fatalf("diagnostics %+v", d)
	}
	st := state(t, s, "semantic")
	if got := pending(t, st); got != before+2 {
		t.Fatalf("Pending = %d, want %d (the two new messages, and none embedded)", got, before+2)
	}
	// Hybrid falls back to the lexical ranking; dense reports the error.
	hits, err := st.Search(ctx, "passport expiry", semantic.SearchOptions{K: 2})
	if err != nil || len(hits) == 0 || !strings.Contains(hits[0].Text, "passport") {
		t.Fatalf("hybrid search while the embedder is down: %v %+v", err, hits)
	}
	if _, err := st.Search(ctx, "passport expiry", semantic.SearchOptions{Mode: semantic.ModeDense}); !errors.Is(err, errEmbedDown) {
		t.Fatalf("dense search error = %v, want the embedder's", err)
	}
	fl.setFail(false)
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	hits, err = st.Search(ctx, "passport expiry", semantic.SearchOptions{K: 2, Mode: semantic.ModeDense})
	if err != nil || len(hits) == 0 {
		t.Fatalf("dense search after recovery: %v %+v", err, hits)
	}
	if pending(t, st) != 0 {
		t.Fatalf("Pending after recovery = %d", pending(t, st))
	}
}

func TestModelChangeReembeds(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := newClock()
	store := memtest.NewStore(t, dir, clk)
	s := start(t, newRuntime(t, newLayer(t, store, semantic.Options{})), "t1", "u1")
	talk(t, s, clk, trip...)
	if err := s.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
	if err := store.Records.Close(); err != nil {
		t.Fatal(err)
	}
	store2 := memtest.NewStore(t, dir, clk)
	store2.Embedder = &flaky{Embedder: store2.Embedder, model: "other-model"}
	s2 := start(t, newRuntime(t, newLayer(t, store2, semantic.Options{EmbedBatch: 3})), "t1", "u1")
	st := state(t, s2, "semantic")
	if hits, err := st.Search(ctx, "flight", semantic.SearchOptions{Mode: semantic.ModeDense}); err != nil || len(hits) != 0 {
		t.Fatalf("dense search under a new model before Reembed: %v %+v, want no hits", err, hits)
	}
	n, err := st.Reembed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all := records(t, store2, vectorstore.Filter{Layer: "semantic"})
	if n != len(all) {
		t.Fatalf("Reembed rewrote %d records, want all %d", n, len(all))
	}
	if n, err := st.Reembed(ctx); err != nil || n != 0 {
		t.Fatalf("second Reembed: %d, %v; want nothing left", n, err)
	}
	for _, r := range records(t, store2, vectorstore.Filter{Layer: "semantic"}) {
		if r.Metadata[semantic.MetaEmbedding] != "other-model" {
			t.Fatalf("record %s not re-embedded: %v", r.ID, r.Metadata)
		}
	}
}

// Writes of one thread never appear in another's recall, with two
// sessions writing concurrently on one store.
func TestThreadIsolationConcurrent(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	store.Now = func() time.Time { return day0 } // the shared clock is not advanced concurrently
	l := newLayer(t, store, semantic.Options{})
	rt := newRuntime(t, l)
	secrets := map[string]string{"alpha": "aardvark", "beta": "bumblebee"}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for thread, word := range secrets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := rt.Start(ctx, core.RunOptions{ThreadID: thread, ResourceID: "same-user"})
			if err != nil {
				errs <- err
				return
			}
			for i := range 15 {
				if err := s.Append(ctx, core.UserMessage(fmt.Sprintf("note %d of %s: my favourite animal is the %s", i, thread, word))); err != nil {
					errs <- err
					return
				}
				if err := s.Record(ctx, core.AssistantMessage(fmt.Sprintf("noted %d about the %s", i, word))); err != nil {
					errs <- err
					return
				}
				if _, err := s.Assemble(ctx); err != nil {
					errs <- err
					return
				}
			}
			if d := s.Diagnostics(); len(d) > 0 {
				errs <- fmt.Errorf("%s: diagnostics %+v", thread, d)
				return
			}
			errs <- s.Complete(ctx, "ok")
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for thread, word := range secrets {
		s := start(t, rt, thread, "same-user")
		st := state(t, s, "semantic")
		if length(t, st) != 30 {
			t.Fatalf("%s: Len %d, want 30", thread, length(t, st))
		}
		for other, otherWord := range secrets {
			for _, mode := range []semantic.Mode{semantic.ModeHybrid, semantic.ModeDense, semantic.ModeLexical} {
				hits, err := st.Search(ctx, "favourite animal "+otherWord, semantic.SearchOptions{K: 50, Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range hits {
					if h.Thread != thread || (other != thread && strings.Contains(h.Text, otherWord)) {
						t.Fatalf("thread %s sees a message of %s: %+v", thread, other, h)
					}
				}
			}
		}
		if got := ask(t, s, clk, "semantic", "what is my favourite animal?"); !strings.Contains(got, word) {
			t.Fatalf("%s recall misses its own messages:\n%s", thread, got)
		}
	}
}

func TestResourceScope(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	l := newLayer(t, store, semantic.Options{Common: memory.Common{Scope: core.ScopeResource}})
	rt := newRuntime(t, l)
	s := start(t, rt, "t1", "anna")
	talk(t, s, clk, "My sister Claire lives in York.", "Good to know.")
	if err := s.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
	s2 := start(t, rt, "t2", "anna")
	got := ask(t, s2, clk, "semantic", "Where does my sister Claire live?")
	if !strings.Contains(got, "(from another conversation)\n") || !strings.Contains(got, "Claire lives in York") {
		t.Fatalf("resource scope does not recall across threads:\n%s", got)
	}
	s3 := start(t, rt, "t3", "ben")
	if got := ask(t, s3, clk, "semantic", "Where does my sister Claire live?"); got != "" {
		t.Fatalf("another resource sees anna's messages:\n%s", got)
	}
}

func TestRangesMergeChronological(t *testing.T) {
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	l := newLayer(t, store, semantic.Options{Mode: semantic.ModeLexical, TopK: 3, MessageRange: &semantic.MessageRange{Before: 1, After: 0}})
	rt := newRuntime(t, l)
	s := start(t, rt, "t1", "u1")
	talk(t, s, clk,
		"zebra one", "ok a",
		"filler b", "ok b",
		"zebra two", "zebra three",
		"filler c", "ok c",
	)
	if err := s.Complete(context.Background(), "ok"); err != nil {
		t.Fatal(err)
	}
	s2 := start(t, rt, "t1", "u1")
	got := ask(t, s2, clk, "semantic", "zebra")
	want := "<semantic_recall>\n" +
		"Earlier messages that may be relevant to the latest one, oldest first (quoted from past conversation, with their dates):\n" +
		"[Mon 2024-03-04 09:01 UTC] user: zebra one\n" +
		"…\n" +
		"[Mon 2024-03-04 09:04 UTC] assistant: ok b\n" +
		"[Mon 2024-03-04 09:05 UTC] user: zebra two\n" +
		"[Mon 2024-03-04 09:06 UTC] assistant: zebra three\n" +
		"</semantic_recall>"
	if got != want {
		t.Fatalf("rendering:\n%s\nwant:\n%s", got, want)
	}
	// The same state renders the same bytes: assembling again, and the
	// same conversation recorded in another store.
	if again := recalled(t, s2, "semantic"); again != got {
		t.Fatalf("not deterministic:\n%s\n---\n%s", again, got)
	}
	clk2 := newClock()
	store2 := memtest.NewStore(t, "", clk2)
	rt2 := newRuntime(t, newLayer(t, store2, semantic.Options{Mode: semantic.ModeLexical, TopK: 3, MessageRange: &semantic.MessageRange{Before: 1, After: 0}}))
	o := start(t, rt2, "t1", "u1")
	talk(t, o, clk2, "zebra one", "ok a", "filler b", "ok b", "zebra two", "zebra three", "filler c", "ok c")
	if err := o.Complete(context.Background(), "ok"); err != nil {
		t.Fatal(err)
	}
	if other := ask(t, start(t, rt2, "t1", "u1"), clk2, "semantic", "zebra"); other != got {
		t.Fatalf("another store renders differently:\n%s\n---\n%s", other, got)
	}
}

func TestBudget(t *testing.T) {
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	long := strings.Repeat("a long message about the garden shed and its roof ", 8)
	for _, budget := range []int{60, 200, 10} {
		l := newLayer(t, store, semantic.Options{Common: memory.Common{ID: fmt.Sprintf("sem%d", budget), Budget: core.Fixed(float64(budget))}, TopK: 5})
		rt := newRuntime(t, l)
		s := start(t, rt, "t-budget", "u1")
		talk(t, s, clk, "garden shed roof leaks", long, "garden shed door squeaks", "oil it", "garden shed paint", "green")
		s2 := start(t, rt, "t-budget", "u1")
		got := ask(t, s2, clk, l.ID, "garden shed")
		u := s2.LastUsage().Layer(l.ID)
		if u.Tokens > budget || u.Truncated != 0 {
			t.Fatalf("budget %d: layer used %d tokens, truncated %d", budget, u.Tokens, u.Truncated)
		}
		if budget == 10 && got != "" {
			t.Fatalf("budget 10: want nothing, got\n%s", got)
		}
		if budget == 200 && !strings.Contains(got, "garden shed") {
			t.Fatalf("budget 200: nothing recalled:\n%s", got)
		}
	}
}

func TestOptionsValidation(t *testing.T) {
	store := memtest.NewStore(t, "", nil)
	cases := []struct {
		opts  semantic.Options
		field string
	}{
		{semantic.Options{Common: memory.Common{Scope: core.ScopeGlobal}}, "Scope"},
		{semantic.Options{TopK: -1}, "TopK"},
		{semantic.Options{TopK: semantic.MaxTopK + 1}, "TopK"},
		{semantic.Options{MessageRange: &semantic.MessageRange{Before: -1}}, "MessageRange.Before"},
		{semantic.Options{MessageRange: &semantic.MessageRange{After: semantic.MaxRange + 1}}, "MessageRange.After"},
		{semantic.Options{Mode: "fuzzy"}, "Mode"},
		{semantic.Options{Roles: []core.Role{"robot"}}, "Roles[0]"},
		{semantic.Options{Roles: []core.Role{}}, "Roles"},
		{semantic.Options{MaxMessageChars: 5}, "MaxMessageChars"},
		{semantic.Options{EmbedBatch: -2}, "EmbedBatch"},
		{semantic.Options{Candidates: 5000}, "Candidates"},
		{semantic.Options{Ranking: semantic.Ranking{Fusion: "max"}}, "Ranking.Fusion"},
		{semantic.Options{Ranking: semantic.Ranking{DenseWeight: 1.5}}, "Ranking.DenseWeight"},
		{semantic.Options{Ranking: semantic.Ranking{ContextWeight: 2}}, "Ranking.ContextWeight"},
		{semantic.Options{Ranking: semantic.Ranking{B: 1.5}}, "Ranking.B"},
		{semantic.Options{Ranking: semantic.Ranking{SpeakerPrior: 1.5}}, "Ranking.SpeakerPrior"},
		{semantic.Options{Common: memory.Common{Budget: core.Range(10, 5)}}, "Budget.Max"},
		{semantic.Options{Common: memory.Common{Placement: "middle"}}, "Placement"},
		{semantic.Options{Common: memory.Common{ID: "a/b"}}, "ID"},
	}
	for _, c := range cases {
		_, err := semantic.New(store, c.opts)
		var ce *core.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%+v: error %v, want ConfigError on %s", c.opts, err, c.field)
		}
	}
	for _, bad := range []*memory.Store{nil, {Records: store.Records}, {Embedder: store.Embedder}} {
		if _, err := semantic.New(bad, semantic.Options{}); !errors.Is(err, memory.ErrInvalidStore) {
			t.Errorf("store %+v: error %v, want ErrInvalidStore", bad, err)
		}
	}
	l, err := semantic.New(store, semantic.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sp := l.Layer.Spec()
	if sp.ID != "semantic" || sp.Slot != core.SlotSemanticRecall || sp.Scope != core.ScopeThread || sp.Placement != core.PlacementLive {
		t.Fatalf("defaults: %+v", sp)
	}
}

func TestSearchFunction(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	rt := newRuntime(t, newLayer(t, store, semantic.Options{}))
	s := start(t, rt, "t1", "u1")
	talk(t, s, clk, trip...)
	before := len(records(t, store, vectorstore.Filter{Layer: "semantic"}))

	bad := map[string]string{
		"invalid JSON":  `{"query": `,
		"wrong type":    `{"query": 5}`,
		"missing query": `{}`,
		"unknown field": `{"query": "lisbon", "limit": 3}`,
		"blank query":   `{"query": "   "}`,
		"huge query":    `{"query": "` + strings.Repeat("x", semantic.MaxQueryChars+1) + `"}`,
		"k too large":   `{"query": "lisbon", "k": 21}`,
		"k negative":    `{"query": "lisbon", "k": -1}`,
		"not an object": `["lisbon"]`,
	}
	for name, args := range bad {
		out, err := s.ExecuteTool(ctx, core.FunctionCall("c-"+name, "semantic/search", args))
		if err != nil {
			t.Fatalf("%s: CallFunction error %v", name, err)
		}
		if !strings.HasPrefix(out.Output, "error: ") || out.CallID != "c-"+name {
			t.Fatalf("%s: output %q", name, out.Output)
		}
	}
	if after := len(records(t, store, vectorstore.Filter{Layer: "semantic"})); after != before {
		t.Fatalf("rejected calls changed the records: %d -> %d", before, after)
	}
	out, err := s.ExecuteTool(ctx, core.FunctionCall("c-ok", "semantic/search", `{"query": "Lisbon flights", "k": 1}`))
	if err != nil || !strings.Contains(out.Output, "[Mon 2024-03-04 09:01 UTC] user: I booked the flights to Lisbon") {
		t.Fatalf("search: %v %q", err, out.Output)
	}
	if strings.Count(out.Output, "\n[") != 1 {
		t.Fatalf("k=1 returned more:\n%s", out.Output)
	}
	tools := s.Tools()
	if len(tools) != 1 || tools[0].Name != "semantic/search" || !strings.Contains(string(tools[0].Parameters), `"query"`) {
		t.Fatalf("tools %+v", tools)
	}
}

func TestBadMessages(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	s := start(t, newRuntime(t, newLayer(t, store, semantic.Options{})), "t1", "u1")
	huge := strings.Repeat("é", 40<<10) // 80 KiB
	items := []core.Item{
		core.UserMessage("bad utf8 \xff\xfe here"),
		core.UserMessage("nul \x00 byte"),
		core.UserMessage(huge),
		core.UserMessage("   \n\t "),
		core.DeveloperMessage("layer output is not a memory"),
		core.FunctionCall("c1", "tool", `{"a":1}`),
		core.FunctionCallOutput("c1", "tool output"),
	}
	for _, it := range items {
		if err := s.Append(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Record(ctx, core.AssistantMessage("ok")); err != nil {
		t.Fatal(err)
	}
	noDiagnostics(t, s)
	recs := records(t, store, vectorstore.Filter{Layer: "semantic", Kind: semantic.KindMessage})
	if len(recs) != 4 {
		t.Fatalf("want 4 message records (3 user, 1 assistant), got %d", len(recs))
	}
	var sawTrunc bool
	for _, r := range recs {
		if strings.ContainsRune(r.Text, 0) {
			t.Fatalf("NUL stored: %q", r.Text)
		}
		if r.Metadata[semantic.MetaTruncated] == "true" {
			sawTrunc = true
			if len(r.Text) > 64<<10 {
				t.Fatalf("huge text stored at %d bytes", len(r.Text))
			}
		}
	}
	if !sawTrunc {
		t.Fatal("huge message not marked truncated")
	}
	hits, err := state(t, s, "semantic").Search(ctx, "bad utf8", semantic.SearchOptions{K: 1})
	if err != nil || len(hits) != 1 || !strings.Contains(hits[0].Text, "\uFFFD") {
		t.Fatalf("cleaned message not found: %v %+v", err, hits)
	}
	st := state(t, s, "semantic")
	for _, q := range []string{"", "  "} {
		if _, err := st.Search(ctx, q, semantic.SearchOptions{}); !errors.Is(err, semantic.ErrInvalidQuery) {
			t.Fatalf("query %q: %v", q, err)
		}
	}
	if _, err := st.Search(ctx, "x", semantic.SearchOptions{K: semantic.MaxTopK + 1}); !errors.Is(err, semantic.ErrInvalidQuery) {
		t.Fatalf("K too large: %v", err)
	}
	if _, err := (semantic.State{}).Search(ctx, "x", semantic.SearchOptions{}); !errors.Is(err, semantic.ErrNotInitialised) {
		t.Fatalf("zero state: %v", err)
	}
}

func TestSameItemIDIsOneRecord(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	rt := newRuntime(t, newLayer(t, store, semantic.Options{}))
	msg := core.UserMessage("I adopted a greyhound called Pepper.")
	msg.ID = "msg-17"
	for range 2 {
		s := start(t, rt, "t1", "u1")
		if err := s.Append(ctx, msg); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(ctx, "ok"); err != nil {
			t.Fatal(err)
		}
	}
	recs := records(t, store, vectorstore.Filter{Layer: "semantic", Kind: semantic.KindMessage})
	if len(recs) != 1 || recs[0].Metadata[semantic.MetaItemID] != "msg-17" {
		t.Fatalf("want one record for item msg-17, got %+v", recs)
	}
}

// TestSpeakerPrior: the user's own statement outranks the assistant's
// echo of it for a question about the user's life, and the assistant's
// message outranks the user's for a question about what the assistant
// said; with the prior off, the echo wins.
func TestSpeakerPrior(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	store := memtest.NewStore(t, "", clk)
	rt := newRuntime(t, newLayer(t, store, semantic.Options{}))
	s := start(t, rt, "t1", "u1")
	talk(t, s, clk,
		"The dentist moved me to Thursday at nine, the appointment is early.", "Noted: dentist appointment, Thursday at nine.",
		"The sourdough starter is finally bubbling.", "Lovely. For the appointment, bring the dentist your insurance card.",
		"Thanks, and the flights to Lisbon are booked.", "Great, enjoy Lisbon.",
	)
	top := func(prior float64, q string) []semantic.Hit {
		t.Helper()
		l := newLayer(t, store, semantic.Options{Ranking: semantic.Ranking{SpeakerPrior: prior}})
		s := start(t, newRuntime(t, l), "t1", "u1")
		defer s.Close(ctx)
		hits, err := state(t, s, "semantic").Search(ctx, q, semantic.SearchOptions{K: 2})
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	const about = "When is my dentist appointment?"
	if h := top(-1, about); h[0].Role != core.RoleAssistant {
		t.Fatalf("prior off: first hit %s %q, want the assistant's echo (else this test shows nothing)", h[0].Role, h[0].Text)
	}
	h := top(0, about)
	if h[0].Role != core.RoleUser || !strings.HasPrefix(h[0].Text, "The dentist moved") {
		t.Fatalf("default prior: first hit %s %q, want the user's statement", h[0].Role, h[0].Text)
	}
	h = top(0, "What did you tell me to bring to the dentist appointment?")
	if h[0].Role != core.RoleAssistant || !strings.Contains(h[0].Text, "insurance card") {
		t.Fatalf("question to the assistant: first hit %s %q, want the assistant's advice", h[0].Role, h[0].Text)
	}
}
