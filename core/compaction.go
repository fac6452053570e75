package core

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/stratamem/strata/projector"
	"github.com/stratamem/strata/tokens"
)

// TypeCompaction is the item type of a compaction event: the record, in
// the run's log, that history up to a boundary was folded into a summary.
// It is never sent to the model and never given to the layers' item hooks;
// see CompactionConfig.
const TypeCompaction ItemType = "compaction"

// CompactionMark is the boundary a compaction event covers.
type CompactionMark struct {
	// Through is the log index the fold ends at: the log items before it
	// (the conversation items among them) are replaced by the summary.
	Through int `json:"through"`
	// Turn is the assembly (Session.Turn) that compacted.
	Turn int `json:"turn"`
}

// CompactionConfig turns on compaction as an event (Config.Compaction; nil
// is off). When an assembly's view would exceed Threshold*Window tokens,
// the runtime folds the history before its Keep newest items into one
// summary, asking the Summarizer once, and logs a TypeCompaction item with
// the summary and the boundary. Every later assembly shows the summary in
// place of the folded items.
type CompactionConfig struct {
	// Window is the model's context window in tokens. Required (> 0).
	Window int
	// Threshold is the share of Window the view may reach before it is
	// compacted; zero means 0.8. It must lie in (0, 1].
	Threshold float64
	// Keep is the number of newest history items never folded; zero means
	// 8, a negative value none. The boundary moves back so that it never
	// separates a function call from its output.
	Keep int
	// SummaryBudget caps the summary in tokens, as the runtime counts
	// them; zero means Window/8. A longer summary is cut to fit.
	SummaryBudget int
	// Summarizer writes the summaries. Nil means ExtractiveSummarizer with
	// the runtime's tokenizer.
	Summarizer Summarizer
	// ThrashTurns: two compactions this many assemblies apart or closer
	// latch CompactionUsage.Thrashing. Zero means 3; negative never
	// latches.
	ThrashTurns int
}

func (c *CompactionConfig) threshold() float64 {
	if c.Threshold == 0 {
		return 0.8
	}
	return c.Threshold
}

func (c *CompactionConfig) keep() int {
	switch {
	case c.Keep == 0:
		return 8
	case c.Keep < 0:
		return 0
	}
	return c.Keep
}

func (c *CompactionConfig) summaryBudget() int {
	if c.SummaryBudget == 0 {
		return max(1, c.Window/8)
	}
	return c.SummaryBudget
}

func (c *CompactionConfig) thrashTurns() int {
	if c.ThrashTurns == 0 {
		return 3
	}
	return c.ThrashTurns
}

func (c *CompactionConfig) validate() error {
	switch {
	case c == nil:
		return nil
	case c.Window <= 0:
		return &ConfigError{Code: CodeInvalidPolicy, Field: "Compaction.Window", Reason: "the model's window must be positive"}
	case c.Threshold < 0 || c.Threshold > 1:
		return &ConfigError{Code: CodeInvalidPolicy, Field: "Compaction.Threshold", Reason: "the threshold must lie in (0, 1]"}
	case c.SummaryBudget < 0:
		return &ConfigError{Code: CodeInvalidPolicy, Field: "Compaction.SummaryBudget", Reason: "negative budget"}
	}
	return nil
}

// SummarizeRequest is what a Summarizer folds.
type SummarizeRequest struct {
	// Items are the conversation items newly folded, in log order.
	Items []Item
	// Previous is the summary already folded (of the items before these),
	// "" for the first compaction. The new summary replaces it, so it
	// should carry what of it still matters.
	Previous string
	// Budget is the summary's size limit in tokens.
	Budget int
}

// Summary is a Summarizer's answer.
type Summary struct {
	// Text is the summary. The runtime counts it with its own tokenizer
	// and cuts it to the budget.
	Text string
}

// Summarizer writes the summary a compaction folds history into. It is
// called once per compaction, never again for the same fold (a resumed
// log carries the summary).
type Summarizer interface {
	Summarize(ctx context.Context, req SummarizeRequest) (Summary, error)
}

// ExtractiveSummarizer is the offline default Summarizer: deterministic,
// no model. It keeps the previous summary, then one line per folded item:
// the first sentence of each user message and assistant answer, and the
// name of each tool call; tool outputs and developer messages are left
// out. Lines past the budget are dropped from the oldest on.
type ExtractiveSummarizer struct {
	// Tokenizer counts the budget; nil means tokens.Estimate().
	Tokenizer tokens.Tokenizer
}

// Summarize implements Summarizer.
func (x ExtractiveSummarizer) Summarize(_ context.Context, req SummarizeRequest) (Summary, error) {
	tk := x.Tokenizer
	if tk == nil {
		tk = tokens.Estimate()
	}
	var lines []string
	if req.Previous != "" {
		lines = append(lines, strings.Split(req.Previous, "\n")...)
	}
	for _, it := range req.Items {
		switch {
		case it.Type == TypeMessage && (it.Role == RoleUser || it.Role == RoleAssistant):
			if s := firstSentence(it.Text()); s != "" {
				lines = append(lines, string(it.Role)+": "+s)
			}
		case it.Type == TypeFunctionCall:
			lines = append(lines, "tool call: "+it.Name)
		}
	}
	// Newest lines matter most: drop from the front until it fits.
	for len(lines) > 0 && tk.Count(strings.Join(lines, "\n")) > req.Budget {
		lines = lines[1:]
	}
	return Summary{Text: strings.Join(lines, "\n")}, nil
}

// firstSentence is text up to its first sentence end (. ! ? or a line
// break), spaces folded.
func firstSentence(text string) string {
	text = strings.TrimSpace(text)
	for i, r := range text {
		if r == '\n' {
			text = text[:i]
			break
		}
		if (r == '.' || r == '!' || r == '?') && (i+1 == len(text) || unicode.IsSpace(rune(text[i+1]))) {
			text = text[:i+1]
			break
		}
	}
	return strings.Join(strings.Fields(text), " ")
}

// ErrCompactionStalled is wrapped by the *CompactionError of a compaction
// whose boundary would not advance past what is already folded while the
// view is over the model's window: nothing left to fold, and a request
// that cannot be sent. Over the threshold but within the window the view
// is sent unfolded, with a KindOverBudget diagnostic.
var ErrCompactionStalled = errors.New("core: compaction stalled")

// ErrCompactionOff is returned by Session.Compact when the runtime has no
// Config.Compaction.
var ErrCompactionOff = errors.New("core: compaction is not configured (Config.Compaction)")

// Compact asks the next assembly to compact the history whatever the
// threshold: the host's own decision (a "/compact" command, the end of a
// task, a switch of subject). The compaction is the same event as one the
// threshold triggers, with the configured Keep and Summarizer, and is
// reported in the same Usage.Compaction. When there is nothing to fold
// (the history holds no more than the kept items past the last fold),
// the request is dropped with a diagnostic rather than failing the turn:
// the spin guard is for compactions the threshold demands.
func (s *Session) Compact() error {
	if s.disposed {
		return ErrDisposed
	}
	if s.rt.cfg.Compaction == nil {
		return ErrCompactionOff
	}
	s.compactNow = true
	return nil
}

// CompactionError fails an Assemble whose compaction could not be made.
type CompactionError struct {
	// Folded is the boundary already folded, Through the one the
	// compaction would have reached.
	Folded, Through int
	// Tokens is the view's size, Limit the threshold it exceeds.
	Tokens, Limit int
	Err           error
}

func (e *CompactionError) Error() string {
	return fmt.Sprintf("core: compaction at %d of %d tokens (folded through %d, would fold through %d): %v",
		e.Tokens, e.Limit, e.Folded, e.Through, e.Err)
}

func (e *CompactionError) Unwrap() error { return e.Err }

// CompactionUsage reports compaction in an assembly's Usage.
type CompactionUsage struct {
	// Count is the number of compactions in the log.
	Count int
	// Folded is the log index the latest fold ends at (0: none).
	Folded int
	// Compacted is true when this assembly compacted.
	Compacted bool
	// SummaryTokens is the summary message's size in the view.
	SummaryTokens int
	// Thrashing latches once two compactions came within
	// CompactionConfig.ThrashTurns assemblies of each other.
	Thrashing bool
}

// summaryWrapper frames the summary in the view.
const summaryWrapper = "<conversation_summary>\nThe earlier part of this conversation was folded into this summary; the messages after it follow on from it.\n%s\n</conversation_summary>"

// CompactionEvent builds the log item of a compaction.
func CompactionEvent(summary string, mark CompactionMark) Item {
	return Item{Type: TypeCompaction, Content: []Part{{Type: "summary_text", Text: summary}}, Compaction: &mark}
}

// compactionLog is what the run's log says of compaction.
type compactionLog struct {
	count     int
	last      *Item
	thrashing bool
}

func (s *Session) readCompactions(thrash int) compactionLog {
	var c compactionLog
	prevTurn := 0
	for _, i := range s.events {
		it := &s.items[i]
		if it.Type != TypeCompaction {
			continue
		}
		if c.count > 0 && thrashes(it.Compaction.Turn-prevTurn, thrash) {
			c.thrashing = true
		}
		c.count++
		prevTurn = it.Compaction.Turn
		c.last = it
	}
	return c
}

// compactHistory applies the log's compaction events to the history the
// layers projected (start is its log index; -1 when a hook replaced it)
// and, with Config.Compaction, compacts when the view would be over the
// threshold. The history it returns begins with the summary message;
// event items stay in it as placeholders, so that log positions hold for
// the inline updates, and projectorInput leaves them out. items is nil
// when the history no longer matches the log.
func (s *Session) compactHistory(ctx context.Context, outs []layerOutput, history []projector.Entry[Item], items []Item, start int) ([]projector.Entry[Item], []Item, int, *CompactionUsage, error) {
	cfg := s.rt.cfg.Compaction
	thrash := -1
	if cfg != nil {
		thrash = cfg.thrashTurns()
	}
	c := s.readCompactions(thrash)
	s.asm.mountBefore, s.asm.folded = max(start, 0), false
	if c.count == 0 && cfg == nil {
		return history, items, start, nil, nil
	}
	usage := &CompactionUsage{Count: c.count, Thrashing: c.thrashing}
	if start < 0 {
		return history, nil, start, usage, nil
	}
	fold := func(ev *Item) ([]projector.Entry[Item], int) {
		through := ev.Compaction.Through - start
		if through <= 0 || through > len(history) {
			return history, start
		}
		sum := s.rt.entry(DeveloperMessage(fmt.Sprintf(summaryWrapper, ev.Content[0].Text)))
		usage.SummaryTokens = sum.Tokens
		out := make([]projector.Entry[Item], 0, len(history)-through+1)
		out = append(out, sum)
		out = append(out, history[through:]...)
		s.asm.mountBefore, s.asm.folded = ev.Compaction.Through, true
		return out, ev.Compaction.Through - 1
	}
	folded, fstart := history, start
	prev := 0
	if c.last != nil {
		folded, fstart = fold(c.last)
		prev = c.last.Compaction.Through
		usage.Folded = prev
	}
	if cfg != nil {
		size := s.viewSize(outs, folded)
		// What tail trimming will clear is not there to compact.
		_, saved := s.rt.trimPlan(folded, fstart, size)
		size -= saved
		limit := int(cfg.threshold() * float64(cfg.Window))
		forced := s.compactNow
		if size > limit || forced {
			ev, err := s.compact(ctx, cfg, prev, size, limit)
			// A host's request outlives a failed summarizer: the
			// retry compacts.
			s.compactNow = forced && err != nil && !errors.Is(err, ErrCompactionStalled)
			switch {
			case forced && size <= limit && errors.Is(err, ErrCompactionStalled):
				// Asked for by the host, not needed: nothing to do.
				s.diagnose("_strata", "compact", KindError, fmt.Errorf("Session.Compact ignored: nothing to fold past the %d newest items kept", cfg.keep()))
			case errors.Is(err, ErrCompactionStalled) && size <= cfg.Window:
				// Over the threshold with nothing left to fold, but the
				// view still fits the window: send it, fold nothing (no
				// summarizer call, so no loop), and say so.
				s.diagnose("_strata", "compact", KindOverBudget, fmt.Errorf(
					"compaction cannot fold more: the view is %d tokens, over the threshold of %d, with only the %d newest items left unfolded; it still fits the window of %d",
					size, limit, cfg.keep(), cfg.Window))
			case err != nil:
				return nil, nil, 0, nil, err
			default:
				// The event is the log's newest item now: history must
				// hold its place too, or an update published later in
				// this assembly (at the log's end) would point past it.
				history = s.log[start:]
				folded, fstart = fold(ev)
				after := s.viewSize(outs, folded)
				_, cleared := s.rt.trimPlan(folded, fstart, after)
				if after -= cleared; after > cfg.Window {
					// Folded, and still past the window: the kept items
					// alone do not fit. The next assembly could fold no
					// further; say so now, not one assembly late.
					return nil, nil, 0, nil, &CompactionError{Folded: ev.Compaction.Through, Through: ev.Compaction.Through,
						Tokens: after, Limit: limit, Err: ErrCompactionStalled}
				}
				usage.Count++
				usage.Folded = ev.Compaction.Through
				usage.Compacted = true
				if c.last != nil && thrashes(s.turn-c.last.Compaction.Turn, thrash) {
					usage.Thrashing = true
				}
			}
		}
	}
	if c.count == 0 && !usage.Compacted {
		return history, items, start, usage, nil
	}
	return folded, nil, fstart, usage, nil
}

// compact folds the log up to its Keep newest conversation items, asking
// the summarizer once, and logs the event.
func (s *Session) compact(ctx context.Context, cfg *CompactionConfig, prev, size, limit int) (*Item, error) {
	b := len(s.items)
	for kept := 0; b > 0 && kept < cfg.keep(); {
		b--
		if t := s.items[b].Type; t != TypeCompaction && t != TypeContent {
			kept++
		}
	}
	// Never separate an output from its call: move the boundary back to
	// the earliest call a kept output answers.
	for moved := true; moved; {
		moved = false
		for _, it := range s.items[b:] {
			if j, ok := s.callAt[it.CallID]; ok && it.Type == TypeFunctionCallOutput && j < b {
				b, moved = j, true
			}
		}
	}
	if b <= prev {
		return nil, &CompactionError{Folded: prev, Through: b, Tokens: size, Limit: limit, Err: ErrCompactionStalled}
	}
	var req SummarizeRequest
	for _, it := range s.items[prev:b] {
		if it.Type != TypeCompaction && it.Type != TypeContent {
			req.Items = append(req.Items, it)
		}
	}
	if prev > 0 {
		for i := prev; i < len(s.items); i++ {
			if it := s.items[i]; it.Type == TypeCompaction && it.Compaction.Through == prev {
				req.Previous = it.Content[0].Text
			}
		}
	}
	req.Budget = cfg.summaryBudget()
	sz := cfg.Summarizer
	if sz == nil {
		sz = ExtractiveSummarizer{Tokenizer: s.rt.counter}
	}
	sum, err := sz.Summarize(ctx, req)
	if err != nil {
		return nil, &CompactionError{Folded: prev, Through: b, Tokens: size, Limit: limit, Err: err}
	}
	// The summarizer's size is never trusted: count it, cut it to fit.
	text, ok := cutText(s.rt.counter, sum.Text, req.Budget)
	if !ok {
		text = ""
	}
	ev := CompactionEvent(text, CompactionMark{Through: b, Turn: s.turn})
	s.log = append(s.log, projector.Entry[Item]{Item: ev})
	s.items = append(s.items, ev)
	s.noteItem()
	return &s.items[len(s.items)-1], nil
}

// dropEvents leaves the compaction events out of history: the same slice
// when there are none.
func dropEvents(history []projector.Entry[Item]) []projector.Entry[Item] {
	n := 0
	for i := range history {
		if history[i].Item.Type == TypeCompaction {
			n++
		}
	}
	if n == 0 {
		return history
	}
	out := make([]projector.Entry[Item], 0, len(history)-n)
	for _, e := range history {
		if e.Item.Type != TypeCompaction {
			out = append(out, e)
		}
	}
	return out
}

// countedSummaries wraps a projector summarizer (Policy.Summarize) so that
// each summary is counted by the runtime's tokenizer, never trusted, and
// one dropped range is summarised once: the same range asked again (the
// next assembly of the same history) reuses the summary.
func (rt *Runtime) countedSummaries(f func([]projector.Entry[Item]) (projector.Entry[Item], bool)) func([]projector.Entry[Item]) (projector.Entry[Item], bool) {
	type answer struct {
		e  projector.Entry[Item]
		ok bool
	}
	var (
		mu   sync.Mutex
		memo = map[[32]byte]answer{}
	)
	return func(dropped []projector.Entry[Item]) (projector.Entry[Item], bool) {
		h := sha256.New()
		enc := json.NewEncoder(h)
		for _, e := range dropped {
			_ = enc.Encode(e.Item)
		}
		var key [32]byte
		h.Sum(key[:0])
		mu.Lock()
		defer mu.Unlock()
		if a, ok := memo[key]; ok {
			return a.e, a.ok
		}
		e, ok := f(dropped)
		if ok {
			c := rt.entry(e.Item)
			e.Tokens = c.Tokens
		}
		if len(memo) >= 256 {
			clear(memo)
		}
		memo[key] = answer{e, ok}
		return e, ok
	}
}

// conversation leaves the compaction events out of items, for the layers'
// hooks: the same slice when there are none.
func conversation(items []Item) []Item {
	for i := range items {
		if isEvent(items[i].Type) {
			out := append([]Item(nil), items[:i]...)
			for _, it := range items[i+1:] {
				if !isEvent(it.Type) {
					out = append(out, it)
				}
			}
			return out
		}
	}
	return items
}

// foldedUpdates is withUpdates over a history that may hold compaction
// events as placeholders (compactHistory keeps them so that log positions
// hold): it interleaves the inline updates, then leaves the events out,
// first counting in the history without them.
//
// Mid-task activations the history no longer holds (folded by a
// compaction, or before the front a history layer cut to) are mounted
// again at its front: right after the summary when one leads it.
func (s *Session) foldedUpdates(history []projector.Entry[Item], start int) ([]projector.Entry[Item], int, bool) {
	out, first, cut := s.withUpdates(history, start)
	if mounts := s.remounted(s.asm.mountBefore, s.asm.res); len(mounts) > 0 && start >= 0 {
		at := 0
		if s.asm.folded {
			at = 1
		}
		out = slices.Insert(slices.Clone(out), at, mounts...)
		if first >= at {
			first += len(mounts)
		}
	}
	rendered, first, shown := s.renderEvents(out, s.asm.res, first)
	s.asm.shown = shown
	return rendered, first, cut
}

// isEvent says whether items of type t are the runtime's events (a
// compaction, a resident-content activation) rather than conversation.
func isEvent(t ItemType) bool { return t == TypeCompaction || t == TypeContent }

// thrashes says whether two compactions gap assemblies apart thrash. A
// negative gap is another session's numbering (a resumed log): no
// evidence either way.
func thrashes(gap, limit int) bool { return limit > 0 && gap >= 0 && gap <= limit }
