package cachebench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/stratamem/strata/core"
)

// The targets.
const (
	// TargetHitShare: anchored reaches at least this share of the
	// optimum's hit ratio on every workload.
	TargetHitShare = 0.95
	// TargetBillFactor: anchored bills at least this many times fewer
	// base-token equivalents than single band on the churn-heavy workload.
	TargetBillFactor = 5.0
	// TargetBillWorkload is the workload the billing target applies to.
	TargetBillWorkload = "churn-heavy"
)

// Target is one checked target.
type Target struct {
	Workload string
	Provider Provider
	Strategy Strategy
	// What says what is measured, Want the threshold and Got the figure.
	What string
	Want float64
	Got  float64
	Met  bool
}

// Targets checks the targets on results: for every workload,
// provider and anchored strategy, the hit ratio as a share of the
// optimum's; on churn-heavy, single band's billed input over anchored's.
func Targets(results []*Result) []Target {
	var out []Target
	for _, r := range results {
		if r.Workload.ExcludeFromTargets {
			continue
		}
		for _, p := range AllProviders() {
			opt := r.Get(Optimum, p)
			single := r.Get(SingleBand, p)
			for _, s := range []Strategy{Anchored, AnchoredHistoryCap} {
				a := r.Get(s, p)
				if a == nil {
					continue
				}
				if opt != nil && opt.Totals.HitRatio() > 0 {
					got := a.Totals.HitRatio() / opt.Totals.HitRatio()
					out = append(out, Target{Workload: r.Workload.Name, Provider: p, Strategy: s,
						What: "hit ratio / optimum's", Want: TargetHitShare, Got: got, Met: got >= TargetHitShare})
				}
				if r.Workload.Name == TargetBillWorkload && single != nil && a.Totals.BaseEquivalent > 0 {
					got := single.Totals.BaseEquivalent / a.Totals.BaseEquivalent
					out = append(out, Target{Workload: r.Workload.Name, Provider: p, Strategy: s,
						What: "single band billed / this", Want: TargetBillFactor, Got: got, Met: got >= TargetBillFactor})
				}
			}
		}
	}
	for _, r := range results {
		out = append(out, windowTargets(r)...)
	}
	return out
}

// ReportOptions configure WriteMarkdown.
type ReportOptions struct {
	// Command is the command line that reproduces the report.
	Command string
	// Plot is the file name of the plot, linked from the report; empty for
	// none.
	Plot string
	// LongSession, when set, adds the long-session section after the
	// workloads.
	LongSession *LongResult
}

// WriteMarkdown writes the report of results: setup, targets, and per
// workload a table per provider, the overflow split and where anchored
// loses against the optimum.
func WriteMarkdown(out io.Writer, results []*Result, opts ReportOptions) error {
	var b strings.Builder
	b.WriteString("# Cache stability benchmark\n\n")
	if opts.Command != "" {
		fmt.Fprintf(&b, "Reproduce with `%s`. Every figure is deterministic except the assembly times, which are wall-clock medians of this machine.\n\n", opts.Command)
	}
	if opts.Plot != "" {
		fmt.Fprintf(&b, "![cumulative billed input per strategy](%s)\n\n", opts.Plot)
	}
	writeSetup(&b)
	writeTargets(&b, results)
	for _, r := range results {
		writeWorkload(&b, r)
	}
	if opts.LongSession != nil {
		writeLongSession(&b, opts.LongSession)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

func writeSetup(b *strings.Builder) {
	a, o := Anthropic.Prices(), OpenAI.Prices()
	fmt.Fprintf(b, `## Method

Each workload is a scripted, deterministic agent run (seeded PCG): user turns, the model's tool calls and replies,
world changes the layers render, and simulated time (20-90 s between turns, 3-15 s per model call, 0-15 s per tool).
Every model call is assembled by strata's runtime (package core) and turned into a request: one block per tool
schema (host tools, then the layers' functions), then one block per item; a block's identity is the SHA-256 of its
canonical JSON, its length the runtime's token count (o200k_base + %d per item). The requests go to the cachesim
simulators, whose cache figures are fed back with Session.ReportCache after every call (first round of a turn marked),
so cache-miss re-anchoring happens as it would live.

- **Anthropic**: model %s, explicit breakpoints, 5-minute TTL refreshed on hit, 20-block lookback, 1024-token minimum;
  base $%.2f/MTok, write %.2fx, read %.2fx.
- **OpenAI**: model %s, automatic prefix caching in 128-token steps from 1024 tokens, 5-minute TTL, no write fee;
  base $%.2f/MTok, cached %.2fx.

Strategies:

- **anchored**: strata's default (core.CacheConfig zero value): anchor and live bands, pinned epochs, drift published
  once as a context-updates message at the end of history (kept in the conversation, so cached from then on), history
  truncated in steps of a quarter of the budget so its front holds still, breakpoints from View.Breakpoints (end of
  system, which covers the tools; end of anchor band; end of history).
- **anchored+sliding-history**: anchored with CacheConfig.HistoryStep < 0: once history overflows its budget it is cut one
  item at a time, a window that slides every turn, so the front of history moves and all of it is billed again on every
  request. Compare with anchored (cut in steps of a quarter of the budget) and anchored+history-cap (layers/history).
- **anchored+trailing-updates**: anchored with CacheConfig.TrailingUpdates, the textbook arrangement:
  one context-updates message after the live band restating every drifted anchor on every request of an epoch
  (re-sent uncached each time). Shown for comparison, not a target.
- **anchored+history-cap**: anchored plus layers/history's token cap with its default cut rule, by cost, on the workloads
  with a token budget. The cap is what the budget leaves after the system prompt and twice the layers' calibrated size. When
  the next item would pass it, history is cut back to the point that bills least per request over the cycle until the
  next forced cut, from the provider's prices (package pricing: read and write multipliers, minimum cacheable prefix),
  never below half the cap and never leaving the prefix under the minimum; its front then holds still, so the history
  cache breaks once per cut, not every turn.
- **anchored+window-20 / -28 / -40** (workloads with a history window): anchored plus layers/history MaxItems 20, 28 and 40
  with the watermark rule (LowWatermark 0.5: cut back to half in one step), the window as configured before the cost rule;
  **anchored+window-20-sliding**: the same 20 items cut one at a time (a sliding window); **anchored+window-20-cost**:
  MaxItems 20 with the cost rule (layers/history's default) given the model and the tokens ahead of history, and the host
  telling the runtime when its cut will rewrite the whole prompt (Session.ExpectColdCache), so the epoch re-anchors on the
  cut instead of on the request after it; **window-20-dp-optimum**: the offline optimum of the 20-item window (dynamic
  programming over the cut points, see the workload's section).
- **anchored+ttl-long / anchored+ttl-by-cost** (workloads with pauses): anchored with the extended cache lifetime on every
  request (Anthropic 1-hour breakpoints, OpenAI 24-hour retention), and with the lifetime chosen per burst by
  pricing.Model.BestTTL from the pause the host expects after it.
- **single-band**: core.CacheConfig{Disabled: true}: every layer renders fresh before history, and the view asks for no
  breakpoints, so Anthropic caches nothing: the baseline of a layout that never holds its prefix still.
- **single-band+bp**: the same view with breakpoints after the system message and at the end of history, as a framework
  that asks for the cache but renders its layers before history would.
- **all-in-system**: every layer's fresh text concatenated into the system message on every request, history after,
  breakpoints at the end of the system message and of history.
- **optimum** (analytic, provider-independent tokens): request n carries the content of the single-band view (tools,
  system, every layer's fresh output, the history shown). Its uncached tokens are what is new since request n-1: the
  items appended to the log since then (user message, model output, tool outputs) plus, for each layer whose rendering
  changed, its renderDelta text when it has one (the changed files, the new entities) or else its full new output
  (a layer that went empty adds nothing); everything else is read. Request 0 is all uncached. No write fee, no TTL, no
  minimum length; billed at the provider's read price. It ignores that a front-dropped history breaks any prefix cache.

Reading the tables: OpenAI ignores breakpoints, so single-band+bp equals single-band there. On Anthropic, asking for
the cache without holding the prefix still costs more than not asking when a layer before history changes on every
request: every request writes the whole prompt at the write price and reads nothing (churn-heavy's single-band+bp and
all-in-system).

Hit ratio = read / (read + write + uncached). Billed = base-token equivalents: read x read price + write x write price
+ uncached (dollars = billed x base price). Median assembly = Session.Assemble per request (plus joining the system text
for all-in-system), not counting the simulator's hashing.

`, core.ItemOverhead, AnthropicModel, a.InputPerMTok, a.CacheWrite5mMult, a.CacheReadMult, OpenAIModel, o.InputPerMTok, o.CacheReadMult)
}

func writeTargets(b *strings.Builder, results []*Result) {
	ts := Targets(results)
	if len(ts) == 0 {
		return
	}
	b.WriteString("## Targets\n\n")
	fmt.Fprintf(b, "Anchored reaches at least %.0f%% of the optimum's hit ratio on every workload; on %s it bills at least %.0fx fewer base-token equivalents than single band.\n\n",
		TargetHitShare*100, TargetBillWorkload, TargetBillFactor)
	fmt.Fprintf(b, "On %s the cost rule's %d-item window (%s) bills at most %.1fx its dynamic-programming optimum (the optimum's bill over its own at least %.3f), "+
		"reaches a hit ratio of %.2f, and bills at least %.0fx less than a sliding window of the same size.\n\n",
		SmallContextWorkload, SmallWindow, AnchoredWindowCost, 1/TargetWindowOptimumShare, TargetWindowOptimumShare, TargetWindowHit, TargetWindowVsSliding)
	b.WriteString("| workload | provider | strategy | measure | target | measured | status |\n|---|---|---|---|---:|---:|---|\n")
	for _, t := range ts {
		status := "met"
		if !t.Met {
			status = "**missed**"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %.2f | %.3f | %s |\n", t.Workload, t.Provider, t.Strategy, t.What, t.Want, t.Got, status)
	}
	b.WriteString("\n")
	if slices.ContainsFunc(ts, func(t Target) bool { return !t.Met }) {
		b.WriteString("Missed targets are explained under each workload (\"Where anchored loses\"). The workloads were fixed before these figures were measured and were not tuned afterwards.\n\n")
	}
	for _, r := range results {
		if r.Workload.ExcludeFromTargets {
			fmt.Fprintf(b, "%s is not held to the targets: its user pauses for hours between bursts, so every burst starts on an expired cache, which the optimum (no TTL) ignores. Its own section gives the share of the optimum.\n\n", r.Workload.Name)
		}
	}
}

func writeWorkload(b *strings.Builder, r *Result) {
	w := r.Workload
	fmt.Fprintf(b, "## %s (`%s`)\n\n%s\n\n", w.Title, w.Name, w.Description)
	fmt.Fprintf(b, "%d turns, %d model calls, mean request content %.0f tokens", r.Turns, r.Requests, r.ContentTokens)
	if r.TokenBudget > 0 {
		fmt.Fprintf(b, ", Policy.TokenBudget %d (ResponseReserve %d)", r.TokenBudget, responseReserve)
		if r.HistoryCap > 0 && anySeries([]*Result{r}, AnchoredHistoryCap) {
			fmt.Fprintf(b, "; anchored+history-cap caps history at %d tokens (history.Options.MaxTokens, cut by cost, PrefixTokens %d)", r.HistoryCap, r.WindowPrefix)
		}
	}
	b.WriteString(".\n\n")
	for _, p := range AllProviders() {
		opt, single := r.Get(Optimum, p), r.Get(SingleBand, p)
		var rows []*Series
		for _, s := range r.Series {
			if s.Provider == p {
				rows = append(rows, s)
			}
		}
		if len(rows) == 0 {
			continue
		}
		pr := p.Prices()
		fmt.Fprintf(b, "### %s ($%.2f/MTok base)\n\n", providerTitle(p), pr.InputPerMTok)
		b.WriteString("| strategy | hit ratio | hit / optimum | billed (base-token eq.) | $ | single band / this | re-anchors | median assembly |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---|---:|\n")
		for _, s := range rows {
			vsSingle := ""
			if single != nil && s.Totals.BaseEquivalent > 0 {
				vsSingle = fmt.Sprintf("%.2fx", single.Totals.BaseEquivalent/s.Totals.BaseEquivalent)
			}
			asm := "n/a"
			if len(s.Assembly) > 0 {
				asm = fmtDuration(s.MedianAssembly())
			}
			fmt.Fprintf(b, "| %s | %.3f | %s | %s | %.2f | %s | %s | %s |\n", s.Strategy, s.Totals.HitRatio(), hitShare(s, opt),
				thousands(s.Totals.BaseEquivalent), s.Totals.Cost, vsSingle, reanchors(s), asm)
		}
		b.WriteString("\n")
	}
	writeWindows(b, r)
	writeTTL(b, r)
	writeOverflow(b, r)
	writeLosses(b, r)
	writeMisses(b, r)
	writeVariants(b, r)
	writeDays(b, r)
}

// hitShare formats s's hit ratio over the optimum's, "" when there is no
// optimum series or it read nothing from the cache.
func hitShare(s, opt *Series) string {
	if opt != nil && opt.Totals.HitRatio() > 0 {
		return fmt.Sprintf("%.3f", s.Totals.HitRatio()/opt.Totals.HitRatio())
	}
	return ""
}

// writeMisses explains each missed target of the workload from its figures.
func writeMisses(b *strings.Builder, r *Result) {
	var lines []string
	for _, t := range Targets([]*Result{r}) {
		if t.Met || t.Strategy == AnchoredWindowCost {
			// The window targets are explained with the window table.
			continue
		}
		a, opt, single := r.Get(t.Strategy, t.Provider), r.Get(Optimum, t.Provider), r.Get(SingleBand, t.Provider)
		n := float64(a.Totals.Requests)
		nonRead := float64(a.Totals.InputTokens()-a.Totals.ReadTokens) / n
		optNonRead := float64(opt.Totals.InputTokens()-opt.Totals.ReadTokens) / n
		upd, live, re := a.MeanBand(core.BandUpdates), a.MeanBand(core.BandLive), float64(a.ReanchorNonRead)/n
		extra := 0.0
		if a.AfterOverflow.Requests > 0 && a.BeforeOverflow.Requests > 0 {
			// What the requests after the first cut left unread beyond the
			// rate of the requests before it.
			before := float64(a.BeforeOverflow.InputTokens()-a.BeforeOverflow.ReadTokens) / float64(a.BeforeOverflow.InputTokens())
			after := float64(a.AfterOverflow.InputTokens() - a.AfterOverflow.ReadTokens)
			extra = max(0, after-before*float64(a.AfterOverflow.InputTokens())) / n
		}
		switch t.What {
		case "hit ratio / optimum's":
			lines = append(lines, fmt.Sprintf("- **%s on %s misses the hit-ratio target** (%.3f of the optimum's, target %.2f): hit ratio %.3f against %.3f. "+
				"Per request it leaves %.0f tokens unread against the optimum's %.0f. Of the %.0f more: about %.0f are a trailing context-updates message "+
				"(re-sent uncached after history on every request of an epoch), "+
				"%.0f the live band, %.0f the re-anchor requests (%s), which miss the whole prefix, and %.0f the history cuts after the budget overflowed "+
				"(beyond the pre-overflow rate). The shares overlap a little (a re-anchor request also carries the live band).",
				t.Strategy, t.Provider, t.Got, t.Want, a.Totals.HitRatio(), opt.Totals.HitRatio(), nonRead, optNonRead, nonRead-optNonRead,
				upd, live, re, reanchors(a), extra))
		default:
			lines = append(lines, fmt.Sprintf("- **%s on %s misses the billing target** (single band bills %.2fx as much, target %.0fx): %s base-token equivalents against single band's %s. "+
				"Before history first overflowed it billed %s against single band's %s (%.2fx); after, %s against %s: "+
				"each request that cut the history front missed the history again.",
				t.Strategy, t.Provider, t.Got, t.Want, thousands(a.Totals.BaseEquivalent), thousands(single.Totals.BaseEquivalent),
				thousands(a.BeforeOverflow.BaseEquivalent), thousands(single.BeforeOverflow.BaseEquivalent),
				ratio(single.BeforeOverflow.BaseEquivalent, a.BeforeOverflow.BaseEquivalent),
				thousands(a.AfterOverflow.BaseEquivalent), thousands(single.AfterOverflow.BaseEquivalent)))
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("Missed targets on this workload:\n\n")
	b.WriteString(strings.Join(lines, "\n"))
	b.WriteString("\n\n")
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func writeOverflow(b *strings.Builder, r *Result) {
	if r.TokenBudget == 0 {
		return
	}
	b.WriteString("Before and after history first overflows the budget (each strategy's own first request with history cut):\n\n")
	b.WriteString("| provider | strategy | first cut request | hit before | hit after | billed before | billed after |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Series {
		first := "none"
		if s.OverflowRequest >= 0 {
			first = fmt.Sprint(s.OverflowRequest)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %.3f | %.3f | %s | %s |\n", s.Provider, s.Strategy, first,
			s.BeforeOverflow.HitRatio(), s.AfterOverflow.HitRatio(), thousands(s.BeforeOverflow.BaseEquivalent), thousands(s.AfterOverflow.BaseEquivalent))
	}
	b.WriteString("\n")
}

// writeLosses breaks down the anchored strategies' non-read tokens against
// the optimum's.
func writeLosses(b *strings.Builder, r *Result) {
	var lines []string
	for _, p := range AllProviders() {
		opt := r.Get(Optimum, p)
		for _, st := range []Strategy{Anchored, AnchoredHistoryCap} {
			a := r.Get(st, p)
			if a == nil || opt == nil || a.Totals.Requests == 0 {
				continue
			}
			n := float64(a.Totals.Requests)
			nonRead := func(s *Series) float64 { return float64(s.Totals.InputTokens()-s.Totals.ReadTokens) / n }
			after := 0.0
			if a.AfterOverflow.Requests > 0 {
				after = float64(a.AfterOverflow.InputTokens()-a.AfterOverflow.ReadTokens) / n
			}
			lines = append(lines, fmt.Sprintf("| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %d |",
				p, st, nonRead(a), nonRead(opt), a.MeanBand(core.BandUpdates), a.MeanBand(core.BandLive),
				float64(a.ReanchorNonRead)/n, after, a.AfterOverflow.Requests))
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("Where anchored loses against the optimum, in tokens per request averaged over the run. Non-read = written + uncached. " +
		"The context updates and the live band sit after the history breakpoint, so they are uncached on every request; a re-anchor " +
		"writes the whole prefix again (history included); after the first overflow, every request whose history front moved writes the history again.\n\n")
	b.WriteString("| provider | strategy | non-read | optimum non-read | updates band | live band | re-anchor requests' non-read | non-read after overflow | requests after overflow |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	b.WriteString(strings.Join(lines, "\n"))
	b.WriteString("\n\n")
}

func providerTitle(p Provider) string {
	if p == OpenAI {
		return "OpenAI (" + OpenAIModel + ")"
	}
	return "Anthropic (" + AnthropicModel + ")"
}

func reanchors(s *Series) string {
	if len(s.Reanchors) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(s.Reanchors))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, s.Reanchors[k])
	}
	return strings.Join(parts, ", ")
}

// thousands formats a token figure with thousands separators.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

func fmtDuration(d time.Duration) string {
	switch {
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	}
}
