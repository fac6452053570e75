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
	// Layer entries that do not fit are left out by index; a later,
	// smaller one still fits.
	in2 := in
	in2.Anchor = []projector.Entry[item]{e("a1", 10), e("a2", 30), e("a3", 5)}
	in2.Live = []projector.Entry[item]{e("l1", 20), e("l2", 5)}
	v, _ = projector.Assemble(in2, &projector.Policy[item]{TokenBudget: 45})
	if got := names(v); got != "sys a1 a3 l2 t" || fmt.Sprint(v.AnchorDropped, v.LiveDropped) != "[1] [0]" || v.LayerDropped != 2 {
		t.Fatalf("view = %q dropped %v %v (%d)", got, v.AnchorDropped, v.LiveDropped, v.LayerDropped)
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
	// The summary takes room: the cut moves to h7 and the summary covers
	// exactly h0..h6, the entries the view leaves out.
	if got := names(v); got != "summary h7 h8 h9" || !v.Summarized || dropped != 7 {
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
	f.Add([]byte("00"), uint16(30), uint8('#')) // a summary must not swallow the newest entry
	f.Add([]byte("0"), uint16(13), uint8('S'))  // a summary alone when nothing fits
	f.Add([]byte{200, 12}, uint16(120), uint8(2))
	f.Add([]byte("28800"), uint16(40), uint8('['))
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
				// Unique names: a call may get several outputs.
				hist = append(hist, projector.Entry[item]{Item: item{fmt.Sprint("out-", open, "-", i)}, Tokens: tokens, Group: open})
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
		var summarized []string
		switch mode % 4 {
		case 1:
			p.Overflow, p.WindowSize = projector.OverflowSlidingWindow, int(mode/4)+1
		case 2:
			p.TruncateStep = int(mode/4)*3 + 1
		case 3:
			p.Overflow = projector.OverflowSummarize
			p.Summarize = func(d []projector.Entry[item]) (projector.Entry[item], bool) {
				summarized = summarized[:0]
				for _, en := range d {
					summarized = append(summarized, en.Item.name)
				}
				return e("summary", int(mode/4)%20+len(d)%7), mode%8 != 7
			}
		}
		v, err := projector.Assemble(in, p)
		if err != nil {
			return
		}
		// The newest entry survives whenever it fits what history got
		// (an output needs its call, so only plain entries are checked).
		histBudget := p.Available() - (v.TotalTokens() - v.Tokens[projector.BandHistory])
		if last := hist[len(hist)-1]; last.Group == "" && last.Tokens <= histBudget {
			kept := v.Band(projector.BandHistory)
			if len(kept) == 0 || kept[len(kept)-1].Item != last.Item {
				t.Fatalf("newest entry %v (%d tokens, history budget %d) not kept: %v", last.Item, last.Tokens, histBudget, kept)
			}
		}
		// A summary covers exactly what the view leaves out.
		if v.Summarized {
			seen := map[string]int{}
			for _, n := range summarized {
				seen[n]++
			}
			for _, en := range v.Band(projector.BandHistory)[1:] {
				seen[en.Item.name]++
			}
			for _, en := range hist {
				if seen[en.Item.name] != 1 {
					t.Fatalf("%s summarized or shown %d times (summary of %v, view %q)", en.Item.name, seen[en.Item.name], summarized, names(v))
				}
			}
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
		if v.Summarized {
			kept = kept[1:]
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

// A summary covers exactly the entries the view leaves out: none is both
// unsummarized and hidden, however the cut moves to make room for it.
func TestSummarizeCoversExactlyTheDroppedPrefix(t *testing.T) {
	hist := make([]projector.Entry[item], 10)
	for i := range hist {
		hist[i] = e(fmt.Sprint("h", i), 10)
	}
	var got []string
	size := 20
	p := &projector.Policy[item]{TokenBudget: 50, Overflow: projector.OverflowSummarize,
		Summarize: func(d []projector.Entry[item]) (projector.Entry[item], bool) {
			got = got[:0]
			for _, en := range d {
				got = append(got, en.Item.name)
			}
			return e("summary", size), true
		}}
	v, err := projector.Assemble(projector.Input[item]{History: hist}, p)
	if err != nil {
		t.Fatal(err)
	}
	if names(v) != "summary h7 h8 h9" || fmt.Sprint(got) != "[h0 h1 h2 h3 h4 h5 h6]" || v.HistoryFrom != 7 || v.HistoryDropped != 7 {
		t.Fatalf("view %q from %d dropped %d, summary of %v", names(v), v.HistoryFrom, v.HistoryDropped, got)
	}
	// A summary larger than the whole budget: plain truncation instead of
	// an empty history.
	size = 60
	v, _ = projector.Assemble(projector.Input[item]{History: hist}, p)
	if names(v) != "h5 h6 h7 h8 h9" || v.Summarized {
		t.Fatalf("oversized summary: view %q summarized=%v", names(v), v.Summarized)
	}
	// A summary that grows with what it covers never fits: truncation.
	grow := &projector.Policy[item]{TokenBudget: 50, Overflow: projector.OverflowSummarize,
		Summarize: func(d []projector.Entry[item]) (projector.Entry[item], bool) {
			return e("summary", 6*len(d)), true
		}}
	v, _ = projector.Assemble(projector.Input[item]{History: hist}, grow)
	if names(v) != "h5 h6 h7 h8 h9" || v.Summarized || v.TotalTokens() > 50 {
		t.Fatalf("growing summary: view %q summarized=%v", names(v), v.Summarized)
	}
	// A cut between a call and its output drops the output with its call:
	// the summary covers it too, so nothing is hidden unsummarized.
	paired := []projector.Entry[item]{e("u1", 10), call("c1", 10), output("c1", 10), e("u2", 10), e("u3", 10)}
	size = 5
	v, _ = projector.Assemble(projector.Input[item]{History: paired}, &projector.Policy[item]{TokenBudget: 35,
		Overflow: projector.OverflowSummarize, Summarize: p.Summarize})
	if names(v) != "summary u2 u3" || fmt.Sprint(got) != "[u1 call-c1 out-c1]" {
		t.Fatalf("paired: view %q, summary of %v", names(v), got)
	}
}

// Rounding the cut to the step never costs the newest entry: a large
// old entry followed by a small new one keeps the new one.
func TestTruncateStepNeverDropsTheNewest(t *testing.T) {
	hist := []projector.Entry[item]{e("old", 1900), e("newest", 200)}
	v, err := projector.Assemble(projector.Input[item]{History: hist}, &projector.Policy[item]{TokenBudget: 2000, TruncateStep: 500})
	if err != nil {
		t.Fatal(err)
	}
	if names(v) != "newest" {
		t.Fatalf("view = %q, want the newest entry", names(v))
	}
	// The same with the newest entry a call and its output.
	hist = []projector.Entry[item]{e("old", 1900), call("c", 100), output("c", 100)}
	v, _ = projector.Assemble(projector.Input[item]{History: hist}, &projector.Policy[item]{TokenBudget: 2000, TruncateStep: 500})
	if names(v) != "call-c out-c" {
		t.Fatalf("view = %q, want the newest call and output", names(v))
	}
	// Where the grid leaves the newest entry alone the step still rounds.
	hist = []projector.Entry[item]{e("a", 100), e("b", 100), e("c", 100), e("d", 100), e("e", 100)}
	v, _ = projector.Assemble(projector.Input[item]{History: hist}, &projector.Policy[item]{TokenBudget: 450, TruncateStep: 300})
	if names(v) != "d e" || v.HistoryFrom != 3 {
		t.Fatalf("view = %q from %d, want the cut rounded to 300 tokens", names(v), v.HistoryFrom)
	}
}

// keepUser names the entries whose name starts with "q" (questions).
func keepUser(en projector.Entry[item]) bool { return en.Item.name[0] == 'q' }

// cutTo shortens an entry to exactly n tokens, refusing below 5 (the
// marker's size).
func cutTo(en projector.Entry[item], n int) (projector.Entry[item], bool) {
	if n < 5 {
		return en, false
	}
	return projector.Entry[item]{Item: item{en.Item.name + "-cut"}, Tokens: n}, true
}

// A kept entry too large for the history's room used to be dropped with
// everything before it: the view had no history at all. It is cut to the
// room the entries after it leave.
func TestKeptEntryIsCutNotDropped(t *testing.T) {
	in := projector.Input[item]{
		System:  []projector.Entry[item]{e("sys", 10)},
		History: []projector.Entry[item]{e("q1", 10), e("a1", 10), e("q2", 500)},
		Keep:    keepUser, Cut: cutTo,
	}
	p := &projector.Policy[item]{TokenBudget: 110}
	v, err := projector.Assemble(in, p)
	if err != nil {
		t.Fatal(err)
	}
	if names(v) != "sys q2-cut" || v.Tokens[projector.BandHistory] != 100 || v.TotalTokens() != 110 {
		t.Fatalf("view %q, %d history tokens", names(v), v.Tokens[projector.BandHistory])
	}
	if v.Cut == nil || *v.Cut != (projector.Cut{Index: 2, Tokens: 500, Shown: 100}) || v.Kept != 2 {
		t.Fatalf("cut %+v kept %d", v.Cut, v.Kept)
	}
	if v.HistoryContiguous || v.HistoryDropped != 2 || v.HistoryFrom != 3 {
		t.Fatalf("contiguous %v dropped %d from %d", v.HistoryContiguous, v.HistoryDropped, v.HistoryFrom)
	}
	// Without Keep the projection is what it always was.
	in.Keep = nil
	v, _ = projector.Assemble(in, p)
	if names(v) != "sys" || v.Kept != -1 || v.Cut != nil {
		t.Fatalf("view without Keep %q", names(v))
	}
}

// The entries after the kept one (a tool loop's calls and outputs) take
// what they need, as long as the kept entry keeps half of the room; a
// small kept entry stays whole ahead of a gap, the newest entries after
// the gap, calls with their outputs.
func TestKeptEntryAheadOfALongTurn(t *testing.T) {
	hist := []projector.Entry[item]{e("q", 20)}
	for i := range 6 {
		id := fmt.Sprint(i)
		hist = append(hist, call(id, 10), output(id, 20))
	}
	in := projector.Input[item]{History: hist, Keep: keepUser, Cut: cutTo}
	v, err := projector.Assemble(in, &projector.Policy[item]{TokenBudget: 100})
	if err != nil {
		t.Fatal(err)
	}
	// 20 for q, 80 left: the newest 2 pairs (60) and out-3 fit, not
	// call-3: the cut is at out-3 (8), dropped as an orphan.
	if names(v) != "q call-4 out-4 call-5 out-5" || v.Kept != 0 || v.Cut != nil || v.HistoryFrom != 8 {
		t.Fatalf("view %q kept %d from %d cut %+v", names(v), v.Kept, v.HistoryFrom, v.Cut)
	}
	if v.HistoryDropped != 8 || v.HistoryContiguous {
		t.Fatalf("dropped %d contiguous %v", v.HistoryDropped, v.HistoryContiguous)
	}
	// A large kept entry is cut to half of the room; the newest entries
	// share the other half.
	hist[0] = e("q", 400)
	v, err = projector.Assemble(in, &projector.Policy[item]{TokenBudget: 100})
	if err != nil {
		t.Fatal(err)
	}
	// 50 left: out-5, call-5 and out-4 fit, but out-4 goes without its call.
	if names(v) != "q-cut call-5 out-5" {
		t.Fatalf("view %q", names(v))
	}
	if v.Cut == nil || v.Cut.Shown != 50 || v.TotalTokens() > 100 {
		t.Fatalf("cut %+v, %d tokens", v.Cut, v.TotalTokens())
	}
}

// TruncateStep's rounding never costs the kept entry: where the grid would
// move the front past it although it fits, the front is the kept entry.
func TestTruncateStepNeverDropsTheKeptEntry(t *testing.T) {
	hist := []projector.Entry[item]{e("old", 100), e("q", 50), e("a", 100), e("b", 100)}
	p := &projector.Policy[item]{TokenBudget: 300, TruncateStep: 200}
	v, _ := projector.Assemble(projector.Input[item]{History: hist}, p)
	if names(v) != "b" {
		t.Fatalf("premise: the grid drops q: %q", names(v))
	}
	v, err := projector.Assemble(projector.Input[item]{History: hist, Keep: keepUser, Cut: cutTo}, p)
	if err != nil {
		t.Fatal(err)
	}
	if names(v) != "q a b" || v.Kept != -1 || v.HistoryFrom != 1 || !v.HistoryContiguous || v.HistoryDropped != 1 {
		t.Fatalf("view %q kept %d from %d contiguous %v", names(v), v.Kept, v.HistoryFrom, v.HistoryContiguous)
	}
}

// A kept entry that cannot be shown even cut fails with a *BudgetError
// naming the sizes; without Cut, any kept entry too large fails.
func TestKeptEntryThatCannotFitIsAnError(t *testing.T) {
	in := projector.Input[item]{
		System:  []projector.Entry[item]{e("sys", 97)},
		History: []projector.Entry[item]{e("q", 50)},
		Keep:    keepUser, Cut: cutTo,
	}
	_, err := projector.Assemble(in, &projector.Policy[item]{TokenBudget: 100})
	var be *projector.BudgetError
	if !errors.Is(err, projector.ErrOverBudget) || !errors.As(err, &be) ||
		*be != (projector.BudgetError{Index: 0, Tokens: 50, Share: 3, Room: 3, Available: 100}) {
		t.Fatalf("err %v (%+v)", err, be)
	}
	in.System = []projector.Entry[item]{e("sys", 10)}
	in.Cut = nil
	if _, err := projector.Assemble(in, &projector.Policy[item]{TokenBudget: 50}); !errors.As(err, &be) || be.Share != 40 {
		t.Fatalf("without Cut: %v", err)
	}
	// A Cut that returns more than asked is refused too.
	in.Cut = func(en projector.Entry[item], n int) (projector.Entry[item], bool) {
		en.Tokens = n + 1
		return en, true
	}
	if _, err := projector.Assemble(in, &projector.Policy[item]{TokenBudget: 50}); !errors.Is(err, projector.ErrOverBudget) {
		t.Fatalf("oversized cut: %v", err)
	}
}

// A sliding window that leaves the kept entry out by count, or a summary
// that covers it, is the policy's choice: Keep does not override it.
func TestKeepLeavesWindowAndSummaryAlone(t *testing.T) {
	hist := []projector.Entry[item]{e("q", 1), e("a", 1), e("b", 1), e("c", 1)}
	v, err := projector.Assemble(projector.Input[item]{History: hist, Keep: keepUser, Cut: cutTo},
		&projector.Policy[item]{TokenBudget: 100, Overflow: projector.OverflowSlidingWindow, WindowSize: 2})
	if err != nil || names(v) != "b c" || v.Kept != -1 {
		t.Fatalf("window: %q %v", names(v), err)
	}
	hist = []projector.Entry[item]{e("q", 50), e("a", 30), e("b", 30)}
	sum := func([]projector.Entry[item]) (projector.Entry[item], bool) { return e("summary", 5), true }
	v, err = projector.Assemble(projector.Input[item]{History: hist, Keep: keepUser, Cut: cutTo},
		&projector.Policy[item]{TokenBudget: 70, Overflow: projector.OverflowSummarize, Summarize: sum})
	if err != nil || names(v) != "summary a b" || v.Kept != -1 {
		t.Fatalf("summary: %q %v", names(v), err)
	}
}
