package scratchpad

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/stratamem/strata/core"
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
	line := func(i int) string { return pairLine(pref[i], st.notes[pref[i]].value) }
	build := func(sel []int, omitted int) string {
		keys := make([]string, len(sel))
		for n, i := range sel {
			keys[n] = pref[i]
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString(openTag + "\n")
		for _, k := range keys {
			b.WriteString(pairLine(k, st.notes[k].value))
			b.WriteByte('\n')
		}
		if omitted > 0 {
			fmt.Fprintf(&b, "(%d older notes not shown for space)\n", omitted)
		}
		b.WriteString(closeTag)
		return b.String()
	}
	return fit(l.tk, budget, len(pref), line, build)
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

// parseBlock reads the notes back out of a rendered block; ok is false
// when items are not one block this layer rendered.
func parseBlock(items []core.Item) (map[string]string, bool) {
	if len(items) != 1 {
		return nil, false
	}
	lines := strings.Split(items[0].Text(), "\n")
	if len(lines) < 2 || lines[0] != openTag || lines[len(lines)-1] != closeTag {
		return nil, false
	}
	out := map[string]string{}
	for _, line := range lines[1 : len(lines)-1] {
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
	before, ok := parseBlock(prev)
	if !ok {
		return ""
	}
	after, ok := parseBlock(next)
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
