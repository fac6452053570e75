package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/projector"
)

// countingSummarizer counts its calls and summarises extractively.
type countingSummarizer struct {
	calls int
	fail  bool
}

func (c *countingSummarizer) Summarize(ctx context.Context, req core.SummarizeRequest) (core.Summary, error) {
	c.calls++
	if c.fail {
		return core.Summary{}, errors.New("summarizer called")
	}
	return core.ExtractiveSummarizer{}.Summarize(ctx, req)
}

// anchoredNotes is a pinned layer whose output never changes.
func anchoredNotes() core.Layer[struct{}] {
	return core.Layer[struct{}]{ID: "notes", Slot: 100, Scope: core.ScopeExecution, Placement: core.PlacementAnchor,
		Hooks: core.Hooks[struct{}]{Recall: func(context.Context, core.RecallParams[struct{}]) (core.Recall[struct{}], error) {
			return core.Text[struct{}]("<notes>The user prefers short answers.</notes>")
		}}}
}

func compactionRuntime(t *testing.T, cc *core.CompactionConfig) *core.Runtime {
	t.Helper()
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{anchoredNotes()},
		System: []core.Item{core.SystemMessage("You are a careful assistant.")}, Compaction: cc})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func turnText(n int) (string, string) {
	return fmt.Sprintf("Question %d: how should the parser handle case %d? It fails on nested input of depth %d.", n, n, n),
		fmt.Sprintf("Answer %d: guard the recursion at depth %d. Then add a regression test for case %d.", n, n, n)
}

func canon(t *testing.T, items []core.Item) string {
	t.Helper()
	b, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func stablePrefix(t *testing.T, v *core.View) string {
	return canon(t, append(append([]core.Item(nil), v.Band(core.BandSystem)...), v.Band(core.BandAnchor)...))
}

func events(items []core.Item) int {
	n := 0
	for _, it := range items {
		if it.Type == core.TypeCompaction {
			n++
		}
	}
	return n
}

// A long session: the summarizer is called once per compaction, the
// stable prefix never changes, the log keeps every item and the view
// stays under the threshold.
func TestCompactionLongSession(t *testing.T) {
	ctx := context.Background()
	sum := &countingSummarizer{}
	cc := &core.CompactionConfig{Window: 1500, Threshold: 0.8, Keep: 6, Summarizer: sum}
	rt := compactionRuntime(t, cc)
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var prefix string
	compactions := 0
	conv := 0
	var prevCached []core.Item
	for n := range 60 {
		q, a := turnText(n)
		if err := s.Append(ctx, core.UserMessage(q)); err != nil {
			t.Fatal(err)
		}
		conv++
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatalf("turn %d: %v", n, err)
		}
		if p := stablePrefix(t, v); prefix == "" {
			prefix = p
		} else if p != prefix {
			t.Fatalf("turn %d: stable prefix changed:\n%s\n%s", n, prefix, p)
		}
		u := v.Usage.Compaction
		if u == nil {
			t.Fatal("no compaction usage")
		}
		// Between compactions each request starts with the previous one's
		// cacheable prefix: system, anchor and history.
		cur := v.Items()
		if !u.Compacted && prevCached != nil {
			if len(cur) < len(prevCached) || canon(t, cur[:len(prevCached)]) != canon(t, prevCached) {
				t.Fatalf("turn %d: the previous request's prefix is not kept", n)
			}
		}
		prevCached = append(append(append([]core.Item(nil), v.Band(core.BandSystem)...), v.Band(core.BandAnchor)...), v.Band(core.BandHistory)...)
		if u.Compacted {
			compactions++
			if h := v.Band(core.BandHistory); len(h) == 0 || !strings.HasPrefix(h[0].Text(), "<conversation_summary>") {
				t.Fatalf("turn %d: history does not start with the summary", n)
			}
		}
		if u.Count != compactions || sum.calls != compactions {
			t.Fatalf("turn %d: count %d, calls %d, compactions %d", n, u.Count, sum.calls, compactions)
		}
		if v.Usage.Total > 1500 {
			t.Fatalf("turn %d: view %d tokens over the window", n, v.Usage.Total)
		}
		if got := rt.CountItems(v.Items()); got != v.Usage.Total {
			t.Fatalf("turn %d: reported %d, counted %d", n, v.Usage.Total, got)
		}
		for _, it := range v.Items() {
			if it.Type == core.TypeCompaction {
				t.Fatalf("turn %d: an event item reached the view", n)
			}
		}
		if err := s.Record(ctx, core.AssistantMessage(a)); err != nil {
			t.Fatal(err)
		}
		conv++
	}
	if compactions < 3 {
		t.Fatalf("only %d compactions in 60 turns", compactions)
	}
	if got := len(s.Items()) - events(s.Items()); got != conv || events(s.Items()) != compactions {
		t.Fatalf("log holds %d conversation items (want %d) and %d events (want %d)", got, conv, events(s.Items()), compactions)
	}
}

func TestCompactionTriggersAtThreshold(t *testing.T) {
	ctx := context.Background()
	cc := &core.CompactionConfig{Window: 1000, Threshold: 0.5, Keep: 2}
	rt := compactionRuntime(t, cc)
	s, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
	for n := range 40 {
		q, a := turnText(n)
		_ = s.Append(ctx, core.UserMessage(q))
		// The size the view would have without compaction.
		before := rt.CountItems(s.Items()) + rt.CountItems([]core.Item{core.SystemMessage("You are a careful assistant.")})
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v.Usage.Compaction.Compacted {
			if v.Usage.Compaction.Count != 1 {
				t.Fatal("compaction before the first was expected")
			}
			if last := s.Items()[len(s.Items())-1]; last.Type != core.TypeCompaction || last.Compaction.Through == 0 {
				t.Fatalf("no event logged: %+v", last)
			}
			if v.Usage.Total > 500 {
				t.Fatalf("compacted view is %d tokens", v.Usage.Total)
			}
			return
		}
		if before > 600 { // anchor and overheads aside, well past the threshold
			t.Fatalf("turn %d: %d tokens and no compaction", n, before)
		}
		_ = s.Record(ctx, core.AssistantMessage(a))
	}
	t.Fatal("never compacted")
}

// A new session given the same log, events included, renders the same
// bytes without asking the summarizer.
func TestCompactionResume(t *testing.T) {
	ctx := context.Background()
	cc := &core.CompactionConfig{Window: 700, Keep: 4, Summarizer: &countingSummarizer{}}
	s, _ := compactionRuntime(t, cc).Start(ctx, core.RunOptions{ThreadID: "t"})
	var last *core.View
	for n := range 30 {
		q, a := turnText(n)
		_ = s.Append(ctx, core.UserMessage(q))
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		last = v
		if n < 29 {
			_ = s.Record(ctx, core.AssistantMessage(a))
		}
	}
	want := canon(t, last.Items())
	if last.Usage.Compaction.Count < 2 {
		t.Fatalf("%d compactions", last.Usage.Compaction.Count)
	}
	log := append([]core.Item(nil), s.Items()...)

	never := &countingSummarizer{fail: true}
	rt2 := compactionRuntime(t, &core.CompactionConfig{Window: 700, Keep: 4, Summarizer: never})
	r, _ := rt2.Start(ctx, core.RunOptions{ThreadID: "t2"})
	if err := r.Append(ctx, log...); err != nil {
		t.Fatal(err)
	}
	v, err := r.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := canon(t, v.Items()); got != want {
		t.Fatalf("resumed view differs:\n%s\n%s", got, want)
	}
	if never.calls != 0 {
		t.Fatalf("summarizer called %d times on resume", never.calls)
	}
	// Through RunOptions.History too.
	r3, _ := rt2.Start(ctx, core.RunOptions{ThreadID: "t3", History: log})
	v3, err := r3.Assemble(ctx)
	if err != nil || canon(t, v3.Items()) != want {
		t.Fatalf("resumed from History: %v", err)
	}
}

func TestCompactionStalled(t *testing.T) {
	ctx := context.Background()
	cc := &core.CompactionConfig{Window: 200, Keep: 100}
	s, _ := compactionRuntime(t, cc).Start(ctx, core.RunOptions{ThreadID: "t"})
	var err error
	for n := 0; n < 20 && err == nil; n++ {
		q, a := turnText(n)
		_ = s.Append(ctx, core.UserMessage(q))
		_, err = s.Assemble(ctx)
		_ = s.Record(ctx, core.AssistantMessage(a))
	}
	var ce *core.CompactionError
	if !errors.Is(err, core.ErrCompactionStalled) || !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a stalled *CompactionError", err)
	}
	if ce.Through > ce.Folded || ce.Tokens <= ce.Limit {
		t.Fatalf("error fields: %+v", ce)
	}
}

func TestCompactionThrashing(t *testing.T) {
	ctx := context.Background()
	// A tiny window with a big Keep of long messages: every few turns.
	cc := &core.CompactionConfig{Window: 400, Keep: 2, ThrashTurns: 3}
	s, _ := compactionRuntime(t, cc).Start(ctx, core.RunOptions{ThreadID: "t"})
	for n := range 20 {
		q, a := turnText(n)
		_ = s.Append(ctx, core.UserMessage(q+" "+strings.Repeat("More detail follows. ", 8)))
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		u := v.Usage.Compaction
		if u.Count >= 2 && !u.Thrashing {
			t.Fatalf("turn %d: %d compactions, not thrashing", n, u.Count)
		}
		if u.Thrashing {
			return
		}
		_ = s.Record(ctx, core.AssistantMessage(a))
	}
	t.Fatal("never thrashed")
}

func TestCompactionNoThrashWhenSparse(t *testing.T) {
	ctx := context.Background()
	cc := &core.CompactionConfig{Window: 1500, Keep: 4, ThrashTurns: 2}
	s, _ := compactionRuntime(t, cc).Start(ctx, core.RunOptions{ThreadID: "t"})
	for n := range 40 {
		q, a := turnText(n)
		_ = s.Append(ctx, core.UserMessage(q))
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v.Usage.Compaction.Thrashing {
			t.Fatalf("turn %d: thrashing with compactions far apart", n)
		}
		_ = s.Record(ctx, core.AssistantMessage(a))
	}
}

func TestExtractiveSummarizerDeterministic(t *testing.T) {
	ctx := context.Background()
	req := core.SummarizeRequest{Previous: "user: earlier.", Budget: 60, Items: []core.Item{
		core.UserMessage("Fix the parser. It crashes on deep input."),
		core.FunctionCall("c1", "read_file", `{"path":"p.go"}`),
		core.FunctionCallOutput("c1", "package p ..."),
		core.AssistantMessage("Done! The guard is in place.\nMore text."),
	}}
	a, err := core.ExtractiveSummarizer{}.Summarize(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := "user: earlier.\nuser: Fix the parser.\ntool call: read_file\nassistant: Done!"
	if a.Text != want {
		t.Fatalf("summary %q, want %q", a.Text, want)
	}
	for range 5 {
		b, _ := core.ExtractiveSummarizer{}.Summarize(ctx, req)
		if b != a {
			t.Fatal("not deterministic")
		}
	}
	req.Budget = 8
	c, _ := core.ExtractiveSummarizer{}.Summarize(ctx, req)
	if c.Text != "assistant: Done!" {
		t.Fatalf("cut summary %q", c.Text)
	}
}

func TestCompactionConfigErrors(t *testing.T) {
	for _, cc := range []*core.CompactionConfig{{}, {Window: 10, Threshold: 2}, {Window: 10, SummaryBudget: -1}} {
		var ce *core.ConfigError
		if _, err := core.NewRuntime(core.Config{Compaction: cc}); !errors.As(err, &ce) {
			t.Fatalf("%+v: err = %v", cc, err)
		}
	}
}

// Policy.Summarize (OverflowSummarize) is asked once per folded range,
// not on every assembly, and its summary is counted by the runtime.
func TestOverflowSummarizeCountedOnce(t *testing.T) {
	ctx := context.Background()
	calls := 0
	ranges := map[string]bool{}
	pol := &core.Policy{TokenBudget: 200, Overflow: projector.OverflowSummarize,
		Summarize: func(dropped []projector.Entry[core.Item]) (projector.Entry[core.Item], bool) {
			calls++
			ranges[fmt.Sprint(len(dropped), dropped[len(dropped)-1].Item.Text())] = true
			// A summarizer that leaves the count at zero.
			return projector.Entry[core.Item]{Item: core.DeveloperMessage(fmt.Sprintf(
				"Summary of %d items: %s", len(dropped), strings.Repeat("the user asked about the parser; ", 4)))}, true
		}}
	rt, err := core.NewRuntime(core.Config{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	for n := range 20 {
		q, a := turnText(n)
		_ = s.Append(ctx, core.UserMessage(q))
		for range 2 { // assembling the same state again asks nothing
			v, err := s.Assemble(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := rt.CountItems(v.Items()); got != v.Usage.Total || got > 200 {
				t.Fatalf("turn %d: reported %d, counted %d, budget 200", n, v.Usage.Total, got)
			}
		}
		_ = s.Record(ctx, core.AssistantMessage(a))
	}
	if calls == 0 || calls != len(ranges) {
		t.Fatalf("%d calls for %d folded ranges", calls, len(ranges))
	}
}

// The boundary never separates a function call from its output, even
// with parallel calls and an event logged inside the round trip.
func TestCompactionKeepsRoundTrips(t *testing.T) {
	ctx := context.Background()
	cc := &core.CompactionConfig{Window: 500, Keep: 3}
	s, _ := compactionRuntime(t, cc).Start(ctx, core.RunOptions{ThreadID: "t"})
	for n := range 40 {
		q, a := turnText(n)
		_ = s.Append(ctx, core.UserMessage(q))
		if _, err := s.Assemble(ctx); err != nil {
			t.Fatal(err)
		}
		c1, c2 := fmt.Sprintf("a%d", n), fmt.Sprintf("b%d", n)
		_ = s.Record(ctx, core.FunctionCall(c1, "read", `{}`), core.FunctionCall(c2, "grep", `{}`))
		// Assembling with the calls open may compact inside the round trip.
		if _, err := s.Assemble(ctx); err != nil {
			t.Fatal(err)
		}
		_ = s.Append(ctx, core.FunctionCallOutput(c1, "file contents "+a), core.FunctionCallOutput(c2, "grep hits"))
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		calls := map[string]bool{}
		for _, it := range v.Band(core.BandHistory) {
			switch it.Type {
			case core.TypeFunctionCall:
				calls[it.CallID] = true
			case core.TypeFunctionCallOutput:
				if !calls[it.CallID] {
					t.Fatalf("turn %d: output %s without its call", n, it.CallID)
				}
			}
		}
		_ = s.Record(ctx, core.AssistantMessage(a))
	}
	if u := s.LastUsage().Compaction; u.Count < 2 {
		t.Fatalf("%d compactions", u.Count)
	}
}

// A drifting anchored layer: inline updates inside the folded part end
// the epoch (ReasonHistoryCut, the cache is lost there anyway); updates
// after the boundary stay in place and the view stays valid.
func TestCompactionWithDriftingAnchor(t *testing.T) {
	ctx := context.Background()
	turn := 0
	plan := core.Layer[struct{}]{ID: "plan", Slot: 100, Scope: core.ScopeExecution, Placement: core.PlacementAnchor,
		Hooks: core.Hooks[struct{}]{Recall: func(context.Context, core.RecallParams[struct{}]) (core.Recall[struct{}], error) {
			return core.Text[struct{}](fmt.Sprintf("<plan>step %d</plan>", turn/5))
		}}}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{plan}, System: []core.Item{core.SystemMessage("sys")},
		Compaction: &core.CompactionConfig{Window: 600, Keep: 4}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	reasons := map[core.ReanchorReason]int{}
	for n := range 60 {
		turn = n
		q, a := turnText(n)
		_ = s.Append(ctx, core.UserMessage(q))
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatalf("turn %d: %v", n, err)
		}
		if e := v.Usage.Epoch; e.Reanchored {
			reasons[e.ReanchorReason]++
		}
		for _, it := range v.Items() {
			if it.Type == core.TypeCompaction {
				t.Fatal("event in the view")
			}
		}
		_ = s.Record(ctx, core.AssistantMessage(a))
	}
	if s.LastUsage().Compaction.Count < 2 {
		t.Fatal("no compactions")
	}
	t.Logf("re-anchors: %v, compactions %d", reasons, s.LastUsage().Compaction.Count)
}

// Session.Compact folds the history at the next assembly whatever the
// threshold, once; with nothing to fold it is dropped with a diagnostic,
// and without Config.Compaction it is refused.
func TestSessionCompact(t *testing.T) {
	ctx := context.Background()
	sum := &countingSummarizer{}
	rt := compactionRuntime(t, &core.CompactionConfig{Window: 100000, Keep: 2, Summarizer: sum})
	s, _ := rt.Start(ctx, core.RunOptions{})
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	// Nothing to fold yet: no error, no event, a diagnostic.
	_ = s.Append(ctx, core.UserMessage("hello"))
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatalf("a Compact with nothing to fold failed the turn: %v", err)
	}
	if v.Usage.Compaction.Compacted || sum.calls != 0 || events(s.Items()) != 0 {
		t.Fatalf("compacted with nothing to fold: %+v, %d calls", v.Usage.Compaction, sum.calls)
	}
	found := false
	for _, d := range v.Usage.Diagnostics {
		found = found || strings.Contains(d.Message, "Session.Compact ignored")
	}
	if !found {
		t.Fatalf("no diagnostic for the ignored Compact: %+v", v.Usage.Diagnostics)
	}
	_ = s.Record(ctx, core.AssistantMessage("hi"))
	for n := range 6 {
		q, a := turnText(n)
		_ = s.Append(ctx, core.UserMessage(q))
		if _, err := s.Assemble(ctx); err != nil {
			t.Fatal(err)
		}
		_ = s.Record(ctx, core.AssistantMessage(a))
	}
	if sum.calls != 0 {
		t.Fatalf("the threshold compacted a %d-token window", 100000)
	}
	before := stablePrefix(t, v)
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	_ = s.Append(ctx, core.UserMessage("now, the next task"))
	v, err = s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := v.Usage.Compaction
	if !c.Compacted || c.Count != 1 || sum.calls != 1 || events(s.Items()) != 1 {
		t.Fatalf("Compact did not compact once: %+v, %d summarizer calls", c, sum.calls)
	}
	if got := stablePrefix(t, v); got != before {
		t.Fatal("the stable prefix changed across the compaction")
	}
	// Kept: the 2 newest conversation items, and the summary first.
	if h := v.Band(core.BandHistory); len(h) != 3 || !strings.Contains(h[0].Text(), "Question 0") {
		t.Fatalf("history after Compact: %d items, first %.80q", len(h), h[0].Text())
	}
	_ = s.Record(ctx, core.AssistantMessage("ok"))
	_ = s.Append(ctx, core.UserMessage("and then?"))
	if v, err = s.Assemble(ctx); err != nil || v.Usage.Compaction.Compacted || sum.calls != 1 {
		t.Fatalf("the request outlived its assembly: %v, %+v", err, v.Usage.Compaction)
	}

	off, _ := core.NewRuntime(core.Config{})
	so, _ := off.Start(ctx, core.RunOptions{})
	if err := so.Compact(); !errors.Is(err, core.ErrCompactionOff) {
		t.Fatalf("Compact without Config.Compaction: %v", err)
	}
}

// A view over the threshold that a compaction cannot fold further (the
// kept items alone overflow it) is sent unfolded while it fits the
// window, the same on every assembly of that state, with a diagnostic;
// past the window the assembly fails with the stalled error.
func TestCompactionCannotAdvance(t *testing.T) {
	ctx := context.Background()
	sum := &countingSummarizer{}
	rt := compactionRuntime(t, &core.CompactionConfig{Window: 400, Keep: 2, Summarizer: sum})
	s, _ := rt.Start(ctx, core.RunOptions{})
	_ = s.Append(ctx, core.UserMessage("First question. "+strings.Repeat("word ", 150)))
	if _, err := s.Assemble(ctx); err != nil {
		t.Fatal(err)
	}
	_ = s.Record(ctx, core.AssistantMessage("Short answer."))
	_ = s.Append(ctx, core.UserMessage("Second question. "+strings.Repeat("other ", 170)))
	first, err := s.Assemble(ctx)
	if err != nil {
		t.Fatalf("compacting assembly: %v", err)
	}
	calls := sum.calls
	for range 2 {
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatalf("the same state assembled again: %v", err)
		}
		if canon(t, v.Items()) != canon(t, first.Items()) {
			t.Fatal("the same state rendered other bytes")
		}
		found := false
		for _, d := range v.Usage.Diagnostics {
			found = found || d.Kind == core.KindOverBudget && strings.Contains(d.Message, "cannot fold more")
		}
		if !found {
			t.Fatalf("no diagnostic: %+v", v.Usage.Diagnostics)
		}
	}
	if sum.calls != calls {
		t.Fatalf("the summarizer was asked again (%d calls after %d)", sum.calls, calls)
	}
	_ = s.Append(ctx, core.UserMessage("Third. "+strings.Repeat("more ", 400)))
	if _, err := s.Assemble(ctx); !errors.Is(err, core.ErrCompactionStalled) {
		t.Fatalf("past the window: %v, want ErrCompactionStalled", err)
	}
}

// A Compact whose summarizer fails is still asked for at the retry.
func TestSessionCompactSurvivesFailure(t *testing.T) {
	ctx := context.Background()
	sum := &countingSummarizer{fail: true}
	s, _ := compactionRuntime(t, &core.CompactionConfig{Window: 100000, Keep: 2, Summarizer: sum}).Start(ctx, core.RunOptions{})
	for n := range 4 {
		q, a := turnText(n)
		_ = s.Append(ctx, core.UserMessage(q))
		_ = s.Record(ctx, core.AssistantMessage(a))
	}
	_ = s.Append(ctx, core.UserMessage("and now?"))
	_ = s.Compact()
	if _, err := s.Assemble(ctx); err == nil {
		t.Fatal("a failing summarizer did not fail the assembly")
	}
	sum.fail = false
	v, err := s.Assemble(ctx)
	if err != nil || !v.Usage.Compaction.Compacted {
		t.Fatalf("the retry did not compact: %v", err)
	}
}
