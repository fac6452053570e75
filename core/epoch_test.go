package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
)

// scripted is a layer whose output the test sets between turns.
type scripted struct {
	out string
}

func scriptedLayer(id string, slot int, placement core.Placement, src *scripted) core.Layer[int] {
	return core.Layer[int]{ID: id, Slot: slot, Scope: core.ScopeExecution, Placement: placement,
		Hooks: core.Hooks[int]{Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
			return core.Text[int](src.out)
		}}}
}

func start(t testing.TB, cfg core.Config) *core.Session {
	t.Helper()
	rt, err := core.NewRuntime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(context.Background(), core.RunOptions{ThreadID: "thread-1"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func turn(t testing.TB, s *core.Session, user string) *core.View {
	t.Helper()
	ctx := context.Background()
	if err := s.Append(ctx, core.UserMessage(user)); err != nil {
		t.Fatal(err)
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, core.AssistantMessage("ok "+user)); err != nil {
		t.Fatal(err)
	}
	return v
}

func bandBytes(t testing.TB, v *core.View, bands ...core.Band) string {
	t.Helper()
	var b strings.Builder
	for _, band := range bands {
		for _, it := range v.Band(band) {
			raw, err := json.Marshal(it)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(raw)
		}
	}
	return b.String()
}

// updates returns the context updates the view carries: the trailing
// message, or the update messages kept in the history (inline).
func updates(v *core.View) string {
	var parts []string
	for _, band := range []core.Band{core.BandHistory, core.BandUpdates} {
		for _, it := range v.Band(band) {
			if it.Role == core.RoleDeveloper && strings.HasPrefix(it.Text(), "<context_updates") {
				parts = append(parts, it.Text())
			}
		}
	}
	return strings.Join(parts, "\n")
}

func TestPinsHoldAndUpdatesPublishDrift(t *testing.T) {
	for _, trailing := range []bool{false, true} {
		t.Run(fmt.Sprint("trailing=", trailing), func(t *testing.T) {
			plan, notes, facts := &scripted{"step 1"}, &scripted{"note A"}, &scripted{""}
			s := start(t, core.Config{System: []core.Item{core.SystemMessage("sys")}, Cache: core.CacheConfig{TrailingUpdates: trailing},
				Layers: []core.AnyLayer{
					scriptedLayer("plan", 100, core.PlacementAnchor, plan),
					scriptedLayer("notes", 110, core.PlacementAnchor, notes),
					scriptedLayer("facts", 120, core.PlacementAnchor, facts),
				}})
			v0 := turn(t, s, "q0")
			prefix := bandBytes(t, v0, core.BandSystem, core.BandAnchor)
			if v0.Usage.Epoch.ReanchorReason != core.ReasonInitial || !v0.Usage.Epoch.Reanchored {
				t.Fatalf("epoch = %+v", v0.Usage.Epoch)
			}

			plan.out, notes.out, facts.out = "step 3 is done", "", "metric units"
			v1 := turn(t, s, "q1")
			if got := bandBytes(t, v1, core.BandSystem, core.BandAnchor); got != prefix {
				t.Fatalf("anchor moved within the epoch:\n%s\n%s", got, prefix)
			}
			want := `<context_updates epoch="t:thread-1#0">
These supersede the blocks with the same layer id earlier in this context.
Where they disagree, these are correct.
<update layer="plan" action="replace">step 3 is done</update>
<update layer="notes" action="retract">This block no longer applies. Disregard it.</update>
<update layer="facts" action="add">metric units</update>
</context_updates>`
			if got := updates(v1); got != want {
				t.Fatalf("updates:\n%s\nwant:\n%s", got, want)
			}
			if trailing {
				if len(v1.Band(core.BandUpdates)) != 1 {
					t.Fatal("trailing updates are not one message after the live band")
				}
			} else {
				// Inline: published at the end of history, before the live band.
				h := v1.Band(core.BandHistory)
				if h[len(h)-1].Text() != want || len(v1.Band(core.BandUpdates)) != 0 {
					t.Fatal("inline update is not the last history item")
				}
			}
			u := v1.Usage
			if u.Layer("plan").Update != core.ActionReplace || u.Layer("plan").Served != core.ServedPinned {
				t.Fatalf("plan usage = %+v", u.Layer("plan"))
			}
			// The retraction stands for the rest of the epoch: repeated
			// every turn (trailing) or kept in the conversation (inline).
			v2 := turn(t, s, "q2")
			if !strings.Contains(updates(v2), `<update layer="notes" action="retract">`) {
				t.Fatalf("retraction did not stand: %s", updates(v2))
			}
			if !trailing {
				if v2.Usage.Layer("notes").Update != "" || strings.Count(updates(v2), "<context_updates") != 1 {
					t.Fatalf("inline update published twice: %s", updates(v2))
				}
				// The request extends the previous one through the update.
				h1, h2 := bandBytes(t, v1, core.BandHistory), bandBytes(t, v2, core.BandHistory)
				if !strings.HasPrefix(h2, h1) {
					t.Fatal("history with the inline update is not a prefix of the next request")
				}
			}
			plan.out = "step 1"
			v3 := turn(t, s, "q3")
			if trailing {
				// Back to the pinned content: no update for that layer.
				if strings.Contains(updates(v3), `layer="plan"`) {
					t.Fatalf("plan back at its pin still updated: %s", updates(v3))
				}
			} else if v3.Usage.Layer("plan").Update != core.ActionReplace {
				// Inline: the last word on plan was "step 3 is done", so
				// its return to "step 1" is published.
				t.Fatalf("plan return not published: %+v", v3.Usage.Layer("plan"))
			}
		})
	}
}

func TestByteStabilityWithinEpoch(t *testing.T) {
	a, b := &scripted{"alpha"}, &scripted{"beta"}
	s := start(t, core.Config{System: []core.Item{core.SystemMessage("sys")}, Layers: []core.AnyLayer{
		scriptedLayer("a", 100, core.PlacementAnchor, a),
		scriptedLayer("b", 200, core.PlacementAuto, b),
		scriptedLayer("clock", 80, core.PlacementLive, &scripted{"t"}),
	}, Cache: core.Tuned(core.CacheConfig{MaxEpochAssemblies: 1000}, core.Tuning{MinUpdateTokens: 1 << 20})})
	var prev *core.View
	var prevReq string
	for i := 0; i < 50; i++ {
		if i%3 == 0 {
			a.out = fmt.Sprint("alpha ", i)
		}
		if i%7 == 0 {
			b.out = fmt.Sprint("beta ", i)
		}
		v := turn(t, s, fmt.Sprint("q", i))
		req := bandBytes(t, v, core.BandSystem, core.BandAnchor, core.BandHistory)
		if prev != nil && !v.Usage.Epoch.Reanchored {
			// Request N+1 starts with request N's system, anchor and
			// history bytes exactly.
			if !strings.HasPrefix(req, prevReq) {
				t.Fatalf("turn %d: request does not extend the previous prefix", i)
			}
		}
		prev, prevReq = v, req
	}
}

func TestReanchorReasons(t *testing.T) {
	t.Run("max-age", func(t *testing.T) {
		s := start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("a", 1, core.PlacementAnchor, &scripted{"x"})},
			Cache: core.CacheConfig{MaxEpochAssemblies: 3}})
		var reasons []string
		for i := 0; i < 7; i++ {
			if v := turn(t, s, "q"); v.Usage.Epoch.Reanchored {
				reasons = append(reasons, fmt.Sprint(i, v.Usage.Epoch.ReanchorReason))
			}
		}
		if got := strings.Join(reasons, " "); got != "0initial 3max-age 6max-age" {
			t.Fatalf("re-anchors = %s", got)
		}
	})
	t.Run("cache-miss", func(t *testing.T) {
		src := &scripted{"x"}
		s := start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("a", 1, core.PlacementAnchor, src)}})
		turn(t, s, "q0")
		// A miss on the first request of an epoch is expected (it writes).
		s.ReportCache(core.CacheReport{Reported: true, WriteTokens: 2000, FirstRound: true})
		src.out = "y"
		if v := turn(t, s, "q1"); v.Usage.Epoch.Reanchored {
			t.Fatal("re-anchored on the epoch's own first write")
		}
		// A later round's miss does not count.
		s.ReportCache(core.CacheReport{Reported: true, UncachedTokens: 2000, FirstRound: false})
		if v := turn(t, s, "q2"); v.Usage.Epoch.Reanchored {
			t.Fatal("re-anchored on a later round")
		}
		s.ReportCache(core.CacheReport{Reported: true, UncachedTokens: 2000, WriteTokens: 100, FirstRound: true})
		v := turn(t, s, "q3")
		if !v.Usage.Epoch.Reanchored || v.Usage.Epoch.ReanchorReason != core.ReasonCacheMiss {
			t.Fatalf("epoch = %+v", v.Usage.Epoch)
		}
		if v.Usage.Epoch.ID != "t:thread-1#1" || v.Band(core.BandAnchor)[0].Text() != "y" || updates(v) != "" {
			t.Fatalf("fresh pins expected: %+v %s", v.Usage.Epoch, updates(v))
		}
	})
	t.Run("cache-expired", func(t *testing.T) {
		src := &scripted{"x"}
		s := start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("a", 1, core.PlacementAnchor, src)}})
		turn(t, s, "q0")
		at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
		s.ReportCache(core.CacheReport{Reported: true, WriteTokens: 2000, FirstRound: true, At: at})
		if r, ok := s.LastCacheReport(); !ok || !r.At.Equal(at) || r.WriteTokens != 2000 {
			t.Fatalf("LastCacheReport = %+v %v", r, ok)
		}
		src.out = "y"
		v := turn(t, s, "q1")
		if v.Usage.Epoch.Reanchored || updates(v) == "" {
			t.Fatalf("a drift inside the epoch is an update: %+v", v.Usage.Epoch)
		}
		// The host knows the cache expired (long idle): the next request
		// re-anchors at once instead of writing the old pins first.
		s.ExpectColdCache()
		v = turn(t, s, "q2")
		if !v.Usage.Epoch.Reanchored || v.Usage.Epoch.ReanchorReason != core.ReasonCacheExpired {
			t.Fatalf("epoch = %+v", v.Usage.Epoch)
		}
		if v.Band(core.BandAnchor)[0].Text() != "y" || updates(v) != "" {
			t.Fatalf("fresh pins expected: %s %q", v.Band(core.BandAnchor)[0].Text(), updates(v))
		}
		// Served once: the miss that the expired cache then reports on
		// the epoch's first request does not re-anchor again.
		s.ReportCache(core.CacheReport{Reported: true, WriteTokens: 2000, FirstRound: true})
		if v := turn(t, s, "q3"); v.Usage.Epoch.Reanchored {
			t.Fatalf("re-anchored twice: %+v", v.Usage.Epoch)
		}
		// Harmless when anchoring is off (no epochs to re-anchor): the
		// call neither panics nor starts one.
		off := start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("a", 1, core.PlacementAnchor, &scripted{"x"})},
			Cache: core.CacheConfig{Disabled: true}})
		turn(t, off, "q0")
		off.ExpectColdCache()
		if v := turn(t, off, "q1"); v.Usage.Epoch != nil {
			t.Fatalf("disabled cache has an epoch: %+v", v.Usage.Epoch)
		}
	})
	t.Run("update-pressure", func(t *testing.T) {
		src := &scripted{strings.Repeat("pinned ", 20)}
		s := start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("a", 1, core.PlacementAnchor, src)},
			Cache: core.Tuned(core.CacheConfig{}, core.Tuning{MaxUpdateShare: 0.5, MinUpdateTokens: 10})})
		turn(t, s, "q0")
		src.out = strings.Repeat("changed ", 40)
		v := turn(t, s, "q1")
		if v.Usage.Epoch.ReanchorReason != core.ReasonUpdatePressure || updates(v) != "" {
			t.Fatalf("epoch = %+v updates=%q", v.Usage.Epoch, updates(v))
		}
	})
	t.Run("updates-over-budget", func(t *testing.T) {
		src := &scripted{"small"}
		s := start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("a", 1, core.PlacementAnchor, src)},
			Policy: &core.Policy{TokenBudget: 120}, LayerPool: 100, Cache: core.Tuned(core.CacheConfig{}, core.Tuning{MinUpdateTokens: 1 << 20})})
		turn(t, s, "q0")
		src.out = strings.Repeat("word ", 60) // fits as a layer, not as pin + update
		v := turn(t, s, "q1")
		if r := v.Usage.Epoch.ReanchorReason; (r != core.ReasonUpdatesOverBudget && r != core.ReasonHistoryCut) || !strings.Contains(v.Band(core.BandAnchor)[0].Text(), "word") {
			t.Fatalf("epoch = %+v", v.Usage.Epoch)
		}
		if v.Usage.Total > 120 {
			t.Fatalf("view over budget: %d", v.Usage.Total)
		}
	})
	t.Run("updates-over-budget-trailing", func(t *testing.T) {
		src := &scripted{"small"}
		s := start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("a", 1, core.PlacementAnchor, src)},
			Policy: &core.Policy{TokenBudget: 120}, LayerPool: 100, Cache: core.Tuned(core.CacheConfig{TrailingUpdates: true}, core.Tuning{MinUpdateTokens: 1 << 20})})
		turn(t, s, "q0")
		src.out = strings.Repeat("word ", 60)
		v := turn(t, s, "q1")
		if v.Usage.Epoch.ReanchorReason != core.ReasonUpdatesOverBudget || v.Usage.Total > 120 {
			t.Fatalf("epoch = %+v tokens %d", v.Usage.Epoch, v.Usage.Total)
		}
	})
	t.Run("history-cut", func(t *testing.T) {
		src := &scripted{"v0"}
		s := start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("a", 1, core.PlacementAnchor, src)},
			Policy: &core.Policy{TokenBudget: 400}, LayerPool: 50, Cache: core.Tuned(core.CacheConfig{MaxEpochAssemblies: 1000}, core.Tuning{MinUpdateTokens: 1 << 20})})
		turn(t, s, "q0")
		src.out = "v1"
		if v := turn(t, s, "q1"); v.Usage.Epoch.Updates != 1 {
			t.Fatalf("no update published: %+v", v.Usage.Epoch)
		}
		// Grow the history until its front passes the update.
		for i := 0; i < 100; i++ {
			v := turn(t, s, strings.Repeat("long question ", 10))
			if v.Usage.Epoch.Reanchored {
				if v.Usage.Epoch.ReanchorReason != core.ReasonHistoryCut {
					t.Fatalf("reason = %s", v.Usage.Epoch.ReanchorReason)
				}
				if v.Band(core.BandAnchor)[0].Text() != "v1" {
					t.Fatal("re-anchor did not fold the update into the pin")
				}
				return
			}
			if !strings.Contains(updates(v), "v1") {
				t.Fatalf("turn %d: the update was dropped without a re-anchor", i)
			}
		}
		t.Fatal("history never cut past the update")
	})
	t.Run("band-change", func(t *testing.T) {
		stateful := false
		layer := core.Layer[int]{ID: "s", Slot: 1, Scope: core.ScopeExecution, Placement: core.PlacementAnchor,
			Hooks: core.Hooks[int]{Recall: func(_ context.Context, p core.RecallParams[int]) (core.Recall[int], error) {
				r, _ := core.Text[int]("queue")
				if stateful {
					next := p.State + 1
					r.State = &next
				}
				return r, nil
			}}}
		s := start(t, core.Config{Layers: []core.AnyLayer{layer}})
		if v := turn(t, s, "q0"); v.Usage.Layer("s").Band != core.BandAnchor {
			t.Fatal("declared anchor not anchored")
		}
		stateful = true
		v := turn(t, s, "q1")
		if v.Usage.Epoch.ReanchorReason != core.ReasonBandChange || v.Usage.Layer("s").Band != core.BandLive {
			t.Fatalf("epoch = %+v layer = %+v", v.Usage.Epoch, v.Usage.Layer("s"))
		}
		// Never pinned again, whatever it declares.
		stateful = false
		turn(t, s, "q2")
		if v := turn(t, s, "q3"); v.Usage.Layer("s").Band != core.BandLive {
			t.Fatal("a layer that returned state was pinned again")
		}
	})
}

func TestBlindProvider(t *testing.T) {
	src := &scripted{"x"}
	s := start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("a", 1, core.PlacementAnchor, src)}})
	turn(t, s, "q0")
	turn(t, s, "q1")
	for i := 0; i < 3; i++ {
		s.ReportCache(core.CacheReport{Reported: false, FirstRound: true})
	}
	s.ReportCache(core.CacheReport{Reported: true, UncachedTokens: 5000, FirstRound: true})
	v := turn(t, s, "q2")
	if v.Usage.Epoch.Reanchored || !v.Usage.Epoch.Blind {
		t.Fatalf("a blind provider's miss was consulted: %+v", v.Usage.Epoch)
	}

	// Persistent misses make it blind as well (of a prefix long enough to
	// be cached: under the minimum a miss is no evidence of anything).
	s = start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("a", 1, core.PlacementAnchor, src)},
		Cache: core.CacheConfig{MinPrefixTokens: 1}})
	reanchors := 0
	for i := 0; i < 12; i++ {
		v := turn(t, s, fmt.Sprint("q", i))
		if v.Usage.Epoch.Reanchored {
			reanchors++
		}
		s.ReportCache(core.CacheReport{Reported: true, UncachedTokens: 5000, FirstRound: true})
	}
	if !s.LastUsage().Epoch.Blind || reanchors > 5 {
		t.Fatalf("blind=%v after %d re-anchors", s.LastUsage().Epoch.Blind, reanchors)
	}
}

func TestRenderDeltaAndFallbacks(t *testing.T) {
	files := &scripted{"## a.go\nold a\n## b.go\nold b"}
	mode := "delta"
	layer := core.Layer[int]{ID: "fs", Slot: 350, Scope: core.ScopeExecution, Placement: core.PlacementAnchor,
		Timeouts: core.Timeouts{core.HookRenderDelta: 20 * time.Millisecond},
		Hooks: core.Hooks[int]{
			Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
				return core.Text[int](files.out)
			},
			RenderDelta: func(ctx context.Context, p core.RenderDeltaParams[int]) (string, bool, error) {
				switch mode {
				case "none":
					return "", false, nil
				case "error":
					return "", false, errors.New("cannot diff")
				case "panic":
					panic("diff bug")
				case "hang":
					time.Sleep(200 * time.Millisecond)
					return "late", true, nil
				}
				return "## b.go\nnew b", true, nil
			},
		}}
	for _, m := range []string{"delta", "none", "error", "panic", "hang"} {
		t.Run(m, func(t *testing.T) {
			mode = m
			files.out = "## a.go\nold a\n## b.go\nold b"
			s := start(t, core.Config{Layers: []core.AnyLayer{layer}})
			turn(t, s, "q0")
			files.out = "## a.go\nold a\n## b.go\nnew b"
			v := turn(t, s, "q1")
			up := updates(v)
			want := files.out // the full republish
			if m == "delta" {
				want = "## b.go\nnew b"
			}
			if !strings.Contains(up, "<update layer=\"fs\" action=\"replace\">\n"+want+"\n</update>") {
				t.Fatalf("updates = %s", up)
			}
			if m != "delta" && m != "none" && len(v.Usage.Diagnostics) == 0 {
				t.Fatal("a failing renderDelta left no diagnostic")
			}
		})
	}
}

func TestAutoPlacementHysteresis(t *testing.T) {
	src := &scripted{"v0"}
	s := start(t, core.Config{Layers: []core.AnyLayer{scriptedLayer("auto", 100, core.PlacementAuto, src)},
		Cache: core.Tuned(core.CacheConfig{MaxEpochAssemblies: 10}, core.Tuning{AutoDemoteChurn: 0.6, AutoPromoteChurn: 0.2, MinUpdateTokens: 1 << 20})})
	bandAt := map[int]core.Band{}
	for i := 0; i < 80; i++ {
		switch {
		case i < 20:
			src.out = fmt.Sprint("v", i) // churn 1.0
		case i < 50:
			if i%3 == 0 { // churn drifts down through the gap
				src.out = fmt.Sprint("v", i)
			}
		default:
			// static: churn keeps falling
		}
		v := turn(t, s, fmt.Sprint("q", i))
		bandAt[i] = v.Usage.Layer("auto").Band
		if i > 0 && bandAt[i] != bandAt[i-1] && !v.Usage.Epoch.Reanchored {
			t.Fatalf("turn %d: band moved mid-epoch", i)
		}
	}
	if bandAt[5] != core.BandAnchor || bandAt[15] != core.BandLive {
		t.Fatalf("demotion: %v %v", bandAt[5], bandAt[15])
	}
	flips := 0
	for i := 1; i < 80; i++ {
		if bandAt[i] != bandAt[i-1] {
			flips++
		}
	}
	if flips > 2 {
		t.Fatalf("band flipped %d times: %v", flips, bandAt)
	}
}

func TestDisabledIsSingleBand(t *testing.T) {
	mk := func(disabled bool) *core.Session {
		return start(t, core.Config{System: []core.Item{core.SystemMessage("sys")}, Cache: core.CacheConfig{Disabled: disabled},
			Layers: []core.AnyLayer{
				scriptedLayer("clock", 80, core.PlacementLive, &scripted{"now"}),
				scriptedLayer("rag", 350, core.PlacementAnchor, &scripted{"doc"}),
			}})
	}
	v := turn(t, mk(true), "q")
	var got []string
	for _, it := range v.Items() {
		got = append(got, it.Text())
	}
	if strings.Join(got, "|") != "sys|now|doc|q" || len(v.Breakpoints) != 0 || v.Usage.Epoch != nil {
		t.Fatalf("disabled view = %v breakpoints=%v", got, v.Breakpoints)
	}
	v = turn(t, mk(false), "q")
	if len(v.Breakpoints) != 3 {
		t.Fatalf("breakpoints = %+v", v.Breakpoints)
	}
	for _, bp := range v.Breakpoints {
		if bp.Band != core.BandSystem && bp.Band != core.BandAnchor && bp.Band != core.BandHistory {
			t.Fatalf("breakpoint in volatile band %v", bp.Band)
		}
	}
	if v.Breakpoints[2].Index != 2 || v.PrefixHash == "" {
		t.Fatalf("history breakpoint = %+v hash %q", v.Breakpoints[2], v.PrefixHash)
	}
}

// FuzzChurn drives random churn through anchored, auto and live layers
// under a tight budget: a view never exceeds the budget, a drifted anchor
// always has its update (or the epoch re-anchored), and within an epoch
// the prefix never moves.
func FuzzChurn(f *testing.F) {
	f.Add(uint64(1), uint16(400))
	f.Add(uint64(7), uint16(150))
	f.Fuzz(func(t *testing.T, seed uint64, budget uint16) {
		if budget < 60 {
			return
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		srcs := []*scripted{{"a"}, {"b"}, {"c"}, {""}}
		placements := []core.Placement{core.PlacementAnchor, core.PlacementAuto, core.PlacementLive, core.PlacementAnchor}
		var layers []core.AnyLayer
		for i, src := range srcs {
			layers = append(layers, scriptedLayer(fmt.Sprint("l", i), 100+i, placements[i], src))
		}
		rt, err := core.NewRuntime(core.Config{Layers: layers, System: []core.Item{core.SystemMessage("sys")},
			Policy: &core.Policy{TokenBudget: int(budget)}, LayerPool: int(budget) / 3,
			Cache: core.Tuned(core.CacheConfig{MaxEpochAssemblies: 1 + rng.IntN(20)}, core.Tuning{MinUpdateTokens: rng.IntN(64)})})
		if err != nil {
			return
		}
		s, _ := rt.Start(context.Background(), core.RunOptions{ThreadID: "f"})
		prevAnchor, prevEpoch := "", ""
		for i := 0; i < 40; i++ {
			for _, src := range srcs {
				switch rng.IntN(5) {
				case 0:
					src.out = strings.Repeat("w", rng.IntN(40))
				case 1:
					src.out = ""
				}
			}
			v := turn(t, s, strings.Repeat("u", rng.IntN(30)))
			if v.Usage.Total > int(budget) {
				t.Fatalf("view %d tokens over budget %d", v.Usage.Total, budget)
			}
			ep := v.Usage.Epoch
			anchor := bandBytes(t, v, core.BandSystem, core.BandAnchor)
			if ep.ID == prevEpoch && anchor != prevAnchor {
				t.Fatalf("turn %d: anchor moved within epoch %s", i, ep.ID)
			}
			prevAnchor, prevEpoch = anchor, ep.ID
			// No silent drift: an anchored layer's fresh output is in the
			// view, as its pin or as an update; an empty one is pinned
			// empty or retracted.
			var all strings.Builder
			for _, it := range v.Items() {
				all.WriteString(it.Text())
				all.WriteByte('\n')
			}
			text := all.String()
			for _, l := range v.Usage.Layers {
				if l.Band != core.BandAnchor || l.Truncated > 0 {
					continue // a cut output has its diagnostic
				}
				fresh := srcs[l.Slot-100].out
				switch {
				case fresh != "" && !strings.Contains(text, fresh):
					t.Fatalf("turn %d: layer %s output %q is nowhere in the view", i, l.LayerID, fresh)
				case fresh == "" && l.Tokens > 0 && !strings.Contains(text, fmt.Sprintf("<update layer=%q action=\"retract\">", l.LayerID)):
					t.Fatalf("turn %d: layer %s went empty without a retraction", i, l.LayerID)
				}
			}
		}
	})
}

func TestTailPlacement(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		s := start(t, core.Config{Cache: core.CacheConfig{Disabled: disabled}, Layers: []core.AnyLayer{
			scriptedLayer("guide", core.SlotSteering, core.PlacementTail, &scripted{"be brief"}),
			scriptedLayer("live", 300, core.PlacementLive, &scripted{"clock"}),
		}})
		v := turn(t, s, "q")
		items := v.Items()
		if last := items[len(items)-1]; last.Text() != "be brief" || v.Usage.Layer("guide").Band != core.BandTail {
			t.Fatalf("disabled=%v: last item %q, band %v", disabled, last.Text(), v.Usage.Layer("guide").Band)
		}
	}
}
