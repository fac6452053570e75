package projector_test

import (
	"fmt"

	"github.com/stratamem/strata/projector"
)

// A view held to a budget: the system prompt and the anchor are claimed
// first, history keeps its newest entries, and a function call never
// loses its output (one Group).
func ExampleAssemble() {
	e := func(text string, tokens int) projector.Entry[string] {
		return projector.Entry[string]{Item: text, Tokens: tokens}
	}
	in := projector.Input[string]{
		System: []projector.Entry[string]{e("system prompt", 40)},
		Anchor: []projector.Entry[string]{e("<facts>", 30)},
		History: []projector.Entry[string]{
			e("user: hello", 20),
			e("assistant: hi", 20),
			{Item: "call lookup", Tokens: 15, Group: "c1", Opens: true},
			{Item: "output of lookup", Tokens: 15, Group: "c1"},
			e("user: thanks", 10),
		},
	}
	view, err := projector.Assemble(in, &projector.Policy[string]{TokenBudget: 150, ResponseReserve: 30})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(view.Items())
	fmt.Println(view.TotalTokens(), "tokens;", view.HistoryDropped, "history entries dropped")
	// Output:
	// [system prompt <facts> call lookup output of lookup user: thanks]
	// 110 tokens; 2 history entries dropped
}

// With OverflowSummarize the dropped history becomes one entry.
func ExamplePolicy_summarize() {
	e := func(text string, tokens int) projector.Entry[string] {
		return projector.Entry[string]{Item: text, Tokens: tokens}
	}
	in := projector.Input[string]{History: []projector.Entry[string]{
		e("user: one", 30), e("assistant: two", 30), e("user: three", 30), e("assistant: four", 30),
	}}
	policy := &projector.Policy[string]{TokenBudget: 80, Overflow: projector.OverflowSummarize,
		Summarize: func(dropped []projector.Entry[string]) (projector.Entry[string], bool) {
			return e(fmt.Sprintf("summary of %d entries", len(dropped)), 10), true
		}}
	view, _ := projector.Assemble(in, policy)
	fmt.Println(view.Items(), view.Summarized)
	// Output: [summary of 2 entries user: three assistant: four] true
}
