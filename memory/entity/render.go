package entity

import (
	"fmt"
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/internal/render"
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
func (l *Layer) render(st State, budget int, tk tokens.Tokenizer) string {
	return st.rendered.Get(budget, func() string { return l.renderFresh(st, budget, tk) })
}

func (l *Layer) renderFresh(st State, budget int, tk tokens.Tokenizer) string {
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
	frame := tk.Count(openTag+"\n"+closeTag+fmt.Sprintf("(%d more entities not shown for space)\n", len(pref))) + core.ItemOverhead
	lines := make([]string, len(pref))
	for i, k := range pref {
		lines[i] = line(tk, st.entities[k], budget-frame)
	}
	return render.Block{Open: openTag, Close: closeTag, Lines: lines,
		// Display in first-seen order.
		Before: func(i, j int) bool { return pos[pref[i]] < pos[pref[j]] },
		Omitted: func(n int) string {
			return fmt.Sprintf("(%d more %s not shown for space)", n, plural(n, "entity", "entities"))
		},
	}.Fit(tk, budget)
}

// blockLines returns the entity lines of a rendered block; ok is false when
// items are not one block this layer rendered.
func blockLines(items []core.Item) ([]string, bool) {
	lines, ok := render.BlockLines(items, openTag, closeTag)
	if !ok {
		return nil, false
	}
	var out []string
	for _, l := range lines {
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
	return render.NewEntries(prev, next, blockLines, "Entity changes (entities not listed here are unchanged):")
}
