package core_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
)

// Every first-round miss is attributed to a cause, and the cause decides
// what the runtime does about it: an expiry re-anchors as a cold cache, a
// prefix under the minimum changes nothing.
func TestMissAttribution(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	long := strings.Repeat("a fact worth keeping in the pinned block. ", 200)
	miss := func(at time.Time) core.CacheReport {
		return core.CacheReport{Reported: true, WriteTokens: 3000, FirstRound: true, At: at}
	}
	hit := func(at time.Time) core.CacheReport {
		return core.CacheReport{Reported: true, ReadTokens: 3000, FirstRound: true, At: at}
	}

	t.Run("changed anchor layer", func(t *testing.T) {
		src := &scripted{long}
		s := start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("plan", 1, core.PlacementAnchor, src)},
			Cache: core.CacheConfig{MaxEpochAssemblies: 2}})
		turn(t, s, "q0")
		s.ReportCache(miss(t0))
		turn(t, s, "q1")
		s.ReportCache(hit(t0.Add(time.Minute)))
		src.out = long + " and one more"
		v := turn(t, s, "q2") // max age: a new epoch pins the new output
		if !v.Usage.Epoch.Reanchored {
			t.Fatal("expected a re-anchor")
		}
		s.ReportCache(miss(t0.Add(2 * time.Minute)))
		v = turn(t, s, "q3")
		if m := v.Usage.Miss; m == nil || m.Cause != core.CauseChanged || m.Band != core.BandAnchor || m.Layer != "plan" {
			t.Fatalf("miss %+v", v.Usage.Miss)
		}
	})
	t.Run("ttl expired", func(t *testing.T) {
		s := start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("plan", 1, core.PlacementAnchor, &scripted{long})}})
		for i, q := range []string{"q0", "q1", "q2"} {
			turn(t, s, q)
			s.ReportCache(hit(t0.Add(time.Duration(i) * time.Minute)))
		}
		turn(t, s, "q3")
		s.ReportCache(miss(t0.Add(20 * time.Minute)))
		v := turn(t, s, "q4")
		if m := v.Usage.Miss; m == nil || m.Cause != core.CauseExpired {
			t.Fatalf("miss %+v", v.Usage.Miss)
		}
		if v.Usage.Epoch.Reanchored {
			t.Fatalf("an expiry is not a drifted byte: the missed request wrote the prefix again: %+v", v.Usage.Epoch)
		}
	})
	t.Run("below minimum", func(t *testing.T) {
		s := start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("plan", 1, core.PlacementAnchor, &scripted{"short"})}})
		for i := 0; i < 4; i++ {
			v := turn(t, s, "q")
			if i >= 2 && v.Usage.Epoch.Reanchored {
				t.Fatal("a miss under the minimum re-anchored")
			}
			if i >= 2 && (v.Usage.Miss == nil || v.Usage.Miss.Cause != core.CauseBelowMinimum) {
				t.Fatalf("miss %+v", v.Usage.Miss)
			}
			s.ReportCache(core.CacheReport{Reported: true, UncachedTokens: 40, FirstRound: true, At: t0.Add(time.Duration(i) * time.Second)})
		}
		if s.LastUsage().Epoch.Blind {
			t.Fatal("misses under the minimum made the provider blind")
		}
	})
	t.Run("evicted and provider reason", func(t *testing.T) {
		s := start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("plan", 1, core.PlacementAnchor, &scripted{long})}})
		turn(t, s, "q0")
		s.ReportCache(hit(t0))
		turn(t, s, "q1")
		s.ReportCache(hit(t0.Add(time.Minute)))
		turn(t, s, "q2")
		s.ReportCache(miss(t0.Add(2 * time.Minute)))
		v := turn(t, s, "q3")
		if m := v.Usage.Miss; m == nil || m.Cause != core.CauseEvicted {
			t.Fatalf("the same bytes within the TTL: miss %+v", v.Usage.Miss)
		}
		r := miss(t0.Add(3 * time.Minute))
		r.Miss = &core.CacheMiss{Reason: core.MissToolsChanged, Detail: "tools_changed"}
		s.ReportCache(r)
		v = turn(t, s, "q4")
		if m := v.Usage.Miss; m == nil || m.Cause != core.CauseChanged || m.Band != core.BandSystem || m.Provider != core.MissToolsChanged {
			t.Fatalf("provider reason: miss %+v", v.Usage.Miss)
		}
	})
}

// The cost of a reported call is split by band, reads from the front; its
// total is exactly the report's at the price table's rates.
func TestRequestCostByBand(t *testing.T) {
	long := strings.Repeat("a fact worth keeping in the pinned block. ", 200)
	s := start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("plan", 1, core.PlacementAnchor, &scripted{long})},
		Cache: core.CacheConfig{Prices: core.Prices{Currency: "EUR", InputPerMTok: 2, ReadMult: 0.1, WriteMult: 2}}})
	v := turn(t, s, "q0")
	total := v.Usage.Total
	s.ReportCache(core.CacheReport{Reported: true, ReadTokens: 1000, WriteTokens: 200, UncachedTokens: total - 1200 + 300, FirstRound: true})
	next := turn(t, s, "q1")
	c := next.Usage.Cost
	if c == nil || c.Currency != "EUR" {
		t.Fatalf("cost %+v", c)
	}
	want := (1000*0.1 + 200*2 + float64(total-1200+300)) * 2 / 1e6
	sum := 0.0
	for _, b := range c.Bands {
		sum += b
	}
	if d := c.Total - want; d > 1e-12 || d < -1e-12 || sum-c.Total > 1e-12 || c.Total-sum > 1e-12 {
		t.Fatalf("total %g, bands sum %g, want %g", c.Total, sum, want)
	}
	// The system band (with the 300 tokens of tools and framing) and the
	// anchor are read first: the system band costs read prices only.
	sys := float64(v.Usage.BandTokens[core.BandSystem]+300) * 0.1 * 2 / 1e6
	if d := c.Bands[core.BandSystem] - sys; d > 1e-12 || d < -1e-12 {
		t.Fatalf("system band %g, want %g", c.Bands[core.BandSystem], sys)
	}
}
