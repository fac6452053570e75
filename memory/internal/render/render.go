// Package render holds what the memory layers share to render their
// blocks: fitting entries to a token budget, memoising a state's
// rendering, and reading a pinned block back for a render delta.
package render

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/tokens"
)

// Block is a block of entries between an opening and a closing tag, one a
// line, that shows what fits a budget.
type Block struct {
	Open, Close string
	// Lines are the entries, most wanted first.
	Lines []string
	// Before reports whether entry i is shown above entry j (indices into
	// Lines): the display order, which need not be the preference order.
	Before func(i, j int) bool
	// Omitted is the closing note for n entries left out for space.
	Omitted func(n int) string
}

// Fit renders the greedy selection, in preference order, of the entries
// that fit budget tokens as the runtime counts a message (text plus
// core.ItemOverhead), with a note counting those left out. It returns ""
// when there are no entries or none fits.
func (b Block) Fit(tk tokens.Tokenizer, budget int) string {
	n := len(b.Lines)
	if n == 0 || budget <= 0 {
		return ""
	}
	cost := func(text string) int { return tk.Count(text) + core.ItemOverhead }
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	if text := b.render(all, 0); cost(text) <= budget {
		return text
	}
	used := cost(b.render(nil, n))
	var sel []int
	for i, line := range b.Lines {
		if c := tk.Count(line + "\n"); used+c <= budget {
			sel = append(sel, i)
			used += c
		}
	}
	// Per-line counts approximate the whole; check the whole and give up
	// the least preferred entries until it fits. Nothing fitting renders
	// nothing: a bare "n not shown" line would only cost tokens.
	for len(sel) > 0 {
		if text := b.render(sel, n-len(sel)); cost(text) <= budget {
			return text
		}
		sel = sel[:len(sel)-1]
	}
	return ""
}

// Fill renders entries, in order, while each line fits budget with used
// tokens already spent, counting a line after a newline; it stops at the
// first that does not fit and returns the lines and the tokens then used.
func Fill[E any](entries []E, line func(E) string, tok tokens.Tokenizer, used, budget int) ([]string, int) {
	var lines []string
	for _, e := range entries {
		ln := line(e)
		n := tok.Count("\n" + ln)
		if used+n > budget {
			break
		}
		used += n
		lines = append(lines, ln)
	}
	return lines, used
}

// render renders the entries sel (indices into Lines) in display order,
// and the note for omitted others.
func (b Block) render(sel []int, omitted int) string {
	shown := slices.Clone(sel)
	sort.Slice(shown, func(x, y int) bool { return b.Before(shown[x], shown[y]) })
	var s strings.Builder
	s.WriteString(b.Open + "\n")
	for _, i := range shown {
		s.WriteString(b.Lines[i])
		s.WriteByte('\n')
	}
	if omitted > 0 {
		s.WriteString(b.Omitted(omitted) + "\n")
	}
	s.WriteString(b.Close)
	return s.String()
}

// Memo caches the rendering of one layer state. A state is never modified
// (every write makes a new one, with a new Memo), so an unchanged turn
// costs a lookup, not a render. The copies of a state share its Memo,
// hence the lock.
type Memo struct {
	mu     sync.Mutex
	ok     bool
	budget int
	text   string
}

// Get returns the rendering for budget, calling fresh when the memo holds
// none for it. A nil Memo always calls fresh.
func (m *Memo) Get(budget int, fresh func() string) string {
	if m == nil {
		return fresh()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ok || m.budget != budget {
		m.text, m.budget, m.ok = fresh(), budget, true
	}
	return m.text
}

// Recall is a layer's recall of text as one developer message whose item
// id is the layer id, so the layer can find its block again; no items
// when text is "".
func Recall[S any](layerID, text string) core.Recall[S] {
	if text == "" {
		return core.Recall[S]{}
	}
	it := core.DeveloperMessage(text)
	it.ID = layerID
	return core.Recall[S]{Items: []core.Item{it}}
}

// BlockLines returns the lines between the opening and closing tag of a
// block rendered as one item; ok is false when items are not such a block.
func BlockLines(items []core.Item, openTag, closeTag string) (lines []string, ok bool) {
	if len(items) != 1 {
		return nil, false
	}
	lines = strings.Split(items[0].Text(), "\n")
	if len(lines) < 2 || lines[0] != openTag || lines[len(lines)-1] != closeTag {
		return nil, false
	}
	return lines[1 : len(lines)-1], true
}

// DeltaHook is the RenderDelta hook that answers with delta of the pinned
// and the fresh block.
func DeltaHook[S any](delta func(prev, next []core.Item) (string, bool, error)) func(context.Context, core.RenderDeltaParams[S]) (string, bool, error) {
	return func(_ context.Context, p core.RenderDeltaParams[S]) (string, bool, error) {
		return delta(p.Prev, p.Next)
	}
}

// Set is the set of the strings in list.
func Set(list []string) map[string]bool {
	set := make(map[string]bool, len(list))
	for _, e := range list {
		set[e] = true
	}
	return set
}

// ParseBoth reads the pinned block prev and the fresh block next with
// parse, the first step of a render delta; ok is false when either does
// not parse.
func ParseBoth[T any](prev, next []core.Item, parse func([]core.Item) (T, bool)) (before, after T, ok bool) {
	if before, ok = parse(prev); !ok {
		return before, after, false
	}
	after, ok = parse(next)
	return before, after, ok
}

// NewEntries is the render delta of a block whose entries are never
// retracted: the entries of the fresh block next that the pinned prev does
// not show, one a line under header. It is "" (no compact delta: the
// runtime republishes the block) when entries cannot read either block or
// nothing is new.
func NewEntries(prev, next []core.Item, entries func([]core.Item) ([]string, bool), header string) string {
	before, after, ok := ParseBoth(prev, next, entries)
	if !ok {
		return ""
	}
	had := Set(before)
	var added []string
	for _, e := range after {
		if !had[e] {
			added = append(added, e)
		}
	}
	if len(added) == 0 {
		return ""
	}
	return header + "\n" + strings.Join(added, "\n")
}

// Section writes a titled list of lines, each on a line of its own after a
// newline; nothing when lines is empty.
func Section(b *strings.Builder, title string, lines []string) {
	if len(lines) == 0 {
		return
	}
	b.WriteString("\n" + title)
	for _, ln := range lines {
		b.WriteString("\n" + ln)
	}
}

// IfSmaller returns a RenderDelta hook's answer for delta: publish it when
// it is shorter than the fresh block next, else decline (the runtime then
// republishes the block, which costs no more).
func IfSmaller(delta string, next []core.Item) (string, bool, error) {
	full := 0
	for _, it := range next {
		full += len(it.Text())
	}
	if len(delta) >= full {
		return "", false, nil
	}
	return delta, true, nil
}
