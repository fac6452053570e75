// Package projector assembles the model's view from its bands.
//
// It is the pure heart of strata's assembly: no I/O, no clock, no
// dependency on the rest of the module. It is generic over the item type so
// that the runtime (package core) can hand it its own items together with
// their token counts, and so that custom context backends can reuse it.
//
// The view is the concatenation of six bands, in this order:
//
//	[system][anchor layers][history][live layers][context updates][tail]
//
// With no Policy the bands are concatenated as they are. With a Policy the
// view is held to a hard token budget (TokenBudget - ResponseReserve),
// claimed in this order: system and tail (both never dropped: the tail is
// steering guidance, so it is claimed right after the system prompt rather
// than after the layers: a tail that is never dropped can only be promised
// if it is claimed before anything that may be), anchor,
// live, then the context updates (all of them or none, since a dropped
// update would leave the model reading a block known to be stale), with
// history taking what remains and keeping its most recent items. A
// function call is never separated from its output: entries that share a
// Group are kept or dropped together.
//
// The caller can name history entries the view must not lose for lack of
// room (Input.Keep: the runtime names the newest user message, the one
// being answered). When the newest of them does not fit it is cut to fit
// by Input.Cut, never dropped silently: it takes the room the entries
// after it leave, and at least half of the history's room when those
// entries would fill it by themselves, the newest of them filling the
// rest. View.Cut reports the cut; when even a cut entry cannot fit,
// Assemble fails with a *BudgetError (ErrOverBudget).
package projector

import (
	"errors"
	"fmt"
	"math"
)

// Entry is one item with the facts the projector needs about it.
type Entry[T any] struct {
	Item T
	// Tokens is the item's token count, counted once by the caller.
	Tokens int
	// Group ties entries that must be kept or dropped together, such as a
	// function call and its output (the call id). Empty means alone.
	Group string
	// Opens marks the first entry of a group (the function call). Entries
	// of a group whose opener is dropped are dropped too.
	Opens bool
}

// Band names one part of the view.
type Band int

// The bands of a view, in order.
const (
	BandSystem Band = iota
	BandAnchor
	BandHistory
	BandLive
	BandUpdates
	BandTail
	numBands
)

var bandNames = [...]string{"system", "anchor", "history", "live", "updates", "tail"}

func (b Band) String() string {
	if b < 0 || b >= numBands {
		return fmt.Sprintf("band(%d)", int(b))
	}
	return bandNames[b]
}

// Input holds the bands to assemble. System, Anchor and History are the
// required inputs of a single-band view; the others may be nil.
type Input[T any] struct {
	System  []Entry[T]
	Anchor  []Entry[T]
	History []Entry[T]
	Live    []Entry[T]
	Updates []Entry[T]
	Tail    []Entry[T]

	// Keep, when set, names the history entries the view must not lose
	// for lack of room; only the newest entry it accepts counts, and only
	// an entry without a Group. When that entry falls outside what the
	// token budget holds, it stays, cut by Cut if it is too large: see
	// the package doc. A sliding window that leaves it out by count
	// (OverflowSlidingWindow) is the policy's choice and stands, and so
	// does a summary that covers it (OverflowSummarize).
	Keep func(e Entry[T]) bool
	// Cut shortens a kept entry to at most n tokens, saying in it that it
	// was cut; ok is false when it cannot be made that short. It must be
	// deterministic: the same entry and n give the same result. Nil
	// means a kept entry that is too large is an error.
	Cut func(e Entry[T], n int) (cut Entry[T], ok bool)
}

// Overflow says what happens to history that does not fit.
type Overflow string

// Overflow strategies.
const (
	// OverflowTruncate drops the oldest history items that do not fit.
	OverflowTruncate Overflow = "truncate"
	// OverflowSlidingWindow keeps at most WindowSize most recent history
	// items, then truncates to fit the budget.
	OverflowSlidingWindow Overflow = "sliding_window"
	// OverflowSummarize replaces the dropped prefix by one summary entry
	// produced by Policy.Summarize.
	OverflowSummarize Overflow = "summarize"
)

// Policy holds the view to a hard token budget.
type Policy[T any] struct {
	// TokenBudget is the model's context window in tokens.
	TokenBudget int
	// ResponseReserve is kept free for the model's answer.
	ResponseReserve int
	// Overflow picks the strategy for history that does not fit. The zero
	// value means OverflowTruncate.
	Overflow Overflow
	// WindowSize caps the history item count for OverflowSlidingWindow.
	WindowSize int
	// Summarize turns the dropped history into one entry. It is required
	// by OverflowSummarize. It gets exactly the entries the view leaves
	// out, in order: the prefix before the cut, and the outputs after it
	// whose call is in that prefix. The summary takes room, so the cut
	// then moves later and Summarize is asked again for the longer
	// prefix, until summary and kept history fit together: up to three
	// calls per assembly. The cut never moves past the newest entry plain
	// truncation keeps. Returning ok=false, or no summary that fits,
	// keeps the plain truncation.
	Summarize func(dropped []Entry[T]) (summary Entry[T], ok bool)
	// TruncateStep, when positive, makes truncation cut the front of the
	// history in steps of this many tokens on a fixed grid of the
	// history's cumulative size, instead of one item at a time. The front
	// then holds still between cuts, so a provider's prefix cache keeps
	// the history part for many turns instead of losing it every turn; the
	// price is up to TruncateStep tokens of history not shown. Rounding
	// never costs the newest entry the plain cut keeps (with the call it
	// answers): where the next grid point lies past it, the plain cut is
	// used for that assembly, and it never costs the entry Input.Keep
	// names either.
	TruncateStep int
}

// Validation errors of a Policy. Each is wrapped in a *PolicyError naming
// the field.
var ErrInvalidPolicy = errors.New("projector: invalid policy")

// PolicyError names the field of a Policy that is invalid.
type PolicyError struct {
	Field  string
	Reason string
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("projector: invalid policy: %s: %s", e.Field, e.Reason)
}

// Unwrap lets errors.Is(err, ErrInvalidPolicy) match.
func (e *PolicyError) Unwrap() error { return ErrInvalidPolicy }

// Validate reports the first invalid field of the policy.
func (p *Policy[T]) Validate() error {
	switch {
	case p.TokenBudget <= 0:
		return &PolicyError{"TokenBudget", fmt.Sprintf("must be positive, got %d", p.TokenBudget)}
	case p.ResponseReserve < 0:
		return &PolicyError{"ResponseReserve", fmt.Sprintf("must not be negative, got %d", p.ResponseReserve)}
	case p.ResponseReserve >= p.TokenBudget:
		return &PolicyError{"ResponseReserve", fmt.Sprintf("%d leaves nothing of TokenBudget %d", p.ResponseReserve, p.TokenBudget)}
	case p.WindowSize < 0:
		return &PolicyError{"WindowSize", fmt.Sprintf("must not be negative, got %d", p.WindowSize)}
	case p.TruncateStep < 0:
		return &PolicyError{"TruncateStep", fmt.Sprintf("must not be negative, got %d", p.TruncateStep)}
	}
	switch p.Overflow {
	case "", OverflowTruncate:
	case OverflowSlidingWindow:
		if p.WindowSize == 0 {
			return &PolicyError{"WindowSize", "sliding_window needs a positive window size"}
		}
	case OverflowSummarize:
		if p.Summarize == nil {
			return &PolicyError{"Summarize", "summarize overflow needs a summarizer"}
		}
	default:
		return &PolicyError{"Overflow", fmt.Sprintf("unknown strategy %q", p.Overflow)}
	}
	return nil
}

// Available is the number of tokens the view may occupy.
func (p *Policy[T]) Available() int { return p.TokenBudget - p.ResponseReserve }

// View is an assembled view, band by band. The bands share memory with
// the input where nothing was cut, so assembling a long history copies
// nothing; call Items for one concatenated slice.
type View[T any] struct {
	// Bands[b] holds the entries of band b.
	Bands [numBands][]Entry[T]
	// Tokens[b] is the token count of band b.
	Tokens [numBands]int
	// HistoryFrom is the index in the input history of the first kept
	// entry. When HistoryContiguous is true the history band is exactly
	// the input history from HistoryFrom on (no orphan removed, no
	// summary), so a caller can map it back to its own items.
	HistoryFrom       int
	HistoryContiguous bool
	// HistoryDropped counts input history entries left out, orphans of a
	// dropped group included.
	HistoryDropped int
	// Summarized is true when the history starts with a summary entry.
	Summarized bool
	// LayerDropped counts anchor and live entries left out because the
	// budget could not hold them; AnchorDropped and LiveDropped are their
	// indices in Input.Anchor and Input.Live (nil when none).
	LayerDropped               int
	AnchorDropped, LiveDropped []int
	// UpdatesDropped is true when the context updates did not fit and were
	// left out as a whole. The runtime re-anchors rather than accept it.
	UpdatesDropped bool
	// Kept is the index in Input.History of the entry Input.Keep made the
	// view keep at the front of the history band, cut or ahead of a gap,
	// -1 when none. HistoryFrom is then the first entry kept after it:
	// the entries in between, if any, were left out. (When the kept entry
	// fits with everything after it, so that only TruncateStep's rounding
	// had dropped it, the band is the plain suffix from it: Kept is -1 and
	// HistoryFrom its index.)
	Kept int
	// Cut reports the kept entry when it was cut to fit; nil otherwise.
	Cut *Cut
}

// Cut reports a kept entry that was cut to fit the budget.
type Cut struct {
	// Index is the entry's index in Input.History.
	Index int
	// Tokens is the entry's size, Shown the size of its cut form.
	Tokens, Shown int
}

// ErrOverBudget is wrapped by a *BudgetError: the budget cannot hold an
// entry the view must show.
var ErrOverBudget = errors.New("projector: the token budget cannot hold an entry the view must keep")

// BudgetError reports a kept history entry (Input.Keep) that cannot be
// shown even cut: the budget left for it is smaller than the shortest
// form Input.Cut can make, or there is no Cut.
type BudgetError struct {
	// Index is the entry's index in Input.History, Tokens its size.
	Index, Tokens int
	// Share is the room the entry was given; Room the tokens left for
	// the whole history band after the other bands; Available the
	// policy's (TokenBudget - ResponseReserve).
	Share, Room, Available int
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("projector: the token budget cannot hold a history entry the view must keep: "+
		"entry %d of %d tokens cannot be cut to the %d tokens left for it (history room %d of %d available)",
		e.Index, e.Tokens, e.Share, e.Room, e.Available)
}

// Unwrap lets errors.Is(err, ErrOverBudget) match.
func (e *BudgetError) Unwrap() error { return ErrOverBudget }

// Band returns the entries of band b.
func (v *View[T]) Band(b Band) []Entry[T] { return v.Bands[b] }

// Len is the number of entries in the view.
func (v *View[T]) Len() int {
	n := 0
	for _, b := range v.Bands {
		n += len(b)
	}
	return n
}

// TotalTokens is the token count of the whole view.
func (v *View[T]) TotalTokens() int {
	n := 0
	for _, t := range v.Tokens {
		n += t
	}
	return n
}

// Items returns the view's items in order, in a new slice.
func (v *View[T]) Items() []T {
	out := make([]T, 0, v.Len())
	for _, b := range v.Bands {
		for i := range b {
			out = append(out, b[i].Item)
		}
	}
	return out
}

// ErrSystemOverBudget is returned when the system band and the tail alone
// exceed the available budget: nothing can be sent.
var ErrSystemOverBudget = errors.New("projector: system items exceed the token budget")

// Assemble builds the view. A nil policy concatenates the bands. The policy
// is assumed valid (see Policy.Validate); Assemble does not call it on the
// hot path.
func Assemble[T any](in Input[T], policy *Policy[T]) (View[T], error) {
	v := View[T]{Kept: -1}
	if policy == nil {
		v.set(BandSystem, in.System)
		v.set(BandAnchor, in.Anchor)
		v.set(BandHistory, in.History)
		v.set(BandLive, in.Live)
		v.set(BandUpdates, in.Updates)
		v.set(BandTail, in.Tail)
		v.HistoryContiguous = true
		return v, nil
	}

	remaining := policy.Available()
	sys := sum(in.System) + sum(in.Tail)
	if sys > remaining {
		return v, fmt.Errorf("%w: system and tail %d tokens, available %d", ErrSystemOverBudget, sys, remaining)
	}
	remaining -= sys
	tail := in.Tail
	// Claim the layer bands in order, each entry while it fits.
	anchor, remaining, dropA := claim(in.Anchor, remaining)
	live, remaining, dropL := claim(in.Live, remaining)
	v.AnchorDropped, v.LiveDropped = dropA, dropL
	v.LayerDropped = len(dropA) + len(dropL)
	var updates []Entry[T]
	if u := sum(in.Updates); u <= remaining {
		updates = in.Updates
		remaining -= u
	} else {
		v.UpdatesDropped = len(in.Updates) > 0
	}

	history, from, summarized := fitHistory(in.History, remaining, policy)
	kept := len(history)
	if summarized {
		kept--
	}
	v.HistoryContiguous = !summarized && kept == len(in.History)-from
	if k := keepIndex(in, from, summarized, policy); k >= 0 {
		var err error
		if history, from, err = keepEntry(in, k, remaining, policy, &v); err != nil {
			return View[T]{}, err
		}
		kept = len(history)
		v.HistoryContiguous = v.Kept < 0 && kept == len(in.History)-from
	}
	v.HistoryFrom = from
	v.Summarized = summarized
	v.HistoryDropped = len(in.History) - kept

	v.set(BandSystem, in.System)
	v.set(BandAnchor, anchor)
	v.set(BandHistory, history)
	v.set(BandLive, live)
	v.set(BandUpdates, updates)
	v.set(BandTail, tail)
	return v, nil
}

// keepIndex returns the index of the newest history entry Input.Keep
// names when the budget left it out (the cut at from dropped it, and
// neither a sliding window nor a summary accounts for that), else -1.
func keepIndex[T any](in Input[T], from int, summarized bool, p *Policy[T]) int {
	if in.Keep == nil || from == 0 || summarized {
		return -1
	}
	for i := len(in.History) - 1; i >= 0; i-- {
		if !in.Keep(in.History[i]) {
			continue
		}
		if i >= from || in.History[i].Group != "" {
			return -1 // kept, or not an entry Keep can hold on to
		}
		if p.Overflow == OverflowSlidingWindow && p.WindowSize > 0 && len(in.History)-i > p.WindowSize {
			return -1 // outside the window: left out by count, not room
		}
		return i
	}
	return -1
}

// keepEntry builds the history band around the kept entry k, which did
// not fit in room: k first, cut if it must be, then the newest entries
// after it that fit in what k leaves. k takes the room the entries after
// it leave, or half the room when they would fill more than that by
// themselves (all of its size when that is smaller), so that neither the
// entry being answered nor the newest work after it is lost. The entries
// between k and the newest ones are cut as truncation always cuts: on the
// policy's grid, calls with their outputs. It returns the band and the
// index of the first entry kept after k.
func keepEntry[T any](in Input[T], k, room int, p *Policy[T], v *View[T]) ([]Entry[T], int, error) {
	history := in.History
	entry := history[k]
	after := sum(history[k+1:])
	share := min(entry.Tokens, max(room-after, room/2))
	if share < entry.Tokens {
		cut, ok := Entry[T]{}, false
		if in.Cut != nil && share > 0 {
			cut, ok = in.Cut(entry, share)
		}
		if !ok || cut.Tokens > share || cut.Tokens < 0 {
			return nil, 0, &BudgetError{Index: k, Tokens: entry.Tokens, Share: max(share, 0), Room: room,
				Available: p.Available()}
		}
		cut.Group, cut.Opens = "", false
		v.Cut = &Cut{Index: k, Tokens: entry.Tokens, Shown: cut.Tokens}
		entry = cut
	}
	rest := room - entry.Tokens
	if after <= rest && v.Cut == nil {
		// It fits with everything after it: only the grid's rounding had
		// moved the front past it. The band is the plain suffix from k.
		return keptSuffix(history, k), k, nil
	}
	v.Kept = k
	from := k + 1
	if after > rest {
		from = max(k+1, suffixStart(history, rest, len(history)))
		if p.TruncateStep > 0 {
			from = onGrid(history, from, p.TruncateStep)
		}
	}
	tail := keptSuffix(history, from)
	out := make([]Entry[T], 0, len(tail)+1)
	out = append(out, entry)
	out = append(out, tail...)
	return out, from, nil
}

func (v *View[T]) set(b Band, entries []Entry[T]) {
	v.Bands[b] = entries
	v.Tokens[b] = sum(entries)
}

func sum[T any](entries []Entry[T]) int {
	n := 0
	for i := range entries {
		n += entries[i].Tokens
	}
	return n
}

// claim keeps the entries of a layer band that fit, in order. An entry that
// does not fit is left out; later, smaller ones may still fit. When all fit
// the input slice is returned as is. It returns the indices left out.
func claim[T any](entries []Entry[T], remaining int) ([]Entry[T], int, []int) {
	if n := sum(entries); n <= remaining {
		return entries, remaining - n, nil
	}
	kept := make([]Entry[T], 0, len(entries))
	var dropped []int
	for i, e := range entries {
		if e.Tokens <= remaining {
			kept = append(kept, e)
			remaining -= e.Tokens
		} else {
			dropped = append(dropped, i)
		}
	}
	return kept, remaining, dropped
}

// fitHistory keeps the most recent history that fits in budget, applying
// the overflow strategy. It returns the kept entries, the index of the
// first kept input entry and whether a summary leads them.
func fitHistory[T any](history []Entry[T], budget int, p *Policy[T]) ([]Entry[T], int, bool) {
	limit := len(history)
	if p.Overflow == OverflowSlidingWindow && p.WindowSize > 0 && p.WindowSize < limit {
		limit = p.WindowSize
	}
	from := suffixStart(history, budget, limit)
	if from == 0 {
		return history, 0, false
	}
	if p.TruncateStep > 0 && p.Overflow != OverflowSummarize {
		from = onGrid(history, from, p.TruncateStep)
	}
	if p.Overflow == OverflowSummarize && p.Summarize != nil {
		if out, at, ok := summarized(history, from, budget, p.Summarize); ok {
			return out, at, true
		}
	}
	return keptSuffix(history, from), from, false
}

// maxSummaries bounds the Summarize calls of one assembly.
const maxSummaries = 3

// summarized replaces the history cut at from by a summary of exactly what
// the cut drops, followed by what it keeps. A summary takes room, so the
// cut moves later and the summary is asked again for the longer prefix,
// until summary and kept history fit together (at most maxSummaries
// calls). The cut never moves past the newest entry the plain cut keeps:
// a summary is no substitute for the message being answered. ok is false
// when the summarizer declines, or no summary it gave fits: the caller
// then truncates plainly.
func summarized[T any](history []Entry[T], from, budget int, summarize func([]Entry[T]) (Entry[T], bool)) ([]Entry[T], int, bool) {
	newest := newestStart(history, from)
	for range maxSummaries {
		kept := keptSuffix(history, from)
		summary, ok := summarize(droppedAt(history, from, kept))
		if !ok || summary.Tokens > budget {
			return nil, 0, false
		}
		if summary.Tokens+sum(kept) <= budget {
			out := make([]Entry[T], 0, len(kept)+1)
			out = append(out, summary)
			out = append(out, kept...)
			return out, from, true
		}
		// Make room for a summary of this size; the prefix it covers
		// grows, so ask again.
		next := suffixStart(history, budget-summary.Tokens, len(history))
		if next <= from || next > newest {
			return nil, 0, false // next <= from cannot happen: the kept part was over the room
		}
		from = next
	}
	return nil, 0, false
}

// droppedAt lists, in input order, the history entries a cut at from
// leaves out: the prefix, and the outputs after the cut whose call it
// dropped (kept is keptSuffix(history, from)).
func droppedAt[T any](history []Entry[T], from int, kept []Entry[T]) []Entry[T] {
	if len(kept) == len(history)-from {
		return history[:from:from]
	}
	lost := orphanGroups(history, from)
	out := append([]Entry[T](nil), history[:from]...)
	for _, e := range history[from:] {
		if _, orphan := lost[e.Group]; orphan && e.Group != "" {
			out = append(out, e)
		}
	}
	return out
}

// onGrid moves a cut forward to the next point of a grid of step tokens of
// the history's cumulative size, so successive turns cut at the same place
// until the history outgrows the next grid point. The rounding never costs
// the newest entry the unrounded cut keeps (with the call it answers):
// when the next grid point lies past it, the unrounded cut stands.
func onGrid[T any](history []Entry[T], from, step int) int {
	cut := 0
	for i := 0; i < from; i++ {
		cut += history[i].Tokens
	}
	target := (cut + step - 1) / step * step
	rounded := from
	for rounded < len(history) && cut < target {
		cut += history[rounded].Tokens
		rounded++
	}
	if rounded > newestStart(history, from) {
		return from
	}
	return rounded
}

// newestStart is the index a cut may move up to while keeping the newest
// entry that survives a cut at from: that entry, or the call it answers.
// It is len(history) when a cut at from keeps nothing.
func newestStart[T any](history []Entry[T], from int) int {
	for i := len(history) - 1; i >= from; i-- {
		e := &history[i]
		if e.Group == "" || e.Opens {
			return i
		}
		// An output: it survives when its call is kept too.
		for j := i - 1; j >= from; j-- {
			if history[j].Group == e.Group && history[j].Opens {
				return j
			}
		}
	}
	return len(history)
}

// suffixStart walks back from the end and returns the index of the first
// entry of the longest suffix of at most limit entries whose tokens fit.
func suffixStart[T any](history []Entry[T], budget, limit int) int {
	if budget < 0 {
		return len(history)
	}
	used, i := 0, len(history)
	for i > 0 && len(history)-i < limit {
		t := history[i-1].Tokens
		if used+t > budget {
			break
		}
		used += t
		i--
	}
	return i
}

// keptSuffix returns history[from:] without the entries whose group opener
// lies before from: an output whose call was dropped is dropped too. It
// walks only the kept part.
func keptSuffix[T any](history []Entry[T], from int) []Entry[T] {
	kept := history[from:]
	lost := orphanGroups(history, from)
	if len(lost) == 0 {
		return kept
	}
	out := make([]Entry[T], 0, len(kept))
	for _, e := range kept {
		if _, orphan := lost[e.Group]; orphan && e.Group != "" {
			continue
		}
		out = append(out, e)
	}
	return out
}

// orphanGroups returns the groups of history[from:] whose opener lies
// before from, nil when there are none.
func orphanGroups[T any](history []Entry[T], from int) map[string]struct{} {
	if from == 0 {
		return nil
	}
	kept := history[from:]
	// Outputs are seen before their openers when walking backwards; any
	// group still open at the cut lost its opener.
	var pending map[string]struct{}
	for i := len(kept) - 1; i >= 0; i-- {
		e := &kept[i]
		if e.Group == "" {
			continue
		}
		if e.Opens {
			delete(pending, e.Group)
		} else {
			if pending == nil {
				pending = make(map[string]struct{})
			}
			pending[e.Group] = struct{}{}
		}
	}
	return pending
}

// Unlimited is the budget of an uncapped view or layer.
const Unlimited = math.MaxInt
