package cachebench

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/stratamem/strata/cachesim"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/pricing"
	"github.com/stratamem/strata/tokens"
)

// layoutStep is one request of a history-window run as the optimum needs
// it: how long the log was, where the shown history began, and the tokens
// of each part of the request.
type layoutStep struct {
	at time.Time
	// n is the log length, front the first log item shown.
	n, front int
	// sys is the tokens through the system message (tools included),
	// prefix through the anchor band.
	sys, prefix int
	// anchor identifies the bytes through the anchor band: a change (a
	// re-anchor) breaks every cached prefix after the system message.
	anchor [32]byte
	// extra is what the history band holds beyond the log items shown
	// (the context updates published inline); after is everything after
	// history (live band, tail).
	extra, after int
}

// layoutTrace records a run's requests; logToks[i] is log item i's tokens.
type layoutTrace struct {
	steps   []layoutStep
	logToks []int
}

// observe records req. sysBlocks is the number of blocks through the
// system message.
func (tr *layoutTrace) observe(req *Request, sysBlocks int, logToks []int, hash func([]byte) cachesim.Hash) {
	sum := func(bs []Block) int {
		n := 0
		for _, b := range bs {
			n += b.Tokens
		}
		return n
	}
	st := layoutStep{at: req.At, n: len(logToks), front: req.HistoryDropped,
		sys: sum(req.Blocks[:min(sysBlocks, len(req.Blocks))]), prefix: sum(req.Blocks[:req.StableBlocks]),
		after: sum(req.Blocks[req.HistoryEnd:])}
	h := sha256.New()
	for _, b := range req.Blocks[:req.StableBlocks] {
		x := hash(b.Bytes)
		h.Write(x[:])
	}
	h.Sum(st.anchor[:0])
	shown := 0
	for _, t := range logToks[min(st.front, len(logToks)):] {
		shown += t
	}
	st.extra = max(0, sum(req.Blocks[req.StableBlocks:req.HistoryEnd])-shown)
	tr.steps = append(tr.steps, st)
	tr.logToks = append(tr.logToks[:0], logToks...)
}

// windowModel bills a schedule of history fronts over a recorded layout
// with the provider's caching rules (package pricing), as the simulators
// do for this layout: breakpoints at the end of the system message, the
// anchor band and history; a request reads the previous request's prefix
// through history when its front and anchor held still and that prefix
// was long enough to cache, else the anchor or system prefix when those
// are; it writes (Anthropic) through history when that reaches the
// minimum; an idle time over the 5-minute lifetime loses everything.
type windowModel struct {
	tr  *layoutTrace
	cum []int // cum[i] = tokens of log items [0, i)
	m   pricing.Model
}

func newWindowModel(tr *layoutTrace, p Provider) *windowModel {
	cum := make([]int, len(tr.logToks)+1)
	for i, t := range tr.logToks {
		cum[i+1] = cum[i] + t
	}
	return &windowModel{tr: tr, cum: cum, m: p.Pricing()}
}

// through is the tokens of request t through history with front f.
func (w *windowModel) through(t, f int) int {
	st := &w.tr.steps[t]
	return st.prefix + w.cum[st.n] - w.cum[f] + st.extra
}

// cost bills request t with front f after request t-1 had front fp.
func (w *windowModel) cost(t, fp, f int) cachesim.Usage {
	st := &w.tr.steps[t]
	end := w.through(t, f)
	total := end + st.after
	read := 0
	if t > 0 {
		prev := &w.tr.steps[t-1]
		if st.at.Sub(prev.at) <= CacheLifetime {
			same := prev.anchor == st.anchor
			switch {
			case same && f == fp && w.m.Cacheable(w.through(t-1, fp)) > 0:
				read = w.m.Cacheable(w.through(t-1, fp))
			case same && w.m.Cacheable(st.prefix) > 0:
				read = w.m.Cacheable(st.prefix)
			case prev.sys == st.sys && w.m.Cacheable(st.sys) > 0:
				read = w.m.Cacheable(st.sys)
			}
		}
	}
	u := cachesim.Usage{ReadTokens: read}
	if w.m.Provider == pricing.Anthropic && w.m.Cacheable(end) > 0 && end > read {
		u.Write5mTokens = end - read
	}
	u.UncachedTokens = total - read - u.Write5mTokens
	u.BaseEquivalent = w.m.Billed(u.ReadTokens, u.Write5mTokens, u.UncachedTokens, pricing.TTL5m)
	u.Cost = w.m.Dollars(u.BaseEquivalent)
	return u
}

// bill is the model's total for the trace's own fronts.
func (w *windowModel) bill() cachesim.Totals {
	var tot cachesim.Totals
	for t, st := range w.tr.steps {
		fp := 0
		if t > 0 {
			fp = w.tr.steps[t-1].front
		}
		tot.Add(w.cost(t, fp, st.front))
	}
	return tot
}

// optimum is the cheapest schedule of fronts under the window's rules:
// at most window items shown, at least half of it (the floor every cut
// policy here keeps: the watermark's low mark, the cost rule's MinShare)
// once the log has that many, the newest item always shown, and a front
// that never moves back. Dynamic programming over (request, front): a
// request's bill depends only on its front and the previous one's.
func (w *windowModel) optimum(window int) ([]cachesim.Usage, []int) {
	steps := w.tr.steps
	floor := (window + 1) / 2
	type cell struct {
		cost float64
		from int
	}
	rng := func(t int) (lo, hi int) {
		n := steps[t].n
		return max(0, n-window), max(0, n-min(n, floor))
	}
	best := make([]map[int]cell, len(steps))
	for t := range steps {
		lo, hi := rng(t)
		best[t] = map[int]cell{}
		for f := lo; f <= hi; f++ {
			if t == 0 {
				best[t][f] = cell{cost: w.cost(0, 0, f).BaseEquivalent, from: -1}
				continue
			}
			c := cell{cost: math.Inf(1), from: -1}
			plo, phi := rng(t - 1)
			for fp := plo; fp <= min(phi, f); fp++ {
				prev, ok := best[t-1][fp]
				if !ok || math.IsInf(prev.cost, 1) {
					continue
				}
				if v := prev.cost + w.cost(t, fp, f).BaseEquivalent; v < c.cost {
					c = cell{cost: v, from: fp}
				}
			}
			best[t][f] = c
		}
	}
	last := len(steps) - 1
	if last < 0 {
		return nil, nil
	}
	fronts := make([]int, len(steps))
	bestF, bestC := -1, math.Inf(1)
	for _, f := range slices.Sorted(maps.Keys(best[last])) {
		if c := best[last][f]; c.cost < bestC {
			bestF, bestC = f, c.cost
		}
	}
	for t := last; t >= 0; t-- {
		fronts[t] = bestF
		bestF = best[t][bestF].from
	}
	usage := make([]cachesim.Usage, len(steps))
	for t := range steps {
		fp := 0
		if t > 0 {
			fp = fronts[t-1]
		}
		usage[t] = w.cost(t, fp, fronts[t])
	}
	return usage, fronts
}

// windowOptimum is the WindowOptimum series of provider p: the optimum
// schedule over the layout the cost rule's run recorded (ref).
func windowOptimum(ref *Series, p Provider, window int) *Series {
	w := newWindowModel(ref.trace, p)
	usage, fronts := w.optimum(window)
	tr := &layoutTrace{steps: slices.Clone(ref.trace.steps), logToks: ref.trace.logToks}
	for i := range tr.steps {
		tr.steps[i].front = fronts[i]
	}
	s := &Series{Strategy: WindowOptimum, Provider: p, OverflowRequest: -1, trace: tr}
	for i, u := range usage {
		account(s, u, false, i)
	}
	return s
}

// WindowModelBill is what the optimum's model bills for series s's own
// history fronts (a history-window strategy), so that it can be set
// against the optimum on the same footing and against the simulator's
// bill; ok is false when s recorded no layout.
func WindowModelBill(s *Series) (tot cachesim.Totals, ok bool) {
	if s == nil || s.trace == nil {
		return cachesim.Totals{}, false
	}
	return newWindowModel(s.trace, s.Provider).bill(), true
}

// WindowStats describes a history-window series: the requests whose
// front moved (cuts), those whose prefix through history was under the
// model's minimum (nothing cached past the system message), and the mean
// number of log items shown.
func WindowStats(s *Series) (cuts, under int, meanShown float64) {
	if s == nil || s.trace == nil || len(s.trace.steps) == 0 {
		return 0, 0, 0
	}
	w := newWindowModel(s.trace, s.Provider)
	shown := 0
	for t, st := range s.trace.steps {
		if t > 0 && st.front != s.trace.steps[t-1].front {
			cuts++
		}
		if w.m.Cacheable(w.through(t, st.front)) == 0 {
			under++
		}
		shown += st.n - st.front
	}
	return cuts, under, float64(shown) / float64(len(s.trace.steps))
}

// prefixTokens replays the first turn and returns the tokens ahead of
// history on its first request: tool schemas, system message and anchor
// band, as a host would measure them on its first view.
func prefixTokens(ctx context.Context, sc *script, tok tokens.Tokenizer) (int, error) {
	cut := *sc
	cut.turns = sc.turns[:min(1, len(sc.turns))]
	prefix := -1
	probe := func(turn, round int, v *core.View) {
		if prefix >= 0 {
			return
		}
		prefix = v.Usage.BandTokens[core.BandSystem] + v.Usage.BandTokens[core.BandAnchor]
		for _, spec := range append(slices.Clone(sc.tools), v.Tools...) {
			if raw, err := json.Marshal(spec); err == nil {
				prefix += tok.Count(string(raw))
			}
		}
	}
	if _, err := replay(ctx, &cut, tok, budget{}, Anchored, nil, nil, &Options{}, nil, probe); err != nil {
		return 0, fmt.Errorf("cachebench: prefix probe: %w", err)
	}
	return max(0, prefix), nil
}

// ttlPolicy is the lifetime choice of a cache-lifetime strategy. The long
// strategy asks for the extended lifetime on every request. The by-cost
// strategy decides at the first request of each burst (the first, or one
// after more than the 5-minute lifetime of silence), for the whole burst:
// pricing.Model.BestTTL with the pause the host expects after the burst
// (the script's next idle gap over the lifetime), the prefix the burst
// starts with as what the pause would make it rewrite, and the tokens the
// run's earlier bursts wrote on average as what this one will write (the
// first burst, with no such record, keeps the default).
func ttlPolicy(s Strategy, p Provider, sc *script) func(*Request) cachesim.TTL {
	if s == AnchoredTTLLong {
		return func(*Request) cachesim.TTL { return cachesim.TTL1h }
	}
	m := p.Pricing()
	// nextPause[t] is the first idle gap over the lifetime after turn t.
	nextPause := make([]time.Duration, len(sc.turns)+1)
	for t := len(sc.turns) - 1; t >= 0; t-- {
		nextPause[t] = nextPause[t+1]
		if t+1 < len(sc.turns) && sc.turns[t+1].gap > CacheLifetime {
			nextPause[t] = sc.turns[t+1].gap
		}
	}
	var last time.Time
	cur := cachesim.TTL5m
	bursts, written := 0, 0
	var prev *Request
	return func(req *Request) cachesim.TTL {
		if prev != nil {
			written += prev.Usage.WriteTokens()
		}
		if req.Round == 0 && (last.IsZero() || req.At.Sub(last) > CacheLifetime) {
			carried := 0
			for _, b := range req.Blocks[:req.HistoryEnd] {
				carried += b.Tokens
			}
			// The first burst has no record of what a burst writes: it
			// keeps the default rather than guess.
			cur = cachesim.TTL5m
			if bursts > 0 && m.BestTTL(written/bursts, carried, nextPause[req.Turn]) != pricing.TTL5m {
				cur = cachesim.TTL1h
			}
			bursts++
		}
		last = req.At
		prev = req
		return cur
	}
}
