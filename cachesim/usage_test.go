package cachesim

import (
	"testing"
)

func TestTotalsAndHitRatio(t *testing.T) {
	var tot Totals
	if tot.HitRatio() != 0 {
		t.Fatalf("empty HitRatio = %v", tot.HitRatio())
	}
	tot.Add(Usage{ReadTokens: 0, Write5mTokens: 3000, UncachedTokens: 300, BaseEquivalent: 4050, Cost: 0.01215})
	tot.Add(Usage{ReadTokens: 3000, Write1hTokens: 500, UncachedTokens: 200, BaseEquivalent: 1500, Cost: 0.0045})
	if tot.Requests != 2 || tot.ReadTokens != 3000 || tot.WriteTokens() != 3500 || tot.UncachedTokens != 500 || tot.InputTokens() != 7000 {
		t.Fatalf("totals = %+v", tot)
	}
	if got := tot.HitRatio(); !near(got, 3000.0/7000) {
		t.Fatalf("HitRatio = %v, want %v", got, 3000.0/7000)
	}
	if !near(tot.BaseEquivalent, 5550) || !near(tot.Cost, 0.01665) {
		t.Fatalf("money = %v %v", tot.BaseEquivalent, tot.Cost)
	}
	if got := (Usage{ReadTokens: 1, UncachedTokens: 3}).HitRatio(); got != 0.25 {
		t.Fatalf("Usage.HitRatio = %v", got)
	}
}

func TestBlockHelpers(t *testing.T) {
	if TextBlock("abc", 2).Hash != HashBytes([]byte("abc")) || TextBlock("abc", 2).Hash != HashString("abc") {
		t.Fatal("TextBlock hash differs from HashBytes/HashString")
	}
	a, b, c := TokenBlock([]int{1, 2, 3}), TokenBlock([]int{1, 2, 3}), TokenBlock([]int{1, 2, 4})
	if a != b || a == c || a.Tokens != 3 {
		t.Fatalf("TokenBlock: %v %v %v", a, b, c)
	}
	// Token ids are not confused by concatenation: [1,23] vs [12,3].
	if TokenBlock([]int{1, 23}) == TokenBlock([]int{12, 3}) {
		t.Fatal("TokenBlock collides on [1,23] and [12,3]")
	}
	bs := BlocksFromTexts([]string{"one two", "three"}, func(s string) int { return len(s) })
	if len(bs) != 2 || bs[0].Tokens != 7 || bs[1].Tokens != 5 || bs[0].Breakpoint || bs[1].Hash != HashString("three") {
		t.Fatalf("BlocksFromTexts = %+v", bs)
	}
	if wb := bs[0].WithBreakpoint(TTL1h); !wb.Breakpoint || wb.TTL != TTL1h || bs[0].Breakpoint {
		t.Fatalf("WithBreakpoint = %+v (original %+v)", wb, bs[0])
	}
	if (Request{Blocks: bs}).Tokens() != 12 {
		t.Fatal("Request.Tokens")
	}
	for ttl, s := range map[TTL]string{TTL5m: "5m", TTL1h: "1h", TTL(9): "TTL(9)"} {
		if ttl.String() != s {
			t.Errorf("%d.String() = %q", uint8(ttl), ttl.String())
		}
	}
	if TTL(9).Duration() != 0 {
		t.Error("unknown TTL has a duration")
	}
}
