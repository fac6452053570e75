package cachesim

import (
	"errors"
	"math"
	"strconv"
	"testing"
	"time"
)

func TestAnthropicIdenticalRequestHitsBreakpoint(t *testing.T) {
	a := newAnthropic(t, AnthropicOptions{})
	req := []Block{bp(blk("system", 2000)), bp(blk("history", 1000)), blk("user", 300)}

	u := send(t, a, t0, sonnet, req...)
	want(t, "first", u, 0, 3000, 0, 300)
	u = send(t, a, t0.Add(time.Minute), sonnet, req...)
	want(t, "second", u, 3000, 0, 0, 300)
}

// A system breakpoint plus a rolling breakpoint on the last of 32 blocks: the
// last block's change is 31 blocks from the system entry, out of the rolling
// breakpoint's lookback, so only the system breakpoint's own prefix is read.
func TestAnthropicLastBlockChangeReadsEarlierBreakpoint(t *testing.T) {
	a := newAnthropic(t, AnthropicOptions{})
	sys := bp(blk("system", 2000))
	hist := run("h", 30, 100)
	first := cat([]Block{sys}, hist, []Block{bp(blk("last-1", 200))})
	second := cat([]Block{sys}, hist, []Block{bp(blk("last-2", 200))})

	want(t, "first", send(t, a, t0, sonnet, first...), 0, 5200, 0, 0)
	want(t, "last block changed", send(t, a, t0.Add(time.Minute), sonnet, second...), 2000, 3200, 0, 0)
	want(t, "repeat of second", send(t, a, t0.Add(2*time.Minute), sonnet, second...), 5200, 0, 0, 0)
}

func TestAnthropicEarlyChangeWritesEverything(t *testing.T) {
	a := newAnthropic(t, AnthropicOptions{})
	hist := run("h", 30, 100)
	last := bp(blk("last", 200))
	first := cat([]Block{bp(blk("system", 2000))}, hist, []Block{last})
	changedSys := cat([]Block{bp(blk("system v2", 2000))}, hist, []Block{last})

	want(t, "first", send(t, a, t0, sonnet, first...), 0, 5200, 0, 0)
	want(t, "system changed", send(t, a, t0.Add(time.Minute), sonnet, changedSys...), 0, 5200, 0, 0)

	// A change in the middle keeps only the breakpoint before it.
	mid := cat([]Block{bp(blk("system", 2000))}, hist[:10], []Block{blk("h10 edited", 100)}, hist[11:], []Block{last})
	want(t, "middle changed", send(t, a, t0.Add(2*time.Minute), sonnet, mid...), 2000, 3200, 0, 0)
}

func TestAnthropicBreakpointLimit(t *testing.T) {
	a := newAnthropic(t, AnthropicOptions{})
	five := []Block{bp(blk("a", 1100)), bp(blk("b", 10)), bp(blk("c", 10)), bp(blk("d", 10)), blk("x", 5), bp(blk("e", 10))}
	_, err := a.Send(Request{At: t0, Model: sonnet, Blocks: five})
	if !errors.Is(err, ErrTooManyBreakpoints) {
		t.Fatalf("5 breakpoints: err = %v, want ErrTooManyBreakpoints", err)
	}
	var re *RequestError
	if !errors.As(err, &re) || re.Block != 5 {
		t.Fatalf("5 breakpoints: err = %#v, want *RequestError at block 5 (the fifth breakpoint)", err)
	}

	// The rejected request cached nothing; four breakpoints are accepted.
	four := five[:5]
	want(t, "four after rejected five", send(t, a, t0, sonnet, four...), 0, 1130, 0, 5)
	want(t, "four again", send(t, a, t0.Add(time.Second), sonnet, four...), 1130, 0, 0, 5)

	two := newAnthropic(t, AnthropicOptions{MaxBreakpoints: 2})
	if _, err := two.Send(Request{At: t0, Model: sonnet, Blocks: five[:3]}); !errors.Is(err, ErrTooManyBreakpoints) {
		t.Fatalf("MaxBreakpoints 2, 3 breakpoints: err = %v", err)
	}
}

func TestAnthropicMinimumCacheablePrefix(t *testing.T) {
	a := newAnthropic(t, AnthropicOptions{})
	short := bp(blk("short", 1023))
	want(t, "1023 first", send(t, a, t0, sonnet, short), 0, 0, 0, 1023)
	want(t, "1023 again: never cached", send(t, a, t0.Add(time.Second), sonnet, short), 0, 0, 0, 1023)

	exact := bp(blk("exact", 1024))
	want(t, "1024 first", send(t, a, t0.Add(2*time.Second), sonnet, exact), 0, 1024, 0, 0)
	want(t, "1024 again", send(t, a, t0.Add(3*time.Second), sonnet, exact), 1024, 0, 0, 0)

	// A too-short first breakpoint is covered by a later long enough one,
	// but its own prefix never becomes an entry.
	head := bp(blk("head", 800))
	want(t, "short+long", send(t, a, t0.Add(4*time.Second), sonnet, head, bp(blk("tail-1", 900)), blk("q", 50)), 0, 1700, 0, 50)
	want(t, "short+other tail", send(t, a, t0.Add(5*time.Second), sonnet, head, bp(blk("tail-2", 900))), 0, 1700, 0, 0)
}

func TestAnthropicMinimumPerModel(t *testing.T) {
	a := newAnthropic(t, AnthropicOptions{MinCacheableTokens: map[string]int{
		"claude-3-5-haiku": 2048,
		"claude":           1500,
	}})
	for model, min := range map[string]int{
		"claude-3-5-haiku-20241022": 2048, // longest key wins
		"claude-opus-4-1":           1500,
		"gpt-5":                     1024, // default
	} {
		if got := a.MinCacheableTokens(model); got != min {
			t.Errorf("MinCacheableTokens(%q) = %d, want %d", model, got, min)
		}
	}
	b := bp(blk("doc", 2000))
	want(t, "haiku 2000 < 2048", send(t, a, t0, "claude-3-5-haiku-20241022", b), 0, 0, 0, 2000)
	want(t, "opus 2000 >= 1500", send(t, a, t0, "claude-opus-4-1", b), 0, 2000, 0, 0)
}

func TestAnthropicLookback(t *testing.T) {
	sys := bp(blk("system", 2000))
	// The second request has only the rolling breakpoint, m blocks after the
	// system block's entry: found at m = 20, not at m = 21.
	for _, tc := range []struct {
		m                 int
		read, write, unca int
	}{
		{m: 20, read: 2000, write: 2000},
		{m: 21, read: 0, write: 4100},
	} {
		a := newAnthropic(t, AnthropicOptions{})
		send(t, a, t0, sonnet, sys)
		hist := run("h", tc.m, 100)
		hist[tc.m-1] = bp(hist[tc.m-1])
		second := cat([]Block{blk("system", 2000)}, hist)
		want(t, "lookback "+strconv.Itoa(tc.m), send(t, a, t0.Add(time.Second), sonnet, second...), tc.read, tc.write, 0, 0)
	}

	// With its own breakpoint the system prefix is found however far back.
	a := newAnthropic(t, AnthropicOptions{})
	send(t, a, t0, sonnet, sys)
	hist := run("h", 21, 100)
	hist[20] = bp(hist[20])
	want(t, "21 back, own breakpoint", send(t, a, t0.Add(time.Second), sonnet, cat([]Block{sys}, hist)...), 2000, 2100, 0, 0)

	// The window is configurable.
	for m, read := range map[int]int{5: 2000, 6: 0} {
		a := newAnthropic(t, AnthropicOptions{LookbackBlocks: 5})
		send(t, a, t0, sonnet, sys)
		hist := run("h", m, 100)
		hist[m-1] = bp(hist[m-1])
		u := send(t, a, t0.Add(time.Second), sonnet, cat([]Block{blk("system", 2000)}, hist)...)
		want(t, "lookback 5, m="+strconv.Itoa(m), u, read, 2000+100*m-read, 0, 0)
	}
}

// The usual agent loop: one breakpoint on the last block, moving forward each
// turn. The lookback finds the previous turn's entry.
func TestAnthropicRollingBreakpoint(t *testing.T) {
	a := newAnthropic(t, AnthropicOptions{})
	turn1 := cat([]Block{blk("system", 2000)}, run("h", 10, 100))
	turn1[10] = bp(turn1[10])
	want(t, "turn 1", send(t, a, t0, sonnet, turn1...), 0, 3000, 0, 0)

	turn2 := cat([]Block{blk("system", 2000)}, run("h", 20, 100))
	turn2[20] = bp(turn2[20])
	want(t, "turn 2", send(t, a, t0.Add(time.Minute), sonnet, turn2...), 3000, 1000, 0, 0)
}

func TestAnthropicTTLExpiry(t *testing.T) {
	req := []Block{bp(blk("system", 2000)), blk("user", 100)}

	a := newAnthropic(t, AnthropicOptions{})
	send(t, a, t0, sonnet, req...)
	want(t, "at 5m0s", send(t, a, t0.Add(5*time.Minute), sonnet, req...), 2000, 0, 0, 100)

	a = newAnthropic(t, AnthropicOptions{})
	send(t, a, t0, sonnet, req...)
	want(t, "at 5m1s", send(t, a, t0.Add(5*time.Minute+time.Second), sonnet, req...), 0, 2000, 0, 100)

	// Each hit restarts the 5 minutes.
	a = newAnthropic(t, AnthropicOptions{})
	send(t, a, t0, sonnet, req...)
	want(t, "hit at 4m", send(t, a, t0.Add(4*time.Minute), sonnet, req...), 2000, 0, 0, 100)
	at := t0.Add(8*time.Minute + 59*time.Second)
	want(t, "hit at 8m59s (refreshed)", send(t, a, at, sonnet, req...), 2000, 0, 0, 100)
	want(t, "miss 5m1s after last hit", send(t, a, at.Add(5*time.Minute+time.Second), sonnet, req...), 0, 2000, 0, 100)
}

func TestAnthropicOneHourTTL(t *testing.T) {
	long := []Block{bp1h(blk("system", 2000)), blk("user", 100)}
	a := newAnthropic(t, AnthropicOptions{})
	want(t, "1h write", send(t, a, t0, sonnet, long...), 0, 0, 2000, 100)
	want(t, "1h at 30m", send(t, a, t0.Add(30*time.Minute), sonnet, long...), 2000, 0, 0, 100)
	at := t0.Add(30*time.Minute + time.Hour + time.Second)
	want(t, "1h at 1h1s after last hit", send(t, a, at, sonnet, long...), 0, 0, 2000, 100)

	short := []Block{bp(blk("system", 2000)), blk("user", 100)}
	a = newAnthropic(t, AnthropicOptions{})
	send(t, a, t0, sonnet, short...)
	want(t, "5m at 30m", send(t, a, t0.Add(30*time.Minute), sonnet, short...), 0, 2000, 0, 100)
}

func TestAnthropicMixedTTLBillingAndOrder(t *testing.T) {
	a := newAnthropic(t, AnthropicOptions{})
	_, err := a.Send(Request{At: t0, Model: sonnet, Blocks: []Block{bp(blk("a", 2000)), bp1h(blk("b", 1000))}})
	var re *RequestError
	if !errors.Is(err, ErrTTLOrder) || !errors.As(err, &re) || re.Block != 1 {
		t.Fatalf("5m then 1h: err = %v, want ErrTTLOrder at block 1", err)
	}

	// Default prices: $3/MTok, 5m write 1.25x, 1h write 2x, read 0.1x.
	u := send(t, a, t0, sonnet, bp1h(blk("a", 2000)), bp(blk("b", 1000)), blk("c", 100))
	want(t, "1h then 5m", u, 0, 1000, 2000, 100)
	wantMoney(t, "1h then 5m", u, 2000*2+1000*1.25+100, 5350*3/1e6)

	u = send(t, a, t0.Add(time.Minute), sonnet, bp1h(blk("a", 2000)), bp(blk("b2", 1000)), blk("c", 100))
	want(t, "b changed", u, 2000, 1000, 0, 100)
	wantMoney(t, "b changed", u, 2000*0.1+1000*1.25+100, 1550*3/1e6)
}

func TestAnthropicCustomPrices(t *testing.T) {
	a := newAnthropic(t, AnthropicOptions{Prices: Prices{InputPerMTok: 10, CacheWrite5mMult: 1.5, CacheWrite1hMult: 3, CacheReadMult: 0.25}})
	u := send(t, a, t0, sonnet, bp1h(blk("a", 2000)), bp(blk("b", 1000)), blk("c", 100))
	wantMoney(t, "writes", u, 7600, 0.076)
	u = send(t, a, t0.Add(time.Second), sonnet, bp1h(blk("a", 2000)), bp(blk("b", 1000)), blk("c", 100))
	wantMoney(t, "reads", u, 3000*0.25+100, 850*10/1e6)

	// Zero fields take the defaults.
	p := newAnthropic(t, AnthropicOptions{Prices: Prices{InputPerMTok: 15}})
	u = send(t, p, t0, sonnet, bp(blk("a", 2000)), blk("c", 100))
	wantMoney(t, "opus base", u, 2600, 2600*15/1e6)
}

// Decision pinned: a hit refreshes every live entry that is a prefix of what
// was read, not only the entry itself.
func TestAnthropicHitRefreshesContainedEntries(t *testing.T) {
	a := newAnthropic(t, AnthropicOptions{})
	sys := bp(blk("system", 2000))
	first := []Block{sys, blk("h1", 500), bp(blk("h2", 500)), blk("user", 100)}
	want(t, "t0", send(t, a, t0, sonnet, first...), 0, 3000, 0, 100)
	want(t, "4m", send(t, a, t0.Add(4*time.Minute), sonnet, first...), 3000, 0, 0, 100)
	// At 8m the system entry is alive only because the 4m hit refreshed it.
	other := []Block{sys, blk("x1", 500), bp(blk("x2", 500)), blk("user", 100)}
	want(t, "8m", send(t, a, t0.Add(8*time.Minute), sonnet, other...), 2000, 1000, 0, 100)
}

func TestAnthropicModelsDoNotShareCache(t *testing.T) {
	a := newAnthropic(t, AnthropicOptions{})
	req := []Block{bp(blk("system", 2000))}
	send(t, a, t0, sonnet, req...)
	want(t, "other model", send(t, a, t0, "claude-opus-4-1", req...), 0, 2000, 0, 0)
	want(t, "same model", send(t, a, t0, sonnet, req...), 2000, 0, 0, 0)
}

func TestAnthropicRejectsBadRequests(t *testing.T) {
	good := []Block{bp(blk("system", 2000))}
	for _, tc := range []struct {
		name  string
		req   Request
		err   error
		block int
	}{
		{"zero time", Request{Model: sonnet, Blocks: good}, ErrNoTimestamp, -1},
		{"no model", Request{At: t0, Blocks: good}, ErrNoModel, -1},
		{"no blocks", Request{At: t0, Model: sonnet}, ErrNoBlocks, -1},
		{"negative tokens", Request{At: t0, Model: sonnet, Blocks: []Block{blk("a", 1), blk("b", -1)}}, ErrNegativeTokens, 1},
		{"unknown TTL", Request{At: t0, Model: sonnet, Blocks: []Block{blk("a", 1).WithBreakpoint(TTL(7))}}, ErrInvalidTTL, 0},
		{"TTL without breakpoint", Request{At: t0, Model: sonnet, Blocks: []Block{{Hash: HashString("a"), Tokens: 1, TTL: TTL1h}}}, ErrTTLWithoutBreak, 0},
		{"time reversed", Request{At: t0.Add(-time.Nanosecond), Model: sonnet, Blocks: good}, ErrTimeReversed, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAnthropic(t, AnthropicOptions{})
			want(t, "before", send(t, a, t0, sonnet, good...), 0, 2000, 0, 0)
			_, err := a.Send(tc.req)
			var re *RequestError
			if !errors.Is(err, tc.err) || !errors.As(err, &re) || re.Block != tc.block {
				t.Fatalf("err = %v, want %v at block %d", err, tc.err, tc.block)
			}
			if re.Error() == "" {
				t.Fatal("empty error text")
			}
			want(t, "after", send(t, a, t0, sonnet, good...), 2000, 0, 0, 0)
		})
	}
}

func TestNewAnthropicRejectsBadOptions(t *testing.T) {
	for name, opts := range map[string]AnthropicOptions{
		"negative lookback":    {LookbackBlocks: -1},
		"negative breakpoints": {MaxBreakpoints: -1},
		"negative minimum":     {DefaultMinCacheableTokens: -1},
		"negative price":       {Prices: Prices{InputPerMTok: -3}},
		"NaN multiplier":       {Prices: Prices{CacheReadMult: math.NaN()}},
		"empty model key":      {MinCacheableTokens: map[string]int{"": 2048}},
		"negative model min":   {MinCacheableTokens: map[string]int{"claude-3-haiku": -1}},
	} {
		if _, err := NewAnthropic(opts); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: err = %v, want ErrInvalidOptions", name, err)
		}
	}
}

// The default minimum used to be 1024 for every model: a Haiku 3.5 prefix
// of 1500 tokens was cached in the simulation but not by Anthropic. The
// built-in table follows the docs per family; options still override it.
func TestAnthropicBuiltInMinimumPerFamily(t *testing.T) {
	a := newAnthropic(t, AnthropicOptions{})
	for model, min := range map[string]int{
		"claude-3-haiku-20240307":    2048,
		"claude-3-5-haiku-20241022":  2048,
		"claude-3-5-haiku-latest":    2048,
		"claude-haiku-4-5-20251001":  4096,
		"claude-haiku-4-5":           4096,
		"claude-opus-4-5-20251101":   4096,
		"claude-opus-4-6":            4096,
		"claude-sonnet-4-5":          1024, // benchmarks/internal/cachebench's model
		"claude-sonnet-4-5-20250929": 1024,
		"claude-opus-4-1-20250805":   1024,
		"claude-opus-4-20250514":     1024,
		"claude-3-7-sonnet-latest":   1024,
		"gpt-5":                      1024,
	} {
		if got := a.MinCacheableTokens(model); got != min {
			t.Errorf("MinCacheableTokens(%q) = %d, want %d", model, got, min)
		}
	}
	b := bp(blk("doc", 3000))
	want(t, "haiku 4.5: 3000 < 4096", send(t, a, t0, "claude-haiku-4-5", b), 0, 0, 0, 3000)
	want(t, "sonnet 4.5: 3000 >= 1024", send(t, a, t0, "claude-sonnet-4-5", b), 0, 3000, 0, 0)
	o := newAnthropic(t, AnthropicOptions{MinCacheableTokens: map[string]int{"claude": 1500}, DefaultMinCacheableTokens: 512})
	for model, min := range map[string]int{"claude-haiku-4-5": 1500, "gpt-5": 512} {
		if got := o.MinCacheableTokens(model); got != min {
			t.Errorf("with options: MinCacheableTokens(%q) = %d, want %d", model, got, min)
		}
	}
	// The table is a fresh copy: changing it changes no simulator.
	AnthropicMinCacheableTokens()["claude-haiku-4-5"] = 1
	if got := newAnthropic(t, AnthropicOptions{}).MinCacheableTokens("claude-haiku-4-5"); got != 4096 {
		t.Errorf("table mutated through its copy: %d", got)
	}
}
