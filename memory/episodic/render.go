package episodic

import (
	"fmt"
	"strings"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/internal/render"
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
func (l *Layer) render(eps []Episode, order []int, budget int, tk tokens.Tokenizer) string {
	if len(order) == 0 {
		return ""
	}
	entries := make([]string, len(order))
	for n, i := range order {
		entries[n] = entry(eps[i])
	}
	return render.Block{Open: openTag, Close: closeTag, Lines: entries,
		// eps is oldest first, so its index is the chronological order.
		Before:  func(i, j int) bool { return order[i] < order[j] },
		Omitted: func(n int) string { return fmt.Sprintf("(%d more %s not shown for space)", n, plural(n)) },
	}.Fit(tk, budget)
}

func plural(n int) string {
	if n == 1 {
		return "episode"
	}
	return "episodes"
}

// blockEntries splits a rendered block into its entries; ok is false when
// items are not one block this layer rendered.
func blockEntries(items []core.Item) ([]string, bool) {
	lines, ok := render.BlockLines(items, openTag, closeTag)
	if !ok {
		return nil, false
	}
	var out []string
	for _, line := range lines {
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
	return render.NewEntries(prev, next, blockEntries, "More past episodes relevant now (the episodes shown earlier still apply):")
}
