package core_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
)

// TestLongSessionRandomized drives sessions through random mixes of what
// a host does over a long run (user turns, tool rounds, assemblies between
// a call and its output, mid-task activations, an anchored layer that
// drifts so updates are published inline) under compaction and tail
// trimming with small windows. Every assembly must succeed (or stall with
// the typed error) and keep each call next to its output; one that did not
// compact, assembled again with nothing new in between, must succeed and
// render the same bytes. (One that compacted changed the log, so the next
// reads another state: it may stall when the kept items alone overflow.)
func TestLongSessionRandomized(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { randomSession(t, uint64(seed)) })
	}
}

func randomSession(t *testing.T, seed uint64) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 7))
	drift := 0
	plan := core.Layer[struct{}]{ID: "plan", Slot: 100, Scope: core.ScopeExecution, Placement: core.PlacementAnchor,
		Hooks: core.Hooks[struct{}]{Recall: func(context.Context, core.RecallParams[struct{}]) (core.Recall[struct{}], error) {
			return core.Text[struct{}](fmt.Sprintf("<plan>step %d</plan>", drift))
		}}}
	window := 900 + r.IntN(1600)
	cfg := core.Config{Layers: []core.AnyLayer{plan}, System: []core.Item{core.SystemMessage("You are a careful assistant.")},
		Compaction: &core.CompactionConfig{Window: window, Keep: 2 + r.IntN(6)}}
	if r.IntN(2) == 0 {
		cfg.TailTrim = &core.TailTrimConfig{}
	}
	if r.IntN(3) == 0 {
		// A hard budget under the compaction's window: the projection
		// drops history (and mounts dropped activations) too.
		cfg.Policy = &core.Policy{TokenBudget: window * 3 / 4, ResponseReserve: 50}
	}
	rt, err := core.NewRuntime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stalls, repeats := 0, 0
	assemble := func(step int) {
		t.Helper()
		v, err := s.Assemble(ctx)
		if errors.Is(err, core.ErrCompactionStalled) {
			stalls++ // the kept items alone overflow: the typed error is the contract
			return
		}
		if err != nil {
			t.Fatalf("seed %d step %d (window %d): %v", seed, step, window, err)
		}
		checkRoundTrips(t, v.Items())
		if v.Usage.Compaction.Compacted {
			// This assembly changed the log: the next one reads another
			// state (and, when the kept items alone overflow, stalls).
			return
		}
		again, err := s.Assemble(ctx)
		if err != nil {
			t.Fatalf("seed %d step %d (window %d): assembled again with nothing new: %v", seed, step, window, err)
		}
		if a, b := canon(t, v.Items()), canon(t, again.Items()); a != b {
			t.Fatalf("seed %d step %d (window %d): assembled again with nothing new, the view differs:\n%s\n%s", seed, step, window, a, b)
		}
		repeats++
	}
	calls := 0
	for step := range 120 {
		if r.IntN(4) == 0 {
			drift++
		}
		switch r.IntN(6) {
		case 0, 1, 2:
			q, a := turnText(step)
			_ = s.Append(ctx, core.UserMessage(q))
			assemble(step)
			_ = s.Record(ctx, core.AssistantMessage(a))
		case 3:
			n := 1 + r.IntN(3)
			ids := make([]string, n)
			for i := range ids {
				calls++
				ids[i] = fmt.Sprintf("c%d", calls)
				_ = s.Record(ctx, core.FunctionCall(ids[i], "read_file", `{"path":"a.go"}`))
			}
			if r.IntN(2) == 0 {
				assemble(step) // between the calls and their outputs
			}
			for i, id := range ids {
				if i > 0 && r.IntN(3) == 0 {
					drift++
					assemble(step)
				}
				_ = s.Append(ctx, core.FunctionCallOutput(id, strings.Repeat(fmt.Sprintf("line %d of output %s\n", step, id), 5+r.IntN(60))))
			}
			assemble(step)
		case 4:
			kinds := []string{core.ContentSkills, core.ContentMemory, core.ContentInstructions, core.ContentEnvironment}
			_ = s.Activate(ctx, core.Content{Kind: kinds[r.IntN(len(kinds))], Key: fmt.Sprintf("k%d", r.IntN(20)),
				Text: fmt.Sprintf("resident text %d", step)})
		case 5:
			assemble(step)
		}
	}
	if u := s.LastUsage(); u != nil && u.Compaction != nil {
		t.Logf("window %d: %d compactions, %d stalled assemblies, %d repeated", window, u.Compaction.Count, stalls, repeats)
	}
	if repeats == 0 {
		t.Fatal("no assembly was repeated: the same-bytes check never ran")
	}
}

// checkRoundTrips fails when a function call and its output are split by
// anything other than other calls and outputs of the same round. Calls
// still unanswered at the end of the view (the host assembling between a
// call and its output) may be followed by the transient bands.
func checkRoundTrips(t *testing.T, items []core.Item) {
	t.Helper()
	open := map[string]bool{}
	split := -1
	for i, it := range items {
		switch it.Type {
		case core.TypeFunctionCall:
			open[it.CallID] = true
		case core.TypeFunctionCallOutput:
			if open[it.CallID] && split >= 0 {
				s := items[split]
				t.Fatalf("item %d (%s %s %.80q) of %d splits call %s from its output", split, s.Type, s.Role, text(s), len(items), it.CallID)
			}
			delete(open, it.CallID)
		default:
			if len(open) > 0 && split < 0 {
				split = i
			}
			if len(open) == 0 {
				split = -1
			}
		}
	}
}

func text(it core.Item) string {
	if len(it.Content) > 0 {
		return it.Content[0].Text
	}
	return ""
}
