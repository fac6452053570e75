package core

import (
	"fmt"
	"strings"

	"github.com/stratamem/strata/projector"
)

// Reminder is a compose-time reminder (Config.Reminders): a pure renderer
// of the session's state whose text, when not empty, goes into one
// reminders message at the very end of the view. Reminders are never
// written to the log and are derived again on every assembly, so a
// resumed session shows the same ones. The runtime adds its own with
// Compaction on: a pointer to the folded range (read back with
// recall_history) once a compaction folded a prefix, and a reading hint
// while the thrash flag is set.
type Reminder struct {
	// Name identifies the reminder in Usage.Reminders.
	Name string
	// Render returns the reminder's text for this assembly, "" for none.
	// It must not change the session: it runs inside Assemble.
	Render func(ReminderInput) string
}

// ReminderInput is what a Reminder renders from.
type ReminderInput struct {
	// Session is the session being assembled: read its layers' state
	// (State), its log (Items) and its turn.
	Session *Session
	// Compaction is this assembly's compaction report; nil without
	// Config.Compaction and compaction events.
	Compaction *CompactionUsage
	// Tokens is the view's size before the reminders, as estimated for
	// compaction; Window the model's window (Compaction or TailTrim), 0
	// when neither is set.
	Tokens, Window int
}

// TodoReminder reminds the model of the open todos kept by the layer
// with id layerID (typically tool-owned state, toolcalls.ToolState[S]):
// open returns them from the state.
func TodoReminder[S any](layerID string, open func(S) []string) Reminder {
	return Reminder{Name: "todos", Render: func(in ReminderInput) string {
		st, ok := State[S](in.Session, layerID)
		if !ok {
			return ""
		}
		todos := open(st)
		if len(todos) == 0 {
			return ""
		}
		return fmt.Sprintf("Open todos (%d): %s. Keep working through them; mark each done when it is.", len(todos), strings.Join(todos, "; "))
	}}
}

// DelegationReminder suggests delegating once the view fills more than
// share of the model's window (0.5 when share is 0): self-contained work
// done by a child run (Session.Spawn) keeps this context small.
func DelegationReminder(share float64) Reminder {
	if share <= 0 {
		share = 0.5
	}
	return Reminder{Name: "delegation", Render: func(in ReminderInput) string {
		if in.Window <= 0 || float64(in.Tokens) <= share*float64(in.Window) {
			return ""
		}
		return fmt.Sprintf("The context is %d%% full. Delegate self-contained subtasks (a search, a review, a long read) to a sub-agent and keep only its result here.",
			100*in.Tokens/in.Window)
	}}
}

// builtinReminders are the runtime's own reminders.
var builtinReminders = []Reminder{
	{Name: "folded-history", Render: func(in ReminderInput) string {
		c := in.Compaction
		if c == nil || c.Folded == 0 {
			return ""
		}
		return fmt.Sprintf("Log items 0-%d of this conversation are folded into the conversation summary. "+
			"If you need their exact text, call %s with from and to (e.g. {\"from\":0,\"to\":%d}).", c.Folded-1, RecallHistoryTool, c.Folded)
	}},
	{Name: "thrashing", Render: func(in ReminderInput) string {
		if in.Compaction == nil || !in.Compaction.Thrashing {
			return ""
		}
		return "The context has been compacted several times in a few turns. Do not re-read large files or outputs in full: " +
			"read only the parts you need (line ranges, searches), and note what you learned instead of reading it again."
	}},
}

const remindersWrapper = "<reminders>\n%s\n</reminders>"

func validateReminders(rs []Reminder) error {
	seen := map[string]bool{}
	for _, r := range builtinReminders {
		seen[r.Name] = true
	}
	for i, r := range rs {
		field := fmt.Sprintf("Reminders[%d]", i)
		switch {
		case r.Name == "":
			return &ConfigError{Code: CodeInvalidLayer, Field: field + ".Name", Reason: "empty name"}
		case seen[r.Name]:
			return &ConfigError{Code: CodeInvalidLayer, Field: field + ".Name", Reason: fmt.Sprintf("reminder %q is registered twice (or is built in)", r.Name)}
		case r.Render == nil:
			return &ConfigError{Code: CodeInvalidLayer, Field: field + ".Render", Reason: "nil renderer"}
		}
		seen[r.Name] = true
	}
	return nil
}

// reminders renders this assembly's reminders as one message (ok false
// for none) and their names. A renderer that panics is a diagnostic and
// renders nothing.
func (s *Session) reminders(in ReminderInput) (projector.Entry[Item], []string, bool) {
	var (
		lines []string
		names []string
	)
	all := s.rt.cfg.Reminders
	if s.rt.cfg.Compaction != nil || in.Compaction != nil {
		all = append(append([]Reminder(nil), builtinReminders...), all...)
	}
	for _, r := range all {
		text := s.renderReminder(r, in)
		if text == "" {
			continue
		}
		lines = append(lines, "- "+text)
		names = append(names, r.Name)
	}
	if len(lines) == 0 {
		return projector.Entry[Item]{}, nil, false
	}
	return s.rt.entry(DeveloperMessage(fmt.Sprintf(remindersWrapper, strings.Join(lines, "\n")))), names, true
}

func (s *Session) renderReminder(r Reminder, in ReminderInput) (text string) {
	defer func() {
		if p := recover(); p != nil {
			s.diagnose("reminder:"+r.Name, "render", KindPanic, fmt.Errorf("panic: %v", p))
			text = ""
		}
	}()
	return strings.TrimSpace(r.Render(in))
}

// window is the model's window as the runtime knows it (Compaction or
// TailTrim), 0 when neither is set.
func (rt *Runtime) window() int {
	switch {
	case rt.cfg.Compaction != nil:
		return rt.cfg.Compaction.Window
	case rt.cfg.TailTrim != nil:
		return rt.cfg.TailTrim.Window
	}
	return 0
}

// reminderTokens is ReminderInput.Tokens: the view's estimated size,
// counted only when a reminder may read it.
func (s *Session) reminderTokens(outs []layerOutput, history []projector.Entry[Item]) int {
	if len(s.rt.cfg.Reminders) == 0 {
		return 0
	}
	return s.viewSize(outs, history)
}
