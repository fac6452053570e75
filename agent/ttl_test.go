package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/agent"
	"github.com/stratamem/strata/cachesim"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/pricing"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/scripted"
)

// A user who comes back every 20 minutes: with the lifetime chosen by
// cost every turn after the first asks for the one-hour cache and reads
// the prompt back, the runtime takes none of the pauses for a cold cache
// and attributes no miss to an expiry; with the default lifetime every
// turn writes the prompt again. The bill is lower by cost.
func TestTTLByCost(t *testing.T) {
	model, ok := pricing.Default().Lookup("claude-sonnet-4-5")
	if !ok {
		t.Fatal("no price sheet for claude-sonnet-4-5")
	}
	run := func(choose func(agent.TTLInput) time.Duration) (ttls []time.Duration, billed float64, reasons []string) {
		t.Helper()
		ctx := context.Background()
		rt, err := core.NewRuntime(core.Config{System: []core.Item{core.SystemMessage(strings.Repeat("You are a careful agent. ", 300))}})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		sim, _ := cachesim.NewAnthropic(cachesim.AnthropicOptions{})
		var seen []time.Duration
		m := &scripted.Model{Cache: sim, Clock: clock, Script: func(req provider.Request, _ int) ([]core.Item, error) {
			seen = append(seen, req.CacheTTL)
			return []core.Item{core.AssistantMessage("noted")}, nil
		}}
		a, err := agent.New(agent.Options{Model: m, Now: clock, CacheTTL: choose})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
		for i := range 6 {
			if i > 0 {
				now = now.Add(20 * time.Minute)
			}
			res, err := a.Turn(ctx, s, core.UserMessage(fmt.Sprint("question ", i)))
			if err != nil {
				t.Fatal(err)
			}
			c := res.Rounds[0].Cache
			if c.TTL != seen[len(seen)-1] {
				t.Fatalf("turn %d: reported TTL %v, requested %v", i, c.TTL, seen[len(seen)-1])
			}
			ttl := pricing.TTL5m
			if c.TTL > 5*time.Minute {
				ttl = pricing.TTL1h
			}
			billed += model.Billed(c.ReadTokens, c.WriteTokens, c.UncachedTokens, ttl)
			if ep := res.Rounds[0].View.Usage.Epoch; ep.Reanchored {
				reasons = append(reasons, string(ep.ReanchorReason))
			}
			if u := res.Rounds[0].View.Usage; u.Miss != nil {
				reasons = append(reasons, "miss:"+string(u.Miss.Cause))
			}
		}
		return seen, billed, reasons
	}
	byCost, costBilled, costReasons := run(agent.TTLByCost(model, nil))
	// The first turn has no pause before it to forecast from.
	if byCost[0] != 0 {
		t.Fatalf("first turn asked for %v", byCost[0])
	}
	for i, d := range byCost[1:] {
		if d != time.Hour {
			t.Fatalf("turn %d after a 20-minute pause asked for %v, want 1h", i+1, d)
		}
	}
	_, defBilled, defReasons := run(nil)
	if costBilled >= defBilled {
		t.Fatalf("billed by cost %.0f, default %.0f", costBilled, defBilled)
	}
	// By cost the second turn still finds the first's 5-minute cache
	// expired; after it every turn reads. Nothing else re-anchors.
	if got := strings.Join(costReasons, " "); got != "initial cache-expired miss:ttl_expired" {
		t.Fatalf("by cost: %s", got)
	}
	if !strings.Contains(strings.Join(defReasons, " "), "cache-expired") {
		t.Fatalf("default lifetime: %v (the pauses should read as expiries)", defReasons)
	}
	t.Logf("billed (base-token eq.): by cost %.0f, default 5 minutes %.0f", costBilled, defBilled)

	// A forecast within the default lifetime keeps it.
	short, _, _ := run(agent.TTLByCost(model, func(agent.TTLInput) time.Duration { return 2 * time.Minute }))
	for i, d := range short {
		if d != 0 {
			t.Fatalf("turn %d asked for %v with a 2-minute forecast", i, d)
		}
	}
}
