package cachebench

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
)

// The temporal-days workload runs the real memory/temporal ledger (its
// record function, its chains, its Recall and renderDelta) on the embedded
// chromem store, over a conversation of several days in bursts. Its
// variants are the same ledger in the live band and the same ledger with
// humanized relative times ("12 minutes ago").

// TemporalWorkload is the name of the temporal ledger's workload.
const TemporalWorkload = "temporal-days"

// Names of the temporal workload's variants.
const (
	// VariantLive is the ledger with temporal.Options{Common:
	// memory.Common{Placement: core.PlacementLive}}: fresh after history
	// on every request.
	VariantLive = "live"
	// VariantHumanized is the ledger anchored as shipped, but each line's
	// relative time counted from the current instant, not the calendar day.
	VariantHumanized = "humanized"
	// VariantHumanizedLive is the humanized ledger in the live band.
	VariantHumanizedLive = "humanized-live"
)

// temporalLoc is the workload's calendar (temporal.Options.Location): a
// user in central Europe in winter. A fixed zone needs no tz database.
var temporalLoc = time.FixedZone("CET", 3600)

// ledgerDim is the hashing embedder's dimension. The ledger embeds each
// fact's text; nothing here queries by vector, so the (non-semantic)
// hashing embedder is enough and keeps the run offline.
const ledgerDim = 256

// ledgerConfig is one configuration of the temporal layer.
type ledgerConfig struct {
	placement core.Placement // temporal.Options.Placement; "" is the shipped anchor
	humanized bool
}

// seedFact is a fact the ledger holds before the run starts, recorded
// through Layer.Record at its own time.
type seedFact struct {
	at time.Time
	in temporal.Input
}

// temporalLayer is the ledger as a workload layer. Its delta, used by the
// optimum, is the layer's own renderDelta (temporal.Delta).
func temporalLayer(cfg ledgerConfig, seeds []seedFact) layerDef {
	placement := cfg.placement
	if placement == "" {
		placement = core.PlacementAnchor
	}
	return layerDef{id: temporal.DefaultID, slot: temporal.DefaultSlot, placement: placement,
		delta: func(prev, next string) (string, bool) {
			text, ok, err := temporal.Delta(layerItems(temporal.DefaultID, prev), layerItems(temporal.DefaultID, next))
			return text, ok && err == nil
		},
		layer: func(ctx context.Context, w *world) (core.AnyLayer, func(), error) {
			return openLedger(ctx, w, cfg, seeds)
		}}
}

// openLedger opens a fresh chromem collection in a temporary directory,
// with the world's clock as the store clock, records the seed facts and
// returns the ledger's layer. Its Recall is wrapped only to note the fresh
// output for the harness (and, for the humanized variant, to rewrite the
// relative times); the bytes of the shipped configuration are the layer's.
func openLedger(ctx context.Context, w *world, cfg ledgerConfig, seeds []seedFact) (core.AnyLayer, func(), error) {
	dir, err := os.MkdirTemp("", "cachebench-temporal-")
	if err != nil {
		return nil, nil, fmt.Errorf("store directory: %w", err)
	}
	col, err := chromem.OpenCollection(ctx, dir, "memories", &vectorstore.Options{Dimension: ledgerDim})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("open store: %w", err)
	}
	release := func() {
		_ = col.Close()
		_ = os.RemoveAll(dir)
	}
	store := &memory.Store{Records: col, Embedder: hashing.New(ledgerDim), Now: func() time.Time { return w.now }}
	ledger, err := temporal.New(store, temporal.Options{Common: memory.Common{Placement: cfg.placement}, Location: temporalLoc})
	if err != nil {
		release()
		return nil, nil, err
	}
	scope := vectorstore.Scope{Thread: benchThread}
	for _, sf := range seeds {
		if _, err := ledger.Put(ctx, scope, sf.at, sf.in); err != nil {
			release()
			return nil, nil, fmt.Errorf("seed fact %s · %s: %w", sf.in.Subject, sf.in.Predicate, err)
		}
	}
	l := ledger.Layer
	recall := l.Hooks.Recall
	l.Hooks.Recall = func(ctx context.Context, p core.RecallParams[temporal.State]) (core.Recall[temporal.State], error) {
		r, err := recall(ctx, p)
		if err != nil {
			return r, err
		}
		if cfg.humanized {
			r.Items = humanize(r.Items, p.State.Facts(), store.Time())
		}
		w.rec.note(temporal.DefaultID, itemsText(r.Items))
		return r, nil
	}
	return l, release, nil
}

var reLedgerLine = regexp.MustCompile(`^- \[(\d{4}-\d{2}-\d{2}) · [^\]]*\] (.*)$`)

// humanize rewrites the ledger's block with each line's relative time
// counted from now to the instant the fact became true ("just now",
// "12 minutes ago", "5 hours ago", "3 days ago", "in 2 days"), as a
// typical "time ago" helper renders it. The facts are the layer state's,
// so each line finds its exact ValidFrom.
func humanize(items []core.Item, facts []temporal.Fact, now time.Time) []core.Item {
	if len(items) != 1 {
		return items
	}
	from := map[string]time.Time{}
	for _, f := range facts {
		if !f.Corrected() {
			from[f.ValidFrom.In(temporalLoc).Format(time.DateOnly)+"\x00"+f.Subject+" · "+f.Predicate+": "+f.Value] = f.ValidFrom
		}
	}
	lines := strings.Split(items[0].Text(), "\n")
	for i, ln := range lines {
		m := reLedgerLine.FindStringSubmatch(ln)
		if m == nil {
			continue
		}
		fact, _, _ := strings.Cut(m[2], " (before: ")
		if t, ok := from[m[1]+"\x00"+fact]; ok {
			lines[i] = "- [" + m[1] + " · " + humanAgo(now.Sub(t)) + "] " + m[2]
		}
	}
	text := strings.Replace(strings.Join(lines, "\n"), "how long ago, in calendar days from today", "how long ago, from now", 1)
	it := core.DeveloperMessage(text)
	it.ID = items[0].ID
	return []core.Item{it}
}

// humanAgo renders d (now minus then) as a "time ago" helper does.
func humanAgo(d time.Duration) string {
	future := d < 0
	if future {
		d = -d
	}
	unit := func(n int, name string) string {
		s := fmt.Sprintf("%d %s", n, name)
		if n != 1 {
			s += "s"
		}
		if future {
			return "in " + s
		}
		return s + " ago"
	}
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return unit(int(d/time.Minute), "minute")
	case d < 48*time.Hour:
		return unit(int(d/time.Hour), "hour")
	default:
		return unit(int(d/(24*time.Hour)), "day")
	}
}

func temporalWorkload() Workload {
	variant := func(cfg ledgerConfig) func(*script) *script {
		return func(sc *script) *script {
			c := *sc
			c.layers = make([]layerDef, len(sc.layers))
			for i, d := range sc.layers {
				if d.id == temporal.DefaultID {
					d = temporalLayer(cfg, sc.seeds)
				}
				c.layers[i] = d
			}
			return &c
		}
	}
	return Workload{
		Name:  TemporalWorkload,
		Title: "Temporal fact ledger over five days",
		Description: "A personal assistant with the real memory/temporal ledger (chromem store, hashing embedder, the store clock " +
			"following simulated time, calendar in CET) that starts with 39 facts in 17 chains recorded over the previous four months, " +
			"static instructions (anchor) and a scratchpad (auto). The user talks in 18 bursts of 9-14 turns (20-90 s apart) from " +
			"Monday evening to Friday night, hours apart, so the 5-minute cache lifetime expires between bursts but not inside them; " +
			"two bursts start at 23:57, so midnight passes inside them. On 31 turns the user states a fact that the model records with " +
			"temporal/record (11 'yesterday', 3 'last <weekday>', 2 'this morning', 1 'two days ago', 3 a future 'next <weekday>', " +
			"11 undated; 18 supersede a current fact); on 12 the model calls temporal/as_of; every 7th turn it rewrites the scratchpad. " +
			"The first turn of each burst, and two quiet bursts (Tuesday 12:55, Thursday 22:05), change no layer, so a resumption's " +
			"re-anchor moves only what the previous burst, or the date, moved. The ledger is shipped anchored, at day granularity, with its renderDelta.",
		Turns: 200, Seed: 0x5eed0004, ExcludeFromTargets: true, Pauses: true,
		Variants: []Variant{
			{Name: VariantLive, Layer: temporal.DefaultID, Description: "the same ledger with temporal.Options{Common: memory.Common{Placement: core.PlacementLive}}: rendered fresh after " +
				"history on every request, never pinned, so it is never a context update and never part of the cached prefix",
				apply: variant(ledgerConfig{placement: core.PlacementLive})},
			{Name: VariantHumanized, Layer: temporal.DefaultID, Description: "the same ledger, facts and calls, anchored with the layer's renderDelta, but each " +
				"line's relative time humanized from the current instant ('just now', '12 minutes ago', '5 hours ago', '3 days ago') " +
				"as a typical time-ago helper does; the renderDelta declines when only those phrases moved, so the block is republished",
				apply: variant(ledgerConfig{humanized: true})},
			{Name: VariantHumanizedLive, Layer: temporal.DefaultID, Description: "the humanized ledger in the live band (temporal.Options{Common: memory.Common{Placement: " +
				"core.PlacementLive}}), where a block that changes often would be put",
				apply: variant(ledgerConfig{placement: core.PlacementLive, humanized: true})},
		},
		build: buildTemporal,
	}
}

// temporalBursts are the local start times of each day's bursts; days past
// the table use the last row's pattern. Two start at 23:57: midnight
// passes inside them. A quiet burst changes no layer (no fact, no as_of,
// no scratchpad write), so the resumption after it shows what the pause
// alone costs: on the same day (Tuesday 18:10) and on a new day (Friday
// 08:30, where the date is the only drift).
var temporalBursts = [][]string{
	{"19:30", "23:57"}, // Monday 2026-03-02
	{"08:40", "12:55 quiet", "18:10", "22:30"},
	{"07:50", "13:20", "17:45", "23:57"},
	{"09:05", "12:30", "19:15", "22:05 quiet"},
	{"08:30", "13:10", "18:40", "23:10"},
}

var temporalDay0 = time.Date(2026, 3, 2, 0, 0, 0, 0, temporalLoc) // a Monday

var cities = strings.Fields(`Berlin Lisbon Paris Madrid Vienna Prague Oslo Dublin Zurich Milan Warsaw Athens Porto Lyon Munich Hamburg Ghent Turin`)

// chain is a subject and predicate the user's facts are about, with what
// its values look like.
type chain struct {
	subject, predicate string
	value              func(g *gen, at time.Time) string
}

func cityValue(g *gen, _ time.Time) string { return g.pick(cities) }

func (g *gen) personChains(name string) []chain {
	return []chain{
		{name, "city", cityValue},
		{name, "role", func(g *gen, _ time.Time) string { return title(g.pick(adjs)) + " " + g.pick(nouns) + " lead" }},
		{name, "phone", func(g *gen, _ time.Time) string { return fmt.Sprintf("+49 30 5550 %04d", g.between(0, 9999)) }},
	}
}

func (g *gen) projectChains(project string) []chain {
	return []chain{
		{project, "deadline", func(g *gen, at time.Time) string {
			return at.AddDate(0, 0, g.between(5, 60)).Format(time.DateOnly)
		}},
		{project, "status", func(g *gen, _ time.Time) string {
			return g.pick([]string{"planning", "in progress", "blocked on review", "on hold", "in testing", "shipped"})
		}},
		{project, "owner", func(g *gen, _ time.Time) string { return g.pick(names) }},
	}
}

func userChains() []chain {
	return []chain{
		{"user", "lives in", cityValue},
		{"user", "employer", func(g *gen, _ time.Time) string { return g.pick(orgs) + " " + title(g.pick(nouns)) + "s" }},
		{"user", "job title", func(g *gen, _ time.Time) string { return title(g.pick(adjs)) + " " + g.pick(nouns) + " manager" }},
		{"user", "manager", func(g *gen, _ time.Time) string { return g.pick(names) }},
		{"user", "gym days", func(g *gen, _ time.Time) string {
			return g.pick([]string{"Monday and Thursday", "Tuesday and Friday", "Wednesday and Saturday", "Monday, Wednesday and Friday"})
		}},
		{"user", "office", func(g *gen, _ time.Time) string {
			return "Building " + string(rune('A'+g.between(0, 5))) + ", floor " + fmt.Sprint(g.between(1, 6))
		}},
	}
}

func possessive(subject string) string {
	if subject == "user" {
		return "my"
	}
	return subject + "'s"
}

var weekdayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

// whenPhrase draws how the user dates a fact said at t: mostly now or
// yesterday, sometimes another day before, rarely a day to come.
func (g *gen) whenPhrase(t time.Time) string {
	switch x := g.r.Float64(); {
	case x < 0.35:
		return ""
	case x < 0.67:
		return "yesterday"
	case x < 0.77:
		return "last " + weekdayNames[(int(t.Weekday())+g.between(2, 5))%7]
	case x < 0.85:
		return g.pick([]string{"two days ago", "three days ago", "a couple of days ago"})
	case x < 0.93:
		return "this morning"
	default:
		return "next " + weekdayNames[(int(t.Weekday())+g.between(1, 5))%7]
	}
}

// statement is how the user says a fact.
func statement(c chain, value, when string) string {
	s := fmt.Sprintf("%s %s is %s", possessive(c.subject), c.predicate, value)
	switch {
	case when == "":
		s = "Quick update: " + s + " now."
	case strings.HasPrefix(when, "next "):
		s = "Heads-up: starting " + when + ", " + s + "."
	default:
		s = "For the record, " + when + " " + s + "."
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func recordCall(id string, facts ...temporal.Input) call {
	list := make([]map[string]any, len(facts))
	for i, f := range facts {
		m := map[string]any{"subject": f.Subject, "predicate": f.Predicate, "value": f.Value}
		if f.When != "" {
			m["when"] = f.When
		}
		list[i] = m
	}
	return call{id: id, name: temporal.DefaultID + "/record", args: constArgs(jsonArgs(map[string]any{"facts": list}))}
}

func asOfCall(id, date string) call {
	return call{id: id, name: temporal.DefaultID + "/as_of", args: constArgs(jsonArgs(map[string]any{"date": date}))}
}

// seedLedger draws the facts the ledger holds before the run: the user's
// chains and those of three people and two projects, each with one to
// three values over the four months before day0.
func seedLedger(g *gen, day0 time.Time) (seeds []seedFact, known []chain) {
	known = userChains()[:5]
	people := []string{g.pick(names), g.pick(names), g.pick(names)}
	for people[1] == people[0] {
		people[1] = g.pick(names)
	}
	for people[2] == people[0] || people[2] == people[1] {
		people[2] = g.pick(names)
	}
	for _, p := range people {
		known = append(known, g.personChains(p)[:2]...)
	}
	for _, o := range []string{g.pick(orgs), g.pick(orgs)} {
		known = append(known, g.projectChains("project "+o)...)
	}
	for _, c := range known {
		n := g.between(1, 3)
		day := -g.between(100, 125)
		for range n {
			at := day0.AddDate(0, 0, day).Add(time.Duration(g.between(9, 19)) * time.Hour)
			when := at.Format(time.DateOnly)
			seeds = append(seeds, seedFact{at: at, in: temporal.Input{Subject: c.subject, Predicate: c.predicate, Value: c.value(g, at), When: when}})
			day += g.between(15, 40)
			if day >= 0 {
				break
			}
		}
	}
	return seeds, known
}

func buildTemporal(seed uint64, turns int) *script {
	g := newGen(seed, 4)
	w := &world{instructions: instructionsText(g, 900), corpus: makeCorpus(g, 40)}
	seeds, known := seedLedger(g, temporalDay0)
	// New chains the user may open during the run.
	var fresh []chain
	fresh = append(fresh, userChains()[5])
	for range 3 {
		fresh = append(fresh, g.personChains(fmt.Sprintf("%s %c.", g.pick(names), 'A'+rune(g.between(0, 25))))...)
	}
	fresh = append(fresh, g.projectChains("project "+g.pick(orgs)+" "+title(g.pick(nouns)))...)

	first, _ := time.ParseInLocation("15:04", temporalBursts[0][0], temporalLoc)
	start := temporalDay0.Add(time.Duration(first.Hour())*time.Hour + time.Duration(first.Minute())*time.Minute)
	s := &script{start: start, world: w, loc: temporalLoc, seeds: seeds,
		system: "You are a personal assistant with a ledger of dated facts about the user, their people and their projects. " +
			"When the user states a fact, record it with temporal/record, giving when if it became true at another time than now; " +
			"answer questions about the past with temporal/as_of.",
		tools: hostTools("search_docs"),
		layers: []layerDef{instructionsLayer(), temporalLayer(ledgerConfig{}, seeds),
			scratchpadLayer(core.PlacementAuto)}}
	var id ids
	clock := start
	for day := 0; len(s.turns) < turns; day++ {
		row := temporalBursts[min(day, len(temporalBursts)-1)]
		for _, spec := range row {
			if len(s.turns) >= turns {
				break
			}
			hm, mode, _ := strings.Cut(spec, " ")
			quiet := mode == "quiet"
			t, _ := time.ParseInLocation("15:04", hm, temporalLoc)
			burst := temporalDay0.AddDate(0, 0, day).Add(time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute)
			n := g.between(9, 14)
			for k := 0; k < n && len(s.turns) < turns; k++ {
				tr := turn{gap: g.seconds(20, 90)}
				switch {
				case len(s.turns) == 0:
					tr.gap = 0
				case k == 0:
					tr.gap = max(burst.Sub(clock), 30*time.Minute)
				}
				now := clock.Add(tr.gap)
				var calls []call
				user := g.prose(g.between(10, 40))
				// A quiet burst, and the first turn of every burst, change no
				// layer: what a resumption's re-anchor moves is then what
				// the previous burst (and the date) moved.
				still := quiet || k == 0
				switch {
				case still:
				case g.chance(0.22):
					var c chain
					if g.chance(0.5) || len(fresh) == 0 {
						c = known[g.r.IntN(len(known))]
					} else {
						c, fresh = fresh[0], fresh[1:]
						known = append(known, c)
					}
					when := g.whenPhrase(now.In(temporalLoc))
					in := temporal.Input{Subject: c.subject, Predicate: c.predicate, Value: c.value(g, now), When: when}
					user = statement(c, in.Value, when) + " " + user
					calls = append(calls, recordCall(id.next(), in))
				case g.chance(0.07):
					c := known[g.r.IntN(len(known))]
					date := g.pick([]string{"last week", "two weeks ago", "last month", "a couple of weeks ago"})
					user = fmt.Sprintf("What was %s %s %s? ", possessive(c.subject), c.predicate, date) + user
					calls = append(calls, asOfCall(id.next(), date))
				}
				if len(s.turns)%7 == 4 && !still {
					calls = append(calls, scratchCall(g, id.next(), len(s.turns)/7))
				}
				if g.chance(0.12) {
					calls = append(calls, searchCall(id.next(), g.pick(adjs)+" "+g.pick(nouns), g.hits(len(w.corpus), 3)))
				}
				tr.user = user
				g.finish(&tr, calls, g.between(30, 120))
				clock = now
				for _, rd := range tr.rounds {
					clock = clock.Add(rd.think)
					for _, c := range rd.calls {
						clock = clock.Add(c.tool)
					}
				}
				s.turns = append(s.turns, tr)
			}
		}
	}
	return s
}
