package projector_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stratamem/strata/projector"
)

type item struct {
	name string
}

func e(name string, tokens int) projector.Entry[item] {
	return projector.Entry[item]{Item: item{name}, Tokens: tokens}
}

func call(id string, tokens int) projector.Entry[item] {
	return projector.Entry[item]{Item: item{"call-" + id}, Tokens: tokens, Group: id, Opens: true}
}

func output(id string, tokens int) projector.Entry[item] {
	return projector.Entry[item]{Item: item{"out-" + id}, Tokens: tokens, Group: id}
}

func names(v projector.View[item]) string {
	s := ""
	for i, it := range v.Items() {
		if i > 0 {
			s += " "
		}
		s += it.name
	}
	return s
}

func TestNoPolicyConcatenatesBands(t *testing.T) {
	in := projector.Input[item]{
		System: []projector.Entry[item]{e("sys", 1)}, Anchor: []projector.Entry[item]{e("a", 1)},
		History: []projector.Entry[item]{e("h1", 1), e("h2", 1)}, Live: []projector.Entry[item]{e("l", 1)},
		Updates: []projector.Entry[item]{e("u", 1)}, Tail: []projector.Entry[item]{e("t", 1)},
	}
	v, err := projector.Assemble(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(v); got != "sys a h1 h2 l u t" {
		t.Fatalf("view = %q", got)
	}
	if len(v.Band(projector.BandHistory)) != 2 || v.Tokens[projector.BandHistory] != 2 || v.TotalTokens() != 7 {
		t.Fatalf("bands = %+v %+v", v.Bands, v.Tokens)
	}
}

func TestPolicyKeepsRecentHistoryAndPairs(t *testing.T) {
	in := projector.Input[item]{
		System: []projector.Entry[item]{e("sys", 10)},
		History: []projector.Entry[item]{
			e("u1", 10), call("c1", 10), output("c1", 10), e("u2", 10), call("c2", 10), output("c2", 10), e("u3", 10),
		},
	}
	// 10 system + room for 35 of history: u3, out-c2, call-c2 fit (30),
	// u2 does not fit after them (40 > 35).
	p := &projector.Policy[item]{TokenBudget: 50, ResponseReserve: 5}
	v, err := projector.Assemble(in, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(v); got != "sys call-c2 out-c2 u3" {
		t.Fatalf("view = %q", got)
	}
	// A budget that cuts between call-c2 and out-c2 drops the orphan output.
	p.TokenBudget = 35
	v, _ = projector.Assemble(in, p)
	if got := names(v); got != "sys u3" {
		t.Fatalf("view = %q, want the orphaned output dropped", got)
	}
	if v.HistoryDropped != 6 {
		t.Fatalf("dropped = %d", v.HistoryDropped)
	}
}

func TestClaimOrderAndUpdatesAllOrNothing(t *testing.T) {
	in := projector.Input[item]{
		System:  []projector.Entry[item]{e("sys", 10)},
		Anchor:  []projector.Entry[item]{e("a", 10)},
		History: []projector.Entry[item]{e("h", 10)},
		Live:    []projector.Entry[item]{e("l", 10)},
		Updates: []projector.Entry[item]{e("u1", 10), e("u2", 10)},
		Tail:    []projector.Entry[item]{e("t", 10)},
	}
	v, _ := projector.Assemble(in, &projector.Policy[item]{TokenBudget: 55})
	if got := names(v); got != "sys a h l t" || !v.UpdatesDropped {
		t.Fatalf("view = %q updatesDropped=%v", got, v.UpdatesDropped)
	}
	v, _ = projector.Assemble(in, &projector.Policy[item]{TokenBudget: 60})
	if got := names(v); got != "sys a l u1 u2 t" {
		t.Fatalf("view = %q", got)
	}
	if _, err := projector.Assemble(in, &projector.Policy[item]{TokenBudget: 5}); !errors.Is(err, projector.ErrSystemOverBudget) {
		t.Fatalf("err = %v", err)
	}
}

func TestSlidingWindowAndSummarize(t *testing.T) {
	var hist []projector.Entry[item]
	for i := 0; i < 10; i++ {
		hist = append(hist, e(fmt.Sprintf("h%d", i), 1))
	}
	v, _ := projector.Assemble(projector.Input[item]{History: hist},
		&projector.Policy[item]{TokenBudget: 100, Overflow: projector.OverflowSlidingWindow, WindowSize: 3})
	if got := names(v); got != "h7 h8 h9" {
		t.Fatalf("window = %q", got)
	}
	var dropped int
	p := &projector.Policy[item]{TokenBudget: 5, Overflow: projector.OverflowSummarize,
		Summarize: func(d []projector.Entry[item]) (projector.Entry[item], bool) {
			dropped = len(d)
			return e("summary", 2), true
		}}
	v, _ = projector.Assemble(projector.Input[item]{History: hist}, p)
	if got := names(v); got != "summary h7 h8 h9" || !v.Summarized || dropped != 5 {
		t.Fatalf("summarized = %q (dropped %d)", got, dropped)
	}
}

func TestPolicyValidate(t *testing.T) {
	cases := map[string]projector.Policy[item]{
		"TokenBudget":     {TokenBudget: 0},
		"ResponseReserve": {TokenBudget: 10, ResponseReserve: 10},
		"WindowSize":      {TokenBudget: 10, Overflow: projector.OverflowSlidingWindow},
		"Summarize":       {TokenBudget: 10, Overflow: projector.OverflowSummarize},
		"Overflow":        {TokenBudget: 10, Overflow: "compress"},
	}
	for field, p := range cases {
		var pe *projector.PolicyError
		if err := p.Validate(); !errors.As(err, &pe) || pe.Field != field || !errors.Is(err, projector.ErrInvalidPolicy) {
			t.Errorf("%s: err = %v", field, err)
		}
	}
}

// FuzzAssemble checks the projector's invariants on random inputs: the
// view never exceeds the budget, no output survives without its call, and
// the kept history is the most recent part of the input.
func FuzzAssemble(f *testing.F) {
	f.Add([]byte{3, 5, 1, 9, 200, 4, 7, 2}, uint16(40), uint8(0))
	f.Add([]byte{1, 1, 1, 1, 1, 1}, uint16(3), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, mode uint8) {
		if len(data) == 0 {
			return
		}
		var hist []projector.Entry[item]
		open := ""
		for i, b := range data {
			tokens := int(b%17) + 1
			switch {
			case b%5 == 0:
				open = fmt.Sprint(i)
				hist = append(hist, call(open, tokens))
			case b%5 == 1 && open != "":
				hist = append(hist, output(open, tokens))
			default:
				hist = append(hist, e(fmt.Sprint("h", i), tokens))
			}
		}
		in := projector.Input[item]{
			System: []projector.Entry[item]{e("sys", 2)}, Anchor: []projector.Entry[item]{e("a", int(data[0]%7))},
			History: hist, Live: []projector.Entry[item]{e("l", 3)}, Updates: []projector.Entry[item]{e("u", 4)},
			Tail: []projector.Entry[item]{e("t", 1)},
		}
		p := &projector.Policy[item]{TokenBudget: int(budget) + 3, ResponseReserve: 1}
		if mode%2 == 1 {
			p.Overflow, p.WindowSize = projector.OverflowSlidingWindow, int(mode)
		}
		v, err := projector.Assemble(in, p)
		if err != nil {
			return
		}
		if v.TotalTokens() > p.Available() {
			t.Fatalf("view %d tokens over budget %d", v.TotalTokens(), p.Available())
		}
		seenCalls := map[string]bool{}
		kept := v.Band(projector.BandHistory)
		for _, en := range kept {
			if en.Opens {
				seenCalls[en.Group] = true
			} else if en.Group != "" && !seenCalls[en.Group] {
				t.Fatalf("output %s without its call", en.Item.name)
			}
		}
		// Kept history is the input from HistoryFrom on, minus orphans:
		// the last input entry that is not an orphan output is kept.
		if len(kept) > 0 {
			if last := kept[len(kept)-1]; last.Item != hist[len(hist)-1].Item && !(hist[len(hist)-1].Group != "" && !hist[len(hist)-1].Opens) {
				t.Fatalf("most recent history item %v not kept (last kept %v)", hist[len(hist)-1].Item, last.Item)
			}
		}
		if v.HistoryFrom > 0 && len(kept) > 0 && kept[0].Item == hist[0].Item {
			t.Fatalf("history kept its front although it was cut at %d", v.HistoryFrom)
		}
	})
}

func TestTruncateStepHoldsTheFront(t *testing.T) {
	var hist []projector.Entry[item]
	fronts := map[int]bool{}
	moves, prev := 0, -1
	for i := 0; i < 200; i++ {
		hist = append(hist, e(fmt.Sprint("h", i), 10))
		v, err := projector.Assemble(projector.Input[item]{History: hist}, &projector.Policy[item]{TokenBudget: 500, TruncateStep: 200})
		if err != nil {
			t.Fatal(err)
		}
		if v.TotalTokens() > 500 {
			t.Fatalf("over budget: %d", v.TotalTokens())
		}
		if v.HistoryFrom != prev {
			moves++
			prev = v.HistoryFrom
		}
		fronts[v.HistoryFrom] = true
	}
	// 2000 tokens of history through a 500-token window cut in steps of
	// 200: the front moves about 2000/200 times, not 150 times.
	if moves > 12 {
		t.Fatalf("front moved %d times", moves)
	}
}
