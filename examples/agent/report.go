package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/stratamem/strata/agent"
	"github.com/stratamem/strata/cachesim"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/storage"
)

// printer writes the demo's output at the level the flags ask for.
type printer struct {
	w io.Writer
	o options
	// prefixShown is set once the cached prefix's size was explained.
	prefixShown bool
}

func (p *printer) printf(format string, args ...any) {
	if !p.o.Quiet {
		fmt.Fprintf(p.w, format, args...)
	}
}

func (p *printer) header(embedder string, _ *core.Runtime) {
	p.printf("strata demo: one user, two visits (two threads of resource %q); memory carries across them.\n", p.o.Resource)
	p.printf("model: %s\nstore: %s (embedder %s)\n", p.o.ModelName, p.o.Dir, embedder)
	p.printf(`
How to read it. Each turn prints the user's message, the tool calls and their outputs, the answer, and one
line per model call (a turn that uses a tool takes two: the call, then the answer once its output is back),
such as (figures for illustration):
  call 2: view 1603 tok; cache read 2251, write 342, uncached 0; epoch t:ada-visit-1#1 age 1
  - view: the tokens strata assembled (system prompt, memory, history); the tool schemas come on top.
  - cache: the provider's prompt cache, in tokens: read from it (billed 0.1x), written to it (1.25x), or
    neither (1x).%s
  - epoch: strata pins the prompt's front (system, tools, anchored memory) byte for byte for an epoch, so
    the cache keeps hitting while memory changes; a change is sent once as a <context_updates> message at
    the end of history instead. "age" counts the epoch's calls; "re-anchored" says why the front was
    rendered anew (and what that costs).
`, simulatedNote(p.o.Simulated))
	if p.o.Views {
		p.printf(`  - views (-views): the bands in the order sent, [system] [anchor] [history] [live] [updates] [tail]
    (anchor is pinned; live is rendered on every call, after the cached part). In the table, slot orders
    the layers within a band; served is pinned (the epoch's bytes re-sent), fresh (rendered now) or none
    (nothing to show); tokens is what the layer used of its budget (auto: no fixed share); churn is the
    share of calls on which its output changed.
`)
	}
	p.printf("  The first visit is long enough to be compacted (the demo pretends the window is %d tokens).\n", demoWindow)
}

func simulatedNote(sim bool) string {
	if sim {
		return " Offline the figures come from cachesim's simulation of Anthropic's cache\n    (5-minute lifetime, nothing cached below 1,024 tokens)."
	}
	return " They are the provider's own figures."
}

func (p *printer) visit(n int, thread string) {
	p.printf("\n=== visit %d: thread %s ===\n", n, thread)
}

func (p *printer) user(text string) { p.printf("\nuser:  %s\n", text) }

func (p *printer) answer(text string) { p.printf("agent: %s\n", text) }

// reanchorWhy says in words why an epoch started, for the reasons the
// demo can meet.
var reanchorWhy = map[core.ReanchorReason]string{
	core.ReasonUpdatePressure:    "the updates outgrew the anchor they change (the first memories of a nearly empty anchor), so rewriting the anchor once is cheaper than carrying them on every call",
	core.ReasonCacheMiss:         "the provider reported a miss the runtime cannot explain (an eviction): the cache is lost, so fresh pins cost nothing more",
	core.ReasonCacheExpired:      "the cache lifetime passed since the last call: the cache is lost anyway",
	core.ReasonMaxAge:            "the epoch reached its maximum age",
	core.ReasonUpdatesOverBudget: "the updates no longer fit the budget",
	core.ReasonBandChange:        "a pinned layer had to change band",
	core.ReasonHistoryCut:        "the front of history moved past a published update (a compaction or a cut)",
}

// reanchorText is reanchorWhy's line for the reason. A thread's first
// call is told by its cache figures: the provider's cache matches by
// prefix, not by thread, so a later thread's first call reads the system
// prompt, the tools and any anchored memory rendered to the same bytes
// from what an earlier thread wrote.
func reanchorText(r core.ReanchorReason, c core.CacheReport) string {
	if r != core.ReasonInitial {
		return reanchorWhy[r]
	}
	why := "the thread's first call: nothing is cached yet, the whole prompt is written once"
	if c.ReadTokens > 0 {
		why = "the thread's first call: the prompt's start (system prompt, tools, and anchored memory that renders\n" +
			"      the same bytes) is what an earlier thread sent, so it is read from the cache; the rest is written once"
	}
	if c.UncachedTokens > 0 {
		why += "\n      (all but the part after the last cache breakpoint, which is never cached)"
	}
	return why
}

func (p *printer) round(r int, round agent.Round) {
	v := round.View
	if !p.prefixShown {
		p.prefixShown = true
		sys, tools := prefixTokens(v, p.o)
		verdict := "over"
		if sys+tools < cachesim.DefaultAnthropicMinTokens {
			verdict = "UNDER (so the first breakpoint caches nothing)"
		}
		p.printf("  (the cached front: system prompt %d + tool schemas %d = %d tokens, %s Anthropic's 1,024-token minimum)\n",
			sys, tools, sys+tools, verdict)
	}
	if p.o.Views {
		printView(p.w, v)
	}
	if cu := v.Usage.Compaction; cu != nil && cu.Compacted {
		p.printf("  ** compaction: this view would have passed %d%% of the %d-token window, so the history before its %d newest\n"+
			"     items (log items 0-%d) was folded into one %d-token summary, compaction %d of the thread. The log keeps\n"+
			"     every item; the system prompt and tools stay cached, the history after them is written once anew.\n",
			int(demoThreshold*100), demoWindow, demoKeep, cu.Folded-1, cu.SummaryTokens, cu.Count)
	}
	c := round.Cache
	line := fmt.Sprintf("  call %d: view %d tok; cache read %d, write %d, uncached %d", r+1, v.Usage.Total, c.ReadTokens, c.WriteTokens, c.UncachedTokens)
	if ep := v.Usage.Epoch; ep != nil {
		line += fmt.Sprintf("; epoch %s age %d", ep.ID, ep.Age)
		if ep.Reanchored {
			line += fmt.Sprintf(" (re-anchored: %s)", ep.ReanchorReason)
			if why := reanchorText(ep.ReanchorReason, c); why != "" {
				line += "\n      why: " + why
			}
		}
	}
	p.printf("%s\n", line)
	for _, it := range round.Output {
		if it.Type == core.TypeFunctionCall {
			p.printf("  tool:  %s %s\n", it.Name, it.Arguments)
		}
	}
	for _, it := range round.ToolOutputs {
		p.printf("      -> %s\n", strings.ReplaceAll(it.Output, "\n", "\n         "))
	}
}

// prefixTokens counts the system band and the tool schemas as the offline
// model does (provider/scripted.Request): the part of the prompt the first
// cache breakpoint covers.
func prefixTokens(v *core.View, o options) (sys, tools int) {
	for _, it := range v.Band(core.BandSystem) {
		sys += o.Tokenizer.Count(it.Text()) + core.ItemOverhead
	}
	for _, t := range v.Tools {
		tools += o.Tokenizer.Count(t.Name+" "+t.Description+" "+string(t.Parameters)) + core.ItemOverhead
	}
	return sys, tools
}

// tally adds up the cache figures of the run.
type tally struct {
	calls                 int
	read, write, uncached int
	compactions           int
	rebill                int
	threads               []string
}

func (t *tally) add(r agent.Round) {
	t.calls++
	t.read += r.Cache.ReadTokens
	t.write += r.Cache.WriteTokens
	t.uncached += r.Cache.UncachedTokens
	if cu := r.View.Usage.Compaction; cu != nil && cu.Compacted {
		t.compactions++
	}
}

// endVisit takes the visit's rebill estimate from its last view: each
// layer's RebillTokens adds up, over the run, what its changes would
// have re-billed had it been rendered in place.
func (t *tally) endVisit(thread string, last *core.View) {
	t.threads = append(t.threads, thread)
	if last == nil {
		return
	}
	for _, l := range last.Usage.Layers {
		t.rebill += l.RebillTokens
	}
}

func (p *printer) summary(t *tally) {
	prices := cachesim.AnthropicPrices()
	total := t.read + t.write + t.uncached
	billed := float64(t.read)*prices.CacheReadMult + float64(t.write)*prices.CacheWrite5mMult + float64(t.uncached)
	// One band: every layer rendered in place on every call. Each change
	// then re-bills the prefix behind it: those tokens are written again
	// instead of read.
	single := billed + float64(t.rebill)*(prices.CacheWrite5mMult-prices.CacheReadMult)
	dollars := func(tok float64) string { return fmt.Sprintf("$%.4f", tok*prices.InputPerMTok/1e6) }
	fmt.Fprintf(p.w, "\n=== summary ===\n")
	fmt.Fprintf(p.w, "%d model calls over %d visits sent %d prompt tokens: %d read from the cache, %d written to it, %d uncached",
		t.calls, len(t.threads), total, t.read, t.write, t.uncached)
	if p.o.Simulated {
		fmt.Fprint(p.w, " (simulated)")
	}
	fmt.Fprintln(p.w, ".")
	fmt.Fprintf(p.w, "Billed at Anthropic's multipliers (read 0.1x, write 1.25x) that is %.0f input-token equivalents (%s at $%g per million),\n",
		billed, dollars(billed), prices.InputPerMTok)
	fmt.Fprintf(p.w, "  against %d without any cache (%s): %.0f%% of the uncached price.\n", total, dollars(float64(total)), 100*billed/float64(max(total, 1)))
	fmt.Fprintf(p.w, "With the layers in one band re-rendered on every call, their changes would have re-written about %d more tokens\n", t.rebill)
	fmt.Fprintf(p.w, "  (the layers' RebillTokens estimates): about %.0f equivalents (%s), %.1fx what the pinned bands cost.\n",
		single, dollars(single), single/max(billed, 1))
	if t.compactions > 0 {
		fmt.Fprintf(p.w, "History was compacted %d time(s): one summary each, logged as an event; the log keeps every item.\n", t.compactions)
	}
}

// lookBack reads the plan records of the first visit and shows what the
// model was sent on one of its turns: the turn after the compaction when
// there was one, else the third.
func (p *printer) lookBack(ctx context.Context, st storage.Store, t *tally) error {
	if len(t.threads) == 0 {
		return nil
	}
	thread := t.threads[0]
	list, err := inspect.ListAssemblies(ctx, st, p.o.Resource, thread)
	if err != nil {
		return fmt.Errorf("list the plan records of %s: %w", thread, err)
	}
	if len(list) == 0 {
		return nil
	}
	pick := list[min(2, len(list)-1)].Turn
	for i, s := range list {
		rec, err := inspect.ReadAssembly(ctx, st, p.o.Resource, thread, s.Turn)
		if err != nil {
			return err
		}
		if cu := rec.Usage.Compaction; cu != nil && cu.Compacted && i+1 < len(list) {
			pick = list[i+1].Turn
			break
		}
	}
	rec, err := inspect.ReadAssembly(ctx, st, p.o.Resource, thread, pick)
	if err != nil {
		return err
	}
	fmt.Fprintf(p.w, "\n=== looking back: what the model was sent on turn %d of %s (from the plan records) ===\n", pick, thread)
	fmt.Fprintf(p.w, "The runtime recorded all %d assemblies of the thread (Config.AssemblyRetention 200). Turn %d:\n", len(list), pick)
	for _, b := range rec.Bands {
		fmt.Fprintf(p.w, "  [%s] %d tokens\n", b.Band, b.Tokens)
		for _, it := range b.Items {
			fmt.Fprintf(p.w, "      %s\n", clip(describe(it), 100))
		}
	}
	if c := rec.Cache; c != nil {
		fmt.Fprintf(p.w, "  cache of that call: read %d, write %d, uncached %d\n", c.ReadTokens, c.WriteTokens, c.UncachedTokens)
	}
	fmt.Fprintf(p.w, "Every turn in full, with the plan (kept, cut and summarised history, segment hashes, per-layer usage):\n")
	fmt.Fprintf(p.w, "  go run ./cmd/memctl --store %s inspect %s -r %s --list\n", p.o.Dir, thread, p.o.Resource)
	fmt.Fprintf(p.w, "  go run ./cmd/memctl --store %s inspect %s -r %s --turn %d\n", p.o.Dir, thread, p.o.Resource, pick)
	fmt.Fprintf(p.w, "and the memories themselves: go run ./cmd/memctl --store %s ls -r %s\n", p.o.Dir, p.o.Resource)
	return nil
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}

// printView shows a view band by band, what was published this turn, and
// the per-layer usage report.
func printView(w io.Writer, v *core.View) {
	fmt.Fprintf(w, "\n  --- view %d: %d items, %d tokens ---\n", v.Usage.Turn+1, v.Len(), v.Usage.Total)
	for _, b := range []core.Band{core.BandSystem, core.BandAnchor, core.BandHistory, core.BandLive, core.BandUpdates, core.BandTail} {
		items := v.Band(b)
		if len(items) == 0 {
			continue
		}
		fmt.Fprintf(w, "  [%s] %d tokens\n", b, v.Usage.BandTokens[b])
		for _, it := range items {
			if b == core.BandLive {
				// What recall found this turn, in full: the point of
				// the demo.
				fmt.Fprintf(w, "      %s\n", strings.ReplaceAll(describe(it), "\n", "\n      "))
				continue
			}
			fmt.Fprintf(w, "      %s\n", clip(describe(it), 110))
		}
	}
	for _, it := range v.Updates() {
		fmt.Fprintf(w, "  published this turn: %s\n", strings.ReplaceAll(it.Text(), "\n", "\n      "))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "    layer\tslot\tband\tserved\ttokens/budget\tchurn")
	for _, l := range v.Usage.Layers {
		budget := fmt.Sprint(l.Budget)
		if l.Budget == core.Unlimited {
			budget = "auto"
		}
		fmt.Fprintf(tw, "    %s\t%d\t%s\t%s\t%d/%s\t%.2f\n", l.LayerID, l.Slot, l.Band, l.Served, l.Tokens, budget, l.ChurnRate)
	}
	tw.Flush()
	for _, d := range v.Usage.Diagnostics {
		fmt.Fprintf(w, "    diagnostic: %s %s %s: %s\n", d.Layer, d.Hook, d.Kind, d.Message)
	}
}

func describe(it core.Item) string {
	switch it.Type {
	case core.TypeFunctionCall:
		return fmt.Sprintf("call %s %s", it.Name, it.Arguments)
	case core.TypeFunctionCallOutput:
		return "output " + it.Output
	}
	return fmt.Sprintf("%s: %s", it.Role, it.Text())
}
