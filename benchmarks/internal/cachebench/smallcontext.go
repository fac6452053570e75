package cachebench

import (
	"fmt"
	"strings"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/history"
	"github.com/stratamem/strata/pricing"
)

// SmallContextWorkload is the name of the small-context workload.
const SmallContextWorkload = "small-context"

// SmallWindow is the small-context workload's history window: the last 20
// messages, as a popular framework's memory configures it.
const SmallWindow = 20

// The history-window strategies, run on workloads with a HistoryWindow:
// the window as layers/history caps it today (watermark rule, cut back to
// half in one step) at 20, 28 and 40 items, a sliding window at 20 items
// (cut one item per turn), and the cost rule (layers/history's default) at
// 20 items. WindowOptimum is the offline optimum of the 20-item window:
// dynamic programming over the cut points of the same conversation and
// layout (see SmallContext in the package doc).
const (
	AnchoredWindow20      Strategy = "anchored+window-20"
	AnchoredWindow28      Strategy = "anchored+window-28"
	AnchoredWindow40      Strategy = "anchored+window-40"
	AnchoredWindowSliding Strategy = "anchored+window-20-sliding"
	AnchoredWindowCost    Strategy = "anchored+window-20-cost"
	WindowOptimum         Strategy = "window-20-dp-optimum"
)

// The cache-lifetime strategies, run on workloads whose user pauses
// (Workload.Pauses): strata's anchored default with the extended lifetime
// on every request (Anthropic's 1-hour breakpoints, OpenAI's 24-hour
// retention), and with the lifetime chosen by cost for each burst
// (pricing.Model.BestTTL over the pause the host expects after it).
const (
	AnchoredTTLLong Strategy = "anchored+ttl-long"
	AnchoredTTLCost Strategy = "anchored+ttl-by-cost"
)

// windowStrategies lists the history-window strategies in report order.
func windowStrategies() []Strategy {
	return []Strategy{AnchoredWindow20, AnchoredWindow28, AnchoredWindow40, AnchoredWindowSliding, AnchoredWindowCost}
}

func isWindow(s Strategy) bool {
	for _, w := range windowStrategies() {
		if s == w {
			return true
		}
	}
	return false
}

func isTTL(s Strategy) bool { return s == AnchoredTTLLong || s == AnchoredTTLCost }

// windowOptions are the history layer options of window strategy s over
// a window of base items, priced for provider p with prefix tokens ahead
// of history.
func windowOptions(s Strategy, base int, p Provider, prefix int) history.Options {
	opts := history.Options{MaxItems: base}
	switch s {
	case AnchoredWindow20:
		opts.LowWatermark = 0.5
	case AnchoredWindow28:
		opts.MaxItems, opts.LowWatermark = base*7/5, 0.5
	case AnchoredWindow40:
		opts.MaxItems, opts.LowWatermark = base*2, 0.5
	case AnchoredWindowSliding:
		// A step of one item: (1-0.99)*20 rounds up to 1.
		opts.LowWatermark = 0.99
	case AnchoredWindowCost:
		opts.Model, opts.PrefixTokens = p.Model(), prefix
	}
	return opts
}

// windowLayer is the history layer of window strategy s (windowOptions).
func windowLayer(s Strategy, base int, p Provider, prefix int) (core.AnyLayer, error) {
	l, err := history.Layer(windowOptions(s, base, p, prefix))
	if err != nil {
		return nil, fmt.Errorf("cachebench: window %s: %w", s, err)
	}
	return l, nil
}

// cutHint is the host side of the cost rule: before assembling, it works
// out from the log whether the history layer will move its front
// (history.Front is a pure function of the log), and when it will while
// the prefix ahead of history is under the model's minimum (so the cut
// rewrites the whole prompt anyway) it tells the runtime the cache is lost
// for this request (Session.ExpectColdCache). The epoch then re-anchors on
// the cut itself, folding the drifted pins into the write the cut pays
// anyway, instead of reporting a first-round miss and re-anchoring, with a
// second full write, on the next request.
type cutHint struct {
	opts    history.Options
	min     int
	front   int
	items   []core.Item
	tokens  []int
	enabled bool
}

func newCutHint(s Strategy, p Provider, prefix int) *cutHint {
	if s != AnchoredWindowCost {
		return &cutHint{}
	}
	return &cutHint{opts: windowOptions(s, SmallWindow, p, prefix), min: p.Pricing().MinPrefix, enabled: true}
}

func (h *cutHint) note(items []core.Item, tokens func(core.Item) int) {
	if !h.enabled {
		return
	}
	for _, it := range items {
		h.items = append(h.items, it)
		h.tokens = append(h.tokens, tokens(it))
	}
}

// cold reports whether the next assembly cuts history with the prefix
// ahead of it (prefix tokens, from the previous view) under the minimum.
func (h *cutHint) cold(prefix int) bool {
	if !h.enabled {
		return false
	}
	f := history.Front(h.items, func(i int) int { return h.tokens[i] }, h.opts)
	moved := f != h.front
	h.front = f
	return moved && prefix < h.min
}

// Model is the model id the provider's requests name.
func (p Provider) Model() string {
	if p == OpenAI {
		return OpenAIModel
	}
	return AnthropicModel
}

// Pricing is the provider's model in the price table (package pricing).
func (p Provider) Pricing() pricing.Model {
	m, _ := pricing.Default().Lookup(p.Model())
	return m
}

func smallContextWorkload() Workload {
	return Workload{
		Name:  SmallContextWorkload,
		Title: "Small-context personal assistant",
		Description: "A 200-turn personal-assistant chat laid out as a popular TypeScript framework's memory configures it: a system prompt " +
			"and two tools of about 970 tokens together (under Anthropic's 1,024-token minimum), a working memory the model rewrites " +
			"every 5th turn through its function (auto), semantic recall of two earlier messages on every turn (live), and a window of " +
			"the last 20 messages (layers/history MaxItems 20). One turn in six looks something up (search_docs). The user steps away " +
			"twice, for 12 and 25 minutes, before turns 70 and 140.",
		Turns: 200, Seed: 0x5eed0005, HistoryWindow: SmallWindow,
		Pauses: true,
		build:  buildSmallContext,
	}
}

// smallSystem is a personal assistant's system prompt of about words
// words: who it is, how it writes, what it does with memory.
func smallSystem(g *gen, words int) string {
	var b strings.Builder
	b.WriteString("You are a personal assistant for one person. Keep track of their plans, preferences and commitments, and help them get through their day.\n")
	for n := 1; b.Len() < words*6; n++ {
		fmt.Fprintf(&b, "- %s\n", g.prose(g.between(14, 30)))
	}
	return strings.TrimRight(b.String(), "\n")
}

func buildSmallContext(seed uint64, turns int) *script {
	g := newGen(seed, 5)
	w := &world{corpus: makeCorpus(g, 40)}
	// The recall store: short messages from earlier conversations.
	var recalled []passage
	for range 120 {
		recalled = append(recalled, passage{title: title(g.pick(nouns)), text: g.prose(g.between(12, 30))})
	}
	w.recalled = recalled
	s := &script{start: scriptStart, world: w,
		system: smallSystem(g, 790),
		tools:  hostTools("search_docs"),
		layers: []layerDef{scratchpadLayer(core.PlacementAuto), recallLayer()}}
	var id ids
	for t := range turns {
		tr := turn{gap: g.seconds(20, 90), user: g.prose(g.between(8, 30))}
		switch t {
		case turns * 7 / 20:
			tr.gap = 12 * time.Minute
		case turns * 7 / 10:
			tr.gap = 25 * time.Minute
		}
		hits := g.hits(len(recalled), 2)
		tr.before = func(w *world) { w.recall = hits }
		var calls []call
		if t%5 == 4 {
			calls = append(calls, workingMemoryCall(g, id.next(), t/5))
		}
		if g.chance(1.0 / 6) {
			calls = append(calls, searchCall(id.next(), g.pick(adjs)+" "+g.pick(nouns), g.hits(len(w.corpus), 2)))
		}
		g.finish(&tr, calls, g.between(25, 70))
		s.turns = append(s.turns, tr)
	}
	return s
}

// workingMemoryCall rewrites the working memory: a short profile that
// grows over the conversation (a name, preferences, open items).
func workingMemoryCall(g *gen, id string, step int) call {
	notes := []string{"# User profile", "- Name: " + g.pick(names)}
	for range min(2+step/8, 6) {
		notes = append(notes, "- "+strings.TrimSuffix(g.sentence(g.between(4, 8)), "."))
	}
	return call{id: id, name: "scratchpad/write", tool: 0, args: constArgs(jsonArgs(map[string]any{"notes": notes}))}
}

// recallLayer shows the earlier messages semantic recall found for this
// turn: new ones on every turn, so it declares the live band.
func recallLayer() layerDef {
	return layerDef{id: "recall", slot: core.SlotRAG, placement: core.PlacementLive,
		render: func(w *world) string {
			if len(w.recall) == 0 {
				return ""
			}
			var b strings.Builder
			b.WriteString("<recalled_messages>\n")
			for _, i := range w.recall {
				fmt.Fprintf(&b, "- (%s) %s\n", w.recalled[i].title, w.recalled[i].text)
			}
			b.WriteString("</recalled_messages>")
			return b.String()
		}}
}
