package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
)

// DefaultSummaryInstruction is the system prompt ModelSummarizer sends when
// it has none of its own.
const DefaultSummaryInstruction = "You compact a conversation between a user and an assistant. " +
	"Write a concise summary that replaces the earlier summary (if any) and the transcript below: " +
	"what the user wants, decisions made, facts established, tools used and their results, and open questions. " +
	"Write plain text, no preamble."

// ErrEmptySummary is returned by ModelSummarizer when the model wrote no
// text.
var ErrEmptySummary = errors.New("agent: the model wrote no summary")

// ModelSummarizer is a core.Summarizer that asks the host's model, through
// the provider interface, for the summary of a compaction
// (core.CompactionConfig.Summarizer). Each call sends one small request:
// the instruction as the system prompt and one user message holding the
// previous summary and a transcript of the folded items. The runtime
// counts and cuts what it answers; it is called once per compaction.
type ModelSummarizer struct {
	// Model answers. Required.
	Model provider.Model
	// Instruction is the system prompt; "" means
	// DefaultSummaryInstruction.
	Instruction string
	// MaxOutputTokens caps the answer; zero means the request's budget.
	MaxOutputTokens int
	// OutputLimit cuts each tool output in the transcript to this many
	// bytes; zero means 2000, negative leaves them whole.
	OutputLimit int
}

// Summarize implements core.Summarizer.
func (m ModelSummarizer) Summarize(ctx context.Context, req core.SummarizeRequest) (core.Summary, error) {
	if m.Model == nil {
		return core.Summary{}, errors.New("agent: ModelSummarizer needs a Model")
	}
	instruction := m.Instruction
	if instruction == "" {
		instruction = DefaultSummaryInstruction
	}
	rt, err := core.NewRuntime(core.Config{System: []core.Item{core.SystemMessage(instruction)},
		Cache: core.CacheConfig{Disabled: true}})
	if err != nil {
		return core.Summary{}, err
	}
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		return core.Summary{}, err
	}
	defer s.Close(context.WithoutCancel(ctx))
	if err := s.Append(ctx, core.UserMessage(m.transcript(req))); err != nil {
		return core.Summary{}, err
	}
	view, err := s.Assemble(ctx)
	if err != nil {
		return core.Summary{}, err
	}
	maxOut := m.MaxOutputTokens
	if maxOut == 0 {
		maxOut = req.Budget
	}
	resp, err := m.Model.Respond(ctx, provider.Request{View: view, MaxOutputTokens: maxOut})
	if err != nil {
		return core.Summary{}, fmt.Errorf("agent: summarize: %w", err)
	}
	var parts []string
	for _, it := range resp.Items {
		if it.Type == core.TypeMessage && it.Role == core.RoleAssistant {
			if t := strings.TrimSpace(it.Text()); t != "" {
				parts = append(parts, t)
			}
		}
	}
	if len(parts) == 0 {
		return core.Summary{}, ErrEmptySummary
	}
	return core.Summary{Text: strings.Join(parts, "\n")}, nil
}

// transcript renders the request as the user message: budget, previous
// summary, then one block per folded item.
func (m ModelSummarizer) transcript(req core.SummarizeRequest) string {
	limit := m.OutputLimit
	if limit == 0 {
		limit = 2000
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Keep the summary under %d tokens.\n\n", req.Budget)
	if req.Previous != "" {
		b.WriteString("<previous_summary>\n" + req.Previous + "\n</previous_summary>\n\n")
	}
	b.WriteString("<transcript>\n")
	for _, it := range req.Items {
		switch it.Type {
		case core.TypeMessage:
			fmt.Fprintf(&b, "%s: %s\n", it.Role, it.Text())
		case core.TypeFunctionCall:
			fmt.Fprintf(&b, "tool call %s(%s)\n", it.Name, it.Arguments)
		case core.TypeFunctionCallOutput:
			out := it.Output
			if limit > 0 && len(out) > limit {
				out = strings.ToValidUTF8(out[:limit], "") + " [...]"
			}
			fmt.Fprintf(&b, "tool output: %s\n", out)
		}
	}
	b.WriteString("</transcript>")
	return b.String()
}
