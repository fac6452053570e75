package core_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
)

// thrashHint is a phrase of the built-in thrashing reminder.
const thrashHint = "compacted several times"

// tailText joins the texts of the view's tail band, where the reminders
// message goes.
func tailText(v *core.View) string {
	return strings.Join(texts(v.Band(core.BandTail)), "\n")
}

// The built-in thrashing reminder renders exactly while the thrash flag
// is set: not before two compactions came within ThrashTurns assemblies,
// on every assembly after, and never when ThrashTurns is negative, however
// often the session compacts.
func TestAuditThrashingReminderFollowsFlag(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		thrashTurns int
		latches     bool
	}{
		{"latches", 3, true},
		{"never", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A tiny window with long messages: a compaction every few turns.
			cc := &core.CompactionConfig{Window: 400, Keep: 2, ThrashTurns: tc.thrashTurns}
			s, err := compactionRuntime(t, cc).Start(ctx, core.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			compactions, calm, thrashing := 0, 0, 0
			for n := range 20 {
				q, a := turnText(n)
				if err := s.Append(ctx, core.UserMessage(q+" "+strings.Repeat("More detail follows. ", 8))); err != nil {
					t.Fatal(err)
				}
				v, err := s.Assemble(ctx)
				if err != nil {
					t.Fatalf("turn %d: %v", n, err)
				}
				u := v.Usage.Compaction
				if u.Compacted {
					compactions++
				}
				hint := strings.Contains(tailText(v), thrashHint)
				named := slices.Contains(v.Usage.Reminders, "thrashing")
				if hint != u.Thrashing || named != u.Thrashing {
					t.Fatalf("turn %d: thrashing %v, hint rendered %v, reminders %q", n, u.Thrashing, hint, v.Usage.Reminders)
				}
				if u.Thrashing {
					thrashing++
				} else {
					if thrashing > 0 {
						t.Fatalf("turn %d: the thrash flag cleared after it latched", n)
					}
					calm++
				}
				if err := s.Record(ctx, core.AssistantMessage(a)); err != nil {
					t.Fatal(err)
				}
			}
			if compactions < 3 {
				t.Fatalf("only %d compactions: the session does not exercise thrashing", compactions)
			}
			switch {
			case tc.latches && (thrashing == 0 || calm == 0):
				t.Fatalf("%d calm and %d thrashing assemblies: want both", calm, thrashing)
			case !tc.latches && thrashing > 0:
				t.Fatalf("ThrashTurns %d latched on %d assemblies", tc.thrashTurns, thrashing)
			}
		})
	}
}

// DelegationReminder renders once the view before the reminders fills
// more than share of the model's window (0.5 for share 0), with the fill
// it read; never without a window (neither Compaction nor TailTrim).
func TestAuditDelegationReminderPastShare(t *testing.T) {
	ctx := context.Background()
	const window = 2000
	for _, tc := range []struct {
		share, want float64
	}{{0.3, 0.3}, {0, 0.5}} {
		t.Run(fmt.Sprint(tc.share), func(t *testing.T) {
			// TailTrim only gives the window: without tool outputs it
			// clears nothing, and no layer adds to the tail band, so the
			// tail band is the reminders message alone.
			rt, err := core.NewRuntime(core.Config{System: []core.Item{core.SystemMessage("You are a careful assistant.")},
				TailTrim:  &core.TailTrimConfig{Window: window},
				Reminders: []core.Reminder{core.DelegationReminder(tc.share)}})
			if err != nil {
				t.Fatal(err)
			}
			s, err := rt.Start(ctx, core.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			below, above := 0, 0
			for n := 0; n < 80 && above < 3; n++ {
				q, a := turnText(n)
				if err := s.Append(ctx, core.UserMessage(q)); err != nil {
					t.Fatal(err)
				}
				v, err := s.Assemble(ctx)
				if err != nil {
					t.Fatal(err)
				}
				before := v.Usage.Total - v.Usage.BandTokens[core.BandTail]
				shown := slices.Contains(v.Usage.Reminders, "delegation")
				if over := float64(before) > tc.want*window; shown != over {
					t.Fatalf("turn %d: %d of %d tokens before the reminders, delegation shown %v (tail %q)", n, before, window, shown, tailText(v))
				}
				if shown {
					above++
					if want := fmt.Sprintf("%d%% full", 100*before/window); !strings.Contains(tailText(v), want) {
						t.Fatalf("turn %d: reminder %q, want %q", n, tailText(v), want)
					}
				} else {
					below++
					if len(v.Band(core.BandTail)) != 0 {
						t.Fatalf("turn %d: no reminder, yet the tail band is %q", n, tailText(v))
					}
				}
				if err := s.Record(ctx, core.AssistantMessage(a)); err != nil {
					t.Fatal(err)
				}
			}
			if below == 0 || above == 0 {
				t.Fatalf("%d assemblies below the share, %d above: want both", below, above)
			}
		})
	}
	t.Run("no window", func(t *testing.T) {
		rt, err := core.NewRuntime(core.Config{System: []core.Item{core.SystemMessage("You are a careful assistant.")},
			Reminders: []core.Reminder{core.DelegationReminder(0.01)}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := rt.Start(ctx, core.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for n := range 30 {
			q, a := turnText(n)
			_ = s.Append(ctx, core.UserMessage(q))
			v, err := s.Assemble(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(v.Usage.Reminders) != 0 {
				t.Fatalf("turn %d: reminders %q without a window", n, v.Usage.Reminders)
			}
			_ = s.Record(ctx, core.AssistantMessage(a))
		}
	})
}
