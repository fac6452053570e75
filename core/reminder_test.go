package core_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
)

type todoState struct{ Open []string }

// Reminders end the view, are never logged, render again from state on
// every assembly (and on resume), and the runtime's own appear once a
// compaction folded a prefix.
func TestRemindersEndTheView(t *testing.T) {
	ctx := context.Background()
	todos := core.Layer[todoState]{ID: "todos", Slot: 10, Scope: core.ScopeExecution, Placement: core.PlacementTail,
		Hooks: core.Hooks[todoState]{Init: func(context.Context, core.InitParams) (todoState, error) {
			return todoState{Open: []string{"write the parser", "add tests"}}, nil
		}}}
	rt := residentRuntime(t, core.Config{Layers: []core.AnyLayer{todos},
		Compaction: &core.CompactionConfig{Window: 900, Keep: 4},
		Reminders: []core.Reminder{
			core.TodoReminder("todos", func(s todoState) []string { return s.Open }),
			core.DelegationReminder(0.3),
		}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	folded := false
	for n := 0; n < 40 && !folded; n++ {
		q, a := turnText(n)
		if err := s.Append(ctx, core.UserMessage(q)); err != nil {
			t.Fatal(err)
		}
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		items := v.Items()
		end := items[len(items)-1]
		if !strings.HasPrefix(end.Text(), "<reminders>") || !strings.Contains(end.Text(), "write the parser; add tests") {
			t.Fatalf("turn %d: the view ends with %q", n, end.Text())
		}
		if !slices.Contains(v.Usage.Reminders, "todos") {
			t.Fatalf("turn %d: reminders %q", n, v.Usage.Reminders)
		}
		if c := v.Usage.Compaction; c != nil && c.Folded > 0 {
			folded = true
			if !strings.Contains(end.Text(), core.RecallHistoryTool) {
				t.Fatalf("after a fold, no pointer to recall_history: %q", end.Text())
			}
		}
		if err := s.Record(ctx, core.AssistantMessage(a)); err != nil {
			t.Fatal(err)
		}
	}
	if !folded {
		t.Fatal("never compacted")
	}
	for _, it := range s.Items() {
		if strings.Contains(it.Text(), "<reminders>") {
			t.Fatal("a reminder reached the log")
		}
	}
	// Resumed from the log, the same reminders render.
	s2, err := rt.Start(ctx, core.RunOptions{History: s.Items()})
	if err != nil {
		t.Fatal(err)
	}
	v1, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := s2.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e1, e2 := v1.Items()[len(v1.Items())-1], v2.Items()[len(v2.Items())-1]
	if e1.Text() != e2.Text() {
		t.Fatalf("resumed reminders differ:\n%s\n%s", e1.Text(), e2.Text())
	}
}

func TestReminderConfig(t *testing.T) {
	var ce *core.ConfigError
	_, err := core.NewRuntime(core.Config{Reminders: []core.Reminder{{Name: "x"}}})
	if !errors.As(err, &ce) || ce.Field != "Reminders[0].Render" {
		t.Fatalf("nil renderer: %v", err)
	}
	_, err = core.NewRuntime(core.Config{Reminders: []core.Reminder{{Name: "thrashing", Render: func(core.ReminderInput) string { return "" }}}})
	if !errors.As(err, &ce) || ce.Field != "Reminders[0].Name" {
		t.Fatalf("built-in name: %v", err)
	}
	// A renderer that panics is a diagnostic, not a failed assembly.
	rt, err := core.NewRuntime(core.Config{Reminders: []core.Reminder{{Name: "boom", Render: func(core.ReminderInput) string { panic("boom") }}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(context.Background(), core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Assemble(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Usage.Reminders) != 0 || len(v.Usage.Diagnostics) == 0 {
		t.Fatalf("reminders %q, diagnostics %v", v.Usage.Reminders, v.Usage.Diagnostics)
	}
}
