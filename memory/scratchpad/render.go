package scratchpad

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/internal/render"
	"github.com/stratamem/strata/tokens"
)

const (
	openTag  = "<scratchpad>"
	closeTag = "</scratchpad>"
)

// quote renders s as a JSON string without HTML escaping, so the model
// reads <, > and & as they are.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

func pairLine(k, v string) string { return quote(k) + ": " + quote(v) }

// render is the layer's output for st within budget tokens: the notes
// sorted by key, the most recently updated kept when they do not all fit.
// It is memoised per state.
func (l *Layer) render(st State, budget int, tk tokens.Tokenizer) string {
	return st.rendered.Get(budget, func() string { return l.renderFresh(st, budget, tk) })
}

func (l *Layer) renderFresh(st State, budget int, tk tokens.Tokenizer) string {
	if len(st.notes) == 0 {
		return ""
	}
	// Preference: most recently updated first, then key.
	pref := make([]string, 0, len(st.notes))
	for k := range st.notes {
		pref = append(pref, k)
	}
	sort.Slice(pref, func(i, j int) bool {
		a, b := st.notes[pref[i]], st.notes[pref[j]]
		if !a.updated.Equal(b.updated) {
			return a.updated.After(b.updated)
		}
		return pref[i] < pref[j]
	})
	lines := make([]string, len(pref))
	for i, k := range pref {
		lines[i] = pairLine(k, st.notes[k].value)
	}
	return render.Block{Open: openTag, Close: closeTag, Lines: lines,
		// Shown sorted by key.
		Before:  func(i, j int) bool { return pref[i] < pref[j] },
		Omitted: func(n int) string { return fmt.Sprintf("(%d older notes not shown for space)", n) },
	}.Fit(tk, budget)
}

// parseBlock reads the notes back out of a rendered block; ok is false
// when items are not one block this layer rendered.
func parseBlock(items []core.Item) (map[string]string, bool) {
	lines, ok := render.BlockLines(items, openTag, closeTag)
	if !ok {
		return nil, false
	}
	out := map[string]string{}
	for _, line := range lines {
		if !strings.HasPrefix(line, `"`) {
			continue // the "not shown" line
		}
		var m map[string]string
		if err := json.Unmarshal([]byte("{"+line+"}"), &m); err != nil || len(m) != 1 {
			return nil, false
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out, true
}

// renderDelta describes how next differs from the pinned prev: the keys
// whose value changed or appeared, and the keys deleted. "" means no
// compact delta (the runtime republishes the whole block).
func renderDelta(st State, prev, next []core.Item) string {
	before, after, ok := render.ParseBoth(prev, next, parseBlock)
	if !ok {
		return ""
	}
	var changed, deleted []string
	for _, k := range sortedKeys(after) {
		if v, ok := before[k]; !ok || v != after[k] {
			changed = append(changed, pairLine(k, after[k]))
		}
	}
	for _, k := range sortedKeys(before) {
		if _, shown := after[k]; shown {
			continue
		}
		n, exists := st.notes[k]
		switch {
		case !exists:
			deleted = append(deleted, quote(k))
		case n.value != before[k]:
			// Left out of the fresh block for space, but the pinned value
			// is stale: correct it.
			changed = append(changed, pairLine(k, n.value))
		}
	}
	if len(changed) == 0 && len(deleted) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Scratchpad changes (keys not listed here are unchanged):\n")
	for _, line := range changed {
		b.WriteString(line + "\n")
	}
	if len(deleted) > 0 {
		b.WriteString("deleted: " + strings.Join(deleted, ", ") + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
