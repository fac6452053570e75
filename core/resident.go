package core

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/stratamem/strata/projector"
)

// TypeContent is the item type of a resident-content activation: the
// record, in the run's log, that a piece of content (a skill, the memory
// index, an instructions file, environment facts) became resident. Like
// a compaction event it is never sent to the model as it is and never
// given to the layers' item hooks: every assembly renders the run's
// activations with their kind's renderer (see Session.Activate).
const TypeContent ItemType = "content"

// ContentMark names a resident-content activation: its kind and its key
// within the kind (a skill's name, a file's path).
type ContentMark struct {
	Kind string `json:"kind"`
	Key  string `json:"key"`
}

// The built-in content kinds, in the order they render: skills first,
// then the memory index, then instructions, then environment facts; the
// host's kinds (Config.ContentKinds) follow in their order.
const (
	ContentSkills       = "skills"
	ContentMemory       = "memory"
	ContentInstructions = "instructions"
	ContentEnvironment  = "environment"
)

// builtinKinds are the built-in content kinds in band order.
var builtinKinds = []string{ContentSkills, ContentMemory, ContentInstructions, ContentEnvironment}

// ContentKind is a host's resident-content kind (Config.ContentKinds).
type ContentKind struct {
	// Name is the kind's name, used in Content.Kind; it must differ from
	// the built-in kinds and the other host kinds.
	Name string
	// Render frames one activation's text as the message the model reads;
	// nil frames it as <name key="...">text</name>. It must be a pure
	// function of its arguments: the same activation renders the same
	// bytes on every assembly.
	Render func(key, text string) string
}

// Content is one resident-content activation.
type Content struct {
	// Kind is a built-in kind (ContentSkills, ...) or a host's kind.
	Kind string
	// Key names the content within its kind; a key activates once per
	// run: activating it again is a no-op.
	Key string
	// Text is the content.
	Text string
}

// ErrUnknownContentKind is returned (wrapped) by Session.Activate for a
// kind neither built in nor in Config.ContentKinds.
var ErrUnknownContentKind = errors.New("core: unknown content kind")

// ContentEvent builds the log item of an activation.
func ContentEvent(c Content) Item {
	return Item{Type: TypeContent, Content: []Part{{Type: "input_text", Text: c.Text}}, Resident: &ContentMark{Kind: c.Kind, Key: c.Key}}
}

// contentKinds are a runtime's content kinds in band order.
type contentKinds struct {
	names  []string
	render map[string]func(key, text string) string
}

func newContentKinds(host []ContentKind) (contentKinds, error) {
	k := contentKinds{names: slices.Clone(builtinKinds), render: map[string]func(string, string) string{}}
	for i, h := range host {
		field := fmt.Sprintf("ContentKinds[%d].Name", i)
		switch {
		case strings.TrimSpace(h.Name) == "":
			return k, &ConfigError{Code: CodeInvalidLayer, Field: field, Reason: "empty kind name"}
		case slices.Contains(k.names, h.Name):
			return k, &ConfigError{Code: CodeInvalidLayer, Field: field, Reason: fmt.Sprintf("kind %q is registered twice (or is built in)", h.Name)}
		}
		k.names = append(k.names, h.Name)
		if h.Render != nil {
			k.render[h.Name] = h.Render
		}
	}
	return k, nil
}

func (k *contentKinds) order(kind string) int { return slices.Index(k.names, kind) }

// message renders one activation as the developer message the view shows.
func (k *contentKinds) message(it Item) Item {
	m := it.Resident
	text := it.Content[0].Text
	if r := k.render[m.Kind]; r != nil {
		return DeveloperMessage(r(m.Key, text))
	}
	return DeveloperMessage(fmt.Sprintf("<%s key=%q>\n%s\n</%s>", m.Kind, m.Key, text, m.Kind))
}

// Activate makes content resident for the rest of the run, logging a
// TypeContent event. Content activated before the loop (before the
// model's first message or call in the log) renders in the anchor band,
// ahead of the layers' anchored output, in kind order, so it belongs to
// the head the whole session runs on. Content activated mid-task renders
// as a message in history at the point of activation, so only its own
// tokens are billed: rewriting the head mid-conversation would re-bill
// everything after it. The message slides past the outputs of the calls
// open at activation, so it never separates a call from its output (it
// shows once they are all answered). A compaction that folds the point
// of activation mounts the content again right after the summary, in
// activation order: resident content survives compaction. A Policy that
// drops the oldest history to fit its budget mounts the activations it
// drops at the front of the history it keeps the same way, their tokens
// taken from the history's room; Usage.Resident lists what the view
// shows.
//
// A key activates once per run; activating it again is a no-op. An
// unknown kind fails with ErrUnknownContentKind, empty key or text with
// ErrInvalidItem; nothing is logged then.
func (s *Session) Activate(ctx context.Context, c Content) error {
	if s.disposed {
		return ErrDisposed
	}
	if err := s.rt.checkContent(c); err != nil {
		return err
	}
	s.activate(c)
	return nil
}

func (rt *Runtime) checkContent(c Content) error {
	switch {
	case rt.kinds.order(c.Kind) < 0:
		return fmt.Errorf("%w: %q (register it in Config.ContentKinds)", ErrUnknownContentKind, c.Kind)
	case c.Key == "":
		return fmt.Errorf("%w: content of kind %q needs a key", ErrInvalidItem, c.Kind)
	case c.Text == "":
		return fmt.Errorf("%w: content %s/%s has no text", ErrInvalidItem, c.Kind, c.Key)
	}
	return nil
}

// activate logs an activation unless its key is already resident.
func (s *Session) activate(c Content) {
	mark := ContentMark{Kind: c.Kind, Key: c.Key}
	for _, i := range s.events {
		if m := s.items[i].Resident; m != nil && *m == mark {
			return
		}
	}
	ev := ContentEvent(c)
	e := s.rt.entry(ev)
	s.log = append(s.log, projector.Entry[Item]{Item: ev, Tokens: e.Tokens})
	s.items = append(s.items, ev)
	s.noteItem()
}

// activations queues the activations a layer's item hook asks for
// (ItemAppendParams.Activate): hooks run on their own goroutines, and the
// events go into the log after the batch of items being appended.
type activations struct {
	mu      sync.Mutex
	pending []Content
}

func (a *activations) add(c Content) {
	a.mu.Lock()
	a.pending = append(a.pending, c)
	a.mu.Unlock()
}

func (a *activations) take() []Content {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.pending
	a.pending = nil
	return out
}

// queueActivation is ItemAppendParams.Activate.
func (s *Session) queueActivation(c Content) error {
	if err := s.rt.checkContent(c); err != nil {
		return err
	}
	s.acts.add(c)
	return nil
}

// residentLog is what the run's log says of resident content.
type residentLog struct {
	// head are the activations before the loop, in band order.
	head []Item
	// preLoop marks the keys of head, which history leaves out.
	preLoop map[ContentMark]bool
}

// noteItem keeps Session.events and loopAt for the item just logged.
func (s *Session) noteItem() {
	i := len(s.items) - 1
	switch it := &s.items[i]; {
	case isEvent(it.Type):
		if s.conv == nil {
			s.conv = slices.Clone(s.items[:i:i])
		}
		s.events = append(s.events, i)
		return
	case s.conv != nil:
		s.conv = append(s.conv, *it)
	}
	switch it := &s.items[i]; {
	case s.loopAt < 0 && (it.Type == TypeFunctionCall || it.Type == TypeMessage && it.Role == RoleAssistant):
		s.loopAt = i
	}
}

// conversationFrom is the log from index i without the runtime's events,
// for the layers' hooks; it shares memory with the session's copy.
func (s *Session) conversationFrom(i int) []Item {
	i = min(i, len(s.items))
	if s.conv == nil {
		return s.items[i:]
	}
	before, _ := slices.BinarySearch(s.events, i)
	return s.conv[i-before:]
}

// readResident reads the activations of the log: those before the model's
// first message or call are the head's.
func (s *Session) readResident() residentLog {
	var r residentLog
	for _, i := range s.events {
		it := &s.items[i]
		if it.Type != TypeContent || s.loopAt >= 0 && i > s.loopAt {
			continue
		}
		if r.preLoop == nil {
			r.preLoop = map[ContentMark]bool{}
		}
		if !r.preLoop[*it.Resident] {
			r.preLoop[*it.Resident] = true
			r.head = append(r.head, *it)
		}
	}
	slices.SortStableFunc(r.head, func(a, b Item) int {
		return s.rt.kinds.order(a.Resident.Kind) - s.rt.kinds.order(b.Resident.Kind)
	})
	return r
}

// headEntries renders the head's activations for the anchor band.
func (s *Session) headEntries(r residentLog) []projector.Entry[Item] {
	if len(r.head) == 0 {
		return nil
	}
	out := make([]projector.Entry[Item], len(r.head))
	for i, it := range r.head {
		out[i] = s.rt.entry(s.rt.kinds.message(it))
	}
	return out
}

// renderEvents turns the runtime's events in history into what the view
// shows: compaction events go (compactHistory already put the summary
// first), an activation of the head goes (it renders in the anchor band),
// any other activation becomes its message, placed after the outputs of
// the calls open where it was activated, and shown once, at its first
// place. The same history renders the same entries.
//
// mark is an index of history (-1 for none) and markAt its index in the
// result; shown lists the activations the result shows.
func (s *Session) renderEvents(history []projector.Entry[Item], r residentLog, mark int) (out []projector.Entry[Item], markAt int, shown []ContentMark) {
	if len(s.events) == 0 {
		// History comes from the log: without events there, none here.
		return history, mark, nil
	}
	type waiting struct {
		entry projector.Entry[Item]
		mark  ContentMark
		calls map[string]bool
	}
	out = make([]projector.Entry[Item], 0, len(history))
	markAt = -1
	s.asm.shownAt = s.asm.shownAt[:0]
	var (
		open    = map[string]bool{}
		pending []waiting
		seen    = map[ContentMark]bool{}
	)
	for i, e := range history {
		if i == mark {
			markAt = len(out)
		}
		switch e.Item.Type {
		case TypeCompaction:
			continue
		case TypeContent:
			m := *e.Item.Resident
			if r.preLoop[m] || seen[m] {
				continue
			}
			seen[m] = true
			shown = append(shown, m)
			msg := s.rt.entry(s.rt.kinds.message(e.Item))
			if s.asm.shownText == nil {
				s.asm.shownText = map[ContentMark]string{}
			}
			s.asm.shownText[m] = msg.Item.Text()
			if len(open) == 0 {
				s.asm.shownAt = append(s.asm.shownAt, len(out))
				out = append(out, msg)
				continue
			}
			pending = append(pending, waiting{entry: msg, mark: m, calls: maps.Clone(open)})
			continue
		case TypeFunctionCall:
			open[e.Item.CallID] = true
		case TypeFunctionCallOutput:
			delete(open, e.Item.CallID)
		}
		out = append(out, e)
		if e.Item.Type != TypeFunctionCallOutput || len(pending) == 0 {
			continue
		}
		// Show the activations whose calls are all answered now, in
		// activation order: the first still waiting holds back the rest.
		for _, w := range pending {
			delete(w.calls, e.Item.CallID)
		}
		n := 0
		for n < len(pending) && len(pending[n].calls) == 0 {
			n++
		}
		for _, w := range pending[:n] {
			s.asm.shownAt = append(s.asm.shownAt, len(out))
			out = append(out, w.entry)
		}
		pending = pending[n:]
	}
	// An activation still waiting for an output the log does not hold yet
	// is not shown: shown now, the output would come after it.
	for _, w := range pending {
		shown = slices.DeleteFunc(shown, func(m ContentMark) bool { return w.mark == m })
	}
	return out, markAt, shown
}

// assemblyScratch is what one assembly's steps tell each other.
type assemblyScratch struct {
	res residentLog
	// mountBefore is the log index history now starts at: the mid-task
	// activations before it are mounted at its front; folded says a
	// summary leads it.
	mountBefore int
	folded      bool
	// shown are the activations history shows, shownText the text each
	// renders as (to find it in the projected band).
	shown     []ContentMark
	shownText map[ContentMark]string
	// shownAt are the indices of the rendered activations in the history
	// given to the projection, in order.
	shownAt []int
	// head is the head's rendered activations, first in the anchor band.
	head []projector.Entry[Item]
	// reminder is the reminders message, last in the tail band when
	// reminded.
	reminder projector.Entry[Item]
	reminded bool
}

// remounted are the mid-task activations before log index through, in
// activation order, for the front of history.
func (s *Session) remounted(through int, r residentLog) []projector.Entry[Item] {
	var out []projector.Entry[Item]
	for _, i := range s.events {
		if i >= through {
			break
		}
		it := s.items[i]
		if it.Type == TypeContent && !r.preLoop[*it.Resident] {
			out = append(out, projector.Entry[Item]{Item: it})
		}
	}
	return out
}

// residentUsage lists the activations the assembly shows: the head's,
// and those the projected history band holds (where they were activated,
// or mounted at its front).
func (s *Session) residentUsage(history []projector.Entry[Item]) []ResidentUsage {
	var out []ResidentUsage
	for _, it := range s.asm.res.head {
		out = append(out, ResidentUsage{ContentMark: *it.Resident, Band: BandAnchor})
	}
	if len(s.asm.shown) == 0 {
		return out
	}
	in := map[string]bool{}
	for i := range history {
		if it := &history[i].Item; it.Type == TypeMessage && it.Role == RoleDeveloper {
			in[it.Text()] = true
		}
	}
	for _, m := range s.asm.shown {
		if in[s.asm.shownText[m]] {
			out = append(out, ResidentUsage{ContentMark: m, Band: BandHistory})
		}
	}
	return out
}
