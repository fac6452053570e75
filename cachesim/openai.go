package cachesim

import (
	"cmp"
	"fmt"
	"sync"
	"time"
)

// Defaults of the OpenAI simulator; see the package documentation for the
// sources.
const (
	DefaultOpenAIMinTokens = 1024
	DefaultOpenAIIncrement = 128
	DefaultOpenAITTL       = 5 * time.Minute
)

// OpenAIOptions configures an OpenAI simulator. The zero value simulates
// OpenAI's documented defaults.
type OpenAIOptions struct {
	// Prices; zero fields take OpenAIPrices. Only InputPerMTok and
	// CacheReadMult matter: OpenAI bills no writes.
	Prices Prices
	// MinTokens is the shortest prompt that is cached and the shortest hit;
	// 0 means 1024.
	MinTokens int
	// Increment is the granularity of hits beyond MinTokens; 0 means 128.
	Increment int
	// TTL is how long a prefix survives without use; 0 means 5 minutes.
	// OpenAI states 5 to 10 minutes of inactivity, at most an hour.
	TTL time.Duration
}

// OpenAI simulates OpenAI's automatic prompt cache. It is safe for concurrent
// use; requests are applied in the order Send is called.
type OpenAI struct {
	prices    Prices
	minTokens int
	increment int
	ttl       time.Duration

	mu   sync.Mutex
	st   store
	last time.Time
	keys []Hash // scratch, reused across Sends under mu
	cum  []int
}

var _ Simulator = (*OpenAI)(nil)

// NewOpenAI returns an empty OpenAI cache. It fails with ErrInvalidOptions
// on negative settings or prices.
func NewOpenAI(opts OpenAIOptions) (*OpenAI, error) {
	p, err := opts.Prices.resolve(OpenAIPrices())
	if err != nil {
		return nil, err
	}
	if opts.MinTokens < 0 || opts.Increment < 0 || opts.TTL < 0 {
		return nil, fmt.Errorf("%w: MinTokens = %d, Increment = %d, TTL = %v",
			ErrInvalidOptions, opts.MinTokens, opts.Increment, opts.TTL)
	}
	o := &OpenAI{
		prices:    p,
		minTokens: cmp.Or(opts.MinTokens, DefaultOpenAIMinTokens),
		increment: cmp.Or(opts.Increment, DefaultOpenAIIncrement),
		ttl:       cmp.Or(opts.TTL, DefaultOpenAITTL),
		st:        newStore(),
	}
	return o, nil
}

// CachedLength returns what a match of matched tokens bills as cached: 0
// below the minimum, else the minimum plus whole increments.
func (o *OpenAI) CachedLength(matched int) int {
	if matched < o.minTokens {
		return 0
	}
	return o.minTokens + (matched-o.minTokens)/o.increment*o.increment
}

// Send bills req and updates the cache: the longest live prefix of whole
// blocks shared with an earlier request, rounded down to the hit grid, is
// read; the rest is uncached. Every prefix of req at least MinTokens long is
// then stored (or refreshed). Breakpoints and TTLs are ignored. A rejected
// request (*RequestError) leaves the cache unchanged.
func (o *OpenAI) Send(req Request) (Usage, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := validateCommon(req, o.last); err != nil {
		return Usage{}, err
	}
	at := req.At
	o.keys, o.cum = prefixes(req.Model, req.Blocks, o.keys, o.cum)
	keys, cum := o.keys, o.cum
	n := len(keys)
	total := cum[n-1]

	// Only prefixes of at least minTokens are ever stored, and a request
	// stores all of them together, so scanning down from the whole request
	// finds the longest match and may stop below the minimum.
	matched := 0
	for i := n - 1; i >= 0 && cum[i] >= o.minTokens; i-- {
		if _, ok := o.st.alive(keys[i], at); ok {
			matched = cum[i]
			break
		}
	}
	var u Usage
	u.ReadTokens = o.CachedLength(matched)
	u.UncachedTokens = total - u.ReadTokens

	for i := n - 1; i >= 0 && cum[i] >= o.minTokens; i-- {
		o.st.put(keys[i], at, o.ttl)
	}
	o.prices.bill(&u)
	o.last = at
	o.st.sweep(at)
	return u, nil
}
