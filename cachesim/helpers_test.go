package cachesim

import (
	"math"
	"strconv"
	"testing"
	"time"
)

// t0 is an arbitrary fixed start; the simulators have no clock.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const sonnet = "claude-sonnet-4-5"

func blk(name string, tokens int) Block { return TextBlock(name, tokens) }

func bp(b Block) Block { return b.WithBreakpoint(TTL5m) }

func bp1h(b Block) Block { return b.WithBreakpoint(TTL1h) }

// run returns n blocks named prefix0..prefix{n-1} of tokens each.
func run(prefix string, n, tokens int) []Block {
	out := make([]Block, n)
	for i := range out {
		out[i] = blk(prefix+strconv.Itoa(i), tokens)
	}
	return out
}

func cat(parts ...[]Block) []Block {
	var out []Block
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func newAnthropic(t testing.TB, opts AnthropicOptions) *Anthropic {
	t.Helper()
	a, err := NewAnthropic(opts)
	if err != nil {
		t.Fatalf("NewAnthropic: %v", err)
	}
	return a
}

func newOpenAI(t testing.TB, opts OpenAIOptions) *OpenAI {
	t.Helper()
	o, err := NewOpenAI(opts)
	if err != nil {
		t.Fatalf("NewOpenAI: %v", err)
	}
	return o
}

func send(t testing.TB, s Simulator, at time.Time, model string, blocks ...Block) Usage {
	t.Helper()
	req := Request{At: at, Model: model, Blocks: blocks}
	u, err := s.Send(req)
	if err != nil {
		t.Fatalf("Send at %v: %v", at.Sub(t0), err)
	}
	if got, want := u.InputTokens(), req.Tokens(); got != want {
		t.Fatalf("usage %+v covers %d tokens, request has %d", u, got, want)
	}
	return u
}

// want checks the token partition of u.
func want(t testing.TB, label string, u Usage, read, w5m, w1h, uncached int) {
	t.Helper()
	if u.ReadTokens != read || u.Write5mTokens != w5m || u.Write1hTokens != w1h || u.UncachedTokens != uncached {
		t.Errorf("%s: got read=%d w5m=%d w1h=%d uncached=%d, want read=%d w5m=%d w1h=%d uncached=%d",
			label, u.ReadTokens, u.Write5mTokens, u.Write1hTokens, u.UncachedTokens, read, w5m, w1h, uncached)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func wantMoney(t testing.TB, label string, u Usage, baseEq, cost float64) {
	t.Helper()
	if !near(u.BaseEquivalent, baseEq) || !near(u.Cost, cost) {
		t.Errorf("%s: got BaseEquivalent=%v Cost=%v, want %v and %v", label, u.BaseEquivalent, u.Cost, baseEq, cost)
	}
}
