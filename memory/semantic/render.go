package semantic

import (
	"context"
	"slices"
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/tokens"
	"github.com/stratamem/strata/vectorstore"
)

// renderer formats recalled messages.
type renderer struct {
	s      *session
	thread string // the session's thread
	// skip says which neighbours not to show (the visible window).
	skip func(*entry) bool
	// tk counts the output against the budget: the runtime's counter
	// (RecallParams.Tokens), nil for an unlimited budget.
	tk tokens.Tokenizer
}

const (
	renderHead = "<semantic_recall>\nEarlier messages that may be relevant to the latest one, oldest first (quoted from past conversation, with their dates):\n"
	renderTail = "</semantic_recall>"
)

// neighbours holds, for each hit, its messages before (nearest first)
// and after (nearest first), as far as rng asks.
type neighbours struct {
	before, after map[string][]*entry
}

// neighbours reads the messages around hits, up to rng: earlier ones by
// their prev links, later ones by their next links, or, for a message
// whose record does not know its next yet (the latest of a thread), from
// the session's latest messages or by the next message's prev link. Each
// step is one read for all hits.
func (r *renderer) neighbours(ctx context.Context, hits []*entry, rng MessageRange) (neighbours, error) {
	nb := neighbours{before: map[string][]*entry{}, after: map[string][]*entry{}}
	recent := r.s.latest()
	known := map[string]*entry{}
	for _, e := range recent {
		known[e.id] = e
	}
	for _, e := range hits {
		known[e.id] = e
	}
	// nextOf is the id after e, from its record or the session.
	nextOf := func(e *entry) string {
		if e.next != "" {
			return e.next
		}
		if i := slices.IndexFunc(recent, func(x *entry) bool { return x.id == e.id }); i >= 0 && i+1 < len(recent) {
			return recent[i+1].id
		}
		return ""
	}
	walk := func(n int, step func(*entry) string, out map[string][]*entry) error {
		cur := map[string]*entry{}
		for _, h := range hits {
			cur[h.id] = h
		}
		for d := 0; d < n && len(cur) > 0; d++ {
			var ids []string
			for _, e := range cur {
				if id := step(e); id != "" && known[id] == nil {
					ids = append(ids, id)
				}
			}
			if len(ids) > 0 {
				got, err := r.s.fetch(ctx, ids)
				if err != nil {
					return err
				}
				for id, e := range got {
					known[id] = e
				}
			}
			next := map[string]*entry{}
			for hid, e := range cur {
				if x := known[step(e)]; x != nil && x.thread == e.thread {
					out[hid] = append(out[hid], x)
					next[hid] = x
				}
			}
			cur = next
		}
		return nil
	}
	if err := walk(rng.Before, func(e *entry) string { return e.prev }, nb.before); err != nil {
		return nb, err
	}
	// Later messages of records that do not name their next: found by
	// the next one's prev link.
	if rng.After > 0 {
		for _, h := range hits {
			if nextOf(h) != "" {
				continue
			}
			f := vectorstore.Filter{Layer: r.s.l.o.ID, Kind: KindMessage, Thread: h.thread, Resource: h.res,
				Metadata: map[string]string{MetaPrev: h.id}}
			recs, _, err := r.s.l.store.Records.List(ctx, vectorstore.ListOptions{Filter: f, Limit: 1})
			if err != nil {
				return nb, err
			}
			if len(recs) == 1 {
				if e, ok := r.s.entryOfMatch(recs[0]); ok {
					h.next = e.id
					known[e.id] = e
				}
			}
		}
	}
	if err := walk(rng.After, nextOf, nb.after); err != nil {
		return nb, err
	}
	return nb, nil
}

// fit chooses what to show of hits (best first) within budget tokens,
// by priority: every hit that fits, best first; then their neighbours up
// to rng, nearest first, in the order of their hits. The empty string
// means nothing fits.
func (r *renderer) fit(hits []*entry, nb neighbours, rng MessageRange, budget int) string {
	tk := r.tk
	if tk == nil {
		tk = tokens.Estimate()
	}
	set := map[string]*entry{}
	out := ""
	try := func(e *entry) bool {
		if set[e.id] != nil {
			return true
		}
		set[e.id] = e
		text := r.render(set)
		if tk.Count(text)+core.ItemOverhead <= budget {
			out = text
			return true
		}
		delete(set, e.id)
		return false
	}
	var kept []*entry
	for _, h := range hits {
		if try(h) {
			kept = append(kept, h)
		}
	}
	for d := 1; d <= max(rng.Before, rng.After); d++ {
		for _, k := range kept {
			if b := nb.before[k.id]; d <= rng.Before && d <= len(b) && !r.skip(b[d-1]) {
				try(b[d-1])
			}
			if a := nb.after[k.id]; d <= rng.After && d <= len(a) && !r.skip(a[d-1]) {
				try(a[d-1])
			}
		}
	}
	return out
}

// render writes the chosen messages as runs of consecutive messages,
// oldest run first, "…" between runs.
func (r *renderer) render(set map[string]*entry) string {
	es := make([]*entry, 0, len(set))
	for _, e := range set {
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b *entry) int {
		if c := strings.Compare(a.thread, b.thread); c != 0 {
			return c
		}
		return a.compare(b)
	})
	type run struct {
		first *entry
		lines []string
	}
	var runs []run
	for i, e := range es {
		if i == 0 || es[i-1].thread != e.thread || !(e.prev == es[i-1].id || es[i-1].next == e.id) {
			runs = append(runs, run{first: e})
		}
		ru := &runs[len(runs)-1]
		ru.lines = append(ru.lines, r.line(e))
	}
	slices.SortFunc(runs, func(a, b run) int { return a.first.compare(b.first) })
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
	o := &r.s.l.o
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

// show renders hits (their entries among seen) with their neighbours
// within budget.
func (r *renderer) show(ctx context.Context, hits []Hit, seen []*entry, rng MessageRange, budget int) (string, error) {
	byID := make(map[string]*entry, len(seen))
	for _, e := range seen {
		byID[e.id] = e
	}
	es := make([]*entry, 0, len(hits))
	for _, h := range hits {
		if e := byID[h.ID]; e != nil {
			es = append(es, e)
		}
	}
	nb, err := r.neighbours(ctx, es, rng)
	if err != nil {
		return "", err
	}
	return r.fit(es, nb, rng, budget), nil
}
