package cachebench

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stratamem/strata/core"
)

// Workload is a scripted, deterministic multi-turn agent run: its layers,
// its user turns, the model's tool calls and replies, and the simulated time
// between requests. The same Seed always produces the same run.
type Workload struct {
	// Name is the workload's key, e.g. "churn-heavy".
	Name string
	// Title and Description say what it models, for the report.
	Title       string
	Description string
	// Turns is the full run's number of user turns.
	Turns int
	// Seed seeds the PCG generator the script is drawn from.
	Seed uint64
	// OverflowTurn is the user turn from which history no longer fits the
	// token budget: the runtime's Policy.TokenBudget is calibrated so that
	// the full history of that turn's first request just fits. Zero runs
	// without a budget. With fewer turns than Turns it scales along.
	OverflowTurn int
	// PauseTurn, when positive, is a turn preceded by an idle pause longer
	// than the 5-minute cache lifetime.
	PauseTurn int
	// Variants are other configurations of the workload's layers that a
	// reader would consider instead. Run replays each on the same script
	// with the Anchored strategy (when it runs Anchored) and measures it
	// against the workload's own optimum.
	Variants []Variant
	// ExcludeFromTargets keeps the workload out of Targets. It is set on
	// workloads whose idle time between bursts outlasts any provider's
	// cache lifetime by hours, which the optimum (no TTL) ignores, so the
	// issue's hit-ratio target does not apply; the report still gives the
	// share of the optimum.
	ExcludeFromTargets bool
	// HistoryWindow, when positive, is the host's window of the last N
	// messages (layers/history MaxItems): the history-window strategies
	// and their dynamic-programming optimum run on the workload.
	HistoryWindow int
	// Pauses marks a workload whose user steps away for longer than the
	// 5-minute cache lifetime: the cache-lifetime strategies (1-hour, and
	// chosen by cost) run on it.
	Pauses bool

	build func(seed uint64, turns int) *script
}

// Variant is an alternative configuration of a workload's layers.
type Variant struct {
	// Name is the variant's key, e.g. "live"; Description says what
	// differs, for the report.
	Name, Description string
	// Layer is the id of the layer the variant reconfigures; the report
	// counts its context updates.
	Layer string

	// apply returns a copy of the script with the variant's layers.
	apply func(sc *script) *script
}

// benchThread is the thread (and run) id of every replayed session; the
// real layers' records are scoped to it.
const benchThread = "bench"

// script is a workload drawn for a number of turns.
type script struct {
	start  time.Time
	system string
	tools  []core.ToolSpec // the host's own tools, sent before the layers'
	layers []layerDef
	world  *world // initial state; each run mutates a clone
	turns  []turn
	// loc is the calendar the script lives in (the RequestLog's Day); nil
	// means UTC.
	loc *time.Location
	// seeds are the temporal ledger's facts from before the run, for the
	// variants that rebuild its layer.
	seeds []seedFact
}

// turn is one user turn: the world changes that precede it, the user's
// message and the model calls it takes.
type turn struct {
	gap    time.Duration // idle time before the user message
	before func(w *world)
	user   string
	rounds []round
}

// round is one model call: the model thinks, then either calls tools or
// replies (the last round).
type round struct {
	think time.Duration
	calls []call
	reply string
}

// call is a tool call the model makes. args and run see the world at replay
// time, so reads return the current file and edits apply to it.
type call struct {
	id   string
	name string
	args func(w *world) string
	tool time.Duration // how long the host takes to run it
	run  func(w *world) string
}

// Workloads returns the benchmark's workloads, in report order.
func Workloads() []Workload {
	return []Workload{
		{
			Name:  "churn-heavy",
			Title: "Churn-heavy agent",
			Description: "Every kind of layer at once: a clock that changes on every request (live), " +
				"retrieval results that change with every query (live), static instructions (anchor), " +
				"a workspace of 6 source files of about 1k tokens with a small edit every ~5 turns (anchor, renderDelta), " +
				"an entity list that grows (auto, renderDelta) and a scratchpad the model rewrites " +
				"every 3 turns through its provided function (auto). About 70% of the turns call tools " +
				"(scratchpad/write, read_file, search_docs, edit_file); history overflows the token budget from turn ~150.",
			Turns: 200, Seed: 0x5eed0001, OverflowTurn: 150,
			build: buildChurnHeavy,
		},
		{
			Name:  "steady-assistant",
			Title: "Steady assistant",
			Description: "A long chat with static instructions (anchor), a scratchpad rewritten every ~8 turns " +
				"(auto) and retrieval on about one turn in five (auto: it appears, changes and disappears). " +
				"A tool call on one turn in four (scratchpad/write, search_docs). Before turn 120 the user is away for 7 minutes, " +
				"longer than the 5-minute cache lifetime. No token budget: the history never overflows.",
			Turns: 200, Seed: 0x5eed0002, PauseTurn: 120,
			build: buildSteady,
		},
		{
			Name:  "coding-agent",
			Title: "Filesystem-heavy coding agent",
			Description: "A coding agent with a workspace layer of 12 source files of 1-2k tokens each (anchor, " +
				"renderDelta republishing only the changed file), static instructions and a plan in the " +
				"scratchpad (auto). The model reads files, runs tests and edits one file every few turns " +
				"(edit_file changes the workspace the layer renders) on about 60% of the turns; history overflows from turn ~150.",
			Turns: 200, Seed: 0x5eed0003, OverflowTurn: 150,
			build: buildCoding,
		},
		temporalWorkload(),
		smallContextWorkload(),
	}
}

// WorkloadByName returns the workload named name, or an error wrapping
// ErrUnknownWorkload.
func WorkloadByName(name string) (Workload, error) {
	for _, w := range Workloads() {
		if w.Name == name {
			return w, nil
		}
	}
	return Workload{}, fmt.Errorf("%w: %q", ErrUnknownWorkload, name)
}

var scriptStart = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// hostTools are the host's tools (not provided by a layer), offered on
// every request before the layers' functions.
func hostTools(names ...string) []core.ToolSpec {
	all := map[string]core.ToolSpec{
		"read_file": {Name: "read_file", Description: "Read a file of the workspace and return its full content.",
			Parameters: json.RawMessage(`{"properties":{"path":{"description":"workspace-relative path","type":"string"}},"required":["path"],"type":"object"}`)},
		"edit_file": {Name: "edit_file", Description: "Replace one line of a workspace file.",
			Parameters: json.RawMessage(`{"properties":{"line":{"description":"1-based line number","type":"integer"},"path":{"type":"string"},"text":{"description":"the new line","type":"string"}},"required":["path","line","text"],"type":"object"}`)},
		"search_docs": {Name: "search_docs", Description: "Search the documentation index and return the best passages.",
			Parameters: json.RawMessage(`{"properties":{"k":{"type":"integer"},"query":{"type":"string"}},"required":["query"],"type":"object"}`)},
		"run_tests": {Name: "run_tests", Description: "Run the test suite of a package and return the output.",
			Parameters: json.RawMessage(`{"properties":{"package":{"type":"string"}},"required":["package"],"type":"object"}`)},
	}
	out := make([]core.ToolSpec, len(names))
	for i, n := range names {
		out[i] = all[n]
	}
	return out
}

func instructionsText(g *gen, words int) string {
	var b strings.Builder
	b.WriteString("# Operating instructions\n")
	for n := 1; b.Len() < words*6; n++ {
		fmt.Fprintf(&b, "%d. %s\n", n, g.prose(g.between(18, 40)))
	}
	return strings.TrimRight(b.String(), "\n")
}

func makeCorpus(g *gen, n int) []passage {
	out := make([]passage, n)
	for i := range out {
		out[i] = passage{title: title(g.pick(adjs)) + " " + g.pick(nouns) + " " + g.pick(verbs) + " guide", text: g.prose(g.between(60, 110))}
	}
	return out
}

func (g *gen) entity() entity {
	k := g.pick(kinds)
	var name string
	switch k {
	case "person":
		name = g.pick(names) + " " + title(g.pick(nouns))
	case "company":
		name = g.pick(orgs) + " " + title(g.pick(nouns)) + "s"
	default:
		name = title(g.pick(adjs)) + " " + title(g.pick(nouns))
	}
	return entity{name: name, kind: k, fact: strings.TrimSuffix(g.sentence(g.between(6, 12)), ".")}
}

func (g *gen) hits(corpus, k int) []int {
	return g.r.Perm(corpus)[:k]
}

func (g *gen) files(n, minTok, maxTok int) []file {
	pkgs := []string{"billing", "ledger", "invoice", "payments", "reports", "schedule", "vendors", "orders", "auth", "notify", "storage", "metrics"}
	out := make([]file, n)
	for i := range out {
		pkg := pkgs[i%len(pkgs)]
		out[i] = file{path: fmt.Sprintf("internal/%s/%s.go", pkg, g.pick(nouns)), lines: g.sourceFile(pkg, g.between(minTok, maxTok))}
	}
	return out
}

// ids numbers the tool calls of a script.
type ids struct{ n int }

func (c *ids) next() string { c.n++; return fmt.Sprintf("call_%04d", c.n) }

// jsonArgs encodes tool arguments; the scripts only build maps of strings,
// ints and string slices, which always encode.
func jsonArgs(v map[string]any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}

func constArgs(s string) func(*world) string { return func(*world) string { return s } }

func readFileCall(id string, fileIdx int) call {
	return call{id: id, name: "read_file", tool: time.Second,
		args: func(w *world) string { return jsonArgs(map[string]any{"path": w.files[fileIdx].path}) },
		run: func(w *world) string {
			f := w.files[fileIdx]
			return f.path + ":\n" + strings.Join(f.lines, "\n")
		}}
}

// editFileCall replaces the line at the given fraction of a file, or inserts
// before it, as a coding model's small edit does.
func editFileCall(id string, fileIdx int, frac float64, text string) call {
	// The edited line is the first indented statement at or after the
	// fraction of the file, so edits land inside function bodies.
	line := func(w *world) int {
		lines := w.files[fileIdx].lines
		n := 8 + int(frac*float64(len(lines)-9))
		for i := range len(lines) {
			k := 8 + (n-8+i)%(len(lines)-8)
			if strings.HasPrefix(lines[k], "\t") && !strings.HasPrefix(lines[k], "\treturn") {
				return k
			}
		}
		return n
	}
	return call{id: id, name: "edit_file", tool: 2 * time.Second,
		args: func(w *world) string {
			return jsonArgs(map[string]any{"path": w.files[fileIdx].path, "line": line(w) + 1, "text": text})
		},
		run: func(w *world) string {
			f := &w.files[fileIdx]
			n := line(w)
			f.lines[n] = text
			return fmt.Sprintf("Edited %s: line %d replaced.", f.path, n+1)
		}}
}

func searchCall(id, query string, hits []int) call {
	return call{id: id, name: "search_docs", tool: 2 * time.Second,
		args: constArgs(jsonArgs(map[string]any{"query": query, "k": len(hits)})),
		run: func(w *world) string {
			var b strings.Builder
			for n, i := range hits {
				fmt.Fprintf(&b, "%d. %s: %s\n", n+1, w.corpus[i].title, w.corpus[i].text)
			}
			return b.String()
		}}
}

func testsCall(g *gen, id, pkg string) call {
	var b strings.Builder
	fail := g.chance(0.3)
	for range g.between(6, 20) {
		fmt.Fprintf(&b, "=== RUN   Test%s\n--- PASS: Test%s (0.%02ds)\n", title(g.ident()), title(g.ident()), g.between(0, 99))
	}
	if fail {
		fmt.Fprintf(&b, "--- FAIL: Test%s (0.01s)\n    %s_test.go:%d: %s\nFAIL\n", title(g.ident()), pkg, g.between(20, 300), g.sentence(g.between(6, 12)))
	} else {
		fmt.Fprintf(&b, "PASS\nok  \tinternal/%s\t0.%03ds\n", pkg, g.between(10, 999))
	}
	out := b.String()
	return call{id: id, name: "run_tests", tool: time.Duration(g.between(3, 15)) * time.Second,
		args: constArgs(jsonArgs(map[string]any{"package": "internal/" + pkg})), run: func(*world) string { return out }}
}

func scratchCall(g *gen, id string, step int) call {
	notes := []string{"Goal: " + strings.TrimSuffix(g.sentence(g.between(6, 10)), ".")}
	for i := range g.between(2, 5) {
		state := "todo"
		if i < step%4 {
			state = "done"
		}
		notes = append(notes, fmt.Sprintf("- [%s] %s", state, strings.TrimSuffix(g.sentence(g.between(5, 9)), ".")))
	}
	return call{id: id, name: "scratchpad/write", tool: 0, args: constArgs(jsonArgs(map[string]any{"notes": notes}))}
}

func (g *gen) seconds(lo, hi int) time.Duration {
	return time.Duration(g.between(lo, hi)) * time.Second
}

// finish appends the calls round (if any) and the reply round to t.
func (g *gen) finish(t *turn, calls []call, replyWords int) {
	if len(calls) > 0 {
		t.rounds = append(t.rounds, round{think: g.seconds(3, 10), calls: calls})
	}
	t.rounds = append(t.rounds, round{think: g.seconds(4, 15), reply: g.prose(replyWords)})
}

func buildChurnHeavy(seed uint64, turns int) *script {
	g := newGen(seed, 1)
	w := &world{instructions: instructionsText(g, 1100), files: g.files(6, 800, 1200), corpus: makeCorpus(g, 80)}
	for range 5 {
		w.entities = append(w.entities, g.entity())
	}
	s := &script{start: scriptStart, world: w,
		system: "You are a diligent operations assistant for a finance team. Use the tools when they help; keep answers short.",
		tools:  hostTools("read_file", "edit_file", "search_docs"),
		layers: []layerDef{instructionsLayer(), clockLayer(), scratchpadLayer(core.PlacementAuto),
			entitiesLayer(core.PlacementAuto), filesLayer(), retrievalLayer(core.PlacementLive)}}
	var id ids
	for t := range turns {
		tr := turn{gap: g.seconds(20, 90), user: g.prose(g.between(15, 60))}
		query := g.pick(verbs) + " " + g.pick(adjs) + " " + g.pick(nouns)
		hits := g.hits(len(w.corpus), 4)
		var add *entity
		if g.chance(0.25) {
			e := g.entity()
			add = &e
		}
		update, fact := -1, ""
		if g.chance(0.1) {
			update, fact = g.r.IntN(5), strings.TrimSuffix(g.sentence(g.between(6, 12)), ".")
		}
		tr.before = func(w *world) {
			w.query, w.hits = query, hits
			if add != nil {
				w.entities = append(w.entities, *add)
			}
			if update >= 0 {
				w.entities[update].fact = fact
			}
		}
		var calls []call
		if t%3 == 2 {
			calls = append(calls, scratchCall(g, id.next(), t/3))
		}
		if g.chance(0.2) {
			calls = append(calls, editFileCall(id.next(), g.r.IntN(len(w.files)), g.r.Float64(), g.statement("\t")))
		}
		if g.chance(0.25) {
			calls = append(calls, readFileCall(id.next(), g.r.IntN(len(w.files))))
		}
		if g.chance(0.25) {
			calls = append(calls, searchCall(id.next(), g.pick(adjs)+" "+g.pick(nouns), g.hits(len(w.corpus), 3)))
		}
		g.finish(&tr, calls, g.between(40, 150))
		s.turns = append(s.turns, tr)
	}
	return s
}

func buildSteady(seed uint64, turns int) *script {
	g := newGen(seed, 2)
	w := &world{instructions: instructionsText(g, 1500), corpus: makeCorpus(g, 60)}
	s := &script{start: scriptStart, world: w,
		system: "You are a friendly research assistant. Answer precisely and cite retrieved passages by number.",
		tools:  hostTools("search_docs"),
		layers: []layerDef{instructionsLayer(), scratchpadLayer(core.PlacementAuto), retrievalLayer(core.PlacementAuto)}}
	var id ids
	pause := turns * 3 / 5
	for t := range turns {
		tr := turn{gap: g.seconds(20, 90), user: g.prose(g.between(10, 50))}
		if t == pause {
			tr.gap = 7 * time.Minute
		}
		query, hits := "", []int(nil)
		if g.chance(0.2) {
			query, hits = g.pick(verbs)+" "+g.pick(nouns), g.hits(len(w.corpus), 3)
		}
		tr.before = func(w *world) { w.query, w.hits = query, hits }
		var calls []call
		if t%8 == 3 {
			calls = append(calls, scratchCall(g, id.next(), t/8))
		}
		if g.chance(0.15) {
			calls = append(calls, searchCall(id.next(), g.pick(adjs)+" "+g.pick(nouns), g.hits(len(w.corpus), 3)))
		}
		g.finish(&tr, calls, g.between(40, 160))
		s.turns = append(s.turns, tr)
	}
	return s
}

func buildCoding(seed uint64, turns int) *script {
	g := newGen(seed, 3)
	w := &world{instructions: instructionsText(g, 700), files: g.files(12, 1000, 2000)}
	s := &script{start: scriptStart, world: w,
		system: "You are a careful Go coding agent. Read before you edit, run the tests after every change.",
		tools:  hostTools("read_file", "edit_file", "run_tests"),
		layers: []layerDef{instructionsLayer(), scratchpadLayer(core.PlacementAuto), filesLayer()}}
	var id ids
	for t := range turns {
		tr := turn{gap: g.seconds(20, 90), user: g.prose(g.between(10, 40))}
		var calls []call
		if t%10 == 0 {
			calls = append(calls, scratchCall(g, id.next(), t/10))
		}
		if g.chance(0.25) {
			calls = append(calls, readFileCall(id.next(), g.r.IntN(len(w.files))))
		}
		edit := g.chance(0.3)
		if edit {
			calls = append(calls, editFileCall(id.next(), g.r.IntN(len(w.files)), g.r.Float64(), g.statement("\t")))
		}
		if edit || g.chance(0.15) {
			calls = append(calls, testsCall(g, id.next(), strings.Split(w.files[g.r.IntN(len(w.files))].path, "/")[1]))
		}
		g.finish(&tr, calls, g.between(30, 120))
		s.turns = append(s.turns, tr)
	}
	return s
}
