package episodic

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/tokens"
)

const (
	openTag  = "<episodes>"
	closeTag = "</episodes>"
)

// entry renders one episode: "[time] (outcome) summary", the summary's
// further lines indented so every entry starts with "[".
func entry(ep Episode) string {
	var b strings.Builder
	b.WriteString("[" + ep.Timestamp.UTC().Format(time.RFC3339) + "] ")
	if ep.Outcome != "" {
		b.WriteString("(" + collapse(ep.Outcome) + ") ")
	}
	lines := strings.Split(ep.Summary, "\n")
	for i, line := range lines {
		line = strings.TrimRight(line, " \t\r")
		if i > 0 {
			if line == "" {
				continue
			}
			b.WriteString("\n  ")
		}
		b.WriteString(line)
	}
	return b.String()
}

// render is the layer's output: the episodes picked in order (indices into
// eps, most wanted first) that fit budget, shown oldest first.
func (l *layer) render(eps []Episode, order []int, budget int) string {
	if len(order) == 0 {
		return ""
	}
	entries := make([]string, len(order))
	for n, i := range order {
		entries[n] = entry(eps[i])
	}
	build := func(sel []int, omitted int) string {
		shown := make([]int, len(sel))
		copy(shown, sel)
		// eps is oldest first, so its index is the chronological order.
		sort.Slice(shown, func(a, b int) bool { return order[shown[a]] < order[shown[b]] })
		var b strings.Builder
		b.WriteString(openTag + "\n")
		for _, n := range shown {
			b.WriteString(entries[n])
			b.WriteByte('\n')
		}
		if omitted > 0 {
			fmt.Fprintf(&b, "(%d more %s not shown for space)\n", omitted, plural(omitted))
		}
		b.WriteString(closeTag)
		return b.String()
	}
	return fit(l.tk, budget, len(order), func(n int) string { return entries[n] }, build)
}

func plural(n int) string {
	if n == 1 {
		return "episode"
	}
	return "episodes"
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

// blockEntries splits a rendered block into its entries; ok is false when
// items are not one block this layer rendered.
func blockEntries(items []core.Item) ([]string, bool) {
	if len(items) != 1 {
		return nil, false
	}
	lines := strings.Split(items[0].Text(), "\n")
	if len(lines) < 2 || lines[0] != openTag || lines[len(lines)-1] != closeTag {
		return nil, false
	}
	var out []string
	for _, line := range lines[1 : len(lines)-1] {
		switch {
		case strings.HasPrefix(line, "["):
			out = append(out, line)
		case strings.HasPrefix(line, "  ") && len(out) > 0:
			out[len(out)-1] += "\n" + line
		}
	}
	return out, true
}

// renderDelta lists the episodes next shows that the pinned prev does not.
// Episodes no longer shown are not retracted: they still happened. ""
// means no compact delta (the runtime republishes the block).
func renderDelta(prev, next []core.Item) string {
	before, ok := blockEntries(prev)
	if !ok {
		return ""
	}
	after, ok := blockEntries(next)
	if !ok {
		return ""
	}
	had := make(map[string]bool, len(before))
	for _, e := range before {
		had[e] = true
	}
	var added []string
	for _, e := range after {
		if !had[e] {
			added = append(added, e)
		}
	}
	if len(added) == 0 {
		return ""
	}
	return "More past episodes relevant now (the episodes shown earlier still apply):\n" + strings.Join(added, "\n")
}
