package temporal

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/internal/render"
	"github.com/stratamem/strata/tokens"
)

func (l *Layer) recall(ctx context.Context, p core.RecallParams[State]) (core.Recall[State], error) {
	m, err := l.mirrorOf(ctx, p.State, p.Run)
	if err != nil {
		return core.Recall[State]{}, err
	}
	return render.Recall[State](l.opts.ID, l.Render(m.all(), l.store.Time(), p.Budget, p.Tokens)), nil
}

// Render renders the ledger as it stands today within budget tokens
// (counted with tok, the runtime's counter, plus its per-item overhead):
// the facts current at the end of now's calendar day (in
// Options.Location), newest first, each with the previous value of its
// chain, then the scheduled ones (valid from a later day). Each line
// carries the exact date the fact became true and that date relative to
// today at day granularity. "Current" is decided by the day, not the
// instant, so that a fact that becomes true (or is superseded) later
// today is shown as today's from the first turn of the day: the bytes
// change only when a fact does or when the calendar date of now changes.
// The exact instants are in the ledger; AsOf and the as_of function answer
// them. What does not fit is counted in a closing line, oldest facts
// first. It returns "" when there is nothing to render or nothing fits.
func (l *Layer) Render(facts []Fact, now time.Time, budget int, tok tokens.Tokenizer) string {
	current, scheduled, before := l.arrange(facts, endOfDay(now, l.opts.Location))
	if len(current)+len(scheduled) == 0 {
		return ""
	}
	loc := l.opts.Location
	local := now.In(loc)
	head := `<temporal_facts today="` + local.Format("2006-01-02") + `" weekday="` + local.Weekday().String() + `">` + "\n" +
		"Facts as they stand today, newest first. [date it became true · how long ago, in calendar days from today]. " +
		"Earlier values are kept: call " + l.fnAsOf + " for a past date."
	tail := "\n</temporal_facts>"
	line := func(f *Fact) string {
		s := "- [" + l.day(f.ValidFrom) + " · " + Relative(f.ValidFrom, now, loc) + "] " + f.Subject + " · " + f.Predicate + ": " + f.Value
		if prev, ok := before[f.ID]; ok {
			s += " (before: " + prev + ")"
		}
		return s
	}
	used := tok.Count(head) + tok.Count(tail) + core.ItemOverhead
	if used > budget {
		return ""
	}
	cur, used := render.Fill(current, line, tok, used, budget)
	var sch []string
	if len(cur) == len(current) {
		for _, f := range scheduled {
			ln := line(f)
			n := tok.Count("\n" + ln)
			if len(sch) == 0 {
				n += tok.Count("\nScheduled:")
			}
			if used+n > budget {
				break
			}
			used += n
			sch = append(sch, ln)
		}
	}
	total := len(current) + len(scheduled)
	build := func(cur, sch []string) string {
		var b strings.Builder
		b.WriteString(head)
		for _, ln := range cur {
			b.WriteString("\n" + ln)
		}
		if len(sch) > 0 {
			b.WriteString("\nScheduled:")
			for _, ln := range sch {
				b.WriteString("\n" + ln)
			}
		}
		if left := total - len(cur) - len(sch); left > 0 {
			b.WriteString("\n(" + strconv.Itoa(left) + " more fact(s) not shown.)")
		}
		b.WriteString(tail)
		return b.String()
	}
	for {
		text := build(cur, sch)
		if tok.Count(text)+core.ItemOverhead <= budget {
			if len(cur)+len(sch) == 0 {
				return ""
			}
			return text
		}
		switch {
		case len(sch) > 0:
			sch = sch[:len(sch)-1]
		case len(cur) > 0:
			cur = cur[:len(cur)-1]
		default:
			return ""
		}
	}
}

// arrange splits facts into the ones current at now (newest ValidFrom
// first) and the scheduled ones (soonest first), and maps each fact to the value its
// chain held just before it. It works on pointers into facts: a recall
// arranges every fact of the scope each turn.
func (l *Layer) arrange(facts []Fact, now time.Time) (current, scheduled []*Fact, before map[string]string) {
	ptrs := make([]*Fact, 0, len(facts))
	for i := range facts {
		if !facts[i].Corrected() {
			ptrs = append(ptrs, &facts[i])
		}
	}
	slices.SortFunc(ptrs, func(a, b *Fact) int {
		if c := strings.Compare(a.chainKey(), b.chainKey()); c != 0 {
			return c
		}
		return compareChain(*a, *b)
	})
	before = map[string]string{}
	for i, f := range ptrs {
		if i > 0 {
			p := ptrs[i-1]
			if p.chainKey() == f.chainKey() && p.ValidTo.Equal(f.ValidFrom) && !sameValue(p.Value, f.Value) {
				before[f.ID] = p.Value
			}
		}
		switch {
		case f.ValidAt(now):
			current = append(current, f)
		case f.ValidFrom.After(now):
			scheduled = append(scheduled, f)
		}
	}
	byKeys := func(a, b *Fact) int {
		if c := strings.Compare(a.chainKey(), b.chainKey()); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	}
	slices.SortFunc(current, func(a, b *Fact) int {
		if c := b.ValidFrom.Compare(a.ValidFrom); c != 0 {
			return c
		}
		return byKeys(a, b)
	})
	slices.SortFunc(scheduled, func(a, b *Fact) int {
		if c := a.ValidFrom.Compare(b.ValidFrom); c != 0 {
			return c
		}
		return byKeys(a, b)
	})
	return current, scheduled, before
}

var (
	reFactLine = regexp.MustCompile(`^- \[(\d{4}-\d{2}-\d{2}) · [^\]]*\] (.*)$`)
	reToday    = regexp.MustCompile(`today="(\d{4}-\d{2}-\d{2})" weekday="([A-Za-z]+)"`)
)

// parsed is a rendered block read back for Delta.
type parsed struct {
	today, weekday string
	lines          []string // fact lines, as rendered
	keys           []string // their keys: section, date and fact, without the relative phrase
	stripped       []string // the lines without the relative phrase
}

func parseBlock(items []core.Item) parsed {
	var p parsed
	section := "current"
	for _, it := range items {
		for _, ln := range strings.Split(it.Text(), "\n") {
			if m := reToday.FindStringSubmatch(ln); m != nil && p.today == "" {
				p.today, p.weekday = m[1], m[2]
				continue
			}
			if ln == "Scheduled:" {
				section = "scheduled"
				continue
			}
			if m := reFactLine.FindStringSubmatch(ln); m != nil {
				p.lines = append(p.lines, ln)
				p.keys = append(p.keys, section+"\x00"+m[1]+"\x00"+m[2])
				p.stripped = append(p.stripped, "- ["+m[1]+"] "+m[2])
			}
		}
	}
	return p
}

// Delta is the layer's render delta over a pinned and a fresh block: how
// the fresh ledger differs from the pinned one. When only the date moved
// on, that is one sentence: the relative times in the pinned block are
// each that many days older, and its dates are exact. Facts that are new
// or changed are listed in full, facts no longer current by date only. It
// declines (full republish) when the delta would not be smaller than the
// block.
func Delta(prev, next []core.Item) (string, bool, error) {
	a, b := parseBlock(prev), parseBlock(next)
	had, has := render.Set(a.keys), render.Set(b.keys)
	var changed []string
	for i, k := range b.keys {
		if !had[k] {
			changed = append(changed, b.lines[i])
		}
	}
	var gone []string
	for i, k := range a.keys {
		if !has[k] {
			gone = append(gone, a.stripped[i])
		}
	}
	dateMoved := a.today != "" && b.today != "" && a.today != b.today
	if !dateMoved && len(changed) == 0 && len(gone) == 0 {
		return "", false, nil
	}
	var s strings.Builder
	s.WriteString(`<temporal_update today="` + b.today + `" weekday="` + b.weekday + `">`)
	if dateMoved {
		days := ""
		if ta, err := time.Parse("2006-01-02", a.today); err == nil {
			if tb, err := time.Parse("2006-01-02", b.today); err == nil {
				n := DaysBetween(ta, tb, time.UTC)
				days = strconv.Itoa(n) + " day"
				if n != 1 {
					days += "s"
				}
			}
		}
		s.WriteString("\nToday is now " + b.today + " (" + b.weekday + "). The relative times in the facts above were counted from " +
			a.today + ", so each is " + days + " older; their dates are exact.")
	} else {
		s.WriteString("\nChanges to the facts above.")
	}
	render.Section(&s, "New or changed:", changed)
	render.Section(&s, "No longer current:", gone)
	s.WriteString("\n</temporal_update>")
	return render.IfSmaller(s.String(), next)
}

// renderAsOf answers temporal/as_of.
func (l *Layer) renderAsOf(facts []Fact, t, now time.Time) string {
	loc := l.opts.Location
	var b strings.Builder
	b.WriteString("As of " + t.In(loc).Format(time.RFC3339) + " (" + l.day(t) + ", " + Relative(t, now, loc) + "):")
	if len(facts) == 0 {
		b.WriteString("\nNo recorded fact held then.")
		return b.String()
	}
	for _, f := range facts {
		b.WriteString("\n- " + f.Subject + " · " + f.Predicate + ": " + f.Value + " (from " + l.day(f.ValidFrom))
		if f.ValidTo.IsZero() {
			b.WriteString(", still current)")
		} else {
			b.WriteString(" until " + l.day(f.ValidTo) + ")")
		}
	}
	return b.String()
}

// sameValue compares stored values (already whitespace-collapsed) the way
// normValue does, without allocating.
func sameValue(a, b string) bool {
	return strings.EqualFold(strings.TrimRight(a, " .,;:"), strings.TrimRight(b, " .,;:"))
}
