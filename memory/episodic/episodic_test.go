package episodic_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/vectorstore"
)

var t0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

func newRuntime(t *testing.T, store *memory.Store, opts episodic.Options) (*core.Runtime, *episodic.Layer) {
	t.Helper()
	l, err := episodic.New(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	return memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{l}}), l
}

// runEpisode plays one run: a user request, optional tool calls, a final
// answer, then Complete.
func runEpisode(t *testing.T, rt *core.Runtime, run core.RunOptions, request, answer string, tools ...string) {
	t.Helper()
	ctx := context.Background()
	s := memtest.Start(t, rt, run)
	if err := s.Append(ctx, core.UserMessage(request)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Assemble(ctx); err != nil {
		t.Fatal(err)
	}
	for i, name := range tools {
		id := fmt.Sprint("call-", i)
		if err := s.Record(ctx, core.FunctionCall(id, name, `{}`)); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, core.FunctionCallOutput(id, "tool output")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Record(ctx, core.AssistantMessage(answer)); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, "completed"); err != nil {
		t.Fatal(err)
	}
	for _, d := range s.Diagnostics() {
		t.Errorf("diagnostic: %+v", d)
	}
}

// episodesBlock assembles a fresh run's first view and returns the layer's
// block ("" when none).
func episodesBlock(t *testing.T, rt *core.Runtime, run core.RunOptions, user string) (string, *core.Session) {
	t.Helper()
	s := memtest.Start(t, rt, run)
	if user != "" {
		if err := s.Append(context.Background(), core.UserMessage(user)); err != nil {
			t.Fatal(err)
		}
	}
	return memtest.Tagged(t, s, "<episodes>"), s
}

func TestEpisodeStoredOnCompleteAndRecalledNextRun(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	rt, l := newRuntime(t, store, episodic.Options{})
	if l.Placement != core.PlacementAnchor || l.Scope != core.ScopeResource || l.Budget != core.Range(300, 2000) || l.Slot != core.SlotEpisodic {
		t.Fatalf("defaults %+v", l)
	}
	run := core.RunOptions{RunID: "run-1", ThreadID: "thread-1", ResourceID: "user-1"}
	if got, _ := episodesBlock(t, rt, run, "hi"); got != "" {
		t.Fatalf("no episodes yet, rendered %q", got)
	}
	runEpisode(t, rt, run, "Fix the flaky   parser test, please.",
		"The test raced on a shared buffer. It now uses its own buffer and passes 500 runs in a row.",
		"read_file", "read_file", "run_tests")

	recs, _, err := store.Records.List(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Layer: "episodic"}, WithVectors: true})
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %v %v", recs, err)
	}
	r := recs[0]
	wantSummary := "Request: Fix the flaky parser test, please.\nTools used: read_file ×2, run_tests\n" +
		"Result: The test raced on a shared buffer. It now uses its own buffer and passes 500 runs in a row."
	if r.Kind != "episode" || r.Text != wantSummary || r.Scope != (vectorstore.Scope{Resource: "user-1"}) || !r.CreatedAt.Equal(t0) ||
		r.Metadata["outcome"] != "completed" || r.Metadata["run"] != "run-1" || r.Metadata["thread"] != "thread-1" ||
		r.Metadata["tokens"] != fmt.Sprint((len([]rune(wantSummary))+3)/4) || len(r.Vector) != memtest.Dimension {
		t.Fatalf("record %+v", r)
	}

	// Another thread of the same resource sees it.
	clock.Advance(24 * time.Hour)
	want := "<episodes>\n[2025-03-01T09:00:00Z] (completed) Request: Fix the flaky parser test, please.\n" +
		"  Tools used: read_file ×2, run_tests\n" +
		"  Result: The test raced on a shared buffer. It now uses its own buffer and passes 500 runs in a row.\n</episodes>"
	got, s := episodesBlock(t, rt, core.RunOptions{ThreadID: "thread-2", ResourceID: "user-1"}, "What did we do last time?")
	if got != want {
		t.Fatalf("recall\n%s\nwant\n%s", got, want)
	}
	// Anchored and byte-stable across turns.
	for i := 0; i < 3; i++ {
		_ = s.Record(ctx, core.AssistantMessage(fmt.Sprint("turn ", i)))
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		u := v.Usage.Layer("episodic")
		if u.Band != core.BandAnchor || u.Served != core.ServedPinned || u.ChurnRate != 0 || v.Band(core.BandAnchor)[0].Text() != want {
			t.Fatalf("turn %d usage %+v", i, u)
		}
	}
	// Another resource sees nothing; it may not even use user-1's thread.
	if _, err := rt.Start(ctx, core.RunOptions{ThreadID: "thread-1", ResourceID: "user-2"}); !errors.As(err, new(*core.ThreadBoundError)) {
		t.Fatalf("user-2 on user-1's thread: %v", err)
	}
	if got, _ := episodesBlock(t, rt, core.RunOptions{ThreadID: "thread-of-user-2", ResourceID: "user-2"}, "hi"); got != "" {
		t.Fatalf("user-2 sees %q", got)
	}
	st, _ := core.State[episodic.State](s, "episodic")
	eps := st.Episodes()
	if len(eps) != 1 || eps[0].Summary != wantSummary || eps[0].Outcome != "completed" || !eps[0].Timestamp.Equal(t0) || eps[0].RunID != "run-1" {
		t.Fatalf("state episodes %+v", eps)
	}
}

func TestRecencyFitsBudgetNewestFirstShownInOrder(t *testing.T) {
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	rt, _ := newRuntime(t, store, episodic.Options{Common: memory.Common{Budget: core.Fixed(70)}})
	for i := 0; i < 8; i++ {
		clock.Advance(time.Hour)
		runEpisode(t, rt, core.RunOptions{ThreadID: fmt.Sprint("t", i), ResourceID: "user-1"}, fmt.Sprintf("task number %d", i), "done")
	}
	got, s := episodesBlock(t, rt, core.RunOptions{ThreadID: "next", ResourceID: "user-1"}, "")
	u := s.LastUsage().Layer("episodic")
	if u.Tokens > 70 || u.Tokens == 0 || u.Truncated != 0 {
		t.Fatalf("usage %+v\n%s", u, got)
	}
	var shown []string
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "[") {
			shown = append(shown, line)
		}
	}
	if len(shown) < 2 || len(shown) == 8 {
		t.Fatalf("shown %d episodes:\n%s", len(shown), got)
	}
	for i := 1; i < len(shown); i++ {
		if shown[i-1] >= shown[i] {
			t.Fatalf("not chronological:\n%s", got)
		}
	}
	if !strings.Contains(got, "task number 7") || strings.Contains(got, "task number 0") ||
		!strings.Contains(got, fmt.Sprintf("(%d more episodes not shown for space)", 8-len(shown))) {
		t.Fatalf("newest not kept:\n%s", got)
	}
}

func TestMaxEpisodesEvictsOldest(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	rt, _ := newRuntime(t, store, episodic.Options{MaxEpisodes: 3})
	for i := 0; i < 5; i++ {
		clock.Advance(time.Minute)
		runEpisode(t, rt, core.RunOptions{ThreadID: "t", ResourceID: "user-1"}, fmt.Sprint("request ", i), "ok")
	}
	// Another resource's episodes are not evicted by this one's.
	runEpisode(t, rt, core.RunOptions{ThreadID: "t2", ResourceID: "user-2"}, "other user's request", "ok")
	recs, _, err := store.Records.List(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Layer: "episodic", Resource: "user-1"}})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, r := range recs {
		texts = append(texts, strings.SplitN(r.Text, "\n", 2)[0])
	}
	if !reflect.DeepEqual(texts, []string{"Request: request 2", "Request: request 3", "Request: request 4"}) {
		t.Fatalf("kept %v", texts)
	}
	if n, _ := store.Records.Count(ctx, vectorstore.Filter{Layer: "episodic", Resource: "user-2"}); n != 1 {
		t.Fatalf("user-2 has %d episodes", n)
	}
}

func TestRelevanceModePicksBySimilarity(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	// Room for one episode: the pick is visible.
	rt, l := newRuntime(t, store, episodic.Options{Common: memory.Common{Budget: core.Fixed(55)}, Mode: episodic.Relevance})
	if l.Placement != core.PlacementAuto {
		t.Fatalf("relevance placement %q", l.Placement)
	}
	topics := []struct{ req, answer string }{
		{"migrate the billing database to postgres", "billing database migrated"},
		{"prune the roses in the garden", "roses pruned"},
		{"file the tax return for 2024", "tax return filed"},
	}
	for _, tp := range topics {
		clock.Advance(time.Hour)
		runEpisode(t, rt, core.RunOptions{ThreadID: "t", ResourceID: "user-1"}, tp.req, tp.answer)
	}
	for _, tc := range []struct{ user, want string }{
		{"is the billing database migration finished?", "billing database"},
		{"when did we prune the roses?", "roses"},
		{"did the tax return get filed?", "tax return"},
	} {
		got, _ := episodesBlock(t, rt, core.RunOptions{ThreadID: "q", ResourceID: "user-1"}, tc.user)
		if strings.Count(got, "\n[") != 1 || !strings.Contains(got, tc.want) {
			t.Fatalf("%q recalled\n%s\nwant the %q episode", tc.user, got, tc.want)
		}
	}
	// Without a user message: recency, the newest.
	if got, _ := episodesBlock(t, rt, core.RunOptions{ThreadID: "q", ResourceID: "user-1"}, ""); !strings.Contains(got, "tax return") {
		t.Fatalf("no query recalled\n%s", got)
	}

	// With room for all, relevance still renders chronologically.
	rtAll, _ := newRuntime(t, store, episodic.Options{Mode: episodic.Relevance})
	got, _ := episodesBlock(t, rtAll, core.RunOptions{ThreadID: "q", ResourceID: "user-1"}, "roses")
	i1, i2, i3 := strings.Index(got, "billing"), strings.Index(got, "roses"), strings.Index(got, "tax")
	if !(i1 > 0 && i1 < i2 && i2 < i3) {
		t.Fatalf("not chronological:\n%s", got)
	}
	_ = ctx
}

func TestRelevanceDeltaPublishesNewlyShownEpisodes(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	rt, _ := newRuntime(t, store, episodic.Options{Common: memory.Common{Budget: core.Fixed(45)}, Mode: episodic.Relevance})
	for _, req := range []string{"migrate the billing database", "prune the roses"} {
		clock.Advance(time.Hour)
		runEpisode(t, rt, core.RunOptions{ThreadID: "t", ResourceID: "user-1"}, req, "done")
	}
	got, s := episodesBlock(t, rt, core.RunOptions{ThreadID: "q", ResourceID: "user-1"}, "the billing database?")
	if !strings.Contains(got, "billing") {
		t.Fatalf("first pick\n%s", got)
	}
	// Same user turn, more rounds: the ranking is memoised and stable.
	for i := 0; i < 2; i++ {
		_ = s.Record(ctx, core.AssistantMessage("thinking"))
		v, _ := s.Assemble(ctx)
		if u := v.Usage.Layer("episodic"); u.Update != "" {
			t.Fatalf("round %d changed: %+v", i, u)
		}
	}
	if err := s.Append(ctx, core.UserMessage("and the roses?")); err != nil {
		t.Fatal(err)
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	upd := v.Updates()
	want := "<update layer=\"episodic\" action=\"replace\">\nMore past episodes relevant now (the episodes shown earlier still apply):\n" +
		"[2025-03-01T11:00:00Z] (completed) Request: prune the roses\n  Result: done\n</update>"
	if len(upd) != 1 || !strings.Contains(upd[0].Text(), want) {
		t.Fatalf("updates %v\nwant %s", upd, want)
	}
}

func TestSummarizersAndChildRuns(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	var seen []core.Item
	sum := episodic.SummarizerFunc(func(_ context.Context, items []core.Item) (string, error) {
		seen = items
		for _, it := range items {
			if it.Text() == "fail" {
				return "", errors.New("model unavailable")
			}
			if it.Text() == "quiet" {
				return "   ", nil
			}
		}
		return "A model-written summary\x00 with a NUL.", nil
	})
	rt, _ := newRuntime(t, store, episodic.Options{Summarizer: sum})
	run := core.RunOptions{ThreadID: "t", ResourceID: "user-1"}

	s, _ := rt.Start(ctx, run)
	_ = s.Append(ctx, core.UserMessage("hello"))
	child, err := s.Spawn(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = child.Append(ctx, core.UserMessage("child work"))
	if err := s.Return(ctx, child, nil); err != nil {
		t.Fatal(err)
	}
	if n, _ := store.Records.Count(ctx, vectorstore.Filter{Layer: "episodic"}); n != 0 {
		t.Fatalf("child run stored %d episodes", n)
	}
	if err := s.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0].Text() != "hello" {
		t.Fatalf("summarizer saw %v", seen)
	}
	recs, _, _ := store.Records.List(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Layer: "episodic"}})
	if len(recs) != 1 || recs[0].Text != "A model-written summary with a NUL." {
		t.Fatalf("records %+v", recs)
	}

	// A failing summarizer: no episode, so Complete says the run's
	// episode was not stored (and a diagnostic). An empty summary:
	// nothing to store, no error.
	for _, msg := range []string{"fail", "quiet"} {
		s, _ := rt.Start(ctx, run)
		_ = s.Append(ctx, core.UserMessage(msg))
		err := s.Complete(ctx, "ok")
		if msg == "fail" && !errors.Is(err, core.ErrNotStored) || msg == "quiet" && err != nil {
			t.Fatalf("%s: Complete = %v", msg, err)
		}
		d := s.Diagnostics()
		if msg == "fail" && (len(d) != 1 || d[0].Hook != "onComplete" || !strings.Contains(d[0].Message, "model unavailable")) {
			t.Fatalf("diagnostics %+v", d)
		}
		if msg == "quiet" && len(d) != 0 {
			t.Fatalf("diagnostics %+v", d)
		}
	}
	if n, _ := store.Records.Count(ctx, vectorstore.Filter{Layer: "episodic"}); n != 1 {
		t.Fatalf("%d episodes, want 1", n)
	}
}

func TestSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, dir, clock)
	rt, _ := newRuntime(t, store, episodic.Options{})
	runEpisode(t, rt, core.RunOptions{ThreadID: "t", ResourceID: "user-1"}, "plan the trip to Lisbon", "Booked flights for May 3.")
	if err := store.Records.Close(); err != nil {
		t.Fatal(err)
	}

	reopened := memtest.NewStore(t, dir, clock)
	rt2, _ := newRuntime(t, reopened, episodic.Options{})
	got, _ := episodesBlock(t, rt2, core.RunOptions{ThreadID: "t2", ResourceID: "user-1"}, "")
	want := "<episodes>\n[2025-03-01T09:00:00Z] (completed) Request: plan the trip to Lisbon\n  Result: Booked flights for May 3.\n</episodes>"
	if got != want {
		t.Fatalf("after reopen\n%s\nwant\n%s", got, want)
	}
}

func TestExtractiveSummarizer(t *testing.T) {
	ctx := context.Background()
	var e episodic.ExtractiveSummarizer
	long := strings.Repeat("word ", 100) + "end."
	items := []core.Item{
		core.SystemMessage("You are helpful."),
		core.DeveloperMessage("<episodes>old</episodes>"),
		core.UserMessage("  First\n request  "),
		core.AssistantMessage("working on it"),
		core.FunctionCall("c1", "search", `{"q": "x"}`),
		core.FunctionCallOutput("c1", "results"),
		core.FunctionCall("c2", "fetch", `{}`),
		core.FunctionCall("c3", "search", `{}`),
		core.UserMessage("Second request: " + long),
		core.AssistantMessage("Found it. The answer is 42! More detail follows here. " + long),
	}
	got, err := e.Summarize(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got, "\n")
	if len(lines) != 4 || lines[0] != "Request: First request" || lines[2] != "Tools used: search ×2, fetch" {
		t.Fatalf("summary\n%s", got)
	}
	if !strings.HasPrefix(lines[1], "Last request: Second request: word word") || !strings.HasSuffix(lines[1], " …") ||
		len([]rune(lines[1])) > len("Last request: ")+300+2 {
		t.Fatalf("last request line %q", lines[1])
	}
	if !strings.HasPrefix(lines[3], "Result: Found it. The answer is 42! More detail follows here.") || !strings.HasSuffix(lines[3], " …") {
		t.Fatalf("result line %q", lines[3])
	}
	if again, _ := e.Summarize(ctx, items); again != got {
		t.Fatal("not deterministic")
	}
	// Sentence boundary preferred when one ends in the second half.
	short := episodic.ExtractiveSummarizer{MaxResultChars: 40}
	got, _ = short.Summarize(ctx, []core.Item{core.AssistantMessage("The build is green again. The cause was a stale cache entry in CI.")})
	if got != "Result: The build is green again. …" {
		t.Fatalf("clipped %q", got)
	}
	if got, _ := e.Summarize(ctx, []core.Item{core.DeveloperMessage("only layer output")}); got != "" {
		t.Fatalf("empty log summarised as %q", got)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.Summarize(cctx, items); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	store := memtest.NewStore(t, "", nil)
	memtest.ConfigErrors(t, func(o episodic.Options) error { _, err := episodic.New(store, o); return err }, []memtest.ConfigCase[episodic.Options]{
		{Opts: episodic.Options{Common: memory.Common{Scope: core.ScopeExecution}}, Field: "Scope"},
		{Opts: episodic.Options{MaxEpisodes: -1}, Field: "MaxEpisodes"},
		{Opts: episodic.Options{MaxEpisodes: vectorstore.MaxK + 1}, Field: "MaxEpisodes"},
		{Opts: episodic.Options{MaxSummaryBytes: -1}, Field: "MaxSummaryBytes"},
		// Too short for any words before the " …" of a clipped summary
		// (1 to 3 made the clip panic on completion).
		{Opts: episodic.Options{MaxSummaryBytes: 1}, Field: "MaxSummaryBytes"},
		{Opts: episodic.Options{MaxSummaryBytes: 3}, Field: "MaxSummaryBytes"},
		{Opts: episodic.Options{MaxSummaryBytes: episodic.MinSummaryBytes - 1}, Field: "MaxSummaryBytes"},
		{Opts: episodic.Options{Mode: 7}, Field: "Mode"},
		{Opts: episodic.Options{Common: memory.Common{Budget: core.Range(5, 1)}}, Field: "Budget.Max"},
	})
	if _, err := episodic.New(nil, episodic.Options{}); !errors.Is(err, memory.ErrInvalidStore) {
		t.Errorf("nil store: %v", err)
	}
}

// The smallest MaxSummaryBytes New accepts stores a clipped summary on
// completion (runEpisode fails on a diagnostic, such as a panic).
func TestSmallestMaxSummaryBytesClips(t *testing.T) {
	store := memtest.NewStore(t, "", nil)
	rt, _ := newRuntime(t, store, episodic.Options{MaxSummaryBytes: episodic.MinSummaryBytes})
	runEpisode(t, rt, core.RunOptions{ThreadID: "t1", ResourceID: "u1"}, "fix the flaky parser test", "done: the parser test is stable now")
	recs := memtest.Records(t, store, vectorstore.Filter{Layer: "episodic"})
	if len(recs) != 1 || len(recs[0].Text) > episodic.MinSummaryBytes || !strings.HasSuffix(recs[0].Text, " …") {
		t.Fatalf("records %+v", recs)
	}
}

// With a frozen clock every episode has the same time: they are still
// shown and evicted in the order they were stored, not in the order of
// their (hashed) ids.
func TestFrozenClockKeepsInsertionOrder(t *testing.T) {
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	rt, _ := newRuntime(t, store, episodic.Options{MaxEpisodes: 4})
	run := core.RunOptions{ThreadID: "t", ResourceID: "user-1"}
	var want []string
	for i := 0; i < 9; i++ {
		run.RunID = fmt.Sprint("run-", i)
		runEpisode(t, rt, run, fmt.Sprint("request ", i), "ok")
		want = append(want, fmt.Sprint("Request: request ", i))
	}
	want = want[len(want)-4:]
	run.RunID = ""
	s := memtest.Start(t, rt, run)
	st, _ := core.State[episodic.State](s, "episodic")
	var got []string
	for _, ep := range st.Episodes() {
		got = append(got, strings.SplitN(ep.Summary, "\n", 2)[0])
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("kept, oldest first: %q\nwant %q", got, want)
	}
	block := memtest.Tagged(t, s, "<episodes>")
	if i, j := strings.Index(block, "request 5"), strings.Index(block, "request 8"); i < 0 || j < i {
		t.Fatalf("rendered out of order:\n%s", block)
	}
}
