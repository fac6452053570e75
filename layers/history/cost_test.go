package history_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/history"
	"github.com/stratamem/strata/pricing"
)

// chat is a log of n alternating user and assistant messages.
func chat(n int) []core.Item {
	log := make([]core.Item, n)
	for i := range log {
		if i%2 == 0 {
			log[i] = core.UserMessage(fmt.Sprint("q", i))
		} else {
			log[i] = core.AssistantMessage(fmt.Sprint("a", i))
		}
	}
	return log
}

// The watermark rule cuts 20 items of 60 tokens back to 10 (600 tokens),
// under the 1,024-token minimum, so nothing is cached until history grows
// back. The cost rule keeps enough to stay cacheable: every cut leaves at
// least 1,024 tokens, while never showing more than 20 items.
func TestCostCutKeepsThePrefixCacheable(t *testing.T) {
	log := chat(200)
	toks := func(int) int { return 60 }
	cost := history.Options{MaxItems: 20, Model: "claude-sonnet-4-5"}
	water := history.Options{MaxItems: 20, LowWatermark: 0.5}
	under := map[string]int{}
	for _, c := range []struct {
		name string
		opts history.Options
	}{{"cost", cost}, {"watermark", water}} {
		prev := 0
		for n := 1; n <= len(log); n++ {
			f := history.Front(log[:n], toks, c.opts)
			if shown := n - f; shown > 20 {
				t.Fatalf("%s: %d items shown at n=%d, over MaxItems 20", c.name, shown, n)
			}
			if f != prev && (n-f)*60 < 1024 {
				under[c.name]++
			}
			prev = f
		}
	}
	if under["cost"] != 0 {
		t.Fatalf("cost rule left the prefix under the minimum after %d cuts", under["cost"])
	}
	if under["watermark"] == 0 {
		t.Fatal("the watermark rule never went under the minimum: the test no longer tells the rules apart")
	}
	// With the tools and system prompt ahead of history (970 tokens) a
	// shallow history is enough, and the cut goes back to the floor
	// (half the cap) instead.
	cost.PrefixTokens = 970
	if f := history.Front(log[:21], toks, cost); 21-f != 10 {
		t.Fatalf("with a 970-token prefix the cut keeps %d items, want 10 (the floor)", 21-f)
	}
	// A larger minimum (Opus 4.5: 4,096) cannot be reached under the cap:
	// the cut then keeps what makes the prefix cacheable again soonest,
	// and still never exceeds the cap.
	opus := history.Options{MaxItems: 20, Model: "claude-opus-4-5", PrefixTokens: 970}
	for n := 1; n <= 100; n++ {
		if f := history.Front(log[:n], toks, opus); n-f > 20 {
			t.Fatalf("opus: %d shown", n-f)
		}
	}
}

// randomLog builds a log of user turns, parallel tool rounds and replies
// with random token sizes.
func randomLog(r *rand.Rand, turns int) ([]core.Item, []int) {
	var log []core.Item
	var toks []int
	add := func(it core.Item, n int) { log = append(log, it); toks = append(toks, n) }
	id := 0
	for range turns {
		add(core.UserMessage("u"), 10+r.IntN(200))
		for range r.IntN(3) {
			k := 1 + r.IntN(3)
			ids := make([]string, k)
			for j := range ids {
				id++
				ids[j] = fmt.Sprint("c", id)
				add(core.FunctionCall(ids[j], "f", "{}"), 20+r.IntN(30))
			}
			for _, j := range r.Perm(k) {
				add(core.FunctionCallOutput(ids[j], "o"), 10+r.IntN(3000))
			}
		}
		add(core.AssistantMessage("a"), 20+r.IntN(400))
	}
	return log, toks
}

// The hard limits hold exactly on every prefix of random logs, for every
// combination of caps: no more items than MaxItems and no more tokens than
// MaxTokens, unless the newest item (with the call it answers) alone
// breaks them, in which case exactly it is shown. No output is ever shown
// without its call.
func TestCostCutHonoursHardLimits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for trial := range 18 {
		log, toks := randomLog(r, 30)
		tokensOf := func(i int) int { return toks[i] }
		opts := history.Options{Model: "claude-sonnet-4-5", PrefixTokens: r.IntN(2000)}
		switch trial % 3 {
		case 0:
			opts.MaxItems = 4 + r.IntN(40)
		case 1:
			opts.MaxTokens = 2000 + r.IntN(20000)
		default:
			opts.MaxItems, opts.MaxTokens = 4+r.IntN(40), 2000+r.IntN(20000)
		}
		for n := 1; n <= len(log); n++ {
			f := history.Front(log[:n], tokensOf, opts)
			if o := shownOrphans(log[:n], f); len(o) > 0 {
				t.Fatalf("trial %d n=%d: outputs %v without their calls", trial, n, o)
			}
			items, tk := n-f, 0
			for i := f; i < n; i++ {
				tk += toks[i]
			}
			if (opts.MaxItems > 0 && items > opts.MaxItems) || (opts.MaxTokens > 0 && tk > opts.MaxTokens) {
				// Only allowed when the newest block alone breaks the cap:
				// the newest item, the call it answers, and every call
				// whose output the block shows.
				newest := n - 1
				for newest > 0 && log[newest].Type == core.TypeFunctionCallOutput {
					newest--
				}
				for newest > 0 && len(shownOrphans(log[:n], newest)) > 0 {
					newest--
				}
				if f > newest {
					t.Fatalf("trial %d n=%d: front %d past the newest block at %d", trial, n, f, newest)
				}
				blk, bt := n-newest, 0
				for i := newest; i < n; i++ {
					bt += toks[i]
				}
				if (opts.MaxItems == 0 || blk <= opts.MaxItems) && (opts.MaxTokens == 0 || bt <= opts.MaxTokens) {
					t.Fatalf("trial %d n=%d (%+v): %d items / %d tokens shown, over the limits though the newest block fits",
						trial, n, opts, items, tk)
				}
			}
		}
	}
}

// Same log, same front, every time; the front moves only forward and only
// when keeping it would break a limit, now or on the next request: between
// cuts it holds still, so the prompt cache keeps hitting.
func TestCostCutDeterministicAndStill(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 3))
	log, toks := randomLog(r, 80)
	tokensOf := func(i int) int { return toks[i] }
	opts := history.Options{MaxTokens: 12000, Model: "gpt-5", PrefixTokens: 500}
	prev, moves := 0, 0
	for n := 1; n <= len(log); n++ {
		f := history.Front(log[:n], tokensOf, opts)
		if again := history.Front(log[:n], tokensOf, opts); again != f {
			t.Fatalf("n=%d: front %d then %d for the same log", n, f, again)
		}
		if f < prev {
			t.Fatalf("n=%d: front went back from %d to %d", n, prev, f)
		}
		if f != prev {
			moves++
			tk := 0
			for i := prev; i < n; i++ {
				tk += toks[i]
			}
			// Forced now, or (an early cut) by the next request's
			// growth at the log's mean rate.
			total, requests := 0, 0
			for i := 0; i < n; i++ {
				total += toks[i]
				if m := log[i].Type == core.TypeFunctionCall || log[i].Role == core.RoleAssistant; m && (i == 0 || !(log[i-1].Type == core.TypeFunctionCall || log[i-1].Role == core.RoleAssistant)) {
					requests++
				}
			}
			if growth := total / max(requests, 1); tk+growth <= opts.MaxTokens {
				t.Fatalf("n=%d: front moved from %d to %d though history[%d:] fits (%d tokens) with room for a request's growth (%d)", n, prev, f, prev, tk, growth)
			}
		}
		prev = f
	}
	if moves == 0 || moves > len(log)/4 {
		t.Fatalf("front moved %d times over %d items", moves, len(log))
	}
}

func TestCycleCost(t *testing.T) {
	sonnet, _ := pricing.Default().Lookup("claude-sonnet-4-5")
	cm := history.CostModel{Model: sonnet}
	// Under the minimum everything is uncached: 500 tokens, twice.
	if got := cm.CycleCost(500, 0, 2); got != 500 {
		t.Fatalf("under the minimum: %v", got)
	}
	// 2000 kept, no growth, 2 requests: one write (2500), one read (200).
	if got := cm.CycleCost(2000, 0, 2); got != (2500+200)/2.0 {
		t.Fatalf("write then read: %v", got)
	}
	// A prefix under the minimum ahead of history is rewritten with it.
	cm.PrefixTokens = 900
	if got := cm.CycleCost(2000, 0, 1); got != 1.25*2900 {
		t.Fatalf("short prefix rewritten: %v", got)
	}
	// The 1-hour lifetime prices the write at 2x.
	cm.TTL = pricing.TTL1h
	if got := cm.CycleCost(2000, 0, 1); got != 2*2900 {
		t.Fatalf("1h write: %v", got)
	}
}

func TestCostOptionsErrors(t *testing.T) {
	for _, o := range []history.Options{{MaxItems: 5, MinShare: 1.5}, {MaxItems: 5, MinShare: -0.1}, {MaxItems: 5, PrefixTokens: -1}} {
		var ce *core.ConfigError
		if _, err := history.Layer(o); !errors.As(err, &ce) {
			t.Errorf("%+v: err = %v", o, err)
		}
	}
}
