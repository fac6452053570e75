package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// RecallHistoryTool is the name of the runtime's own tool that reads the
// run's original log items back: the history a compaction folded into a
// summary and the bodies of outputs tail trimming cleared. It is offered
// whenever Config.Compaction or Config.TailTrim is set (from the first
// assembly, so the stable prefix does not change when the first fold
// happens); a host tool of that name is refused.
const RecallHistoryTool = "recall_history"

// recallHistoryBudget caps one answer of recall_history, in tokens.
const recallHistoryBudget = 8000

var recallHistorySpec = ToolSpec{
	Name: RecallHistoryTool,
	Description: "Read back original items of this conversation that the context no longer shows in full: " +
		"history folded into the conversation summary, or a tool output shown as [tool output cleared] ref=log:N. " +
		"Give the log index range [from, to); for one cleared output, from=N and to=N+1.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"from":{"type":"integer","minimum":0,"description":"first log index"},` +
		`"to":{"type":"integer","minimum":1,"description":"log index after the last one"}},"required":["from","to"],"additionalProperties":false}`),
}

// recallHistory is the recall_history tool.
type recallHistory struct{}

func (recallHistory) Spec() ToolSpec  { return recallHistorySpec }
func (recallHistory) StateID() string { return "" }

func (recallHistory) Execute(_ context.Context, tc ToolContext, arguments string) (string, error) {
	stc, ok := tc.(*sessionToolContext)
	if !ok {
		return "", fmt.Errorf("core: %s runs only inside a session", RecallHistoryTool)
	}
	args, err := DecodeArguments[struct {
		From int `json:"from"`
		To   int `json:"to"`
	}](arguments)
	if err != nil {
		return "", &ArgumentError{Function: RecallHistoryTool, Err: err}
	}
	s := stc.s
	n := len(s.items)
	switch {
	case args.From < 0 || args.To <= args.From:
		return "", &ArgumentError{Function: RecallHistoryTool, Err: fmt.Errorf("the range [%d, %d) is empty or negative", args.From, args.To)}
	case args.From >= n:
		return "", &ArgumentError{Function: RecallHistoryTool, Err: fmt.Errorf("the log has %d items: from %d is past its end", n, args.From)}
	}
	to := min(args.To, n)
	var b strings.Builder
	used := 0
	for i := args.From; i < to; i++ {
		line := recalledLine(i, s.items[i])
		if line == "" {
			continue
		}
		t := s.rt.counter.Count(line)
		if used+t > recallHistoryBudget && used > 0 {
			fmt.Fprintf(&b, "[%d more items not shown: call %s again with from=%d]\n", to-i, RecallHistoryTool, i)
			break
		}
		used += t
		b.WriteString(line)
	}
	return b.String(), nil
}

// recalledLine renders one log item for recall_history; "" for the
// runtime's events.
func recalledLine(i int, it Item) string {
	switch it.Type {
	case TypeMessage:
		return fmt.Sprintf("[log:%d %s] %s\n", i, it.Role, it.Text())
	case TypeFunctionCall:
		return fmt.Sprintf("[log:%d call %s] %s(%s)\n", i, it.CallID, it.Name, it.Arguments)
	case TypeFunctionCallOutput:
		return fmt.Sprintf("[log:%d output %s] %s\n", i, it.CallID, it.Output)
	}
	return ""
}
