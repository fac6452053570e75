package cachesim

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

const gpt5 = "gpt-5"

func TestOpenAIThreshold(t *testing.T) {
	o := newOpenAI(t, OpenAIOptions{})
	for i, tc := range []struct {
		tokens, read int
	}{
		{1000, 0},
		{1023, 0},
		{1024, 1024},
	} {
		b := blk("doc"+strconv.Itoa(tc.tokens), tc.tokens)
		at := t0.Add(time.Duration(i) * time.Minute)
		want(t, "first "+strconv.Itoa(tc.tokens), send(t, o, at, gpt5, b), 0, 0, 0, tc.tokens)
		want(t, "second "+strconv.Itoa(tc.tokens), send(t, o, at.Add(time.Second), gpt5, b), tc.read, 0, 0, tc.tokens-tc.read)
	}
}

func TestOpenAIIncrementsOf128(t *testing.T) {
	for _, tc := range []struct {
		tokens, read int
	}{
		{1100, 1024},
		{1151, 1024},
		{1152, 1152},
		{1279, 1152},
		{1280, 1280},
		{5000, 4992}, // 1024 + 31*128
	} {
		o := newOpenAI(t, OpenAIOptions{})
		req := []Block{blk("a", 600), blk("b", tc.tokens-600)}
		send(t, o, t0, gpt5, req...)
		want(t, strconv.Itoa(tc.tokens), send(t, o, t0.Add(time.Second), gpt5, req...), tc.read, 0, 0, tc.tokens-tc.read)
		if got := o.CachedLength(tc.tokens); got != tc.read {
			t.Errorf("CachedLength(%d) = %d, want %d", tc.tokens, got, tc.read)
		}
	}
}

func TestOpenAIPartialMatchAtBlockGranularity(t *testing.T) {
	o := newOpenAI(t, OpenAIOptions{})
	send(t, o, t0, gpt5, blk("A", 1500), blk("B", 500))
	// Common prefix: A (1500 tokens) -> 1024 + 3*128 = 1408.
	want(t, "A shared", send(t, o, t0.Add(time.Second), gpt5, blk("A", 1500), blk("C", 700)), 1408, 0, 0, 792)

	// Common prefix of whole blocks 600+600 = 1200 -> 1152.
	send(t, o, t0.Add(2*time.Second), gpt5, blk("P", 600), blk("Q", 600), blk("R", 300))
	want(t, "P,Q shared", send(t, o, t0.Add(3*time.Second), gpt5, blk("P", 600), blk("Q", 600), blk("S", 50)), 1152, 0, 0, 98)

	// Common prefix of whole blocks below 1024 is no hit, even though the
	// earlier request was long enough to be cached.
	send(t, o, t0.Add(4*time.Second), gpt5, blk("X", 1000), blk("Y", 500))
	want(t, "X shared", send(t, o, t0.Add(5*time.Second), gpt5, blk("X", 1000), blk("Z", 500)), 0, 0, 0, 1500)
}

func TestOpenAINoWriteFee(t *testing.T) {
	o := newOpenAI(t, OpenAIOptions{})
	req := []Block{blk("a", 1500), blk("b", 500)}
	u := send(t, o, t0, gpt5, req...)
	want(t, "first", u, 0, 0, 0, 2000)
	wantMoney(t, "first", u, 2000, 2000*1.25/1e6)
	u = send(t, o, t0.Add(time.Second), gpt5, req...)
	want(t, "second", u, 1920, 0, 0, 80) // 1024 + 7*128
	wantMoney(t, "second", u, 1920*0.1+80, 272*1.25/1e6)

	// gpt-4o pricing: $2.50/MTok, cached 0.5x.
	o = newOpenAI(t, OpenAIOptions{Prices: Prices{InputPerMTok: 2.5, CacheReadMult: 0.5}})
	send(t, o, t0, "gpt-4o", req...)
	u = send(t, o, t0.Add(time.Second), "gpt-4o", req...)
	wantMoney(t, "gpt-4o second", u, 960+80, 1040*2.5/1e6)
}

func TestOpenAITTL(t *testing.T) {
	req := []Block{blk("a", 2048)}
	o := newOpenAI(t, OpenAIOptions{})
	send(t, o, t0, gpt5, req...)
	want(t, "at 5m0s", send(t, o, t0.Add(5*time.Minute), gpt5, req...), 2048, 0, 0, 0)

	o = newOpenAI(t, OpenAIOptions{})
	send(t, o, t0, gpt5, req...)
	want(t, "at 5m1s", send(t, o, t0.Add(5*time.Minute+time.Second), gpt5, req...), 0, 0, 0, 2048)

	o = newOpenAI(t, OpenAIOptions{})
	send(t, o, t0, gpt5, req...)
	want(t, "hit at 4m", send(t, o, t0.Add(4*time.Minute), gpt5, req...), 2048, 0, 0, 0)
	want(t, "hit at 8m59s (refreshed)", send(t, o, t0.Add(8*time.Minute+59*time.Second), gpt5, req...), 2048, 0, 0, 0)

	o = newOpenAI(t, OpenAIOptions{TTL: 10 * time.Minute})
	send(t, o, t0, gpt5, req...)
	want(t, "10m TTL at 9m", send(t, o, t0.Add(9*time.Minute), gpt5, req...), 2048, 0, 0, 0)
	want(t, "10m TTL at 19m1s", send(t, o, t0.Add(19*time.Minute+time.Second), gpt5, req...), 0, 0, 0, 2048)
}

func TestOpenAIIgnoresBreakpointsAndSeparatesModels(t *testing.T) {
	o := newOpenAI(t, OpenAIOptions{})
	var req []Block
	for i := range 6 {
		req = append(req, bp1h(blk("b"+strconv.Itoa(i), 200)))
	}
	want(t, "six breakpoints", send(t, o, t0, gpt5, req...), 0, 0, 0, 1200)
	want(t, "other model", send(t, o, t0, "gpt-4.1", req...), 0, 0, 0, 1200)
	want(t, "same model", send(t, o, t0, gpt5, req...), 1152, 0, 0, 48)
}

func TestOpenAIRejectsBadRequests(t *testing.T) {
	o := newOpenAI(t, OpenAIOptions{})
	send(t, o, t0, gpt5, blk("a", 2000))
	for _, tc := range []struct {
		req Request
		err error
	}{
		{Request{Model: gpt5, Blocks: []Block{blk("a", 2000)}}, ErrNoTimestamp},
		{Request{At: t0.Add(-time.Second), Model: gpt5, Blocks: []Block{blk("a", 2000)}}, ErrTimeReversed},
		{Request{At: t0, Blocks: []Block{blk("a", 2000)}}, ErrNoModel},
		{Request{At: t0, Model: gpt5}, ErrNoBlocks},
		{Request{At: t0, Model: gpt5, Blocks: []Block{blk("a", -5)}}, ErrNegativeTokens},
	} {
		if _, err := o.Send(tc.req); !errors.Is(err, tc.err) {
			t.Errorf("%+v: err = %v, want %v", tc.req, err, tc.err)
		}
	}
	want(t, "unchanged", send(t, o, t0, gpt5, blk("a", 2000)), 1920, 0, 0, 80)

	for name, opts := range map[string]OpenAIOptions{
		"negative min":       {MinTokens: -1},
		"negative increment": {Increment: -1},
		"negative TTL":       {TTL: -time.Second},
		"negative price":     {Prices: Prices{CacheReadMult: -0.1}},
	} {
		if _, err := NewOpenAI(opts); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: err = %v, want ErrInvalidOptions", name, err)
		}
	}
}
