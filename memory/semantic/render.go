package semantic

import (
	"slices"
	"strings"

	"github.com/stratamem/strata/core"
)

// renderer formats recalled messages.
type renderer struct {
	m      *mirror
	thread string // the session's thread
	// skip says which neighbours not to show (the visible window).
	skip func(*entry) bool
}

const (
	renderHead = "<semantic_recall>\nEarlier messages that may be relevant to the latest one, oldest first (quoted from past conversation, with their dates):\n"
	renderTail = "</semantic_recall>"
)

// shown is a set of messages to render: thread -> positions.
type shown map[string]map[int]bool

func (s shown) add(thread string, i int) {
	if s[thread] == nil {
		s[thread] = map[int]bool{}
	}
	s[thread][i] = true
}

func (s shown) del(thread string, i int) { delete(s[thread], i) }

// fit chooses what to show of hits (best first) within budget tokens,
// by priority: every hit that fits, best first; then their neighbours up
// to rng, nearest first, in the order of their hits. The empty string
// means nothing fits. Called with m.mu held.
func (r *renderer) fit(hits []Hit, rng MessageRange, budget int) string {
	tk := r.m.l.o.Tokenizer
	set := shown{}
	out := ""
	try := func(thread string, i int) {
		if set[thread][i] {
			return
		}
		set.add(thread, i)
		text := r.render(set)
		if tk.Count(text)+core.ItemOverhead <= budget {
			out = text
			return
		}
		set.del(thread, i)
	}
	type at struct {
		thread string
		i      int
	}
	var kept []at
	for _, h := range hits {
		e := r.m.byID[h.ID]
		if e == nil {
			continue
		}
		i := r.m.posLocked(e)
		if i < 0 {
			continue
		}
		try(e.thread, i)
		if set[e.thread][i] {
			kept = append(kept, at{e.thread, i})
		}
	}
	for d := 1; d <= max(rng.Before, rng.After); d++ {
		for _, k := range kept {
			t := r.m.threads[k.thread]
			if d <= rng.Before && k.i-d >= 0 && !r.skip(t[k.i-d]) {
				try(k.thread, k.i-d)
			}
			if d <= rng.After && k.i+d < len(t) && !r.skip(t[k.i+d]) {
				try(k.thread, k.i+d)
			}
		}
	}
	return out
}

// render writes the chosen messages as runs of consecutive messages,
// oldest run first, "…" between runs.
func (r *renderer) render(set shown) string {
	type run struct {
		first *entry
		lines []string
	}
	var runs []run
	for thread, ps := range set {
		t := r.m.threads[thread]
		pos := make([]int, 0, len(ps))
		for i := range ps {
			if i < len(t) {
				pos = append(pos, i)
			}
		}
		slices.Sort(pos)
		for k, i := range pos {
			if k == 0 || pos[k-1] != i-1 {
				runs = append(runs, run{first: t[i]})
			}
			ru := &runs[len(runs)-1]
			ru.lines = append(ru.lines, r.line(t[i]))
		}
	}
	slices.SortFunc(runs, func(a, b run) int {
		switch {
		case a.first.before(b.first):
			return -1
		case b.first.before(a.first):
			return 1
		}
		return 0
	})
	var b strings.Builder
	b.WriteString(renderHead)
	for i, ru := range runs {
		if i > 0 {
			b.WriteString("…\n")
		}
		if ru.first.thread != r.thread {
			b.WriteString("(from another conversation)\n")
		}
		for _, l := range ru.lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	b.WriteString(renderTail)
	return b.String()
}

// line renders one message: date, role, text (cut, continuation lines
// indented).
func (r *renderer) line(e *entry) string {
	o := &r.m.l.o
	text := strings.TrimSpace(e.text)
	if rs := []rune(text); len(rs) > o.MaxMessageChars {
		text = strings.TrimSpace(string(rs[:o.MaxMessageChars])) + " …"
	} else if e.trunc {
		text += " …"
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\n", "\n  ")
	return "[" + e.created.In(o.Location).Format("Mon 2006-01-02 15:04 MST") + "] " + string(e.role) + ": " + text
}
