package providertest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
)

// TextLayer renders *src as one developer message; tests change *src
// between turns to make the layer drift.
func TextLayer(id string, slot int, placement core.Placement, src *string) core.Layer[int] {
	return core.Layer[int]{ID: id, Slot: slot, Scope: core.ScopeExecution, Placement: placement,
		Hooks: core.Hooks[int]{Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
			return core.Text[int](*src)
		}}}
}

// AddNote is the argument of the function "notes/add".
type AddNote struct {
	Text string `json:"text" jsonschema:"the note to keep"`
}

// NotesLayer is an anchored layer providing the function "notes/add".
func NotesLayer() core.Layer[[]string] {
	return core.Layer[[]string]{ID: "notes", Slot: core.SlotScratchpad, Scope: core.ScopeExecution, Placement: core.PlacementAnchor,
		Hooks: core.Hooks[[]string]{Recall: func(_ context.Context, p core.RecallParams[[]string]) (core.Recall[[]string], error) {
			return core.Text[[]string]("<notes>" + strings.Join(p.State, "; ") + "</notes>")
		}},
		Functions: []core.Function[[]string]{core.NewFunction("add", "Keep a note for later turns.",
			func(_ context.Context, notes []string, a AddNote) (string, *[]string, error) {
				next := append(append([]string(nil), notes...), a.Text)
				return "saved", &next, nil
			})},
	}
}

// StartSession starts a session of a new runtime on thread "thread-1",
// closed when the test ends.
func StartSession(t testing.TB, cfg core.Config) *core.Session {
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

// Must fails the test on err.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Assemble assembles the session's view.
func Assemble(t testing.TB, s *core.Session) *core.View {
	t.Helper()
	v, err := s.Assemble(context.Background())
	Must(t, err)
	return v
}

// PlainView is one user message, "hi", and nothing else.
func PlainView(t testing.TB) *core.View {
	t.Helper()
	s := StartSession(t, core.Config{})
	Must(t, s.Append(context.Background(), core.UserMessage("hi")))
	return Assemble(t, s)
}

// GoldenView is a named view golden request bodies are made from.
type GoldenView struct {
	Name string
	View *core.View
}

// GoldenViews are the representative views the golden request bodies are
// made from, each assembled by a real runtime: "plain", "bands",
// "trailing", "tools" and "disabled".
func GoldenViews(t testing.TB) []GoldenView {
	t.Helper()
	ctx := context.Background()
	system := []core.Item{core.SystemMessage("You are a terse assistant."), core.SystemMessage("Answer in English.")}
	var out []GoldenView
	add := func(name string, v *core.View) { out = append(out, GoldenView{name, v}) }

	// Plain chat: system prompt and one user message.
	s := StartSession(t, core.Config{System: system[:1]})
	Must(t, s.Append(ctx, core.UserMessage("Hello!")))
	add("plain", Assemble(t, s))

	// Every band: an anchored layer that drifts (so a context update is
	// published), a live layer, a tail layer, two turns of history. By
	// default the update is published inline, at the end of history;
	// with TrailingUpdates it is restated in the updates band after the
	// live band.
	var facts string
	for _, trailing := range []bool{false, true} {
		var clock, steer string
		facts, clock, steer = "The user lives in Lyon.", "It is turn 0.", "Keep answers under 50 words."
		s = StartSession(t, core.Config{System: system, Cache: core.CacheConfig{TrailingUpdates: trailing}, Layers: []core.AnyLayer{
			TextLayer("facts", core.SlotRAG, core.PlacementAnchor, &facts),
			TextLayer("clock", core.SlotReminder, core.PlacementLive, &clock),
			TextLayer("steer", core.SlotSteering, core.PlacementTail, &steer),
		}})
		Must(t, s.Append(ctx, core.UserMessage("Where do I live?")))
		Assemble(t, s)
		Must(t, s.Record(ctx, core.AssistantMessage("In Lyon.")))
		facts, clock = "The user lives in Paris now.", "It is turn 1."
		Must(t, s.Append(ctx, core.UserMessage("And now?")))
		v := Assemble(t, s)
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
	s = StartSession(t, core.Config{System: system[:1], Layers: []core.AnyLayer{NotesLayer()}})
	Must(t, s.Append(ctx, core.UserMessage("Remember milk and eggs.")))
	Assemble(t, s)
	calls := []core.Item{core.FunctionCall("call_1", "notes/add", `{"text": "milk"}`),
		core.FunctionCall("call_2", "notes/add", `{"text":"eggs"}`)}
	Must(t, s.Record(ctx, append([]core.Item{core.AssistantMessage("Saving both.")}, calls...)...))
	for _, call := range calls {
		res, err := s.ExecuteTool(ctx, call)
		Must(t, err)
		Must(t, s.Append(ctx, res))
	}
	Assemble(t, s)
	Must(t, s.Record(ctx, core.AssistantMessage("Done.")))
	Must(t, s.Append(ctx, core.UserMessage("What did I ask you to remember?")))
	add("tools", Assemble(t, s))

	// Anchoring disabled: one band, no breakpoints, so no cache markers.
	facts = "The user lives in Lyon."
	s = StartSession(t, core.Config{System: system[:1], Cache: core.CacheConfig{Disabled: true},
		Layers: []core.AnyLayer{TextLayer("facts", core.SlotRAG, core.PlacementAnchor, &facts)}})
	Must(t, s.Append(ctx, core.UserMessage("Where do I live?")))
	Assemble(t, s)
	Must(t, s.Record(ctx, core.AssistantMessage("In Lyon.")))
	Must(t, s.Append(ctx, core.UserMessage("Thanks.")))
	add("disabled", Assemble(t, s))
	return out
}

// BenchView is a 400-item conversation with an anchored layer, a live
// layer and tool calls, assembled by a real runtime, for benchmarks of
// request building.
func BenchView(t testing.TB) *core.View {
	t.Helper()
	ctx := context.Background()
	doc := strings.Repeat("reference text ", 200)
	layer := func(id string, p core.Placement) core.Layer[int] {
		return core.Layer[int]{ID: id, Scope: core.ScopeExecution, Placement: p,
			Hooks: core.Hooks[int]{Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
				return core.Text[int](doc)
			}}}
	}
	rt, err := core.NewRuntime(core.Config{System: []core.Item{core.SystemMessage("sys")},
		Layers: []core.AnyLayer{layer("ref", core.PlacementAnchor), layer("live", core.PlacementLive)}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		id := fmt.Sprint("call_", i)
		if err := s.Append(ctx, core.UserMessage(fmt.Sprint("question ", i)),
			core.FunctionCall(id, "tools/search", `{"q":"x"}`), core.FunctionCallOutput(id, "result"),
			core.AssistantMessage(fmt.Sprint("answer ", i))); err != nil {
			t.Fatal(err)
		}
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
