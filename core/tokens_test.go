package core_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/tokens"
)

// countingTokenizer counts how often the runtime asks for a count.
type countingTokenizer struct {
	calls atomic.Int64
	tokens.Tokenizer
}

func (c *countingTokenizer) Count(text string) int {
	c.calls.Add(1)
	return c.Tokenizer.Count(text)
}

// A turn's token counting is proportional to what changed: the new items
// and the layer output that changed, not the whole history.
func TestTokenCountingIsIncremental(t *testing.T) {
	ctx := context.Background()
	tk := &countingTokenizer{Tokenizer: tokens.Estimate()}
	static := core.Layer[int]{ID: "static", Scope: core.ScopeExecution, Hooks: core.Hooks[int]{
		Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
			return core.Text[int]("same every turn")
		},
	}}
	var history []core.Item
	for i := 0; i < 1000; i++ {
		history = append(history, core.UserMessage(fmt.Sprint("old message ", i)))
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{static}, Tokenizer: tk,
		Policy: &core.Policy{TokenBudget: 1 << 20, ResponseReserve: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{History: history})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Assemble(ctx); err != nil {
		t.Fatal(err)
	}
	for turn := 0; turn < 20; turn++ {
		before := tk.calls.Load()
		_ = s.Append(ctx, core.UserMessage(fmt.Sprint("new question ", turn)))
		if _, err := s.Assemble(ctx); err != nil {
			t.Fatal(err)
		}
		_ = s.Record(ctx, core.AssistantMessage(fmt.Sprint("new answer ", turn)))
		// Two new items; the static layer's output is memoised; the
		// context-updates message (none here) would be one more.
		if got := tk.calls.Load() - before; got > 2 {
			t.Fatalf("turn %d counted %d texts with a log of %d items", turn, got, len(s.Items()))
		}
	}
}
