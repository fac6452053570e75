package core_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
)

func isUpdate(it core.Item) bool {
	return it.Type == core.TypeMessage && it.Role == core.RoleDeveloper && strings.HasPrefix(it.Text(), "<context_updates")
}

// checkNoSplitRoundTrip fails when an update in the history band stands
// between a function call and its output, or after a call not answered
// before it (unless a user message ended that round trip first).
func checkNoSplitRoundTrip(t *testing.T, name string, v *core.View) {
	t.Helper()
	h := v.Band(core.BandHistory)
	for u, it := range h {
		if !isUpdate(it) {
			continue
		}
		for i := range u {
			if h[i].Type != core.TypeFunctionCall {
				continue
			}
			answered := false
			for j := i + 1; j < u; j++ {
				if h[j].Type == core.TypeFunctionCallOutput && h[j].CallID == h[i].CallID ||
					h[j].Type == core.TypeMessage && h[j].Role == core.RoleUser {
					answered = true
				}
			}
			if !answered {
				t.Fatalf("%s: the update at %d stands between call %q (at %d) and its output:\n%s", name, u, h[i].CallID, i, describe(h))
			}
		}
	}
}

func describe(items []core.Item) string {
	var b strings.Builder
	for i, it := range items {
		switch {
		case isUpdate(it):
			b.WriteString("  update\n")
		case it.Type == core.TypeMessage:
			b.WriteString("  " + string(it.Role) + ": " + it.Text() + "\n")
		default:
			b.WriteString("  " + string(it.Type) + " " + it.CallID + "\n")
		}
		_ = i
	}
	return b.String()
}

// prefixItems is the cached part of a view, item by item: the system,
// anchor and history bands as JSON.
func prefixItems(t *testing.T, v *core.View) []string {
	t.Helper()
	var out []string
	for _, band := range []core.Band{core.BandSystem, core.BandAnchor, core.BandHistory} {
		for _, it := range v.Band(band) {
			raw, err := json.Marshal(it)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(raw))
		}
	}
	return out
}

// checkPrefix fails unless prev's cached part is a byte-identical prefix
// of next's.
func checkPrefix(t *testing.T, name string, prev, next *core.View) {
	t.Helper()
	a, b := prefixItems(t, prev), prefixItems(t, next)
	if len(a) > len(b) {
		t.Fatalf("%s: the prefix shrank from %d to %d items", name, len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("%s: item %d changed:\n was %s\n now %s\nnext history:\n%s", name, i, a[i], b[i], describe(next.Band(core.BandHistory)))
		}
	}
}

// A host that assembles between recording a function call and appending
// its output, while an anchored layer drifts, must not get the update
// between the call and its output, neither in that view nor in any
// later one of the epoch, and each view's cached part must stay a prefix
// of the next.
func TestInlineUpdateNeverSplitsRoundTrip(t *testing.T) {
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	type step struct {
		name  string
		drift string // the plan layer's output before the step's assembly, "" keeps it
		do    func(s *core.Session)
		// shown is how many updates the view's history holds: one
		// published while a round trip is open at the end of the log joins
		// it once the round trip's outputs are in.
		shown int
	}
	cases := []struct {
		name  string
		steps []step
		// wantUpdateBefore is the history item (by description) the first
		// update must directly precede, "" for the end of history.
		wantUpdateBefore string
	}{
		{
			name: "one call",
			steps: []step{
				{name: "call recorded", drift: "step 2", do: func(s *core.Session) {
					must(s.Record(ctx, core.AssistantMessage("Checking."), core.FunctionCall("c1", "lookup", `{}`)))
				}},
				{name: "output appended", shown: 1, do: func(s *core.Session) {
					must(s.Append(ctx, core.FunctionCallOutput("c1", "found")))
				}},
				{name: "answer recorded", shown: 1, do: func(s *core.Session) {
					must(s.Record(ctx, core.AssistantMessage("Done.")))
					must(s.Append(ctx, core.UserMessage("next")))
				}},
			},
			wantUpdateBefore: "assistant: Done.",
		},
		{
			name: "parallel calls, one answered",
			steps: []step{
				{name: "calls recorded", do: func(s *core.Session) {
					must(s.Record(ctx, core.FunctionCall("c1", "lookup", `{}`), core.FunctionCall("c2", "lookup", `{}`)))
				}},
				{name: "first output appended", drift: "step 2", do: func(s *core.Session) {
					must(s.Append(ctx, core.FunctionCallOutput("c1", "one")))
				}},
				{name: "second output appended", shown: 1, do: func(s *core.Session) {
					must(s.Append(ctx, core.FunctionCallOutput("c2", "two")))
				}},
				{name: "second round trip", drift: "step 3", shown: 1, do: func(s *core.Session) {
					must(s.Record(ctx, core.FunctionCall("c3", "lookup", `{}`)))
				}},
				{name: "third output appended", shown: 2, do: func(s *core.Session) {
					must(s.Append(ctx, core.FunctionCallOutput("c3", "three")))
				}},
			},
			wantUpdateBefore: "function_call c3",
		},
		{
			name: "drift after the output",
			steps: []step{
				{name: "call recorded", do: func(s *core.Session) {
					must(s.Record(ctx, core.FunctionCall("c1", "lookup", `{}`)))
				}},
				{name: "output appended", drift: "step 2", shown: 1, do: func(s *core.Session) {
					must(s.Append(ctx, core.FunctionCallOutput("c1", "found")))
				}},
				{name: "answer recorded", shown: 1, do: func(s *core.Session) {
					must(s.Record(ctx, core.AssistantMessage("Done.")))
				}},
			},
			wantUpdateBefore: "assistant: Done.",
		},
		{
			// A call left unanswered before a user message does not hold
			// later updates back: they go at the end of history.
			name: "abandoned call",
			steps: []step{
				{name: "call recorded", do: func(s *core.Session) {
					must(s.Record(ctx, core.FunctionCall("c1", "lookup", `{}`)))
					must(s.Append(ctx, core.UserMessage("never mind")))
				}},
				{name: "answer recorded", drift: "step 2", shown: 1, do: func(s *core.Session) {
					must(s.Record(ctx, core.AssistantMessage("OK.")))
				}},
			},
			wantUpdateBefore: "",
		},
		{
			// Published while the call was open, the update takes its place
			// when a user message ends the round trip without the output.
			name: "call abandoned after the update",
			steps: []step{
				{name: "call recorded", drift: "step 2", do: func(s *core.Session) {
					must(s.Record(ctx, core.FunctionCall("c1", "lookup", `{}`)))
				}},
				{name: "user message appended", shown: 1, do: func(s *core.Session) {
					must(s.Append(ctx, core.UserMessage("never mind")))
				}},
				{name: "answer recorded", shown: 1, do: func(s *core.Session) {
					must(s.Record(ctx, core.AssistantMessage("OK.")))
				}},
			},
			wantUpdateBefore: "assistant: OK.",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := &scripted{"step 1"}
			s := start(t, core.Config{System: []core.Item{core.SystemMessage("sys")},
				Layers: []core.AnyLayer{scriptedLayer("plan", 100, core.PlacementAnchor, plan)}})
			must(s.Append(ctx, core.UserMessage("go")))
			prev, err := s.Assemble(ctx)
			must(err)
			published := 0
			for _, st := range tc.steps {
				st.do(s)
				if st.drift != "" {
					plan.out = st.drift
				}
				v, err := s.Assemble(ctx)
				must(err)
				if st.drift != "" {
					if len(v.Updates()) != 1 || v.Usage.Epoch.Reanchored {
						t.Fatalf("%s: updates = %v, epoch = %+v", st.name, v.Updates(), v.Usage.Epoch)
					}
					published++
				}
				if got := strings.Count(updates(v), "<context_updates"); got != st.shown {
					t.Fatalf("%s: %d updates in the history, want %d:\n%s", st.name, got, st.shown, describe(v.Band(core.BandHistory)))
				}
				if v.Usage.Epoch.Updates != published {
					t.Fatalf("%s: Usage.Epoch.Updates = %d, want %d", st.name, v.Usage.Epoch.Updates, published)
				}
				checkNoSplitRoundTrip(t, st.name, v)
				checkPrefix(t, st.name, prev, v)
				prev = v
			}
			h := prev.Band(core.BandHistory)
			for i, it := range h {
				if !isUpdate(it) {
					continue
				}
				got := ""
				if i+1 < len(h) {
					got = strings.TrimSpace(describe(h[i+1 : i+2]))
				}
				if got != tc.wantUpdateBefore {
					t.Fatalf("the first update precedes %q, want %q:\n%s", got, tc.wantUpdateBefore, describe(h))
				}
				break
			}
		})
	}
}
