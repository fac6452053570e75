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

// hugeQuestion is a user message of about words*2 estimated tokens whose
// head and tail say where they are.
func hugeQuestion(words int) string {
	return "HEAD: please read this log. " + strings.Repeat("lorem ipsum ", words) + "TAIL: why does it fail?"
}

func oversizeRuntime(t *testing.T, budget int) *core.Runtime {
	t.Helper()
	rt, err := core.NewRuntime(core.Config{
		System: []core.Item{core.SystemMessage("You are a careful assistant.")},
		Policy: &core.Policy{TokenBudget: budget, ResponseReserve: 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// A user message larger than the view's budget used to vanish from the
// view: the model was called with the system prompt alone. It is now cut
// to fit, head and tail kept around a visible marker, with a diagnostic
// and a usage report; the log keeps it whole.
func TestOversizeQuestionIsCutVisibly(t *testing.T) {
	ctx := context.Background()
	rt := oversizeRuntime(t, 1000)
	s, _ := rt.Start(ctx, core.RunOptions{})
	question := hugeQuestion(20000)
	if err := s.Append(ctx, core.UserMessage("an earlier question"), core.AssistantMessage("an earlier answer"),
		core.UserMessage(question)); err != nil {
		t.Fatal(err)
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := v.Band(core.BandHistory)
	if len(h) != 1 || h[0].Role != core.RoleUser {
		t.Fatalf("history band %+v, want the newest user message alone", h)
	}
	text := h[0].Text()
	if !strings.HasPrefix(text, "HEAD: please read this log.") || !strings.HasSuffix(text, "TAIL: why does it fail?") {
		t.Fatalf("cut message lost its head or tail: %.80q ... %.80q", text, text[max(0, len(text)-80):])
	}
	if !strings.Contains(text, "tokens cut: the message was longer than the context budget]") {
		t.Fatalf("no visible marker in the cut message")
	}
	if v.Usage.Total > 900 {
		t.Fatalf("view of %d tokens over the available 900", v.Usage.Total)
	}
	whole := rt.CountItems([]core.Item{core.UserMessage(question)})
	u := v.Usage
	if u.UserMessageCut == nil || u.UserMessageCut.Tokens != whole || u.UserMessageCut.Shown != v.Usage.BandTokens[core.BandHistory] {
		t.Fatalf("usage cut report %+v, want {%d %d}", u.UserMessageCut, whole, v.Usage.BandTokens[core.BandHistory])
	}
	// The marker names how much was cut (counts of parts are not exactly
	// additive: allow a few tokens).
	var n int
	if _, err := fmt.Sscanf(markerOf(text), "\n[… %d tokens cut:", &n); err != nil {
		t.Fatalf("marker %q: %v", markerOf(text), err)
	}
	if shown := rt.Tokenizer().Count(text) - rt.Tokenizer().Count(markerOf(text)); n < whole-shown-core.ItemOverhead-5 || n > whole-shown {
		t.Fatalf("marker says %d tokens cut of %d, %d shown", n, whole, shown)
	}
	var diag *core.Diagnostic
	for i, d := range u.Diagnostics {
		if d.Kind == core.KindOverBudget {
			diag = &u.Diagnostics[i]
		}
	}
	if diag == nil || !strings.Contains(diag.Message, "newest user message") {
		t.Fatalf("no over-budget diagnostic: %+v", u.Diagnostics)
	}
	if u.HistoryItems != 1 || u.HistoryDropped != 2 {
		t.Fatalf("history items %d dropped %d", u.HistoryItems, u.HistoryDropped)
	}
	if items := s.Items(); items[len(items)-1].Text() != question {
		t.Fatal("the log lost the whole message")
	}

	// The same state renders the same bytes.
	first, _ := json.Marshal(v.Items())
	again, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := json.Marshal(again.Items())
	s2, _ := oversizeRuntime(t, 1000).Start(ctx, core.RunOptions{})
	_ = s2.Append(ctx, core.UserMessage("an earlier question"), core.AssistantMessage("an earlier answer"), core.UserMessage(question))
	v2, _ := s2.Assemble(ctx)
	other, _ := json.Marshal(v2.Items())
	if string(first) != string(second) || string(first) != string(other) {
		t.Fatal("the cut is not deterministic")
	}
}

// markerOf returns the marker of a cut message.
func markerOf(text string) string {
	i := strings.Index(text, "\n[… ")
	j := strings.Index(text, "budget]\n")
	if i < 0 || j < i {
		return ""
	}
	return text[i : j+len("budget]\n")]
}

// During a tool loop, the items after the question can fill the budget by
// themselves: the question used to be the first thing dropped. It keeps
// its place at the front of the history (cut to at most half of the
// history's room) and the newest items fill the rest.
func TestQuestionSurvivesALongToolLoop(t *testing.T) {
	ctx := context.Background()
	rt := oversizeRuntime(t, 1000)
	s, _ := rt.Start(ctx, core.RunOptions{})
	if err := s.Append(ctx, core.UserMessage("find the failing test")); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		id := fmt.Sprintf("c%d", i)
		if err := s.Record(ctx, core.FunctionCall(id, "grep", `{"q":"x"}`)); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, core.FunctionCallOutput(id, strings.Repeat(fmt.Sprintf("match %d ", i), 40))); err != nil {
			t.Fatal(err)
		}
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := v.Band(core.BandHistory)
	if len(h) < 3 || h[0].Text() != "find the failing test" {
		t.Fatalf("history starts with %q, want the question", h[0].Text())
	}
	last := h[len(h)-1]
	if last.CallID != "c19" || last.Type != core.TypeFunctionCallOutput {
		t.Fatalf("newest item %+v not kept", last)
	}
	// No output without its call.
	calls := map[string]bool{}
	for _, it := range h[1:] {
		switch it.Type {
		case core.TypeFunctionCall:
			calls[it.CallID] = true
		case core.TypeFunctionCallOutput:
			if !calls[it.CallID] {
				t.Fatalf("output %s without its call", it.CallID)
			}
		}
	}
	if v.Usage.Total > 900 || v.Usage.UserMessageCut != nil {
		t.Fatalf("tokens %d, cut %+v", v.Usage.Total, v.Usage.UserMessageCut)
	}
}

// When the budget cannot hold even the marker of a cut message, Assemble
// fails with a typed error naming the sizes instead of sending a view
// without the question.
func TestQuestionThatCannotBeShownIsAnError(t *testing.T) {
	ctx := context.Background()
	rt, err := core.NewRuntime(core.Config{
		// 186+3 of the 200 available tokens: 11 left, less than a marker.
		System: []core.Item{core.SystemMessage(strings.Repeat("abcd", 186))},
		Policy: &core.Policy{TokenBudget: 300, ResponseReserve: 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	if err := s.Append(ctx, core.UserMessage(hugeQuestion(2000))); err != nil {
		t.Fatal(err)
	}
	v, err := s.Assemble(ctx)
	var be *projector.BudgetError
	if !errors.Is(err, projector.ErrOverBudget) || !errors.As(err, &be) || v != nil {
		t.Fatalf("Assemble: %v %v, want a *BudgetError", v, err)
	}
	if be.Tokens != rt.CountItems([]core.Item{core.UserMessage(hugeQuestion(2000))}) || be.Room != 11 || be.Share != 11 || be.Available != 200 {
		t.Fatalf("BudgetError %+v", be)
	}
}
