package history

import (
	"cmp"
	"math"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/pricing"
)

// CostModel is the arithmetic the cost policy cuts by: the billed
// base-token equivalents of the cached prefix through history over one
// cycle, from a cut to the next forced one. Only what differs between cut
// points is counted: the tokens after history (live band, the newest
// message) cost the same wherever the cut falls.
type CostModel struct {
	// Model prices the tokens and gives the minimum cacheable prefix.
	Model pricing.Model
	// TTL is the lifetime the writes are asked for.
	TTL pricing.TTL
	// PrefixTokens precede history in the cached prefix (tools, system,
	// anchor band). When they reach the minimum alone they are cached on
	// their own breakpoint and a cut does not rewrite them; when they do
	// not, a cut rewrites them with the history.
	PrefixTokens int
}

// CycleCost is the mean billed base-token equivalents per request of a
// cycle of requests requests that starts with a cut keeping kept tokens of
// history, history then growing by growth tokens per request. The cut's
// request writes the prefix again (at the write price of TTL) or, under
// the minimum, sends it uncached; each later request reads what the one
// before cached and writes what it added, or sends everything uncached
// while the prefix stays under the minimum.
func (c CostModel) CycleCost(kept int, growth float64, requests int) float64 {
	m := c.Model
	w, r := m.WriteMult(c.TTL), m.ReadMult
	rewritten := 0 // the part of PrefixTokens a cut rewrites
	if m.Cacheable(c.PrefixTokens) == 0 {
		rewritten = c.PrefixTokens
	}
	requests = max(1, requests)
	total, prevCached := 0.0, false
	for t := range requests {
		grown := growth * float64(t)
		x := float64(rewritten+kept) + grown
		cached := m.Cacheable(c.PrefixTokens+kept+int(grown)) > 0
		switch {
		case !cached:
			total += x
		case t == 0 || !prevCached:
			total += w * x
		default:
			// Cached from here to the end of the cycle (the prefix only
			// grows): request t+j reads x0+(j-1)*growth and writes growth,
			// summed in closed form over the k requests left.
			k := float64(requests - t)
			x0 := x - growth
			total += k*(r*x0+w*growth) + r*growth*k*(k-1)/2
			return total / float64(requests)
		}
		prevCached = cached
	}
	return total / float64(requests)
}

// maxCycle bounds the requests a cycle is assumed to last, so a history
// that barely grows does not make every cut look free.
const maxCycle = 1000

func (o Options) costModel() CostModel {
	m, _ := o.Pricing.Lookup(o.Model)
	if o.Model == "" {
		m = pricing.Fallback(pricing.Anthropic)
	}
	return CostModel{Model: m, TTL: o.TTL, PrefixTokens: o.PrefixTokens}
}

// costFront replays the log from its start: the front moves only when the
// next item would break a hard limit, to the cut point chosen by cutAt
// from what the log held then. Replaying makes the front a pure function
// of the log that holds still between cuts, whatever the assemblies saw.
func costFront(history []core.Item, tokensOf func(int) int, opts Options) int {
	n := len(history)
	cum := make([]int, n+1)
	for i := range n {
		s := 1
		if tokensOf != nil {
			s = tokensOf(i)
		}
		cum[i+1] = cum[i] + s
	}
	c := cutter{history: history, cum: cum, opts: opts, cm: opts.costModel(),
		tokenCap: opts.MaxTokens > 0 && tokensOf != nil, share: cmp.Or(opts.MinShare, 0.5)}
	front, runs := 0, 0
	for i := range n {
		if modelItem(history[i]) && (i == 0 || !modelItem(history[i-1])) {
			runs++
		}
		switch {
		case c.over(front, i):
			front = c.cutAt(front, i, runs)
		case !modelItem(history[i]) && (i == n-1 || modelItem(history[i+1])):
			// A request follows item i: cut on it when the next one would
			// be forced to and cutting one request early is cheaper.
			front = c.early(front, i, runs)
		}
	}
	bound := newestStart(history)
	return withoutOrphans(history, min(front, bound), bound)
}

// modelItem reports an item the model writes: each run of them ends one
// request, so counting runs counts the requests the log has seen.
func modelItem(it core.Item) bool {
	return it.Type == core.TypeFunctionCall || (it.Type == core.TypeMessage && it.Role == core.RoleAssistant)
}

type cutter struct {
	history  []core.Item
	cum      []int // cum[i] = tokens of history[:i]
	opts     Options
	cm       CostModel
	tokenCap bool
	share    float64
}

// over reports whether history[f:i+1] breaks a hard limit.
func (c *cutter) over(f, i int) bool {
	return (c.opts.MaxItems > 0 && i-f+1 > c.opts.MaxItems) ||
		(c.tokenCap && c.cum[i+1]-c.cum[f] > c.opts.MaxTokens)
}

// cutAt chooses the new front when history[front:i+1] breaks a limit,
// seeing only history[:i+1].
func (c *cutter) cutAt(front, i, runs int) int {
	h := c.history[:i+1]
	bound := newestStart(h)
	if bound > i {
		bound = i
	}
	clean := cleanFronts(h, front)
	var fits []int
	for f := front + 1; f <= bound; f++ {
		if !c.over(f, i) && clean[f-front] {
			fits = append(fits, f)
		}
	}
	if len(fits) == 0 {
		// No boundary both fits and keeps call blocks whole: take the
		// first that fits (Front's orphan rule settles it), else keep
		// only the newest item.
		for f := front + 1; f <= bound; f++ {
			if !c.over(f, i) {
				return f
			}
		}
		return max(front, bound)
	}
	kept := func(f int) int { return c.cum[i+1] - c.cum[f] }
	// The floor: never keep less than the share of each cap. fits is in
	// order of keeping less, so the floor keeps a leading run of it.
	floor := fits[:0:0]
	for _, f := range fits {
		if (c.opts.MaxItems > 0 && float64(i+1-f) < c.share*float64(c.opts.MaxItems)) ||
			(c.tokenCap && float64(kept(f)) < c.share*float64(c.opts.MaxTokens)) {
			break
		}
		floor = append(floor, f)
	}
	if len(floor) == 0 {
		floor = fits[:1]
	}
	// The minimum: a prefix under it is never cached, so keep enough to
	// reach it when anything that fits does.
	var reach []int
	for _, f := range floor {
		if c.cm.Model.Cacheable(c.cm.PrefixTokens+kept(f)) > 0 {
			reach = append(reach, f)
		}
	}
	if len(reach) == 0 {
		// Nothing that fits is cacheable now: the cost model weighs how
		// soon each cut point grows back past the minimum.
		reach = floor
	}
	requests := runs
	if requests == 0 {
		requests = i + 1
	}
	growTok := float64(c.cum[i+1]) / float64(requests)
	growItems := float64(i+1) / float64(requests)
	best, bestCost := reach[0], math.Inf(1)
	for _, f := range reach {
		// The cycle lasts until the first limit is broken again.
		cycle := float64(maxCycle)
		if c.opts.MaxItems > 0 && growItems > 0 {
			cycle = min(cycle, float64(c.opts.MaxItems-(i+1-f))/growItems)
		}
		if c.tokenCap && growTok > 0 {
			cycle = min(cycle, float64(c.opts.MaxTokens-kept(f))/growTok)
		}
		cost := c.cm.CycleCost(kept(f), growTok, int(math.Ceil(cycle)))
		if cost < bestCost-1e-9 {
			best, bestCost = f, cost
		}
	}
	return best
}

// early decides, on the request that follows item i, whether to make the
// cut the next request would be forced to now. Cutting now spares this
// request reading the tokens the cut drops (at the read price); it costs a
// cycle shorter by one request's growth, so a share of one more cut's
// rewrite premium (write minus read price on what the cut rewrites) over
// the long run. It cuts when the first outweighs the second.
func (c *cutter) early(front, i, runs int) int {
	requests := max(runs, 1)
	growTok := float64(c.cum[i+1]) / float64(requests)
	growItems := float64(i+1) / float64(requests)
	shownItems, shownTok := float64(i+1-front), float64(c.cum[i+1]-c.cum[front])
	forced := (c.opts.MaxItems > 0 && shownItems+growItems > float64(c.opts.MaxItems)) ||
		(c.tokenCap && shownTok+growTok > float64(c.opts.MaxTokens))
	if !forced {
		return front
	}
	f := c.cutAt(front, i, runs)
	if f <= front {
		return front
	}
	kept := c.cum[i+1] - c.cum[f]
	dropped := c.cum[f] - c.cum[front]
	m := c.cm.Model
	if m.Cacheable(c.cm.PrefixTokens+c.cum[i+1]-c.cum[front]) == 0 {
		// Nothing is read today: cutting now spares nothing.
		return front
	}
	share := 0.0
	if c.opts.MaxItems > 0 {
		share = max(share, growItems/max(1, float64(c.opts.MaxItems-(i+1-f))))
	}
	if c.tokenCap {
		share = max(share, growTok/max(1, float64(c.opts.MaxTokens-kept)))
	}
	rewritten := kept
	if m.Cacheable(c.cm.PrefixTokens) == 0 {
		rewritten += c.cm.PrefixTokens
	}
	premium := (m.WriteMult(c.cm.TTL) - m.ReadMult) * float64(rewritten)
	if m.ReadMult*float64(dropped) > premium*share {
		return f
	}
	return front
}

// cleanFronts reports, for each f in [front, len(h)-1] (index f-front),
// whether a front at f keeps every call block whole as far as h shows: no
// output in h[f:] answers a call before f, and no call before f still
// waits for its output (its round has shown nothing else since).
func cleanFronts(h []core.Item, front int) []bool {
	n := len(h)
	bad := make([]int, n-front+2) // difference array over f-front
	mark := func(lo, hi int) {    // f in (lo, hi] is unclean
		lo, hi = max(lo+1, front), min(hi, n-1)
		if lo > hi {
			return
		}
		bad[lo-front]++
		bad[hi-front+1]--
	}
	calls := map[string]int{}
	answered := map[int]bool{}
	for j := 0; j < n; j++ {
		switch it := &h[j]; it.Type {
		case core.TypeFunctionCall:
			calls[it.CallID] = j
		case core.TypeFunctionCallOutput:
			if c, ok := calls[it.CallID]; ok {
				mark(c, j)
				answered[c] = true
			}
		}
	}
	// A call still in its round (only calls and outputs after it) waits
	// for an output that will come after h.
	for j := n - 1; j >= 0; j-- {
		it := &h[j]
		if it.Type != core.TypeFunctionCall && it.Type != core.TypeFunctionCallOutput {
			break
		}
		if it.Type == core.TypeFunctionCall && !answered[j] {
			mark(j, n-1)
		}
	}
	out := make([]bool, n-front)
	run := 0
	for k := range out {
		run += bad[k]
		out[k] = run == 0
	}
	return out
}
