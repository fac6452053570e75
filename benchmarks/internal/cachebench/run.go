package cachebench

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/stratamem/strata/cachesim"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/pricing"
	"github.com/stratamem/strata/tokens"
	"github.com/stratamem/strata/tokens/tiktoken"
)

// Strategy is a way of turning the layers and the history into requests.
type Strategy string

// The strategies compared.
const (
	// Anchored is strata's default: anchor and live bands, pinned epochs,
	// context updates, and the view's cache breakpoints (end of system,
	// anchor band and history).
	Anchored Strategy = "anchored"
	// AnchoredHistoryCap is Anchored with the history layer's watermark cap
	// (layers/history), when this build has it.
	AnchoredHistoryCap Strategy = "anchored+history-cap"
	// AnchoredSliding is Anchored with history truncated one item at a
	// time (core.CacheConfig.HistoryStep < 0): the sliding window whose
	// front moves every turn once history overflows, against which the
	// stepped default and the history cap are measured.
	AnchoredSliding Strategy = "anchored+sliding-history"
	// AnchoredTrailing is Anchored with core.CacheConfig.TrailingUpdates:
	// the textbook arrangement: one context-updates message after the live
	// band, restated on every request of an epoch. Shown for comparison.
	AnchoredTrailing Strategy = "anchored+trailing-updates"
	// SingleBand is anchoring disabled (core.CacheConfig{Disabled: true}):
	// every layer renders fresh before history and the view asks for no
	// breakpoints, so Anthropic caches nothing.
	SingleBand Strategy = "single-band"
	// SingleBandBreakpoints is the single band with breakpoints after the
	// system prompt and at the end of history, as a framework that asks for
	// the cache but renders its layers before history would.
	SingleBandBreakpoints Strategy = "single-band+bp"
	// AllInSystem renders every layer's text into the system message on
	// every request, history after, breakpoints at the end of the system
	// message and of history: the common approach of other frameworks.
	AllInSystem Strategy = "all-in-system"
	// Optimum is analytic: every request is the previous one plus what is
	// new, and only what is new is uncached (see the package doc).
	Optimum Strategy = "optimum"
)

// Provider is a simulated prompt cache.
type Provider string

// The providers simulated (package cachesim, default options and prices).
const (
	Anthropic Provider = "anthropic"
	OpenAI    Provider = "openai"
)

// Models named in the simulated requests.
const (
	AnthropicModel = "claude-sonnet-4-5"
	OpenAIModel    = "gpt-5"
)

// AllStrategies lists the strategies in report order.
func AllStrategies() []Strategy {
	return []Strategy{Anchored, AnchoredHistoryCap, AnchoredSliding, AnchoredTrailing,
		AnchoredWindow20, AnchoredWindow28, AnchoredWindow40, AnchoredWindowSliding, AnchoredWindowCost,
		AnchoredTTLLong, AnchoredTTLCost,
		SingleBand, SingleBandBreakpoints, AllInSystem, Optimum, WindowOptimum}
}

// anchored reports whether s runs strata's anchoring (and so takes the
// provider's cache reports and the view's breakpoints).
func anchored(s Strategy) bool {
	return s == Anchored || s == AnchoredHistoryCap || s == AnchoredSliding || s == AnchoredTrailing || isWindow(s) || isTTL(s)
}

// AllProviders lists the providers in report order.
func AllProviders() []Provider { return []Provider{Anthropic, OpenAI} }

// Prices returns the prices the provider's simulator bills at.
func (p Provider) Prices() cachesim.Prices {
	if p == OpenAI {
		return cachesim.OpenAIPrices()
	}
	return cachesim.AnthropicPrices()
}

// Options configure a Run. The zero value runs the workload's full script,
// every available strategy on both providers, counting with o200k_base.
type Options struct {
	// Turns overrides the workload's turn count when positive; the
	// overflow and pause turns scale along.
	Turns int
	// Strategies to run; nil means all that this build supports. Optimum
	// is always computed when any strategy runs.
	Strategies []Strategy
	// Providers to simulate; nil means both.
	Providers []Provider
	// Tokenizer counts tokens; nil means tiktoken.New("o200k_base"). Each
	// session memoizes its own counts, as a live process would, so the
	// assembly times include counting what is new. Passing a *tokens.Cache
	// shares counts between sessions and Runs: faster (the tests do it),
	// but the first session to meet a text pays for counting it.
	Tokenizer tokens.Tokenizer
	// Cache tunes the anchored strategies' runtime (its Disabled field is
	// ignored); the zero value is strata's defaults, which the report uses.
	Cache core.CacheConfig
	// OnRequest, when set, sees every simulated request after it was
	// billed. The Request is valid only during the call.
	OnRequest func(*Request)
	// OnMiss, when set, sees every first-round miss the simulator billed
	// in a run that feeds its figures back (one anchored sink): the
	// simulator's own reason and the runtime's attribution of it, from
	// the next assembly's Usage.Miss (nil when the runtime gave none).
	OnMiss func(sim cachesim.MissReason, runtime *core.MissAttribution)
}

// Block is one content block of a simulated request.
type Block struct {
	// Bytes are the canonical JSON of the item or tool schema, as sent;
	// shared between requests, do not modify.
	Bytes []byte
	// Tokens is the block's length as the runtime counts it.
	Tokens int
	// Breakpoint marks an Anthropic cache_control directive after it.
	Breakpoint bool
}

// Request is one simulated model call.
type Request struct {
	Workload string
	Strategy Strategy
	Provider Provider
	// Variant names the workload variant (see Workload.Variants) the
	// request belongs to, "" for the workload's own layers.
	Variant string
	// Index counts the run's requests from 0; Turn and Round locate it in
	// the script (Round 0 is a turn's first model call).
	Index, Turn, Round int
	At                 time.Time
	// Blocks are the tools then the items, in order.
	Blocks []Block
	// StableBlocks is the number of leading blocks that are tools, system
	// and anchor band: the epoch's pinned front. HistoryEnd is the number
	// of leading blocks up to the end of history.
	StableBlocks, HistoryEnd int
	// EpochID and Reanchored describe the anchored runtime's epoch; empty
	// for the single-band strategies.
	EpochID    string
	Reanchored bool
	// HistoryDropped counts log items the projection left out.
	HistoryDropped int
	Usage          cachesim.Usage
	// Layers holds each layer's fresh rendering at this request (what its
	// Recall returned, whatever band the view served), by layer id; set
	// only for OnRequest, shared between the sinks of a run, do not modify.
	Layers map[string]string

	compose time.Duration // AllInSystem: composing the system text
}

// Series is one strategy on one provider over a whole run.
type Series struct {
	Strategy Strategy
	Provider Provider
	// Variant names the workload variant run, "" for the workload's own
	// layers (see Workload.Variants).
	Variant string
	// Totals sums the billed usage of every request.
	Totals cachesim.Totals
	// BeforeOverflow and AfterOverflow split Totals at OverflowRequest.
	BeforeOverflow, AfterOverflow cachesim.Totals
	// OverflowRequest is the first request whose history was cut by the
	// token budget, -1 when none was.
	OverflowRequest int
	// Cumulative[i] is the billed base-token equivalent of requests 0..i.
	Cumulative []float64
	// Reanchors counts the epochs started, by reason (anchored strategies).
	Reanchors map[string]int
	// Assembly holds the wall time of each request's assembly: Session.
	// Assemble, plus composing the system text for AllInSystem (hashing and
	// counting blocks for the simulator is not included). Empty for Optimum.
	Assembly []time.Duration
	// ReanchorNonRead sums the written and uncached tokens of the requests
	// that started a new epoch, the run's first request excepted: what
	// re-anchoring cost on top of the usual turn.
	ReanchorNonRead int
	// BandTokens[b] sums the view's band b tokens over all requests (the
	// runtime's view; for AllInSystem the layers are in the system message).
	BandTokens [6]int
	// Log holds each request's figures in order (not for Optimum).
	Log []RequestLog

	// LongTTLRequests counts the requests sent with the extended cache
	// lifetime (the cache-lifetime strategies).
	LongTTLRequests int

	// trace is the per-request layout of a history-window run, for the
	// dynamic-programming optimum (see dp.go).
	trace *layoutTrace
}

// RequestLog is what one request of a series did: the per-request record
// the report's day-change and resumption analyses read.
type RequestLog struct {
	Index, Turn, Round int
	At                 time.Time
	// Gap is the simulated time since the series' previous request, 0 for
	// the first.
	Gap time.Duration
	// Day is At's calendar date (2006-01-02) in the workload's location
	// (UTC unless the workload sets one).
	Day string
	// Reanchored and Reason: whether this request started an epoch, why.
	Reanchored bool
	Reason     string
	// Updates lists the layers that published a context update in this
	// assembly; UpdateTokens is the size of the context-updates message
	// they went into (all layers' updates of the assembly together).
	Updates      []string
	UpdateTokens int
	// AnchorChanged lists the layers whose anchor-band item differs from
	// the previous request's (appeared, changed or left): on a re-anchor,
	// the pins that moved.
	AnchorChanged []string
	Usage         cachesim.Usage
}

// CacheLifetime is the simulators' cache TTL (5 minutes on both, refreshed
// on a hit on Anthropic): a request that follows the previous one by less
// finds the cache warm.
const CacheLifetime = 5 * time.Minute

// WarmNonRead is the mean non-read (written + uncached) tokens of the
// requests that follow the previous one within CacheLifetime and do not
// start an epoch, and how many there are: what the series costs while the
// cache is warm, apart from the pauses that expire it and the re-anchors.
func (s *Series) WarmNonRead() (float64, int) {
	sum, n := 0, 0
	for i, l := range s.Log {
		if i > 0 && l.Gap < CacheLifetime && !l.Reanchored {
			sum += l.NonRead()
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(sum) / float64(n), n
}

// NonRead is what the request wrote or sent uncached.
func (l RequestLog) NonRead() int { return l.Usage.WriteTokens() + l.Usage.UncachedTokens }

// MeanBand is the mean token count of band b per request.
func (s *Series) MeanBand(b core.Band) float64 {
	if s.Totals.Requests == 0 {
		return 0
	}
	return float64(s.BandTokens[b]) / float64(s.Totals.Requests)
}

// MedianAssembly is the median of Assembly, 0 when empty.
func (s *Series) MedianAssembly() time.Duration {
	if len(s.Assembly) == 0 {
		return 0
	}
	d := slices.Clone(s.Assembly)
	slices.Sort(d)
	return d[len(d)/2]
}

// Result is one workload's run.
type Result struct {
	Workload Workload
	// Turns and Requests are the user turns run and the model calls made.
	Turns, Requests int
	// TokenBudget is the calibrated Policy.TokenBudget, 0 without one;
	// HistoryCap is the history layer's MaxTokens in AnchoredHistoryCap.
	TokenBudget, HistoryCap int
	// WindowPrefix is the tokens ahead of history (tools, system, anchor
	// band) on the first request, which the cost rule of the history layer
	// is given; 0 when no strategy needs it.
	WindowPrefix int
	// ContentTokens is the mean size of a request's content: tools, system,
	// fresh layer output and the history shown (the optimum's request).
	ContentTokens float64
	// Series holds every strategy run on every provider, in report order.
	Series []*Series
	// Variants holds the Anchored runs of the workload's variants (see
	// Workload.Variants), in variant then provider order; each is measured
	// against the Optimum series of Series.
	Variants []*Series
}

// Variant returns the Anchored series of the named variant on provider p,
// or nil.
func (r *Result) Variant(name string, p Provider) *Series {
	for _, x := range r.Variants {
		if x.Variant == name && x.Provider == p {
			return x
		}
	}
	return nil
}

// Get returns the series of strategy s on provider p, or nil.
func (r *Result) Get(s Strategy, p Provider) *Series {
	for _, x := range r.Series {
		if x.Strategy == s && x.Provider == p {
			return x
		}
	}
	return nil
}

// responseReserve is the Policy.ResponseReserve of the budgeted workloads.
const responseReserve = 8192

// Run runs workload w with every requested strategy on every requested
// provider and returns the billed figures. Runs are deterministic except
// for the assembly times.
func Run(ctx context.Context, w Workload, opts Options) (*Result, error) {
	if w.build == nil {
		return nil, fmt.Errorf("%w: workload %q has no script (use Workloads or WorkloadByName)", ErrInvalidOptions, w.Name)
	}
	if opts.Turns < 0 {
		return nil, fmt.Errorf("%w: Turns = %d", ErrInvalidOptions, opts.Turns)
	}
	turns := w.Turns
	if opts.Turns > 0 {
		turns = opts.Turns
	}
	strategies := opts.Strategies
	if strategies == nil {
		for _, s := range AllStrategies() {
			if s != AnchoredHistoryCap || historyCapAvailable() {
				strategies = append(strategies, s)
			}
		}
	}
	for _, s := range strategies {
		if !slices.Contains(AllStrategies(), s) {
			return nil, fmt.Errorf("%w: strategy %q", ErrUnknownStrategy, s)
		}
		if s == AnchoredHistoryCap && !historyCapAvailable() {
			return nil, fmt.Errorf("%w: %s needs layers/history", ErrUnavailable, s)
		}
	}
	providers := opts.Providers
	if providers == nil {
		providers = AllProviders()
	}
	for _, p := range providers {
		if p != Anthropic && p != OpenAI {
			return nil, fmt.Errorf("%w: provider %q", ErrUnknownStrategy, p)
		}
	}
	tok := opts.Tokenizer
	if tok == nil {
		var err error
		if tok, err = tiktoken.New("o200k_base"); err != nil {
			return nil, fmt.Errorf("cachebench: tokenizer: %w", err)
		}
	}

	sc := w.build(w.Seed, turns)
	res := &Result{Workload: w, Turns: turns}
	var bud budget
	if w.HistoryWindow > 0 || slices.Contains(strategies, AnchoredHistoryCap) {
		// The tokens ahead of history, which the cost rule of the history
		// layer weighs against the minimum cacheable prefix.
		p, err := prefixTokens(ctx, sc, tok)
		if err != nil {
			return nil, err
		}
		bud.prefix = p
		res.WindowPrefix = p
	}
	if w.OverflowTurn > 0 {
		var err error
		prefix := bud.prefix
		if bud, err = calibrate(ctx, sc, tok, w.OverflowTurn*turns/w.Turns); err != nil {
			return nil, err
		}
		bud.prefix = prefix
		if bud.policy != nil {
			res.TokenBudget, res.HistoryCap = bud.policy.TokenBudget, bud.historyCap
		}
	}

	// One session per anchored strategy and provider, since the provider's
	// cache reports steer re-anchoring; one single-band session feeds every
	// single-band strategy (it ignores reports) and the optimum.
	for _, s := range strategies {
		if !anchored(s) {
			continue
		}
		if (s == AnchoredHistoryCap || s == AnchoredSliding) && bud.policy == nil {
			// Without a budget history never overflows: nothing to cap.
			continue
		}
		if isWindow(s) && w.HistoryWindow == 0 || isTTL(s) && !w.Pauses {
			continue
		}
		for _, p := range providers {
			sk, err := newSink(s, p)
			if err != nil {
				return nil, err
			}
			if isWindow(s) {
				sk.series.trace = &layoutTrace{}
			}
			if isTTL(s) {
				sk.ttl = ttlPolicy(s, p, sc)
			}
			n, err := replay(ctx, sc, tok, bud, s, []*sink{sk}, nil, &opts, res)
			if err != nil {
				return nil, err
			}
			res.Requests = n
			res.Series = append(res.Series, sk.series)
		}
	}
	if slices.Contains(strategies, Anchored) {
		for _, v := range w.Variants {
			vs := v.apply(sc)
			for _, p := range providers {
				sk, err := newSink(Anchored, p)
				if err != nil {
					return nil, err
				}
				sk.variant, sk.series.Variant = v.Name, v.Name
				if _, err := replay(ctx, vs, tok, bud, Anchored, []*sink{sk}, nil, &opts, res); err != nil {
					return nil, fmt.Errorf("cachebench: variant %s: %w", v.Name, err)
				}
				res.Variants = append(res.Variants, sk.series)
			}
		}
	}
	var sinks []*sink
	for _, s := range strategies {
		if s == SingleBand || s == SingleBandBreakpoints || s == AllInSystem {
			for _, p := range providers {
				sk, err := newSink(s, p)
				if err != nil {
					return nil, err
				}
				sinks = append(sinks, sk)
			}
		}
	}
	if w.HistoryWindow > 0 && slices.Contains(strategies, WindowOptimum) {
		for _, p := range providers {
			if ref := res.Get(AnchoredWindowCost, p); ref != nil && ref.trace != nil {
				res.Series = append(res.Series, windowOptimum(ref, p, w.HistoryWindow))
			}
		}
	}
	if len(sinks) == 0 && !slices.Contains(strategies, Optimum) {
		sortSeries(res)
		return res, nil
	}
	opt := make([]*Series, len(providers))
	for i, p := range providers {
		opt[i] = &Series{Strategy: Optimum, Provider: p, OverflowRequest: -1}
	}
	n, err := replay(ctx, sc, tok, bud, SingleBand, sinks, opt, &opts, res)
	if err != nil {
		return nil, err
	}
	res.Requests = n
	for _, sk := range sinks {
		res.Series = append(res.Series, sk.series)
	}
	if slices.Contains(strategies, Optimum) {
		res.Series = append(res.Series, opt...)
	}
	sortSeries(res)
	return res, nil
}

// sortSeries puts res.Series in report order: provider, then strategy.
func sortSeries(res *Result) {
	slices.SortStableFunc(res.Series, func(a, b *Series) int {
		if a.Provider != b.Provider {
			return slices.Index(AllProviders(), a.Provider) - slices.Index(AllProviders(), b.Provider)
		}
		return slices.Index(AllStrategies(), a.Strategy) - slices.Index(AllStrategies(), b.Strategy)
	})
}

// sink is one strategy on one provider's simulator.
type sink struct {
	strategy Strategy
	provider Provider
	variant  string
	model    string
	sim      cachesim.Simulator
	series   *Series
	// hashes memoizes each block's SHA-256 by its bytes' backing array:
	// the blocks of a run are shared from its blockMemo, so the same
	// history item is hashed once, not on every request that carries it.
	hashes map[*byte]cachesim.Hash
	// ttl, when set, chooses the lifetime of each request's breakpoints
	// (the cache-lifetime strategies); nil is the default 5 minutes.
	ttl func(req *Request) cachesim.TTL
	// lastTTL is the lifetime the last request asked for.
	lastTTL cachesim.TTL
}

// lifetime is how long the sink's cache outlives its last request: what a
// host compares the idle time with before telling the runtime the cache
// is lost.
func (sk *sink) lifetime() time.Duration {
	if isTTL(sk.strategy) && sk.provider == OpenAI {
		return pricing.TTL24h.Duration()
	}
	return sk.lastTTL.Duration()
}

func newSink(s Strategy, p Provider) (*sink, error) {
	sk := &sink{strategy: s, provider: p, hashes: map[*byte]cachesim.Hash{}, series: &Series{Strategy: s, Provider: p, OverflowRequest: -1, Reanchors: map[string]int{}}}
	var err error
	switch p {
	case Anthropic:
		sk.model = AnthropicModel
		sk.sim, err = cachesim.NewAnthropic(cachesim.AnthropicOptions{})
	case OpenAI:
		sk.model = OpenAIModel
		var o cachesim.OpenAIOptions
		if isTTL(s) {
			// OpenAI's extended retention has no write premium, so the
			// cost rule always asks for it: both lifetime strategies
			// keep prefixes 24 hours.
			o.TTL = pricing.TTL24h.Duration()
		}
		sk.sim, err = cachesim.NewOpenAI(o)
	}
	if err != nil {
		return nil, fmt.Errorf("cachebench: simulator: %w", err)
	}
	return sk, nil
}

// newRuntime builds the runtime of one run over a fresh world. The
// returned func releases the real layers' stores; it is never nil.
func newRuntime(ctx context.Context, sc *script, w *world, tok tokens.Tokenizer, bud budget, s Strategy, p Provider, cache core.CacheConfig) (*core.Runtime, func(), error) {
	layers, release, err := buildLayers(ctx, sc.layers, w)
	if err != nil {
		return nil, release, err
	}
	if s == AnchoredHistoryCap {
		l, err := historyCapLayer(bud.historyCap, p, bud.prefix)
		if err != nil {
			return nil, release, err
		}
		layers = append(layers, l)
	}
	if isWindow(s) {
		l, err := windowLayer(s, SmallWindow, p, bud.prefix)
		if err != nil {
			return nil, release, err
		}
		layers = append(layers, l)
	}
	cfg := core.Config{
		Layers:    layers,
		System:    []core.Item{core.SystemMessage(sc.system)},
		Tokenizer: tok,
		Policy:    bud.policy,
		// The layers are sized by the workload, not squeezed by an
		// allocator: the budget only bounds history.
		LayerPool: core.Unlimited,
		Cache:     cache,
	}
	if bud.configure != nil {
		bud.configure(&cfg)
	}
	cfg.Cache.Disabled = !anchored(s)
	cfg.Cache.TrailingUpdates = s == AnchoredTrailing
	if s == AnchoredSliding {
		cfg.Cache.HistoryStep = -1
	}
	rt, err := core.NewRuntime(cfg)
	if err != nil {
		return nil, release, fmt.Errorf("cachebench: runtime: %w", err)
	}
	return rt, release, nil
}

// budget is a workload's calibrated token budget.
type budget struct {
	policy *core.Policy
	// historyCap is the history layer's MaxTokens for AnchoredHistoryCap.
	historyCap int
	// prefix is the tokens ahead of history (tools, system, anchor band)
	// on the run's first request: what the history layer's cost rule
	// counts toward the minimum cacheable prefix.
	prefix int
	// configure, when set, edits the runtime's configuration after the
	// policy and layers are in (the long-session arms).
	configure func(*core.Config)
}

// calibrate replays the single-band run without a budget up to the first
// round of turn at. The view's size there becomes the budget's Available,
// so history overflows from that turn on. The history cap is what that
// budget leaves after the system prompt and twice the layers' size (their
// pins plus as much again in context updates and live output), so the cap
// cuts before the projector has to.
func calibrate(ctx context.Context, sc *script, tok tokens.Tokenizer, at int) (budget, error) {
	if at <= 0 || at >= len(sc.turns) {
		return budget{}, nil
	}
	cut := *sc
	cut.turns = sc.turns[:at+1]
	var size, sys, layers int
	probe := func(turn, round int, v *core.View) {
		if turn == at && round == 0 {
			size, sys, layers = v.Usage.Total, v.Usage.BandTokens[core.BandSystem], v.Usage.BandTokens[core.BandAnchor]
		}
	}
	if _, err := replay(ctx, &cut, tok, budget{}, SingleBand, nil, nil, &Options{}, nil, probe); err != nil {
		return budget{}, err
	}
	if size == 0 {
		return budget{}, nil
	}
	return budget{
		policy:     &core.Policy{TokenBudget: size + responseReserve, ResponseReserve: responseReserve},
		historyCap: max(1, size-sys-2*layers),
	}, nil
}

// blockMemo renders each distinct item or tool once per run: history items
// recur in every later request.
type blockMemo struct {
	rt    *core.Runtime
	tok   tokens.Tokenizer
	items map[itemKey]Block
}

type itemKey struct {
	typ, id, role, text, callID, name, args, output string
}

func (m *blockMemo) item(it core.Item) (Block, error) {
	k := itemKey{string(it.Type), it.ID, string(it.Role), it.Text(), it.CallID, it.Name, it.Arguments, it.Output}
	if b, ok := m.items[k]; ok {
		return b, nil
	}
	raw, err := json.Marshal(it)
	if err != nil {
		return Block{}, fmt.Errorf("cachebench: encode item: %w", err)
	}
	b := Block{Bytes: raw, Tokens: m.rt.CountItems([]core.Item{it})}
	m.items[k] = b
	return b, nil
}

func (m *blockMemo) tools(specs []core.ToolSpec) ([]Block, error) {
	out := make([]Block, len(specs))
	for i, s := range specs {
		raw, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("cachebench: encode tool: %w", err)
		}
		out[i] = Block{Bytes: raw, Tokens: m.tok.Count(string(raw))}
	}
	return out, nil
}

// replay drives one session through the script. Every sink gets a request
// built from each view; opt, when not nil, receives the optimum per
// provider. probe, when set, sees each view (calibration). It returns the
// number of requests.
func replay(ctx context.Context, sc *script, tok tokens.Tokenizer, bud budget, s Strategy,
	sinks []*sink, opt []*Series, opts *Options, res *Result, probe ...func(turn, round int, v *core.View)) (int, error) {
	w := sc.world.clone()
	provider := Anthropic
	if len(sinks) == 1 {
		provider = sinks[0].provider
	}
	rt, release, err := newRuntime(ctx, sc, w, tok, bud, s, provider, opts.Cache)
	defer release()
	if err != nil {
		return 0, err
	}
	sess, err := rt.Start(ctx, core.RunOptions{ThreadID: benchThread, RunID: benchThread})
	if err != nil {
		return 0, fmt.Errorf("cachebench: start: %w", err)
	}
	defer sess.Close(ctx)
	memo := &blockMemo{rt: rt, tok: tok, items: map[itemKey]Block{}}
	name := ""
	if res != nil {
		name = res.Workload.Name
	}
	var tools []Block
	toolTokens := 0
	var anchor map[string]string // the previous view's anchor band, by item id

	feedback := len(sinks) == 1 && anchored(s)
	var simMiss cachesim.MissReason // the last first-round miss fed back
	appended := 0                   // tokens logged since the previous request (optimum)
	prevLayer := map[string]string{}
	contentSum := 0.0
	now := sc.start
	n := 0
	var logToks []int // each logged item's tokens (the window optimum)
	hint := newCutHint(s, provider, bud.prefix)
	prevPrefix := 0 // tokens through the anchor band of the previous view
	noteLog := func(items []core.Item) {
		for _, it := range items {
			logToks = append(logToks, rt.CountItems([]core.Item{it}))
		}
		hint.note(items, func(it core.Item) int { return rt.CountItems([]core.Item{it}) })
	}
	appendItems := func(items ...core.Item) error {
		appended += rt.CountItems(items)
		noteLog(items)
		return sess.Append(ctx, items...)
	}
	loc := sc.loc
	if loc == nil {
		loc = time.UTC
	}
	for t, tr := range sc.turns {
		now = now.Add(tr.gap)
		if tr.before != nil {
			tr.before(w)
		}
		// The world's clock is also the real layers' store clock: the
		// message's time when it is recorded, the call's when one is run.
		w.now = now
		if err := appendItems(core.UserMessage(tr.user)); err != nil {
			return n, fmt.Errorf("cachebench: turn %d: %w", t, err)
		}
		for r, rd := range tr.rounds {
			w.now = now
			if feedback && r == 0 {
				// As agent.Agent does by default: a turn that starts
				// after the cache lifetime tells the runtime the cache
				// is already lost.
				if last, ok := sess.LastCacheReport(); ok && now.Sub(last.At) > sinks[0].lifetime() {
					sess.ExpectColdCache()
				}
			}
			if feedback && n > 0 && hint.cold(prevPrefix) {
				sess.ExpectColdCache()
			}
			start := time.Now()
			view, err := sess.Assemble(ctx)
			if err != nil {
				return n, fmt.Errorf("cachebench: turn %d round %d: assemble: %w", t, r, err)
			}
			assembled := time.Since(start)
			if simMiss != "" && opts.OnMiss != nil {
				opts.OnMiss(simMiss, view.Usage.Miss)
			}
			simMiss = ""
			for _, p := range probe {
				p(t, r, view)
			}
			var fresh map[string]string
			if opts.OnRequest != nil {
				fresh = w.rec.snapshot()
			}
			upd, err := updatesOf(view, memo)
			if err != nil {
				return n, err
			}
			var moved []string
			moved, anchor = anchorChanges(view, anchor)
			upd.moved = moved
			if tools == nil {
				specs := append(slices.Clone(sc.tools), view.Tools...)
				if tools, err = memo.tools(specs); err != nil {
					return n, err
				}
				for _, b := range tools {
					toolTokens += b.Tokens
				}
			}
			for _, sk := range sinks {
				req, err := buildRequest(sk.strategy, view, tools, memo, sc.system)
				if err != nil {
					return n, err
				}
				elapsed := assembled + req.compose
				req.Workload, req.Provider, req.Index, req.Turn, req.Round, req.At = name, sk.provider, n, t, r, now
				req.Variant, req.Layers = sk.variant, fresh
				if err := send(sk, req, view, elapsed, now.In(loc).Format(time.DateOnly), upd); err != nil {
					return n, fmt.Errorf("cachebench: %s/%s turn %d round %d: %w", sk.strategy, sk.provider, t, r, err)
				}
				prevPrefix = 0
				for _, b := range req.Blocks[:req.StableBlocks] {
					prevPrefix += b.Tokens
				}
				if tr := sk.series.trace; tr != nil {
					tr.observe(req, len(tools)+len(view.Band(core.BandSystem)), logToks, sk.hash)
				}
				if feedback {
					u := req.Usage
					if r == 0 && u.ReadTokens == 0 {
						simMiss = u.Miss
					}
					sess.ReportCache(core.CacheReport{Reported: true, ReadTokens: u.ReadTokens,
						WriteTokens: u.WriteTokens(), UncachedTokens: u.UncachedTokens, FirstRound: r == 0, At: now})
				}
				if opts.OnRequest != nil {
					opts.OnRequest(req)
				}
			}
			if opt != nil {
				content := toolTokens + view.Usage.Total
				contentSum += float64(content)
				news := appended + layerNews(sc.layers, w.rec, prevLayer, rt)
				if n == 0 {
					news = content
				}
				news = min(news, content)
				for _, o := range opt {
					u := cachesim.Usage{ReadTokens: content - news, UncachedTokens: news}
					pr := o.Provider.Prices()
					u.BaseEquivalent = float64(u.ReadTokens)*pr.CacheReadMult + float64(u.UncachedTokens)
					u.Cost = u.BaseEquivalent * pr.InputPerMTok / 1e6
					account(o, u, view.Usage.HistoryDropped > 0, n)
				}
			}
			appended = 0
			n++
			now = now.Add(rd.think)
			if len(rd.calls) == 0 {
				noteLog([]core.Item{core.AssistantMessage(rd.reply)})
				if err := recordItems(ctx, sess, rt, &appended, core.AssistantMessage(rd.reply)); err != nil {
					return n, fmt.Errorf("cachebench: turn %d: %w", t, err)
				}
				continue
			}
			calls := make([]core.Item, len(rd.calls))
			for i, c := range rd.calls {
				calls[i] = core.FunctionCall(c.id, c.name, c.args(w))
			}
			noteLog(calls)
			if err := recordItems(ctx, sess, rt, &appended, calls...); err != nil {
				return n, fmt.Errorf("cachebench: turn %d: %w", t, err)
			}
			for i, c := range rd.calls {
				now = now.Add(c.tool)
				w.now = now
				var out core.Item
				if slices.ContainsFunc(sess.Tools(), func(t core.ToolSpec) bool { return t.Name == c.name }) {
					if out, err = sess.ExecuteTool(ctx, calls[i]); err != nil {
						return n, fmt.Errorf("cachebench: turn %d: %s: %w", t, c.name, err)
					}
				} else {
					out = core.FunctionCallOutput(c.id, c.run(w))
				}
				if err := appendItems(out); err != nil {
					return n, fmt.Errorf("cachebench: turn %d: %w", t, err)
				}
			}
		}
	}
	if opt != nil && res != nil && n > 0 {
		res.ContentTokens = contentSum / float64(n)
	}
	return n, nil
}

func recordItems(ctx context.Context, sess *core.Session, rt *core.Runtime, appended *int, items ...core.Item) error {
	*appended += rt.CountItems(items)
	return sess.Record(ctx, items...)
}

// layerNews is what the layers changed since the previous request, in
// tokens: for each layer whose rendering changed, its delta when it has one,
// else its full new output. A layer that went empty adds nothing.
func layerNews(defs []layerDef, rec *recorder, prev map[string]string, rt *core.Runtime) int {
	news := 0
	for _, d := range defs {
		next := rec.get(d.id)
		before, seen := prev[d.id]
		prev[d.id] = next
		if !seen || next == before || next == "" {
			continue
		}
		text := next
		if d.delta != nil && before != "" {
			if dt, ok := d.delta(before, next); ok {
				text = dt
			}
		}
		news += rt.CountItems([]core.Item{core.DeveloperMessage(text)})
	}
	return news
}

// updates is what an assembly published as context updates.
type updates struct {
	layers []string
	tokens int
	moved  []string // layers whose anchor item changed since the previous view
}

// anchorChanges compares the view's anchor band with prev (item id to
// text) and returns the ids that appeared, changed or left, in band order
// then prev's order, and the band of this view.
func anchorChanges(view *core.View, prev map[string]string) ([]string, map[string]string) {
	cur := map[string]string{}
	var order []string
	for _, it := range view.Band(core.BandAnchor) {
		if _, ok := cur[it.ID]; !ok {
			order = append(order, it.ID)
		}
		cur[it.ID] += it.Text()
	}
	if prev == nil {
		return nil, cur
	}
	var moved []string
	for _, id := range order {
		if p, ok := prev[id]; !ok || p != cur[id] {
			moved = append(moved, id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(prev)) {
		if _, ok := cur[id]; !ok {
			moved = append(moved, id)
		}
	}
	return moved, cur
}

// updatesOf reads the context updates an assembly published: the layers
// whose usage names an update action, and the size of the
// context-updates message (the last one in history when published
// inline, the updates band when trailing).
func updatesOf(view *core.View, memo *blockMemo) (updates, error) {
	var u updates
	for _, l := range view.Usage.Layers {
		if l.Update != "" {
			u.layers = append(u.layers, l.LayerID)
		}
	}
	if len(u.layers) == 0 {
		return u, nil
	}
	items := view.Band(core.BandUpdates)
	if len(items) == 0 {
		items = view.Band(core.BandHistory)
	}
	for _, it := range slices.Backward(items) {
		if it.Role == core.RoleDeveloper && strings.HasPrefix(it.Text(), "<context_updates") {
			b, err := memo.item(it)
			if err != nil {
				return u, err
			}
			u.tokens = b.Tokens
			break
		}
	}
	return u, nil
}

// hash is the SHA-256 of b, memoized by its backing array.
func (sk *sink) hash(b []byte) cachesim.Hash {
	if len(b) == 0 {
		return cachesim.HashBytes(b)
	}
	k := &b[0]
	if h, ok := sk.hashes[k]; ok {
		return h
	}
	h := cachesim.HashBytes(b)
	sk.hashes[k] = h
	return h
}

// send bills req on the sink's simulator and accounts it.
func send(sk *sink, req *Request, view *core.View, elapsed time.Duration, day string, upd updates) error {
	blocks := make([]cachesim.Block, len(req.Blocks))
	ttl := cachesim.TTL5m
	if sk.ttl != nil {
		if ttl = sk.ttl(req); ttl != cachesim.TTL5m {
			sk.series.LongTTLRequests++
		}
	}
	sk.lastTTL = ttl
	for i, b := range req.Blocks {
		blocks[i] = cachesim.Block{Hash: sk.hash(b.Bytes), Tokens: b.Tokens, Breakpoint: b.Breakpoint}
		if b.Breakpoint {
			blocks[i].TTL = ttl
		}
	}
	u, err := sk.sim.Send(cachesim.Request{At: req.At, Model: sk.model, Blocks: blocks})
	if err != nil {
		return err
	}
	req.Strategy = sk.strategy
	req.Usage = u
	if ep := view.Usage.Epoch; ep != nil {
		req.EpochID, req.Reanchored = ep.ID, ep.Reanchored
		if ep.Reanchored {
			sk.series.Reanchors[string(ep.ReanchorReason)]++
			if req.Index > 0 {
				sk.series.ReanchorNonRead += u.WriteTokens() + u.UncachedTokens
			}
		}
	}
	req.HistoryDropped = view.Usage.HistoryDropped
	account(sk.series, u, req.HistoryDropped > 0, req.Index)
	lg := RequestLog{Index: req.Index, Turn: req.Turn, Round: req.Round, At: req.At, Day: day,
		Reanchored: req.Reanchored, Updates: upd.layers, UpdateTokens: upd.tokens, AnchorChanged: upd.moved, Usage: u}
	if ep := view.Usage.Epoch; ep != nil && ep.Reanchored {
		lg.Reason = string(ep.ReanchorReason)
	}
	if k := len(sk.series.Log); k > 0 {
		lg.Gap = req.At.Sub(sk.series.Log[k-1].At)
	}
	sk.series.Log = append(sk.series.Log, lg)
	for b := range sk.series.BandTokens {
		sk.series.BandTokens[b] += view.Usage.BandTokens[b]
	}
	sk.series.Assembly = append(sk.series.Assembly, elapsed)
	return nil
}

func account(s *Series, u cachesim.Usage, overflowed bool, index int) {
	if overflowed && s.OverflowRequest < 0 {
		s.OverflowRequest = index
	}
	s.Totals.Add(u)
	if s.OverflowRequest >= 0 {
		s.AfterOverflow.Add(u)
	} else {
		s.BeforeOverflow.Add(u)
	}
	s.Cumulative = append(s.Cumulative, s.Totals.BaseEquivalent)
}

// buildRequest turns a view into the request a strategy sends.
func buildRequest(s Strategy, view *core.View, tools []Block, memo *blockMemo, system string) (*Request, error) {
	req := &Request{}
	blocks := append(make([]Block, 0, len(tools)+view.Len()), tools...)
	addItems := func(items []core.Item) error {
		for _, it := range items {
			b, err := memo.item(it)
			if err != nil {
				return err
			}
			blocks = append(blocks, b)
		}
		return nil
	}
	mark := func(i int) {
		if i >= 0 && i < len(blocks) {
			blocks[i].Breakpoint = true
		}
	}
	switch s {
	case AllInSystem:
		// The layers' fresh text goes into the one system message.
		start := time.Now()
		parts := []string{system}
		for _, it := range view.Band(core.BandAnchor) {
			parts = append(parts, it.Text())
		}
		sys := core.SystemMessage(strings.Join(parts, "\n\n"))
		req.compose = time.Since(start)
		if err := addItems([]core.Item{sys}); err != nil {
			return nil, err
		}
		req.StableBlocks = len(blocks)
		mark(len(blocks) - 1)
		if err := addItems(view.Band(core.BandHistory)); err != nil {
			return nil, err
		}
		req.HistoryEnd = len(blocks)
		if len(view.Band(core.BandHistory)) > 0 {
			mark(len(blocks) - 1)
		}
		if err := addItems(view.Band(core.BandLive)); err != nil {
			return nil, err
		}
	default:
		for b := core.BandSystem; b <= core.BandTail; b++ {
			if err := addItems(view.Band(b)); err != nil {
				return nil, err
			}
			switch b {
			case core.BandAnchor:
				req.StableBlocks = len(blocks)
			case core.BandHistory:
				req.HistoryEnd = len(blocks)
			}
		}
		switch s {
		default:
			if !anchored(s) {
				break
			}
			for _, bp := range view.Breakpoints {
				mark(len(tools) + bp.Index)
			}
		case SingleBandBreakpoints:
			mark(len(tools) + len(view.Band(core.BandSystem)) - 1)
			if len(view.Band(core.BandHistory)) > 0 {
				mark(req.HistoryEnd - 1)
			}
		}
	}
	req.Blocks = blocks
	return req, nil
}
