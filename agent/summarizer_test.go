package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stratamem/strata/agent"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/scripted"
)

func TestModelSummarizer(t *testing.T) {
	ctx := context.Background()
	var got provider.Request
	model := &scripted.Model{Script: func(req provider.Request, call int) ([]core.Item, error) {
		got = req
		return []core.Item{core.AssistantMessage("The user is fixing the parser.")}, nil
	}}
	sum := agent.ModelSummarizer{Model: model}
	out, err := sum.Summarize(ctx, core.SummarizeRequest{Previous: "Earlier: setup.", Budget: 100, Items: []core.Item{
		core.UserMessage("Fix the parser."),
		core.FunctionCall("c1", "read_file", `{"path":"p.go"}`),
		core.FunctionCallOutput("c1", "package p"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "The user is fixing the parser." {
		t.Fatalf("summary %q", out.Text)
	}
	items := got.View.Items()
	if len(items) != 2 || items[0].Role != core.RoleSystem || items[0].Text() != agent.DefaultSummaryInstruction {
		t.Fatalf("request items %+v", items)
	}
	msg := items[1].Text()
	for _, want := range []string{"under 100 tokens", "<previous_summary>\nEarlier: setup.", "user: Fix the parser.", `tool call read_file({"path":"p.go"})`, "tool output: package p"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("transcript lacks %q:\n%s", want, msg)
		}
	}
	if got.MaxOutputTokens != 100 {
		t.Fatalf("MaxOutputTokens %d", got.MaxOutputTokens)
	}
}

func TestModelSummarizerEmpty(t *testing.T) {
	model := &scripted.Model{Script: func(provider.Request, int) ([]core.Item, error) { return nil, nil }}
	_, err := agent.ModelSummarizer{Model: model}.Summarize(context.Background(), core.SummarizeRequest{Budget: 10})
	if !errors.Is(err, agent.ErrEmptySummary) {
		t.Fatalf("err = %v", err)
	}
}

// The model summarizer drives a runtime's compaction: one model call per
// compaction, the summary in the view.
func TestModelSummarizerCompaction(t *testing.T) {
	ctx := context.Background()
	calls := 0
	model := &scripted.Model{Script: func(req provider.Request, call int) ([]core.Item, error) {
		calls++
		return []core.Item{core.AssistantMessage("Summary: the user asked many questions about the parser.")}, nil
	}}
	rt, err := core.NewRuntime(core.Config{System: []core.Item{core.SystemMessage("Be brief.")},
		Compaction: &core.CompactionConfig{Window: 400, Keep: 4, Summarizer: agent.ModelSummarizer{Model: model}}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	var v *core.View
	for n := range 30 {
		_ = s.Append(ctx, core.UserMessage("Another question about the parser and its handling of nested input?"))
		if v, err = s.Assemble(ctx); err != nil {
			t.Fatalf("turn %d: %v", n, err)
		}
		_ = s.Record(ctx, core.AssistantMessage("An answer about guarding the recursion depth."))
	}
	if c := v.Usage.Compaction.Count; c == 0 || c != calls {
		t.Fatalf("%d compactions, %d model calls", c, calls)
	}
	if h := v.Band(core.BandHistory)[0].Text(); !strings.Contains(h, "Summary: the user asked") {
		t.Fatalf("history starts with %q", h)
	}
}
