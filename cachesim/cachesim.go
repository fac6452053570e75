package cachesim

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Hash identifies the content of one block. Two blocks with equal Hash (and
// equal Tokens) are the same bytes to the simulated provider.
type Hash [32]byte

// HashBytes returns the content hash of b (SHA-256, so hashes are stable
// across processes and runs).
func HashBytes(b []byte) Hash { return sha256.Sum256(b) }

// HashString returns the content hash of s; HashString(s) == HashBytes([]byte(s)).
func HashString(s string) Hash { return sha256.Sum256([]byte(s)) }

// TTL is the lifetime class of an Anthropic cache breakpoint. The zero value
// is the provider default of five minutes.
type TTL uint8

const (
	// TTL5m is the default ephemeral lifetime: 5 minutes, refreshed on each hit.
	TTL5m TTL = iota
	// TTL1h is the extended lifetime: 1 hour, refreshed on each hit, written at
	// a higher price.
	TTL1h
)

// Duration returns the lifetime of t, or 0 for an unknown value.
func (t TTL) Duration() time.Duration {
	switch t {
	case TTL5m:
		return 5 * time.Minute
	case TTL1h:
		return time.Hour
	}
	return 0
}

// String returns "5m", "1h" or "TTL(n)" for unknown values.
func (t TTL) String() string {
	switch t {
	case TTL5m:
		return "5m"
	case TTL1h:
		return "1h"
	}
	return fmt.Sprintf("TTL(%d)", uint8(t))
}

// Block is one content block of a request: a system prompt, a tool definition,
// a message part. The simulator never sees text, only identity and length.
type Block struct {
	// Hash is the block's content identity (see HashString, TextBlock,
	// TokenBlock).
	Hash Hash
	// Tokens is the block's length in input tokens; it must not be negative.
	Tokens int
	// Breakpoint marks a cache_control directive after this block: the
	// prefix up to and including it may be cached. Only Anthropic uses it.
	Breakpoint bool
	// TTL is the breakpoint's lifetime class; it must be the zero value
	// (TTL5m) on a block without Breakpoint.
	TTL TTL
}

// TextBlock returns a block whose identity is the bytes of text and whose
// length is tokens (counted by the caller's tokenizer).
func TextBlock(text string, tokens int) Block {
	return Block{Hash: HashString(text), Tokens: tokens}
}

// TokenBlock returns a block made of the given token ids: identity is the
// ids' sequence, length is len(ids).
func TokenBlock(ids []int) Block {
	h := sha256.New()
	var buf [8]byte
	for _, id := range ids {
		binary.LittleEndian.PutUint64(buf[:], uint64(int64(id)))
		h.Write(buf[:])
	}
	var b Block
	h.Sum(b.Hash[:0])
	b.Tokens = len(ids)
	return b
}

// BlocksFromTexts returns one block per text, each counted with count (for
// example a tiktoken encoder's length). No block carries a breakpoint.
func BlocksFromTexts(texts []string, count func(string) int) []Block {
	out := make([]Block, len(texts))
	for i, t := range texts {
		out[i] = TextBlock(t, count(t))
	}
	return out
}

// WithBreakpoint returns b with a cache breakpoint of the given lifetime.
func (b Block) WithBreakpoint(ttl TTL) Block {
	b.Breakpoint = true
	b.TTL = ttl
	return b
}

// Request is one model call as the provider's cache sees it.
type Request struct {
	// At is when the request reaches the provider. It is required: the
	// simulator has no clock of its own, and requests to one simulator must
	// not go back in time.
	At time.Time
	// Model names the model; caches are per model, and the minimum cacheable
	// length may depend on it.
	Model string
	// Blocks is the prompt in order (tools, system, messages).
	Blocks []Block
}

// Tokens returns the request's total input length.
func (r Request) Tokens() int {
	n := 0
	for _, b := range r.Blocks {
		n += b.Tokens
	}
	return n
}

// Simulator is a provider's prompt cache. Send bills one request and updates
// the cache as the provider would.
type Simulator interface {
	Send(req Request) (Usage, error)
}

// Prices turn token counts into dollars. A zero field takes the provider's
// default (see AnthropicPrices, OpenAIPrices); negative fields are invalid.
type Prices struct {
	// InputPerMTok is the base input price in dollars per million tokens.
	InputPerMTok float64
	// CacheWrite5mMult multiplies the base price for 5-minute cache writes.
	CacheWrite5mMult float64
	// CacheWrite1hMult multiplies the base price for 1-hour cache writes.
	CacheWrite1hMult float64
	// CacheReadMult multiplies the base price for cache reads.
	CacheReadMult float64
}

// AnthropicPrices returns the defaults for Anthropic: $3 per million input
// tokens (Claude Sonnet 4.x list price), 5m write 1.25x, 1h write 2x, read 0.1x.
func AnthropicPrices() Prices {
	return Prices{InputPerMTok: 3, CacheWrite5mMult: 1.25, CacheWrite1hMult: 2, CacheReadMult: 0.1}
}

// OpenAIPrices returns the defaults for OpenAI: $1.25 per million input tokens
// and cached input at 0.1x (gpt-5 class). Writes cost nothing extra, so both
// write multipliers are 1; OpenAI never reports writes anyway.
func OpenAIPrices() Prices {
	return Prices{InputPerMTok: 1.25, CacheWrite5mMult: 1, CacheWrite1hMult: 1, CacheReadMult: 0.1}
}

func (p Prices) resolve(def Prices) (Prices, error) {
	fields := []struct {
		name string
		v    *float64
		def  float64
	}{
		{"InputPerMTok", &p.InputPerMTok, def.InputPerMTok},
		{"CacheWrite5mMult", &p.CacheWrite5mMult, def.CacheWrite5mMult},
		{"CacheWrite1hMult", &p.CacheWrite1hMult, def.CacheWrite1hMult},
		{"CacheReadMult", &p.CacheReadMult, def.CacheReadMult},
	}
	for _, f := range fields {
		switch {
		case *f.v < 0 || *f.v != *f.v: // negative or NaN
			return Prices{}, fmt.Errorf("%w: Prices.%s = %v", ErrInvalidOptions, f.name, *f.v)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	return p, nil
}

func (p Prices) bill(u *Usage) {
	u.BaseEquivalent = float64(u.ReadTokens)*p.CacheReadMult +
		float64(u.Write5mTokens)*p.CacheWrite5mMult +
		float64(u.Write1hTokens)*p.CacheWrite1hMult +
		float64(u.UncachedTokens)
	u.Cost = u.BaseEquivalent * p.InputPerMTok / 1e6
}

// Usage is what the provider bills for one request's input. The four token
// fields partition the request: their sum is Request.Tokens().
type Usage struct {
	// ReadTokens were served from cache (Anthropic cache_read_input_tokens,
	// OpenAI cached_tokens).
	ReadTokens int
	// Write5mTokens were written to cache with the 5-minute lifetime.
	Write5mTokens int
	// Write1hTokens were written to cache with the 1-hour lifetime.
	Write1hTokens int
	// UncachedTokens were processed and billed at the base price
	// (Anthropic input_tokens; OpenAI prompt_tokens minus cached_tokens).
	UncachedTokens int
	// BaseEquivalent is the billed input in base-price tokens:
	// read*ReadMult + write5m*Write5mMult + write1h*Write1hMult + uncached.
	BaseEquivalent float64
	// Cost is BaseEquivalent priced at InputPerMTok, in dollars.
	Cost float64
	// Miss says why a request read nothing from the cache ("" when it
	// read something). The Anthropic simulator sets it.
	Miss MissReason
}

// MissReason is why a request read nothing from the cache (Usage.Miss).
type MissReason string

// The simulator's miss reasons.
const (
	// MissFirst: the first request; nothing was cached before it.
	MissFirst MissReason = "first"
	// MissBelowMinimum: no breakpoint's prefix reaches the model's
	// minimum cacheable length, or the previous request's did not, so
	// nothing was cached to read.
	MissBelowMinimum MissReason = "below_minimum"
	// MissExpired: everything the previous request cached outlived its
	// TTL before this one.
	MissExpired MissReason = "expired"
	// MissLookback: a prefix of the request is cached, but no breakpoint
	// reaches it within the lookback window.
	MissLookback MissReason = "lookback"
	// MissChanged: no prefix of the request is cached: its bytes differ
	// from what was.
	MissChanged MissReason = "changed"
)

// WriteTokens returns all tokens written to cache, both lifetimes
// (Anthropic cache_creation_input_tokens).
func (u Usage) WriteTokens() int { return u.Write5mTokens + u.Write1hTokens }

// InputTokens returns the request's total input length.
func (u Usage) InputTokens() int { return u.ReadTokens + u.WriteTokens() + u.UncachedTokens }

// HitRatio returns read / (read + write + uncached), or 0 for an empty usage.
func (u Usage) HitRatio() float64 {
	n := u.InputTokens()
	if n == 0 {
		return 0
	}
	return float64(u.ReadTokens) / float64(n)
}

// Totals accumulates the usage of many requests. The zero value is empty and
// ready to use; HitRatio, WriteTokens and InputTokens apply to the sums.
type Totals struct {
	Requests int
	Usage
}

// Add accumulates one request's usage.
func (t *Totals) Add(u Usage) {
	t.Requests++
	t.ReadTokens += u.ReadTokens
	t.Write5mTokens += u.Write5mTokens
	t.Write1hTokens += u.Write1hTokens
	t.UncachedTokens += u.UncachedTokens
	t.BaseEquivalent += u.BaseEquivalent
	t.Cost += u.Cost
}

// Sentinel errors; every error from this package wraps one of them, so test
// with errors.Is. Request problems come as *RequestError.
var (
	ErrInvalidOptions     = errors.New("cachesim: invalid options")
	ErrNoTimestamp        = errors.New("cachesim: request has no timestamp")
	ErrTimeReversed       = errors.New("cachesim: request is earlier than the previous one")
	ErrNoModel            = errors.New("cachesim: request has no model")
	ErrNoBlocks           = errors.New("cachesim: request has no blocks")
	ErrNegativeTokens     = errors.New("cachesim: block has negative token count")
	ErrInvalidTTL         = errors.New("cachesim: invalid TTL")
	ErrTTLWithoutBreak    = errors.New("cachesim: TTL set on a block without breakpoint")
	ErrTooManyBreakpoints = errors.New("cachesim: too many cache breakpoints")
	ErrTTLOrder           = errors.New("cachesim: 1h breakpoint after a 5m breakpoint")
)

// RequestError reports a request the simulated provider would reject. The
// simulator's state is unchanged by a rejected request.
type RequestError struct {
	// Block is the index of the offending block, or -1 for the request itself.
	Block int
	// Detail says what was wrong, with the values involved.
	Detail string
	// Err is one of the package's sentinel errors.
	Err error
}

func (e *RequestError) Error() string {
	if e.Block >= 0 {
		return fmt.Sprintf("%v: block %d: %s", e.Err, e.Block, e.Detail)
	}
	return fmt.Sprintf("%v: %s", e.Err, e.Detail)
}

// Unwrap returns the sentinel error.
func (e *RequestError) Unwrap() error { return e.Err }

func reqErr(block int, err error, format string, args ...any) error {
	return &RequestError{Block: block, Err: err, Detail: fmt.Sprintf(format, args...)}
}

// validateCommon checks what every provider needs: a timestamp not before
// last, a model, blocks and non-negative lengths.
func validateCommon(req Request, last time.Time) error {
	if req.At.IsZero() {
		return reqErr(-1, ErrNoTimestamp, "Request.At is the zero time")
	}
	if req.At.Before(last) {
		return reqErr(-1, ErrTimeReversed, "At %s is before the previous request's %s",
			req.At.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano))
	}
	if req.Model == "" {
		return reqErr(-1, ErrNoModel, "Request.Model is empty")
	}
	if len(req.Blocks) == 0 {
		return reqErr(-1, ErrNoBlocks, "Request.Blocks is empty")
	}
	for i, b := range req.Blocks {
		if b.Tokens < 0 {
			return reqErr(i, ErrNegativeTokens, "Tokens = %d", b.Tokens)
		}
	}
	return nil
}
