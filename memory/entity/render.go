package entity

import (
	"fmt"
	"sort"
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/tokens"
)

const (
	openTag  = "<known_entities>"
	closeTag = "</known_entities>"
)

// line renders e, keeping only its newest notes when the full line would
// cost more than limit tokens.
func line(tk tokens.Tokenizer, e Entity, limit int) string {
	full := "- " + recordText(e)
	if len(e.Notes) == 0 || tk.Count(full+"\n") <= limit {
		return full
	}
	head := "- " + e.Name + " (" + string(e.Type) + ")"
	for keep := len(e.Notes) - 1; keep > 0; keep-- {
		l := head + ": …" + noteSep + strings.Join(e.Notes[len(e.Notes)-keep:], noteSep)
		if tk.Count(l+"\n") <= limit {
			return l
		}
	}
	return head
}

// render is the layer's output for st within budget tokens, memoised per
// state.
func (l *layer) render(st State, budget int) string {
	m := st.rendered
	if m == nil {
		return l.renderFresh(st, budget)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ok || m.budget != budget {
		m.text, m.budget, m.ok = l.renderFresh(st, budget), budget, true
	}
	return m.text
}

func (l *layer) renderFresh(st State, budget int) string {
	if len(st.entities) == 0 || budget <= 0 {
		return ""
	}
	pref := st.sortedKeys(byRank)
	display := st.sortedKeys(byFirstSeen)
	pos := make(map[key]int, len(display))
	for i, k := range display {
		pos[k] = i
	}
	// No single line may need more than the whole budget leaves after the
	// frame.
	frame := l.tk.Count(openTag+"\n"+closeTag+fmt.Sprintf("(%d more entities not shown for space)\n", len(pref))) + core.ItemOverhead
	lines := make([]string, len(pref))
	for i, k := range pref {
		lines[i] = line(l.tk, st.entities[k], budget-frame)
	}
	build := func(sel []int, omitted int) string {
		shown := make([]int, len(sel))
		copy(shown, sel)
		// Display in first-seen order.
		sort.Slice(shown, func(a, b int) bool { return pos[pref[shown[a]]] < pos[pref[shown[b]]] })
		var b strings.Builder
		b.WriteString(openTag + "\n")
		for _, i := range shown {
			b.WriteString(lines[i])
			b.WriteByte('\n')
		}
		if omitted > 0 {
			fmt.Fprintf(&b, "(%d more %s not shown for space)\n", omitted, plural(omitted, "entity", "entities"))
		}
		b.WriteString(closeTag)
		return b.String()
	}
	return fit(l.tk, budget, len(pref), func(i int) string { return lines[i] }, build)
}

// fit renders the greedy selection, in preference order 0..n-1, of the
// entries that fit budget tokens as the runtime counts a message (text plus
// core.ItemOverhead). build renders a selection (indices in preference
// order) and the number left out.
func fit(tk tokens.Tokenizer, budget, n int, line func(int) string, build func(sel []int, omitted int) string) string {
	if n == 0 || budget <= 0 {
		return ""
	}
	cost := func(text string) int { return tk.Count(text) + core.ItemOverhead }
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	if text := build(all, 0); cost(text) <= budget {
		return text
	}
	used := cost(build(nil, n))
	var sel []int
	for i := 0; i < n; i++ {
		if c := tk.Count(line(i) + "\n"); used+c <= budget {
			sel = append(sel, i)
			used += c
		}
	}
	// Per-line counts approximate the whole; check the whole and give up
	// the least preferred entries until it fits. Nothing fitting renders
	// nothing: a bare "n not shown" line would only cost tokens.
	for len(sel) > 0 {
		if text := build(sel, n-len(sel)); cost(text) <= budget {
			return text
		}
		sel = sel[:len(sel)-1]
	}
	return ""
}

// blockLines returns the entity lines of a rendered block; ok is false when
// items are not one block this layer rendered.
func blockLines(items []core.Item) ([]string, bool) {
	if len(items) != 1 {
		return nil, false
	}
	lines := strings.Split(items[0].Text(), "\n")
	if len(lines) < 2 || lines[0] != openTag || lines[len(lines)-1] != closeTag {
		return nil, false
	}
	var out []string
	for _, l := range lines[1 : len(lines)-1] {
		if strings.HasPrefix(l, "- ") {
			out = append(out, l)
		}
	}
	return out, true
}

// renderDelta lists the entity lines of next that the pinned prev does not
// hold: new entities and entities whose notes changed. Entities left out
// for space are not retracted: what the pinned block says of them is still
// true. "" means no compact delta (the runtime republishes the block).
func renderDelta(prev, next []core.Item) string {
	before, ok := blockLines(prev)
	if !ok {
		return ""
	}
	after, ok := blockLines(next)
	if !ok {
		return ""
	}
	had := make(map[string]bool, len(before))
	for _, l := range before {
		had[l] = true
	}
	var changed []string
	for _, l := range after {
		if !had[l] {
			changed = append(changed, l)
		}
	}
	if len(changed) == 0 {
		return ""
	}
	return "Entity changes (entities not listed here are unchanged):\n" + strings.Join(changed, "\n")
}
