package cachebench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/stratamem/strata/cachesim"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/tokens"
	"github.com/stratamem/strata/tokens/tiktoken"
)

// The long-session workload is a coding agent over 1,000 model calls whose
// every tool output is 2-20k tokens, against a 200k-token window: history
// outgrows the window after a few dozen calls. It does not compare layouts
// (every arm runs Anchored on the Anthropic simulator) but what the runtime
// does with history past the window: nothing, truncation, compaction.

// LongSessionName is the long-session workload's name (the command's
// -workloads key).
const LongSessionName = "long-session"

// Long-session defaults.
const (
	// LongSessionCalls is the number of model calls of the full run.
	LongSessionCalls = 1000
	// LongSessionWindow is the model's context window in tokens.
	LongSessionWindow = 200_000
	// LongSessionSeed seeds the script.
	LongSessionSeed = 0x5eed0005
	// Tool outputs are drawn log-uniformly between these sizes, in tokens.
	longOutputMin, longOutputMax = 2_000, 20_000
)

// LongArm is one way of handling history past the window.
type LongArm struct {
	// Name is the arm's key; Description says what it does, for the report.
	Name, Description string
	// Pending, when not empty, says why the arm is not run in this build;
	// the report prints it in place of figures.
	Pending string

	// policy reports whether the arm holds the view to the window with
	// core.Config.Policy (TokenBudget = window).
	policy bool
	// configure, when set, edits the runtime's configuration for a model
	// window of window tokens and may count into the arm's counters (a
	// summarizer wrapper counting its calls, for instance).
	configure func(cfg *core.Config, window int, c *ArmCounters)
	// observe, when set, sees every view (compactions reported in Usage).
	observe func(v *core.View, c *ArmCounters)
}

// ArmCounters are what an arm's hooks count over a run.
type ArmCounters struct {
	SummarizerCalls, Compactions int
	// TrimmedViews counts the views with outputs cleared by tail trimming.
	TrimmedViews int
}

// Names of the long-session arms.
const (
	ArmNoCompaction       = "no-compaction"
	ArmTruncate           = "policy-truncate"
	ArmCompaction         = "compaction-event"
	ArmCompactionTailTrim = "compaction+tail-trim"
	ArmTailTrim           = "tail-trim"
)

// LongArms returns the long-session arms in report order. An arm this
// build cannot run carries its Pending note; making it run is giving its
// entry a configure func.
func LongArms() []LongArm {
	return []LongArm{
		{Name: ArmNoCompaction, Description: "no Policy: the view grows with the log. Requests over the window are still billed " +
			"by the simulator; a real provider would reject them."},
		{Name: ArmTruncate, policy: true, Description: "today's core.Config.Policy with TokenBudget = the window " +
			"(ResponseReserve 8,192, overflow truncate): history is cut at the front in steps of a quarter of the budget (the anchored default)."},
		{Name: ArmCompaction, Description: "compaction as an event: core.Config.Compaction{Window: the window} (defaults: compact when the " +
			"view would pass 0.8 of the window, keep the 8 newest history items, summary of at most window/8 tokens) with core's offline default " +
			"summarizer (core.ExtractiveSummarizer on the run's tokenizer), counted through a wrapper; no Policy. A compaction event in the log, " +
			"its summary replacing the folded prefix in every later view.",
			configure: func(cfg *core.Config, window int, c *ArmCounters) {
				cfg.Compaction = &core.CompactionConfig{Window: window, Summarizer: &countingSummarizer{
					inner: core.ExtractiveSummarizer{Tokenizer: cfg.Tokenizer}, calls: &c.SummarizerCalls}}
			},
			observe: countCompactions},
		{Name: ArmTailTrim, Description: "tail trimming alone: core.Config.TailTrim{Window: the window} (defaults: once the view would " +
			"pass 0.9 of the window, tool outputs older than the newest window/4 tokens are shown as a [tool output cleared] marker, the " +
			"cleared range moving in steps of window/4); no Policy, no compaction.",
			configure: func(cfg *core.Config, window int, c *ArmCounters) {
				cfg.TailTrim = &core.TailTrimConfig{Window: window}
			},
			observe: countCleared},
		{Name: ArmCompactionTailTrim, Description: "compaction plus tail trimming: the compaction arm's core.Config.Compaction and " +
			"core.Config.TailTrim with its defaults (the valve opens at 0.9 of the window; what it clears is not there to compact, so " +
			"it opens only when compaction at 0.8 cannot hold the view).",
			configure: func(cfg *core.Config, window int, c *ArmCounters) {
				cfg.Compaction = &core.CompactionConfig{Window: window, Summarizer: &countingSummarizer{
					inner: core.ExtractiveSummarizer{Tokenizer: cfg.Tokenizer}, calls: &c.SummarizerCalls}}
				cfg.TailTrim = &core.TailTrimConfig{}
			},
			observe: func(v *core.View, c *ArmCounters) { countCompactions(v, c); countCleared(v, c) }},
	}
}

// countCleared counts the views that showed cleared outputs.
func countCleared(v *core.View, c *ArmCounters) {
	if len(v.Usage.Cleared) > 0 {
		c.TrimmedViews++
	}
}

// countingSummarizer counts the calls to the summarizer it wraps.
type countingSummarizer struct {
	inner core.Summarizer
	calls *int
}

func (s *countingSummarizer) Summarize(ctx context.Context, req core.SummarizeRequest) (core.Summary, error) {
	*s.calls++
	return s.inner.Summarize(ctx, req)
}

// countCompactions counts the assemblies that compacted.
func countCompactions(v *core.View, c *ArmCounters) {
	if u := v.Usage.Compaction; u != nil && u.Compacted {
		c.Compactions++
	}
}

// LongOptions configure RunLongSession. The zero value is the full run.
type LongOptions struct {
	// Calls overrides the number of model calls when positive.
	Calls int
	// Window overrides the context window when positive.
	Window int
	// Arms to run by name; nil means every arm that is not pending.
	Arms []string
	// Tokenizer counts tokens; nil means a memoizing o200k_base shared by
	// the arms.
	Tokenizer tokens.Tokenizer
	// OnRequest, when set, sees every request after it was billed, as in
	// Options.OnRequest.
	OnRequest func(*Request)
}

// ArmResult is one arm's run.
type ArmResult struct {
	Arm LongArm
	// Series is the Anchored series on the Anthropic simulator; nil when
	// the arm is pending.
	Series *Series
	// Optimum is the analytic optimum of the arm's own requests: each is
	// billed as if everything it shares with the previous request were
	// read and only its new blocks uncached, at the read price.
	Optimum cachesim.Totals
	// OverWindow counts the requests whose input (tool schemas + items)
	// exceeds the window; MaxInput is the largest input.
	OverWindow, MaxInput int
	// HistoryCuts counts the requests whose history front moved (more log
	// items left out than in the previous request).
	HistoryCuts int
	ArmCounters
}

// LongResult is the long-session run.
type LongResult struct {
	Calls, Turns, Window int
	// ToolOutputs counts the tool outputs; OutputTokens sums their sizes
	// as the tokenizer counts them, MinOutput and MaxOutput bound them.
	ToolOutputs, OutputTokens, MinOutput, MaxOutput int
	// FrontTokens is the system prompt plus the tool schemas.
	FrontTokens int
	Arms        []*ArmResult
}

// Arm returns the named arm's result, or nil.
func (r *LongResult) Arm(name string) *ArmResult {
	for _, a := range r.Arms {
		if a.Arm.Name == name {
			return a
		}
	}
	return nil
}

var longTools = []core.ToolSpec{
	{Name: "read_file", Description: "Read a file of the repository and return its full content with a path header.",
		Parameters: json.RawMessage(`{"properties":{"path":{"description":"repository-relative path","type":"string"}},"required":["path"],"type":"object"}`)},
	{Name: "run_command", Description: "Run a shell command in the repository (go test, go vet, grep, git) and return its combined output.",
		Parameters: json.RawMessage(`{"properties":{"command":{"description":"the command line","type":"string"},"timeout_s":{"type":"integer"}},"required":["command"],"type":"object"}`)},
}

// buildLong draws the long session: user turns every 4-14 model calls, each
// tool call round reading a file or running a command, the turn's last call
// a reply.
func buildLong(seed uint64, calls int) *script {
	g := newGen(seed, 5)
	w := &world{files: g.longFiles(40)}
	sys := "You are an autonomous Go coding agent working in a large repository. Read the code before you change it, " +
		"run the tests after every change, and report what you did in a few sentences.\n\n" + instructionsText(g, 1100)
	s := &script{start: scriptStart, world: w, system: sys, tools: longTools}
	var id ids
	for n := 0; n < calls; {
		tr := turn{gap: g.seconds(20, 90), user: g.prose(g.between(12, 60))}
		rounds := min(g.between(4, 14), calls-n)
		for r := range rounds {
			if r == rounds-1 {
				tr.rounds = append(tr.rounds, round{think: g.seconds(4, 15), reply: g.prose(g.between(30, 120))})
				continue
			}
			var c call
			if g.chance(0.5) {
				c = readFileCall(id.next(), g.r.IntN(len(w.files)))
			} else {
				c = g.commandCall(id.next(), w, g.outputSize())
			}
			tr.rounds = append(tr.rounds, round{think: g.seconds(3, 12), calls: []call{c}})
		}
		n += rounds
		s.turns = append(s.turns, tr)
	}
	return s
}

// measureOutputs counts the script's tool outputs (no call edits the
// world, so each output is what its run returns on the initial world).
func (r *LongResult) measureOutputs(sc *script, tok tokens.Tokenizer) {
	for _, tr := range sc.turns {
		for _, rd := range tr.rounds {
			for _, c := range rd.calls {
				n := tok.Count(c.run(sc.world))
				if r.ToolOutputs == 0 || n < r.MinOutput {
					r.MinOutput = n
				}
				r.MaxOutput = max(r.MaxOutput, n)
				r.ToolOutputs++
				r.OutputTokens += n
			}
		}
	}
}

// outputSize is a tool output's size in tokens, log-uniform in
// [longOutputMin, longOutputMax].
func (g *gen) outputSize() int {
	lo, hi := math.Log(longOutputMin), math.Log(longOutputMax)
	return int(math.Exp(lo + g.r.Float64()*(hi-lo)))
}

// longFiles are n source files of 2-20k tokens.
func (g *gen) longFiles(n int) []file {
	pkgs := []string{"billing", "ledger", "invoice", "payments", "reports", "schedule", "vendors", "orders", "auth", "notify", "storage", "metrics"}
	out := make([]file, n)
	for i := range out {
		pkg := pkgs[i%len(pkgs)]
		out[i] = file{path: fmt.Sprintf("internal/%s/%s_%d.go", pkg, g.pick(nouns), i), lines: g.sourceFile(pkg, g.outputSize())}
	}
	return out
}

// commandCall runs a command whose output is about size tokens: a verbose
// test run or a grep over the repository, drawn when the script is built.
func (g *gen) commandCall(id string, w *world, size int) call {
	var b strings.Builder
	var cmd string
	pkg := strings.Split(w.files[g.r.IntN(len(w.files))].path, "/")[1]
	chars := size * 39 / 10
	if g.chance(0.5) {
		cmd = "go test -v ./internal/" + pkg + "/..."
		for b.Len() < chars {
			name := title(g.ident()) + title(g.pick(nouns))
			fmt.Fprintf(&b, "=== RUN   Test%s\n", name)
			if g.chance(0.2) {
				fmt.Fprintf(&b, "    %s_test.go:%d: %s\n", pkg, g.between(20, 900), g.sentence(g.between(6, 14)))
			}
			fmt.Fprintf(&b, "--- PASS: Test%s (0.%02ds)\n", name, g.between(0, 99))
		}
		fmt.Fprintf(&b, "PASS\nok  \tinternal/%s\t%d.%03ds\n", pkg, g.between(0, 9), g.between(0, 999))
	} else {
		term := g.pick(nouns)
		cmd = "grep -rn " + term + " internal/"
		for b.Len() < chars {
			f := w.files[g.r.IntN(len(w.files))]
			fmt.Fprintf(&b, "%s:%d:%s\n", f.path, g.between(9, len(f.lines)), g.statement("\t"))
		}
	}
	out := b.String()
	return call{id: id, name: "run_command", tool: g.seconds(2, 40),
		args: constArgs(jsonArgs(map[string]any{"command": cmd})), run: func(*world) string { return "$ " + cmd + "\n" + out }}
}

// RunLongSession runs the long-session workload under each requested arm
// on the Anthropic simulator. The figures are deterministic.
func RunLongSession(ctx context.Context, opts LongOptions) (*LongResult, error) {
	if opts.Calls < 0 || opts.Window < 0 {
		return nil, fmt.Errorf("%w: Calls = %d, Window = %d", ErrInvalidOptions, opts.Calls, opts.Window)
	}
	calls, window := LongSessionCalls, LongSessionWindow
	if opts.Calls > 0 {
		calls = opts.Calls
	}
	if opts.Window > 0 {
		window = opts.Window
	}
	if window <= responseReserve {
		return nil, fmt.Errorf("%w: Window %d leaves nothing after the response reserve", ErrInvalidOptions, window)
	}
	var arms []LongArm
	for _, a := range LongArms() {
		if opts.Arms == nil && a.Pending == "" {
			arms = append(arms, a)
			continue
		}
		for _, name := range opts.Arms {
			if name == a.Name {
				if a.Pending != "" {
					return nil, fmt.Errorf("%w: arm %s: %s", ErrUnavailable, a.Name, a.Pending)
				}
				arms = append(arms, a)
			}
		}
	}
	for _, name := range opts.Arms {
		known := false
		for _, a := range LongArms() {
			known = known || a.Name == name
		}
		if !known {
			return nil, fmt.Errorf("%w: arm %q", ErrUnknownStrategy, name)
		}
	}
	tok := opts.Tokenizer
	if tok == nil {
		t, err := tiktoken.New("o200k_base")
		if err != nil {
			return nil, fmt.Errorf("cachebench: tokenizer: %w", err)
		}
		tok = tokens.NewCache(t, 1<<14)
	}
	sc := buildLong(LongSessionSeed, calls)
	res := &LongResult{Calls: calls, Turns: len(sc.turns), Window: window}
	res.measureOutputs(sc, tok)
	ran := map[string]*ArmResult{}
	for _, a := range arms {
		ar, front, err := runArm(ctx, sc, tok, a, window, opts.OnRequest)
		if err != nil {
			return nil, fmt.Errorf("cachebench: %s arm %s: %w", LongSessionName, a.Name, err)
		}
		res.FrontTokens = front
		ran[a.Name] = ar
	}
	for _, a := range LongArms() {
		if ar, ok := ran[a.Name]; ok {
			res.Arms = append(res.Arms, ar)
		} else if a.Pending != "" {
			res.Arms = append(res.Arms, &ArmResult{Arm: a})
		}
	}
	return res, nil
}

// runArm replays the script once under arm a and returns its figures and
// the size of the system prompt plus the tool schemas.
func runArm(ctx context.Context, sc *script, tok tokens.Tokenizer, a LongArm, window int, onRequest func(*Request)) (*ArmResult, int, error) {
	ar := &ArmResult{Arm: a}
	bud := budget{}
	if a.policy {
		bud.policy = &core.Policy{TokenBudget: window, ResponseReserve: responseReserve}
	}
	if a.configure != nil {
		bud.configure = func(cfg *core.Config) { a.configure(cfg, window, &ar.ArmCounters) }
	}
	sk, err := newSink(Anchored, Anthropic)
	if err != nil {
		return nil, 0, err
	}
	pr := Anthropic.Prices()
	prev := map[*byte]bool{}
	dropped, front := 0, 0
	opts := &Options{OnRequest: func(req *Request) {
		input, news := 0, 0
		cur := make(map[*byte]bool, len(req.Blocks))
		for _, b := range req.Blocks {
			input += b.Tokens
			k := &b.Bytes[0]
			cur[k] = true
			if !prev[k] {
				news += b.Tokens
			}
		}
		prev = cur
		if req.Index == 0 {
			for _, b := range req.Blocks[:min(req.StableBlocks, len(req.Blocks))] {
				front += b.Tokens
			}
		}
		u := cachesim.Usage{ReadTokens: input - news, UncachedTokens: news}
		u.BaseEquivalent = float64(u.ReadTokens)*pr.CacheReadMult + float64(u.UncachedTokens)
		u.Cost = u.BaseEquivalent * pr.InputPerMTok / 1e6
		ar.Optimum.Add(u)
		ar.MaxInput = max(ar.MaxInput, input)
		if input > window {
			ar.OverWindow++
		}
		if req.HistoryDropped > dropped {
			ar.HistoryCuts++
		}
		dropped = req.HistoryDropped
		if onRequest != nil {
			onRequest(req)
		}
	}}
	var probes []func(turn, round int, v *core.View)
	if a.observe != nil {
		probes = append(probes, func(_, _ int, v *core.View) { a.observe(v, &ar.ArmCounters) })
	}
	res := &Result{Workload: Workload{Name: LongSessionName}}
	if _, err := replay(ctx, sc, tok, bud, Anchored, []*sink{sk}, nil, opts, res, probes...); err != nil {
		return nil, 0, err
	}
	ar.Series = sk.series
	return ar, front, nil
}

// writeLongSession writes the long-session section of the report.
func writeLongSession(b *strings.Builder, r *LongResult) {
	fmt.Fprintf(b, "## Long session with compaction (`%s`)\n\n", LongSessionName)
	fmt.Fprintf(b, "A coding agent over %s model calls in %d user turns (a user message every 4-14 calls), a %s-token context window. "+
		"Every tool call reads a source file of the repository (40 files) or runs a command (a verbose test run or a grep), and every tool output is "+
		"drawn at %s-%s tokens (log-uniform): %d outputs, counted %s-%s tokens, %s in all. System prompt and tool schemas: %s tokens, over the 1,024-token cache minimum. "+
		"No layers: the arms differ only in what happens to history past the window. Every arm runs the anchored strategy on the Anthropic simulator "+
		"(%s, 5-minute TTL; the session never pauses that long).\n\n",
		thousands(float64(r.Calls)), r.Turns, thousands(float64(r.Window)), thousands(longOutputMin), thousands(longOutputMax),
		r.ToolOutputs, thousands(float64(r.MinOutput)), thousands(float64(r.MaxOutput)), thousands(float64(r.OutputTokens)), thousands(float64(r.FrontTokens)), AnthropicModel)
	b.WriteString("Arms:\n\n")
	for _, a := range r.Arms {
		fmt.Fprintf(b, "- **%s**: %s", a.Arm.Name, a.Arm.Description)
		if a.Arm.Pending != "" {
			fmt.Fprintf(b, " Pending: %s", a.Arm.Pending)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nThe optimum is each arm's own: every request billed as if what it shares with the previous request were read and only its new blocks " +
		"(the items logged since, a summary) uncached, at the read price, with no write fee, TTL or lookback limit. Views over the window are the " +
		"requests whose input (tool schemas + items) exceeds the window; max view tokens is the largest input.\n\n")
	b.WriteString("| arm | hit ratio | hit / optimum | billed (base-token eq.) | $ | summarizer calls | compactions | views with cleared outputs | views over the window | max view tokens |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, a := range r.Arms {
		if a.Series == nil {
			fmt.Fprintf(b, "| %s | pending | | | | | | | | |\n", a.Arm.Name)
			continue
		}
		t := a.Series.Totals
		share := ""
		if h := a.Optimum.HitRatio(); h > 0 {
			share = fmt.Sprintf("%.3f", t.HitRatio()/h)
		}
		fmt.Fprintf(b, "| %s | %.3f | %s | %s | %.2f | %d | %d | %d | %d of %d | %s |\n", a.Arm.Name, t.HitRatio(), share,
			thousands(t.BaseEquivalent), t.Cost, a.SummarizerCalls, a.Compactions, a.TrimmedViews, a.OverWindow, t.Requests, thousands(float64(a.MaxInput)))
	}
	b.WriteString("\n")
	var notes []string
	for _, a := range r.Arms {
		if a.Series == nil {
			continue
		}
		cuts := "history never cut"
		if a.Series.OverflowRequest >= 0 {
			cuts = fmt.Sprintf("history first cut or folded at request %d, %d times in all", a.Series.OverflowRequest, a.HistoryCuts)
		}
		notes = append(notes, fmt.Sprintf("- %s: optimum hit ratio %.3f, optimum billed %s; %s; re-anchors: %s.",
			a.Arm.Name, a.Optimum.HitRatio(), thousands(a.Optimum.BaseEquivalent), cuts, orNone(reanchors(a.Series))))
	}
	if len(notes) > 0 {
		b.WriteString(strings.Join(notes, "\n"))
		b.WriteString("\n\n")
	}
	b.WriteString("Tail trimming is a relief valve: with compaction on it opens only when folding cannot hold the view, which never happens " +
		"here (so that arm equals compaction alone). Opened earlier than folding (measured at 0.7 and 0.75 of the window, horizons of " +
		"window/8 and window/16: hit ratio 0.72 and 0.54, 1.6x and 1.9x compaction's bill), it costs more than it saves: the view stays " +
		"large and every step of the cleared range re-bills what follows it.\n\n")
	b.WriteString("The summarizer here is offline and bills nothing; a model summarizer would add one call per compaction, reading the folded " +
		"history (up to the compaction threshold) on top of the billed figure.\n\n")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
