package core_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
)

// recall_history reads back the original items of a range a compaction
// folded: every message, call and tool output before the boundary, whole
// and under its log index, including the tool output bodies the summary
// leaves out and the view no longer shows.
func TestAuditRecallHistoryReadsFoldedRange(t *testing.T) {
	ctx := context.Background()
	rt := compactionRuntime(t, &core.CompactionConfig{Window: 900, Keep: 4})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var v *core.View
	for n := 0; n < 60; n++ {
		q, a := turnText(n)
		if err := s.Append(ctx, core.UserMessage(q)); err != nil {
			t.Fatal(err)
		}
		if n%3 == 0 {
			id := fmt.Sprintf("c%d", n)
			if err := s.Record(ctx, core.FunctionCall(id, "read", fmt.Sprintf(`{"path":"f%d.go"}`, n))); err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, core.FunctionCallOutput(id, fmt.Sprintf("package f%d // body of file %d: func F%d() {}", n, n, n))); err != nil {
				t.Fatal(err)
			}
		}
		if v, err = s.Assemble(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Record(ctx, core.AssistantMessage(a)); err != nil {
			t.Fatal(err)
		}
		if v.Usage.Compaction.Folded >= 12 {
			break
		}
	}
	folded := v.Usage.Compaction.Folded
	if folded < 12 {
		t.Fatalf("folded through %d only", folded)
	}
	view := canon(t, v.Items())
	out, err := s.ExecuteTool(ctx, core.FunctionCall("r1", core.RecallHistoryTool, fmt.Sprintf(`{"from":0,"to":%d}`, folded)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(out.Output, "error:") {
		t.Fatalf("recall_history failed: %s", out.Output)
	}
	items := s.Items()
	outputs := 0
	for i, it := range items[:folded] {
		var want string
		switch it.Type {
		case core.TypeMessage:
			want = it.Text()
		case core.TypeFunctionCall:
			want = it.Name + "(" + it.Arguments + ")"
		case core.TypeFunctionCallOutput:
			want = it.Output
			outputs++
			if strings.Contains(view, it.Output) {
				t.Fatalf("the folded output log:%d is still in the view", i)
			}
		default:
			continue
		}
		line := fmt.Sprintf("[log:%d ", i)
		at := strings.Index(out.Output, line)
		if at < 0 {
			t.Fatalf("recall_history does not show log:%d (%s): %.300q", i, it.Type, out.Output)
		}
		rest := out.Output[at:]
		if end := strings.IndexByte(rest, '\n'); end >= 0 {
			rest = rest[:end]
		}
		if !strings.Contains(rest, want) {
			t.Fatalf("log:%d recalled as %q, want it to hold %q", i, rest, want)
		}
	}
	if outputs == 0 {
		t.Fatal("no tool output was folded: the test does not show outputs come back")
	}
	// Past the boundary nothing is read back.
	if strings.Contains(out.Output, fmt.Sprintf("[log:%d ", folded)) {
		t.Fatalf("recall_history read past the range end %d", folded)
	}
}
