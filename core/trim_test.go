package core_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/toolcalls"
)

// toolTurn appends one user question, the model's call and a large output.
func toolTurn(t *testing.T, s *core.Session, n int, outTokens int) {
	t.Helper()
	ctx := context.Background()
	id := fmt.Sprintf("c%d", n)
	if err := s.Append(ctx, core.UserMessage(fmt.Sprintf("step %d: read the next file", n))); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, core.FunctionCall(id, "read", fmt.Sprintf(`{"path":"f%d.go"}`, n))); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat(fmt.Sprintf("line of file %d ", n), outTokens/4)
	if err := s.Append(ctx, core.FunctionCallOutput(id, body)); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, core.AssistantMessage(fmt.Sprintf("File %d read.", n))); err != nil {
		t.Fatal(err)
	}
}

func clearedIn(items []core.Item) int {
	n := 0
	for _, it := range items {
		if it.Type == core.TypeFunctionCallOutput && strings.HasPrefix(it.Output, core.ClearedMarker) {
			n++
		}
	}
	return n
}

// Below the threshold nothing is cleared; near the window old outputs
// become markers that keep their call ids, the newest stay whole, the
// cleared set changes only in steps, and recall_history reads a cleared
// body back.
func TestTailTrimReliefValve(t *testing.T) {
	ctx := context.Background()
	rt := residentRuntime(t, core.Config{TailTrim: &core.TailTrimConfig{Window: 8000, Threshold: 0.7, Horizon: 1600}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var prev *core.View
	changes, assemblies, firstCleared := 0, 0, -1
	for n := 0; n < 40; n++ {
		toolTurn(t, s, n, 400)
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		h := v.Band(core.BandHistory)
		cleared := clearedIn(h)
		uncleared := v.Usage.Total
		for _, c := range v.Usage.Cleared {
			uncleared += c.Tokens
		}
		if cleared > 0 && uncleared <= 5600 {
			t.Fatalf("turn %d: %d outputs cleared, the view would be %d tokens without: under the threshold", n, cleared, uncleared)
		}
		if cleared != len(v.Usage.Cleared) {
			t.Fatalf("turn %d: %d markers, usage reports %d", n, cleared, len(v.Usage.Cleared))
		}
		if cleared > 0 && firstCleared < 0 {
			firstCleared = n
		}
		// Every output keeps its call, in order; the newest is whole.
		calls := map[string]bool{}
		for _, it := range h {
			switch it.Type {
			case core.TypeFunctionCall:
				calls[it.CallID] = true
			case core.TypeFunctionCallOutput:
				if !calls[it.CallID] {
					t.Fatalf("turn %d: output %s without its call", n, it.CallID)
				}
			}
		}
		if last := h[len(h)-2]; last.Type != core.TypeFunctionCallOutput || strings.HasPrefix(last.Output, core.ClearedMarker) {
			t.Fatalf("turn %d: the newest output is cleared or missing: %+v", n, last)
		}
		if prev != nil && cleared > 0 {
			assemblies++
			if clearedIn(prev.Band(core.BandHistory)) != cleared {
				changes++
			}
		}
		prev = v
	}
	if firstCleared < 0 {
		t.Fatal("nothing was ever cleared")
	}
	if changes*2 > assemblies {
		t.Fatalf("the cleared set changed on %d of %d assemblies: trimming must move in steps", changes, assemblies)
	}
	// The reference reads the body back.
	ref := prev.Usage.Cleared[0]
	var idx int
	if _, err := fmt.Sscanf(ref.Ref, "log:%d", &idx); err != nil {
		t.Fatal(err)
	}
	out, err := s.ExecuteTool(ctx, core.FunctionCall("r1", core.RecallHistoryTool, fmt.Sprintf(`{"from":%d,"to":%d}`, idx, idx+1)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Output, s.Items()[idx].Output[:40]) || !strings.Contains(out.Output, ref.CallID) {
		t.Fatalf("recall_history answered %q", out.Output[:min(200, len(out.Output))])
	}
	bad, _ := s.ExecuteTool(ctx, core.FunctionCall("r2", core.RecallHistoryTool, `{"from":5,"to":2}`))
	if !strings.HasPrefix(bad.Output, "error:") {
		t.Fatalf("an empty range answered %q", bad.Output)
	}
}

// The window is required; a host tool cannot take recall_history's name
// while the runtime offers its own (Compaction or TailTrim on).
func TestTailTrimConfig(t *testing.T) {
	_, err := core.NewRuntime(core.Config{TailTrim: &core.TailTrimConfig{}})
	var ce *core.ConfigError
	if !errors.As(err, &ce) || ce.Field != "TailTrim.Window" {
		t.Fatalf("no window: %v", err)
	}
	_, err = core.NewRuntime(core.Config{TailTrim: &core.TailTrimConfig{Window: 100, Threshold: 2}})
	if !errors.As(err, &ce) || ce.Field != "TailTrim.Threshold" {
		t.Fatalf("threshold 2: %v", err)
	}
	rt, err := core.NewRuntime(core.Config{Compaction: &core.CompactionConfig{Window: 1000}, TailTrim: &core.TailTrimConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(context.Background(), core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ts := range s.Tools() {
		found = found || ts.Name == core.RecallHistoryTool
	}
	if !found {
		t.Fatal("recall_history is not offered with compaction on")
	}
	// A host tool named recall_history is refused while the runtime
	// offers its own, and is the host's own tool otherwise.
	host := toolcalls.MustTool(toolcalls.ToolDef[struct{}, string]{Name: core.RecallHistoryTool,
		Execute: func(context.Context, struct{}, core.ToolContext) (string, error) { return "host", nil }})
	for name, cfg := range map[string]core.Config{
		"compaction": {Compaction: &core.CompactionConfig{Window: 1000}, Tools: []core.Tool{host}},
		"tail trim":  {TailTrim: &core.TailTrimConfig{Window: 1000}, Tools: []core.Tool{host}},
	} {
		_, err := core.NewRuntime(cfg)
		if !errors.As(err, &ce) || ce.Code != core.CodeDuplicateFunction {
			t.Fatalf("%s with a host recall_history: %v, want a %s ConfigError", name, err, core.CodeDuplicateFunction)
		}
	}
	if _, err := core.NewRuntime(core.Config{Tools: []core.Tool{host}}); err != nil {
		t.Fatalf("a host recall_history without Compaction or TailTrim: %v", err)
	}
}
