package cachesim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stratamem/strata/cachesim"
)

// A request that reads nothing says why: first, under the minimum,
// expired, out of the lookback's reach, or changed bytes.
func TestAnthropicMissReasons(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	sim, err := cachesim.NewAnthropic(cachesim.AnthropicOptions{})
	if err != nil {
		t.Fatal(err)
	}
	model := "claude-sonnet-4-5"
	blocks := func(prefix string, n int, bp ...int) []cachesim.Block {
		out := make([]cachesim.Block, n)
		for i := range out {
			out[i] = cachesim.TextBlock(fmt.Sprintf("%s block %d", prefix, i), 200)
		}
		for _, i := range bp {
			out[i].Breakpoint = true
		}
		return out
	}
	send := func(at time.Duration, b []cachesim.Block) cachesim.Usage {
		t.Helper()
		u, err := sim.Send(cachesim.Request{At: t0.Add(at), Model: model, Blocks: b})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	if u := send(0, blocks("a", 10, 9)); u.Miss != cachesim.MissFirst {
		t.Fatalf("first: %q", u.Miss)
	}
	if u := send(time.Minute, blocks("a", 10, 9)); u.ReadTokens == 0 || u.Miss != "" {
		t.Fatalf("a hit: %+v", u)
	}
	if u := send(2*time.Minute, blocks("b", 3, 2)); u.Miss != cachesim.MissBelowMinimum {
		t.Fatalf("600 tokens: %q", u.Miss)
	}
	if u := send(3*time.Minute, blocks("e", 10, 9)); u.Miss != cachesim.MissBelowMinimum {
		t.Fatalf("after a request that stored nothing: %q", u.Miss)
	}
	if u := send(4*time.Minute, blocks("c", 10, 9)); u.Miss != cachesim.MissChanged {
		t.Fatalf("other bytes: %q", u.Miss)
	}
	if u := send(20*time.Minute, blocks("c", 10, 9)); u.Miss != cachesim.MissExpired {
		t.Fatalf("after 17 idle minutes: %q", u.Miss)
	}
	// Cached through block 9; the next request's only breakpoint is 30
	// blocks later, past the 20-block lookback.
	long := append(blocks("c", 10), blocks("d", 30)...)
	long[39].Breakpoint = true
	if u := send(21*time.Minute, long); u.Miss != cachesim.MissLookback {
		t.Fatalf("beyond the lookback: %q", u.Miss)
	}
}
