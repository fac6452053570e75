package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/cachesim"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/anthropic"
	pt "github.com/stratamem/strata/provider/internal/providertest"
)

// parallelRound runs one agent-loop turn through m: the user asks, the
// model answers with calls parallel tool calls, their outputs are
// appended and the model is called again, then a second user turn. It
// returns the responses of the three requests.
func parallelRound(t *testing.T, f *fakeAnthropic, m *anthropic.Model, calls int) []*provider.Response {
	t.Helper()
	ctx := context.Background()
	ref := strings.Repeat("Reference material that holds still. ", 300)
	s := pt.StartSession(t, core.Config{System: []core.Item{core.SystemMessage(strings.Repeat("Use the lookup tool. ", 200))},
		Layers: []core.AnyLayer{pt.TextLayer("reference", core.SlotRAG, core.PlacementAnchor, &ref)}})
	f.reply = func(n int, _ map[string]any) fakeReply {
		if n != 0 {
			return fakeReply{stopReason: "end_turn", blocks: []map[string]any{{"type": "text", "text": "done"}}}
		}
		var blocks []map[string]any
		for k := range calls {
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": fmt.Sprint("call_", k), "name": "lookup",
				"input": map[string]any{"q": fmt.Sprint("item ", k)}})
		}
		return fakeReply{stopReason: "tool_use", blocks: blocks}
	}
	var out []*provider.Response
	send := func() {
		t.Helper()
		resp, err := m.Respond(ctx, provider.Request{View: pt.Assemble(t, s), ThreadID: "t1"})
		if err != nil {
			t.Fatal(err)
		}
		pt.Must(t, s.Record(ctx, resp.Items...))
		out = append(out, resp)
	}
	pt.Must(t, s.Append(ctx, core.UserMessage("Look up every item.")))
	send()
	for k := range calls {
		pt.Must(t, s.Append(ctx, core.FunctionCallOutput(fmt.Sprint("call_", k), fmt.Sprint("result ", k))))
	}
	send()
	pt.Must(t, s.Append(ctx, core.UserMessage("Thanks.")))
	send()
	return out
}

// A round of 30 parallel calls puts 60 blocks between the history
// breakpoint of the request before it and its own, more than the 20
// blocks the API looks back. The request after the round therefore gets
// a fourth breakpoint where the previous request ended, the cache reads
// everything the previous request cached, and no request carries more
// than four markers. Replayed without that breakpoint, the same requests
// read only the system prompt and anchor band.
func TestBridgeBreakpointForParallelCalls(t *testing.T) {
	f := newFakeAnthropic(t)
	m := newModel(t, f, anthropic.Options{})
	resps := parallelRound(t, f, m, 30)

	var bodies []map[string]any
	for n := range f.Requests() {
		var body map[string]any
		if err := json.Unmarshal(f.Body(n), &body); err != nil {
			t.Fatal(err)
		}
		checkWireRules(t, body)
		bodies = append(bodies, body)
	}
	marks := markedBlocks(bodies[1])
	if len(marks) != 4 || marks[2] != "text:Look up every item." || marks[3] != "tool_result:call_29" {
		t.Fatalf("request after the round: cache_control on %q, want the system prompt, the anchor band, the question and the last result", short(marks))
	}
	for n, body := range bodies {
		if k := len(markedBlocks(body)); k > 4 {
			t.Fatalf("request %d has %d breakpoints", n, k)
		}
	}
	// The third request follows a round of two blocks: no bridge.
	if k := len(markedBlocks(bodies[2])); k != 3 {
		t.Fatalf("request after a small round has %d breakpoints, want 3: %q", k, short(markedBlocks(bodies[2])))
	}

	// What the first request cached is read back whole by the second.
	first, second := resps[0].Cache, resps[1].Cache
	if cached := first.ReadTokens + first.WriteTokens; second.ReadTokens != cached {
		t.Fatalf("the request after the round read %d tokens, the one before cached %d", second.ReadTokens, cached)
	}

	// The same requests without the bridge: the history entry is out of
	// reach and only the prefix through the anchor band is read.
	sim, err := cachesim.NewAnthropic(cachesim.AnthropicOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var reads []int
	for n, body := range bodies {
		if n == 1 {
			msgs := body["messages"].([]any)
			for _, msg := range msgs {
				for _, b := range msg.(map[string]any)["content"].([]any) {
					if blk := b.(map[string]any); blk["text"] == "Look up every item." {
						delete(blk, "cache_control")
					}
				}
			}
		}
		blocks, err := simBlocks(body)
		if err != nil {
			t.Fatal(err)
		}
		u, err := sim.Send(cachesim.Request{At: at.Add(time.Duration(n) * time.Second), Model: "claude-sonnet-4-5", Blocks: blocks})
		if err != nil {
			t.Fatal(err)
		}
		reads = append(reads, u.ReadTokens)
	}
	if reads[1] >= second.ReadTokens {
		t.Fatalf("without the bridge the request read %d tokens, with it %d: the bridge should matter", reads[1], second.ReadTokens)
	}
}

// Rounds of a few calls stay within the lookback and get no extra
// breakpoint; neither does a view with anchoring disabled.
func TestNoBridgeForSmallRounds(t *testing.T) {
	for _, calls := range []int{1, 5, 9} {
		f := newFakeAnthropic(t)
		m := newModel(t, f, anthropic.Options{})
		resps := parallelRound(t, f, m, calls)
		for n := range f.Requests() {
			var body map[string]any
			if err := json.Unmarshal(f.Body(n), &body); err != nil {
				t.Fatal(err)
			}
			if marks := markedBlocks(body); len(marks) > 3 || slices.Contains(marks, "text:Look up every item.") && n == 1 {
				t.Fatalf("%d calls, request %d: cache_control on %q", calls, n, short(marks))
			}
		}
		if first, second := resps[0].Cache, resps[1].Cache; second.ReadTokens != first.ReadTokens+first.WriteTokens {
			t.Fatalf("%d calls: second request read %d, first cached %d", calls, second.ReadTokens, first.ReadTokens+first.WriteTokens)
		}
	}
}

// short cuts each marked block's description to its start, for messages.
func short(marks []string) []string {
	out := make([]string, len(marks))
	for i, m := range marks {
		if len(m) > 40 {
			m = m[:40] + "…"
		}
		out[i] = m
	}
	return out
}
