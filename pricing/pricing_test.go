package pricing_test

import (
	"math"
	"testing"
	"time"

	"github.com/stratamem/strata/pricing"
)

func TestDefaultMinimums(t *testing.T) {
	tab := pricing.Default()
	for name, want := range map[string]int{
		"claude-sonnet-4-5-20250929": 1024,
		"claude-sonnet-4-6":          1024,
		"claude-opus-4-5-20251101":   4096,
		"claude-opus-4-1-20250805":   1024,
		"claude-haiku-4-5":           4096,
		"claude-3-5-haiku-latest":    2048,
		"gpt-5":                      1024,
		"gpt-5-mini-2025-08-07":      1024,
	} {
		m, ok := tab.Lookup(name)
		if !ok || m.MinPrefix != want {
			t.Errorf("%s: MinPrefix %d (known %v), want %d", name, m.MinPrefix, ok, want)
		}
	}
	// Longest prefix wins: gpt-5-mini is not gpt-5.
	if m, _ := tab.Lookup("gpt-5-mini"); m.InputPerMTok != 0.25 {
		t.Errorf("gpt-5-mini price %v", m.InputPerMTok)
	}
}

func TestOverrideAndUnknown(t *testing.T) {
	tab := pricing.Default().With(pricing.Model{Name: "claude-sonnet-4-5", InputPerMTok: 2.5})
	m, _ := tab.Lookup("claude-sonnet-4-5-20250929")
	if m.InputPerMTok != 2.5 || m.Write5mMult != 1.25 || m.MinPrefix != 1024 {
		t.Fatalf("override = %+v", m)
	}
	if d, _ := pricing.Default().Lookup("claude-sonnet-4-5"); d.InputPerMTok != 3 {
		t.Fatalf("With changed the default table: %+v", d)
	}
	u, ok := tab.Lookup("gpt-9")
	if ok || u.Provider != pricing.OpenAI || u.Write5mMult != 1 {
		t.Fatalf("unknown = %+v, %v", u, ok)
	}
}

func TestCacheableAndBilled(t *testing.T) {
	a, _ := pricing.Default().Lookup("claude-sonnet-4-5")
	o, _ := pricing.Default().Lookup("gpt-5")
	if a.Cacheable(1023) != 0 || a.Cacheable(1500) != 1500 {
		t.Fatalf("anthropic cacheable %d %d", a.Cacheable(1023), a.Cacheable(1500))
	}
	if o.Cacheable(1500) != 1024+3*128 {
		t.Fatalf("openai cacheable %d", o.Cacheable(1500))
	}
	if got := a.Billed(1000, 100, 10, pricing.TTL5m); math.Abs(got-(100+125+10)) > 1e-9 {
		t.Fatalf("billed %v", got)
	}
	if got := a.Billed(0, 100, 0, pricing.TTL1h); got != 200 {
		t.Fatalf("1h billed %v", got)
	}
	if got := o.Billed(0, 100, 0, pricing.TTL24h); got != 100 {
		t.Fatalf("openai write premium: %v", got)
	}
}

func TestBestTTL(t *testing.T) {
	a, _ := pricing.Default().Lookup("claude-sonnet-4-5")
	// A short pause: the default lifetime covers it.
	if ttl := a.BestTTL(5000, 20000, 2*time.Minute); ttl != pricing.TTL5m {
		t.Fatalf("short pause: %v", ttl)
	}
	// 20 minutes away with a large prefix to carry: 1h pays for itself
	// (5000*2 + 20000*0.1 = 12000 < 5000*1.25 + 20000*1.25 = 31250).
	if ttl := a.BestTTL(5000, 20000, 20*time.Minute); ttl != pricing.TTL1h {
		t.Fatalf("20 min pause: %v", ttl)
	}
	// A burst that writes much and carries little: not worth the premium.
	if ttl := a.BestTTL(100000, 2000, 20*time.Minute); ttl != pricing.TTL5m {
		t.Fatalf("write-heavy burst: %v", ttl)
	}
	// Longer than an hour: the extended lifetime expires too.
	if ttl := a.BestTTL(5000, 20000, 3*time.Hour); ttl != pricing.TTL5m {
		t.Fatalf("3h pause: %v", ttl)
	}
	// OpenAI has no premium: the extended retention is free to ask for.
	o, _ := pricing.Default().Lookup("gpt-5")
	if ttl := o.BestTTL(5000, 20000, 3*time.Hour); ttl != pricing.TTL24h {
		t.Fatalf("openai: %v", ttl)
	}
}
