package cachesim

import (
	"cmp"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Defaults of the Anthropic simulator; see the package documentation for the
// sources.
const (
	DefaultAnthropicMinTokens = 1024
	DefaultLookbackBlocks     = 20
	DefaultMaxBreakpoints     = 4
)

// AnthropicMinCacheableTokens returns the built-in minimum cacheable
// prefix per model family, keyed by model name prefix, as Anthropic's
// prompt-caching docs list them (checked 2026): 2048 tokens for Claude
// Haiku 3 and 3.5, 4096 for Claude Haiku 4.5, Opus 4.5 and Opus 4.6.
// Every other model (Sonnet 3.7 to 4.6, Opus 4 and 4.1) takes
// DefaultAnthropicMinTokens, 1024. Keys match the API's model ids
// ("claude-3-5-haiku-20241022", "claude-haiku-4-5", "claude-opus-4-5-...");
// a new table is returned on each call.
func AnthropicMinCacheableTokens() map[string]int {
	return map[string]int{
		"claude-3-haiku":   2048,
		"claude-3-5-haiku": 2048,
		"claude-haiku-4-5": 4096,
		"claude-opus-4-5":  4096,
		"claude-opus-4-6":  4096,
	}
}

// AnthropicOptions configures an Anthropic simulator. The zero value
// simulates Anthropic's documented defaults.
type AnthropicOptions struct {
	// Prices; zero fields take AnthropicPrices.
	Prices Prices
	// MinCacheableTokens maps a model name, or a prefix of model names, to
	// the shortest prefix that model caches. The longest key that is a prefix
	// of Request.Model wins; e.g. {"claude-3-5-haiku": 2048}. A model no key
	// here matches takes the built-in table (AnthropicMinCacheableTokens),
	// then DefaultMinCacheableTokens.
	MinCacheableTokens map[string]int
	// DefaultMinCacheableTokens applies to models neither MinCacheableTokens
	// nor the built-in table matches; 0 means 1024.
	DefaultMinCacheableTokens int
	// LookbackBlocks is how many blocks before each breakpoint are checked for
	// an earlier cached prefix; 0 means 20.
	LookbackBlocks int
	// MaxBreakpoints per request; 0 means 4.
	MaxBreakpoints int
}

type minRule struct {
	prefix string
	tokens int
}

// Anthropic simulates Anthropic's explicit (cache_control) prompt cache. It is
// safe for concurrent use; requests are applied in the order Send is called.
type Anthropic struct {
	prices     Prices
	rules      []minRule // longest prefix first
	builtin    []minRule // AnthropicMinCacheableTokens, longest prefix first
	defaultMin int
	lookback   int
	maxBP      int

	mu   sync.Mutex
	st   store
	last time.Time
	// lastTTL is the longest lifetime the previous request asked for.
	lastTTL time.Duration
	// lastStored is true when the previous request read or wrote cache.
	lastStored bool
	keys       []Hash // scratch, reused across Sends under mu
	cum        []int
	bps        []int
}

var _ Simulator = (*Anthropic)(nil)

// NewAnthropic returns an empty Anthropic cache. It fails with
// ErrInvalidOptions on negative settings or prices.
func NewAnthropic(opts AnthropicOptions) (*Anthropic, error) {
	p, err := opts.Prices.resolve(AnthropicPrices())
	if err != nil {
		return nil, err
	}
	if opts.DefaultMinCacheableTokens < 0 || opts.LookbackBlocks < 0 || opts.MaxBreakpoints < 0 {
		return nil, fmt.Errorf("%w: DefaultMinCacheableTokens = %d, LookbackBlocks = %d, MaxBreakpoints = %d",
			ErrInvalidOptions, opts.DefaultMinCacheableTokens, opts.LookbackBlocks, opts.MaxBreakpoints)
	}
	a := &Anthropic{
		prices:     p,
		defaultMin: cmp.Or(opts.DefaultMinCacheableTokens, DefaultAnthropicMinTokens),
		lookback:   cmp.Or(opts.LookbackBlocks, DefaultLookbackBlocks),
		maxBP:      cmp.Or(opts.MaxBreakpoints, DefaultMaxBreakpoints),
		st:         newStore(),
	}
	a.rules = sortedRules(opts.MinCacheableTokens)
	a.builtin = sortedRules(AnthropicMinCacheableTokens())
	for _, r := range a.rules {
		if r.prefix == "" || r.tokens < 0 {
			return nil, fmt.Errorf("%w: MinCacheableTokens[%q] = %d", ErrInvalidOptions, r.prefix, r.tokens)
		}
	}
	return a, nil
}

// sortedRules lists m longest prefix first; keys are unique, so equal
// lengths never both match one model, and sorting by name too keeps error
// reports stable.
func sortedRules(m map[string]int) []minRule {
	rules := make([]minRule, 0, len(m))
	for k, v := range m {
		rules = append(rules, minRule{k, v})
	}
	sort.Slice(rules, func(i, j int) bool {
		if len(rules[i].prefix) != len(rules[j].prefix) {
			return len(rules[i].prefix) > len(rules[j].prefix)
		}
		return rules[i].prefix < rules[j].prefix
	})
	return rules
}

// MinCacheableTokens returns the shortest prefix model caches: the longest
// matching key of AnthropicOptions.MinCacheableTokens, else of the
// built-in table (AnthropicMinCacheableTokens), else the default.
func (a *Anthropic) MinCacheableTokens(model string) int {
	for _, rules := range [][]minRule{a.rules, a.builtin} {
		for _, r := range rules {
			if strings.HasPrefix(model, r.prefix) {
				return r.tokens
			}
		}
	}
	return a.defaultMin
}

// Send bills req and updates the cache: it reads the longest cached prefix
// reachable from a breakpoint, writes the prefix of every later breakpoint
// long enough to cache, and bills the rest as uncached. A rejected request
// (*RequestError) leaves the cache unchanged.
func (a *Anthropic) Send(req Request) (Usage, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.validate(req); err != nil {
		return Usage{}, err
	}
	at := req.At
	a.keys, a.cum = prefixes(req.Model, req.Blocks, a.keys, a.cum)
	keys, cum := a.keys, a.cum
	tokensBefore := func(i int) int { // cumulative tokens of blocks[0..i], 0 for i < 0
		if i < 0 {
			return 0
		}
		return cum[i]
	}

	// Read: the longest live prefix ending within [bp-lookback, bp] of some
	// breakpoint bp. Later breakpoints are checked first, and each scan stops
	// above the best hit so far, so at most (lookback+1)*breakpoints lookups.
	readEnd := -1
	for k := len(a.bps) - 1; k >= 0; k-- {
		bp := a.bps[k]
		lo := max(bp-a.lookback, readEnd+1, 0)
		for i := bp; i >= lo; i-- {
			if _, ok := a.st.alive(keys[i], at); ok {
				readEnd = i
				break
			}
		}
	}
	// A hit refreshes what was read, including every live entry that is a
	// prefix of it: they are part of the same cached content.
	for i := 0; i <= readEnd; i++ {
		a.st.refresh(keys[i], at)
	}

	// Writes: each breakpoint after the read whose prefix reaches the
	// model's minimum. Its segment since the previous cached boundary is
	// billed at its TTL's write price.
	var u Usage
	u.ReadTokens = tokensBefore(readEnd)
	covered := u.ReadTokens
	minTokens := a.MinCacheableTokens(req.Model)
	var miss MissReason
	if readEnd < 0 {
		miss = a.missReason(keys, cum, minTokens, at) // before this request's writes
	}
	for _, bp := range a.bps {
		if bp <= readEnd || cum[bp] < minTokens {
			continue
		}
		ttl := req.Blocks[bp].TTL
		a.st.put(keys[bp], at, ttl.Duration())
		seg := cum[bp] - covered
		if ttl == TTL1h {
			u.Write1hTokens += seg
		} else {
			u.Write5mTokens += seg
		}
		covered = cum[bp]
	}
	u.UncachedTokens = tokensBefore(len(req.Blocks)-1) - covered
	a.prices.bill(&u)
	u.Miss = miss
	a.lastStored = u.ReadTokens+u.WriteTokens() > 0
	a.lastTTL = 0
	for _, bp := range a.bps {
		a.lastTTL = max(a.lastTTL, req.Blocks[bp].TTL.Duration())
	}
	a.last = at
	a.st.sweep(at)
	return u, nil
}

// missReason says why a request read nothing from the cache.
func (a *Anthropic) missReason(keys []Hash, cum []int, minTokens int, at time.Time) MissReason {
	switch {
	case a.last.IsZero():
		return MissFirst
	case len(a.bps) == 0 || cum[a.bps[len(a.bps)-1]] < minTokens || !a.lastStored:
		// Nothing to read: this prefix, or the previous request's, was
		// too short to cache.
		return MissBelowMinimum
	case a.lastTTL > 0 && at.Sub(a.last) > a.lastTTL:
		return MissExpired
	}
	for i := range keys {
		if _, ok := a.st.alive(keys[i], at); ok {
			return MissLookback // cached, but out of every breakpoint's reach
		}
	}
	return MissChanged
}

// validate checks req and collects its breakpoints into a.bps.
func (a *Anthropic) validate(req Request) error {
	if err := validateCommon(req, a.last); err != nil {
		return err
	}
	a.bps = a.bps[:0]
	seen5m := false
	for i, b := range req.Blocks {
		if b.TTL != TTL5m && b.TTL != TTL1h {
			return reqErr(i, ErrInvalidTTL, "TTL = %d", uint8(b.TTL))
		}
		if !b.Breakpoint {
			if b.TTL != TTL5m {
				return reqErr(i, ErrTTLWithoutBreak, "TTL = %s", b.TTL)
			}
			continue
		}
		// Anthropic rejects a longer-lived entry after a shorter-lived one.
		if b.TTL == TTL1h && seen5m {
			return reqErr(i, ErrTTLOrder, "1h breakpoint follows a 5m breakpoint")
		}
		seen5m = seen5m || b.TTL == TTL5m
		a.bps = append(a.bps, i)
	}
	if len(a.bps) > a.maxBP {
		return reqErr(a.bps[a.maxBP], ErrTooManyBreakpoints, "%d breakpoints, at most %d allowed", len(a.bps), a.maxBP)
	}
	return nil
}
