package main_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/storage"
)

// recordMiss runs three turns of a real session on thread t1 of alice and
// reports the cache figures of each call: the first writes the prefix,
// the second misses (the provider says the system prompt changed, 480
// tokens missed), the third reads it.
func recordMiss(t *testing.T, st storage.Store) {
	t.Helper()
	ctx := context.Background()
	instr := core.Layer[struct{}]{
		ID: "instructions", Slot: 50, Scope: core.ScopeExecution, Placement: core.PlacementAnchor,
		Hooks: core.Hooks[struct{}]{Recall: func(context.Context, core.RecallParams[struct{}]) (core.Recall[struct{}], error) {
			return core.Text[struct{}]("<instructions>Answer in one sentence.</instructions>")
		}},
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{instr}, Store: st, RecordAssemblies: true, AssemblyRetention: 50,
		System: []core.Item{core.SystemMessage("You are a careful assistant.")}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t1", ResourceID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	reports := []core.CacheReport{
		{Reported: true, FirstRound: true, WriteTokens: 500, UncachedTokens: 20},
		{Reported: true, FirstRound: true, WriteTokens: 500, UncachedTokens: 30,
			Miss: &core.CacheMiss{Reason: core.MissSystemChanged, Detail: "system_prompt_changed", MissedTokens: 480}},
		{Reported: true, FirstRound: true, ReadTokens: 500, UncachedTokens: 40},
	}
	for i, msg := range []string{"Hello", "What did I say?", "Thanks"} {
		if err := s.Append(ctx, core.UserMessage(msg)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Assemble(ctx); err != nil {
			t.Fatal(err)
		}
		s.ReportCache(reports[i])
		if err := s.Record(ctx, core.AssistantMessage("Noted: "+msg)); err != nil {
			t.Fatal(err)
		}
	}
	// A fourth assembly records the third call's report.
	if err := s.Append(ctx, core.UserMessage("Bye")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Assemble(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
}

type callJSON struct {
	Miss *struct {
		Cause          string `json:"cause"`
		Band           string `json:"band"`
		Layer          string `json:"layer"`
		ProviderReason string `json:"provider_reason"`
		ProviderDetail string `json:"provider_detail"`
		MissedTokens   int    `json:"missed_tokens"`
		PrefixTokens   int    `json:"prefix_tokens"`
	} `json:"miss"`
	Cost *struct {
		Currency string  `json:"currency"`
		Total    float64 `json:"total"`
		Bands    []struct {
			Band string  `json:"band"`
			Cost float64 `json:"cost"`
		} `json:"bands"`
	} `json:"cost"`
}

func TestInspectCacheMiss(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	env, err := embedded.Open(context.Background(), store, embedded.Options{Embedder: hashing.New(64)})
	if err != nil {
		t.Fatal(err)
	}
	recordMiss(t, env.State)
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}

	// Turn 1's call missed: its record says so, with the provider's
	// reason, the tokens missed and the cost by band.
	out := e.ok("--store", store, "inspect", "t1", "--turn", "1").stdout
	for _, want := range []string{"Cache report: read 0, written 500, uncached 30 tokens",
		"This turn's call: cache miss\n  CAUSE    BAND    LAYER  PROVIDER        DETAIL                 MISSED  PREFIX\n  changed  system  -      system_changed  system_prompt_changed     480      44\n",
		"This turn's call: input cost ", " USD (", "BAND", "COST", "SHARE", "  system "} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect --turn 1 lacks %q:\n%s", want, out)
		}
	}
	checkWidth(t, out)
	var plan struct {
		Turn int       `json:"turn"`
		Call *callJSON `json:"call"`
	}
	if err := json.Unmarshal([]byte(e.ok("--store", store, "inspect", "t1", "--turn", "1", "--json").stdout), &plan); err != nil {
		t.Fatal(err)
	}
	if c := plan.Call; plan.Turn != 1 || c == nil || c.Miss == nil || c.Miss.Cause != "changed" || c.Miss.Band != "system" ||
		c.Miss.ProviderReason != "system_changed" || c.Miss.ProviderDetail != "system_prompt_changed" || c.Miss.MissedTokens != 480 ||
		c.Miss.PrefixTokens == 0 || c.Cost == nil || c.Cost.Currency != "USD" || c.Cost.Total <= 0 || len(c.Cost.Bands) == 0 {
		t.Errorf("inspect --turn 1 --json: %+v", plan.Call)
	}
	// Turn 2's call read the cache: no miss, a cost.
	out = e.ok("--store", store, "inspect", "t1", "--turn", "2").stdout
	if !strings.Contains(out, "This turn's call: no cache miss") || !strings.Contains(out, "This turn's call: input cost") || strings.Contains(out, "missed") {
		t.Errorf("inspect --turn 2:\n%s", out)
	}
	// The newest turn's call is not reported yet; the last-turn view
	// shows the call before it.
	out = e.ok("--store", store, "inspect", "t1", "--turn", "3").stdout
	if strings.Contains(out, "This turn's call") {
		t.Errorf("inspect --turn 3 reports a call nobody reported:\n%s", out)
	}
	out = e.ok("--store", store, "inspect", "t1").stdout
	if !strings.Contains(out, "Previous call (run turn 2): no cache miss") || !strings.Contains(out, "Previous call (run turn 2): input cost") {
		t.Errorf("inspect (last turn):\n%s", out)
	}

	// --list: a miss and a cost column per turn, within 80 columns.
	list := e.ok("--store", store, "inspect", "t1", "--list").stdout
	checkWidth(t, list)
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], "MISS") || !strings.Contains(lines[0], "COST") ||
		!strings.Contains(lines[1], " none ") || !strings.Contains(lines[2], " changed:system ") || !strings.HasSuffix(lines[4], " -") {
		t.Errorf("inspect --list:\n%s", list)
	}
	var sums []struct {
		Turn int       `json:"turn"`
		Call *callJSON `json:"call"`
	}
	if err := json.Unmarshal([]byte(e.ok("--store", store, "inspect", "t1", "--list", "--json").stdout), &sums); err != nil || len(sums) != 4 {
		t.Fatalf("inspect --list --json: %v %+v", err, sums)
	}
	if c := sums[1].Call; c == nil || c.Miss == nil || c.Miss.Band != "system" || c.Miss.MissedTokens != 480 || sums[0].Call == nil || sums[0].Call.Miss != nil || sums[3].Call != nil {
		t.Errorf("inspect --list --json: %+v %+v %+v", sums[0].Call, sums[1].Call, sums[3].Call)
	}
}

// checkWidth fails for a line wider than 80 columns.
func checkWidth(t *testing.T, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
}
