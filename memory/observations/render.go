package observations

import (
	"context"
	"strconv"
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/internal/render"
	"github.com/stratamem/strata/tokens"
)

const (
	openTag  = "<observations>"
	closeTag = "</observations>"
	preamble = "Observed in the conversations so far, most important first. [n] is importance (5 = must not forget); the date is when it was last observed."
)

func (l *Layer) recall(ctx context.Context, p core.RecallParams[State]) (core.Recall[State], error) {
	m, err := l.mirrorOf(ctx, p.State, p.Run)
	if err != nil {
		return core.Recall[State]{}, err
	}
	return render.Recall[State](l.opts.ID, Render(m.sorted(), p.Budget, p.Tokens)), nil
}

// Line renders one observation as it appears in the block.
func Line(o Observation) string {
	return "- [" + strconv.Itoa(o.Importance) + "] " + o.Text + " (" + o.LastSeen.UTC().Format("2006-01-02") + ")"
}

// Render renders observations, taken in the given order (the layer passes
// them sorted by importance, then recency), into a block of at most budget
// tokens as tok counts them, including the runtime's per-item overhead.
// Observations that do not fit are left out and counted in a closing
// line. The same input renders the same bytes. It returns "" when nothing
// fits or there is nothing to render.
func Render(obs []Observation, budget int, tok tokens.Tokenizer) string {
	if len(obs) == 0 {
		return ""
	}
	head := openTag + "\n" + preamble
	tail := "\n" + closeTag
	used := tok.Count(head) + tok.Count(tail) + core.ItemOverhead
	if used > budget {
		return ""
	}
	lines, _ := render.Fill(obs, Line, tok, used, budget)
	build := func(lines []string) string {
		var b strings.Builder
		b.WriteString(head)
		for _, ln := range lines {
			b.WriteByte('\n')
			b.WriteString(ln)
		}
		if left := len(obs) - len(lines); left > 0 {
			b.WriteString("\n(" + strconv.Itoa(left) + " less important observation(s) not shown.)")
		}
		b.WriteString(tail)
		return b.String()
	}
	// Counting the parts can differ from counting the whole with a BPE
	// tokenizer, and the omission note costs tokens too: drop from the end
	// until the whole block fits.
	for {
		text := build(lines)
		if tok.Count(text)+core.ItemOverhead <= budget {
			if len(lines) == 0 {
				return ""
			}
			return text
		}
		if len(lines) == 0 {
			return ""
		}
		lines = lines[:len(lines)-1]
	}
}

// observationKey is the text of a rendered observation line without its
// importance and date, so an observation whose importance or date changed
// is recognised as the same one. ok is false for other lines.
func observationKey(line string) (key string, ok bool) {
	if !strings.HasPrefix(line, "- [") {
		return "", false
	}
	i := strings.Index(line, "] ")
	j := strings.LastIndex(line, " (")
	if i < 0 || j < i+2 {
		return "", false
	}
	return line[i+2 : j], true
}

func linesOf(items []core.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, strings.Split(it.Text(), "\n")...)
	}
	return out
}

// Delta is the layer's render delta, exported for tests and custom
// layers that render with Render. It describes how the fresh block next
// differs from the pinned prev: the observations that are new or changed,
// and those no longer listed. A merge or a new observation then costs a
// line or two instead of the whole block. It declines (full republish)
// when nothing line-level changed or the delta would not be smaller than
// the block.
func Delta(prev, next []core.Item) (string, bool, error) {
	prevLines, nextLines := linesOf(prev), linesOf(next)
	had := render.Set(prevLines)
	nextKeys := map[string]bool{}
	var changed []string
	for _, ln := range nextLines {
		k, ok := observationKey(ln)
		if !ok {
			continue
		}
		nextKeys[k] = true
		if !had[ln] {
			changed = append(changed, ln)
		}
	}
	var gone []string
	for _, ln := range prevLines {
		if k, ok := observationKey(ln); ok && !nextKeys[k] {
			gone = append(gone, ln)
		}
	}
	if len(changed) == 0 && len(gone) == 0 {
		return "", false, nil
	}
	var b strings.Builder
	b.WriteString("<observations_update>\nChanges to the observations above.")
	render.Section(&b, "New or updated:", changed)
	render.Section(&b, "No longer listed (superseded, removed or left out for space):", gone)
	b.WriteString("\n</observations_update>")
	return render.IfSmaller(b.String(), next)
}
