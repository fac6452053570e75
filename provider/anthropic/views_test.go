package anthropic_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
)

// textLayer renders *src as one developer message.
func textLayer(id string, slot int, placement core.Placement, src *string) core.Layer[int] {
	return core.Layer[int]{ID: id, Slot: slot, Scope: core.ScopeExecution, Placement: placement,
		Hooks: core.Hooks[int]{Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
			return core.Text[int](*src)
		}}}
}

type addNote struct {
	Text string `json:"text" jsonschema:"the note to keep"`
}

// notesLayer is an anchored layer providing the function "notes/add".
func notesLayer() core.Layer[[]string] {
	return core.Layer[[]string]{ID: "notes", Slot: core.SlotScratchpad, Scope: core.ScopeExecution, Placement: core.PlacementAnchor,
		Hooks: core.Hooks[[]string]{Recall: func(_ context.Context, p core.RecallParams[[]string]) (core.Recall[[]string], error) {
			return core.Text[[]string]("<notes>" + strings.Join(p.State, "; ") + "</notes>")
		}},
		Functions: []core.Function[[]string]{core.NewFunction("add", "Keep a note for later turns.",
			func(_ context.Context, notes []string, a addNote) (string, *[]string, error) {
				next := append(append([]string(nil), notes...), a.Text)
				return "saved", &next, nil
			})},
	}
}

func startSession(t *testing.T, cfg core.Config) *core.Session {
	t.Helper()
	rt, err := core.NewRuntime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(context.Background(), core.RunOptions{ThreadID: "thread-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func assemble(t *testing.T, s *core.Session) *core.View {
	t.Helper()
	v, err := s.Assemble(context.Background())
	must(t, err)
	return v
}

// goldenViews are the representative views the golden request bodies are
// made from, each assembled by a real runtime.
func goldenViews(t *testing.T) []struct {
	name string
	view *core.View
} {
	ctx := context.Background()
	system := []core.Item{core.SystemMessage("You are a terse assistant."), core.SystemMessage("Answer in English.")}
	var out []struct {
		name string
		view *core.View
	}
	add := func(name string, v *core.View) {
		out = append(out, struct {
			name string
			view *core.View
		}{name, v})
	}

	// Plain chat: system prompt and one user message.
	s := startSession(t, core.Config{System: system[:1]})
	must(t, s.Append(ctx, core.UserMessage("Hello!")))
	add("plain", assemble(t, s))

	// Every band: an anchored layer that drifts (so a context update is
	// published), a live layer, a tail layer, two turns of history. By
	// default the update is published inline, at the end of history;
	// with TrailingUpdates it is restated in the updates band after the
	// live band.
	var facts string
	for _, trailing := range []bool{false, true} {
		var clock, steer string
		facts, clock, steer = "The user lives in Lyon.", "It is turn 0.", "Keep answers under 50 words."
		s = startSession(t, core.Config{System: system, Cache: core.CacheConfig{TrailingUpdates: trailing}, Layers: []core.AnyLayer{
			textLayer("facts", core.SlotRAG, core.PlacementAnchor, &facts),
			textLayer("clock", core.SlotReminder, core.PlacementLive, &clock),
			textLayer("steer", core.SlotSteering, core.PlacementTail, &steer),
		}})
		must(t, s.Append(ctx, core.UserMessage("Where do I live?")))
		assemble(t, s)
		must(t, s.Record(ctx, core.AssistantMessage("In Lyon.")))
		facts, clock = "The user lives in Paris now.", "It is turn 1."
		must(t, s.Append(ctx, core.UserMessage("And now?")))
		v := assemble(t, s)
		if !trailing {
			add("bands", v)
			continue
		}
		if len(v.Band(core.BandUpdates)) != 1 || len(v.Band(core.BandLive)) != 1 || len(v.Band(core.BandTail)) != 1 {
			t.Fatalf("the trailing view should fill every band: %+v", v.Usage)
		}
		add("trailing", v)
	}

	// Tool calls: a provided function, an assistant message with two
	// parallel calls, their outputs, and a follow-up.
	s = startSession(t, core.Config{System: system[:1], Layers: []core.AnyLayer{notesLayer()}})
	must(t, s.Append(ctx, core.UserMessage("Remember milk and eggs.")))
	assemble(t, s)
	calls := []core.Item{core.FunctionCall("call_1", "notes/add", `{"text": "milk"}`),
		core.FunctionCall("call_2", "notes/add", `{"text":"eggs"}`)}
	must(t, s.Record(ctx, append([]core.Item{core.AssistantMessage("Saving both.")}, calls...)...))
	for _, call := range calls {
		res, err := s.CallFunction(ctx, call)
		must(t, err)
		must(t, s.Append(ctx, res))
	}
	assemble(t, s)
	must(t, s.Record(ctx, core.AssistantMessage("Done.")))
	must(t, s.Append(ctx, core.UserMessage("What did I ask you to remember?")))
	add("tools", assemble(t, s))

	// Anchoring disabled: one band, no breakpoints, so no cache_control.
	facts = "The user lives in Lyon."
	s = startSession(t, core.Config{System: system[:1], Cache: core.CacheConfig{Disabled: true},
		Layers: []core.AnyLayer{textLayer("facts", core.SlotRAG, core.PlacementAnchor, &facts)}})
	must(t, s.Append(ctx, core.UserMessage("Where do I live?")))
	assemble(t, s)
	must(t, s.Record(ctx, core.AssistantMessage("In Lyon.")))
	must(t, s.Append(ctx, core.UserMessage("Thanks.")))
	add("disabled", assemble(t, s))
	return out
}
