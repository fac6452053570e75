// Package history caps the conversation history a model sees, while
// keeping the front of the history still so the prompt cache keeps
// hitting.
//
// A window that slides by one message per turn moves the front of the
// history every turn, so the provider re-bills all of it every turn: the
// cache breaks at the first changed byte. This layer caps by item count
// and by tokens (MaxItems, MaxTokens: hard limits, never exceeded except
// to keep the newest item) and holds the front still between cuts. The
// front is a pure function of the log (no state), so the same log always
// gives the same view.
//
// # Cut by cost (the default)
//
// With no explicit cut rule (LowWatermark zero), when and how far to cut
// is chosen from the provider's price model (package pricing): a cut
// rewrites everything after it at the write price, and history carried
// unchanged costs its tokens at the read price on every request. The
// history is cut only when the next item would break a hard limit, and
// then back to the point that bills least per request over the cycle
// until the next forced cut: the cut's rewrite plus the cycle's reads,
// over the requests the cycle lasts (estimated from the log: how many
// tokens and items each request has added so far). Two rules bound it:
// it never keeps less than MinShare of the cap (half by default, as much
// history as the watermark rule keeps), and it never leaves the cacheable
// prefix (PrefixTokens plus the history kept) under the model's minimum
// cacheable length when keeping more fits the limits: a prefix under the
// minimum is not cached at all, so every request until history grows back
// would be billed in full.
//
// Read [CostModel] for the arithmetic. The model, the price table and the
// cache lifetime are Options; the tokens ahead of history are the host's
// to give (PrefixTokens), since the layer sees only the history.
//
// # Cut by watermark
//
// With LowWatermark set, the history is cut back to that share of the cap
// in one step on a fixed grid, then held still while it grows back.
//
// In both modes a function call is never separated from its output,
// parallel calls included: the front moves past a call block it would
// split, or back to its first call when moving past would drop the newest
// item. The newest item (with the call it answers) is always shown.
package history

import (
	"context"
	"fmt"
	"iter"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/pricing"
)

// Options configure the cap. At least one of MaxItems and MaxTokens must
// be set.
type Options struct {
	// ID names the layer; "history" by default.
	ID string
	// MaxItems caps the number of history items shown. Zero: no item cap.
	MaxItems int
	// MaxTokens caps the tokens of the history shown. Zero: no token cap.
	MaxTokens int
	// LowWatermark, when set, is the explicit cut rule: the share of the
	// cap the history is cut back to, on a fixed grid, when it overflows;
	// it must be in (0, 1). Zero cuts by cost (see the package doc).
	LowWatermark float64

	// The cost policy's inputs; ignored with LowWatermark set.

	// Model is the model id the requests go to, priced by Pricing; empty
	// means the fallback Anthropic model (Sonnet class, 1,024-token
	// minimum).
	Model string
	// Pricing is the price table; the zero value is pricing.Default.
	Pricing pricing.Table
	// TTL is the cache lifetime the host asks for; it prices the writes.
	TTL pricing.TTL
	// PrefixTokens is what precedes history in the cached prefix: tool
	// schemas, system prompt and anchor band. Zero counts history alone
	// against the minimum, which keeps more history than needed when the
	// prefix is long, never less.
	PrefixTokens int
	// MinShare is the least share of the cap a cut keeps, of each cap
	// set. Zero means 0.5; it must be in (0, 1).
	MinShare float64
}

// Layer returns the history layer. Its only hook is projectHistory; it
// renders nothing.
func Layer(opts Options) (core.Layer[struct{}], error) {
	if opts.ID == "" {
		opts.ID = "history"
	}
	if opts.MaxItems < 0 {
		return core.Layer[struct{}]{}, &core.ConfigError{Code: core.CodeInvalidLayer, Layer: opts.ID, Field: "MaxItems", Reason: "negative"}
	}
	if opts.MaxTokens < 0 {
		return core.Layer[struct{}]{}, &core.ConfigError{Code: core.CodeInvalidLayer, Layer: opts.ID, Field: "MaxTokens", Reason: "negative"}
	}
	if opts.MaxItems == 0 && opts.MaxTokens == 0 {
		return core.Layer[struct{}]{}, &core.ConfigError{Code: core.CodeInvalidLayer, Layer: opts.ID, Field: "MaxItems", Reason: "set MaxItems or MaxTokens"}
	}
	if opts.LowWatermark != 0 && !(opts.LowWatermark > 0 && opts.LowWatermark < 1) {
		return core.Layer[struct{}]{}, &core.ConfigError{Code: core.CodeInvalidLayer, Layer: opts.ID, Field: "LowWatermark", Reason: fmt.Sprintf("must be in (0,1), got %v", opts.LowWatermark)}
	}
	if opts.MinShare != 0 && !(opts.MinShare > 0 && opts.MinShare < 1) {
		return core.Layer[struct{}]{}, &core.ConfigError{Code: core.CodeInvalidLayer, Layer: opts.ID, Field: "MinShare", Reason: fmt.Sprintf("must be in (0,1), got %v", opts.MinShare)}
	}
	if opts.PrefixTokens < 0 {
		return core.Layer[struct{}]{}, &core.ConfigError{Code: core.CodeInvalidLayer, Layer: opts.ID, Field: "PrefixTokens", Reason: "negative"}
	}
	return core.Layer[struct{}]{
		ID: opts.ID, Name: "History cap", Scope: core.ScopeExecution, Budget: core.Fixed(0),
		Hooks: core.Hooks[struct{}]{ProjectHistory: func(_ context.Context, p core.ProjectHistoryParams[struct{}]) (int, []core.Item, error) {
			return Front(p.History, p.TokensOf, opts), nil, nil
		}},
	}, nil
}

// Front returns the index of the first history item to show under opts.
// tokensOf may be nil when only MaxItems is set.
//
// Two rules bound the stepped cut. It never passes the newest item (or,
// when the newest item is an output, the call it answers): a view without
// the message being answered is useless, and the projector, not this
// layer, enforces the hard token budget. And it never shows an output
// whose call it cut: with parallel calls [call A, call B, out A, out B] a
// front on call B would send out A alone, which providers reject. The
// front then moves past the whole call block, or, when that would pass the
// newest item, back to the block's first call.
//
// With LowWatermark zero the front is chosen by cost (see the package doc
// and CostModel); the two rules above hold there too.
func Front(history []core.Item, tokensOf func(int) int, opts Options) int {
	low := opts.LowWatermark
	if low == 0 {
		return costFront(history, tokensOf, opts)
	}
	start, exact := 0, 0
	if opts.MaxItems > 0 {
		s, e := steppedFront(len(history), opts.MaxItems, low, func(i int) int { return 1 })
		start, exact = max(start, s), max(exact, e)
	}
	if opts.MaxTokens > 0 && tokensOf != nil {
		s, e := steppedFront(len(history), opts.MaxTokens, low, tokensOf)
		start, exact = max(start, s), max(exact, e)
	}
	bound := newestStart(history)
	switch {
	case start <= bound:
	case exact <= bound:
		// The grid step would cost the newest item; the unrounded cut
		// keeps it, so take that instead (as projector.onGrid does).
		start = exact
	default:
		start = bound
	}
	return withoutOrphans(history, start, bound)
}

// newestStart is the index the front may move up to: the newest item, or
// the call it answers when it is an output. An output with no call in the
// log at all cannot be shown whole, so it does not count. It is
// len(history) when no item counts.
func newestStart(history []core.Item) int {
	for i := len(history) - 1; i >= 0; i-- {
		it := &history[i]
		if it.Type != core.TypeFunctionCallOutput {
			return i
		}
		for j := i - 1; j >= 0; j-- {
			if history[j].Type == core.TypeFunctionCall && history[j].CallID == it.CallID {
				return j
			}
		}
	}
	return len(history)
}

// withoutOrphans moves the front at start so that history[front:] shows no
// output without its call. It first moves forward past the last such
// output (which can orphan more outputs, so it repeats) as long as it
// stays at or before bound; otherwise it moves back to the earliest call
// whose output history[front:] shows.
func withoutOrphans(history []core.Item, start, bound int) int {
	for s := start; ; {
		last := lastOrphan(history, s)
		if last < 0 {
			return s
		}
		if last+1 > bound {
			break
		}
		s = last + 1
	}
	s := start
	for {
		j := earliestLostCall(history, s)
		if j < 0 {
			return s
		}
		s = j
	}
}

// orphans yields, in order, the index of each output of history[from:]
// whose call is not in history[from:] before it.
func orphans(history []core.Item, from int) iter.Seq[int] {
	return func(yield func(int) bool) {
		calls := map[string]struct{}{}
		for i := from; i < len(history); i++ {
			switch it := &history[i]; it.Type {
			case core.TypeFunctionCall:
				calls[it.CallID] = struct{}{}
			case core.TypeFunctionCallOutput:
				if _, ok := calls[it.CallID]; !ok && !yield(i) {
					return
				}
			}
		}
	}
}

// lastOrphan returns the index of the last output of history[from:] whose
// call is not in history[from:] before it, or -1.
func lastOrphan(history []core.Item, from int) int {
	last := -1
	for i := range orphans(history, from) {
		last = i
	}
	return last
}

// earliestLostCall returns the smallest index before from of a call whose
// output history[from:] shows without it, or -1.
func earliestLostCall(history []core.Item, from int) int {
	before := map[string]int{}
	for i := 0; i < from && i < len(history); i++ {
		if it := &history[i]; it.Type == core.TypeFunctionCall {
			if _, seen := before[it.CallID]; !seen {
				before[it.CallID] = i
			}
		}
	}
	earliest := -1
	for i := range orphans(history, from) {
		if j, ok := before[history[i].CallID]; ok && (earliest < 0 || j < earliest) {
			earliest = j
		}
	}
	return earliest
}

// steppedFront places the front on a grid of steps of (1-low)*limit units
// of cumulative size: the front moves only when the shown part would
// exceed limit, and then by whole steps, so between moves it holds still.
// exact is the unrounded cut: the first index whose suffix fits in limit.
func steppedFront(n, limit int, low float64, size func(int) int) (stepped, exact int) {
	total := 0
	for i := 0; i < n; i++ {
		total += size(i)
	}
	if total <= limit {
		return 0, 0
	}
	step := max(1, int(float64(limit)*(1-low)))
	// Smallest k with total - k*step <= limit, measured in units: cut
	// k*step units from the front, rounding up to whole items.
	k := (total - limit + step - 1) / step
	cut := k * step
	stepped, exact = n, n
	acc := 0
	for i := 0; i < n; i++ {
		if exact == n && total-acc <= limit {
			exact = i
		}
		if acc >= cut {
			stepped = i
			break
		}
		acc += size(i)
	}
	return stepped, exact
}
