// Package pricing is the price model of the providers' prompt caches: what
// a cached, written or uncached input token costs, the shortest prefix a
// model caches, and the cache lifetimes a host can ask for. The history
// layer (layers/history) cuts the conversation by it and the cache
// benchmark bills by it.
//
// # The cost model
//
// A provider bills each input token of a request at one of three rates,
// as a multiple of the model's base input price:
//
//   - read from the cache: ReadMult (0.1x on Anthropic and on OpenAI's
//     gpt-5 family);
//   - written to the cache: WriteMult of the lifetime asked for (Anthropic:
//     1.25x for the 5-minute cache, 2x for the 1-hour cache; OpenAI writes
//     at the base price, no premium, for either retention);
//   - uncached: 1x. A prefix shorter than MinPrefix is never cached, so all
//     of it is billed so, every time.
//
// The consequence for a conversation: every byte after the first changed
// one is billed again, at the write price. Cutting the front of history
// therefore rewrites everything after the cut; carrying history costs its
// tokens at the read price on every request. [Model.Billed] prices a
// request's figures in base-token equivalents, [Model.Dollars] in the
// model's currency (USD), and [Model.BestTTL] compares the 5-minute and
// the extended lifetime across an expected pause.
//
// # Where the figures come from
//
// The defaults ([Default]) are the providers' published list prices and
// prompt-caching rules as of 2026: Anthropic's prompt-caching documentation
// (minimum cacheable prompt 1,024 tokens for Sonnet 4.5 and earlier, Opus 4
// and 4.1; 2,048 for Sonnet 4.6 and the Haiku 3 models; 4,096 for Haiku
// 4.5, Opus 4.5 and 4.6; 5-minute and 1-hour lifetimes at 1.25x and 2x)
// and OpenAI's prompt-caching guide (automatic from 1,024 tokens in
// 128-token steps, cached input at the model's discount, in-memory or 24-hour
// extended retention at the same price). Prices change; a host overrides
// them with its own [Table] (a contract price, a new model) and the zero
// Table is the defaults.
package pricing

import (
	"cmp"
	"fmt"
	"strings"
	"time"
)

// Provider names the API whose caching rules a model follows.
type Provider string

const (
	// Anthropic: explicit cache_control breakpoints, a write premium.
	Anthropic Provider = "anthropic"
	// OpenAI: automatic prefix caching, no write premium.
	OpenAI Provider = "openai"
)

// TTL is a cache lifetime a request can ask for. The zero value is the
// provider's default, five minutes of inactivity.
type TTL uint8

const (
	// TTL5m is the default lifetime: five minutes, refreshed on each hit
	// (OpenAI's in-memory retention, 5-10 minutes, is counted as five).
	TTL5m TTL = iota
	// TTL1h is Anthropic's extended lifetime (cache_control ttl "1h").
	TTL1h
	// TTL24h is OpenAI's extended retention (prompt_cache_retention "24h").
	TTL24h
)

// String returns "5m", "1h" or "24h".
func (t TTL) String() string {
	switch t {
	case TTL5m:
		return "5m"
	case TTL1h:
		return "1h"
	case TTL24h:
		return "24h"
	}
	return fmt.Sprintf("TTL(%d)", uint8(t))
}

// Duration is the lifetime of t, 0 for an unknown value.
func (t TTL) Duration() time.Duration {
	switch t {
	case TTL5m:
		return 5 * time.Minute
	case TTL1h:
		return time.Hour
	case TTL24h:
		return 24 * time.Hour
	}
	return 0
}

// Model is one model's input prices and caching rules.
type Model struct {
	// Name is the model id or id prefix it applies to, e.g.
	// "claude-sonnet-4-5".
	Name     string
	Provider Provider
	// InputPerMTok is the base input price, USD per million tokens.
	InputPerMTok float64
	// ReadMult multiplies the base price for tokens read from the cache.
	ReadMult float64
	// Write5mMult and WriteLongMult multiply the base price for tokens
	// written with the default lifetime and with the extended one (1h on
	// Anthropic, 24h on OpenAI). OpenAI has no write premium: both are 1.
	Write5mMult, WriteLongMult float64
	// MinPrefix is the shortest prefix the model caches, in tokens.
	MinPrefix int
	// Step, when positive, is the granularity of a cached prefix: OpenAI
	// caches in 128-token increments past MinPrefix.
	Step int
}

// LongTTL is the model's extended lifetime: TTL1h on Anthropic, TTL24h on
// OpenAI.
func (m Model) LongTTL() TTL {
	if m.Provider == OpenAI {
		return TTL24h
	}
	return TTL1h
}

// WriteMult is the write multiplier of lifetime ttl: the default one for
// TTL5m, the extended one otherwise.
func (m Model) WriteMult(ttl TTL) float64 {
	if ttl == TTL5m {
		return m.Write5mMult
	}
	return m.WriteLongMult
}

// Cacheable is how many of the first prefix tokens the model can cache: 0
// under MinPrefix, else prefix rounded down to Step.
func (m Model) Cacheable(prefix int) int {
	if prefix < m.MinPrefix || prefix <= 0 {
		return 0
	}
	if m.Step > 0 {
		return prefix - (prefix-m.MinPrefix)%m.Step
	}
	return prefix
}

// Billed prices a request's input in base-token equivalents: read tokens
// at ReadMult, written ones at the write price of ttl, uncached at 1.
func (m Model) Billed(read, written, uncached int, ttl TTL) float64 {
	return float64(read)*m.ReadMult + float64(written)*m.WriteMult(ttl) + float64(uncached)
}

// Dollars converts base-token equivalents to USD at InputPerMTok.
func (m Model) Dollars(baseTokens float64) float64 { return baseTokens * m.InputPerMTok / 1e6 }

// BestTTL chooses the lifetime that bills less for a burst of requests
// followed by an expected pause: written is what the burst writes to the
// cache, carried the prefix that the request after the pause would read
// again. With the default lifetime a pause longer than it rewrites
// carried; with the extended one everything the burst writes costs the
// extended premium, and a pause within it reads carried back. A tie keeps
// the default.
func (m Model) BestTTL(written, carried int, pause time.Duration) TTL {
	cost := func(ttl TTL) float64 {
		c := float64(written) * m.WriteMult(ttl)
		if pause > ttl.Duration() {
			return c + float64(carried)*m.WriteMult(ttl)
		}
		return c + float64(carried)*m.ReadMult
	}
	if long := m.LongTTL(); cost(long) < cost(TTL5m) {
		return long
	}
	return TTL5m
}

// Table is a set of models looked up by name prefix. The zero value is
// [Default]; a host adds or overrides models with [Table.With], and
// entries it sets win over the defaults.
type Table struct {
	models []Model
}

// defaults are the built-in models, longest names first where one
// prefixes another.
var defaults = []Model{
	anthropic("claude-opus-4-6", 5, 4096),
	anthropic("claude-opus-4-5", 5, 4096),
	anthropic("claude-opus-4-1", 15, 1024),
	anthropic("claude-opus-4", 15, 1024),
	anthropic("claude-sonnet-4-6", 3, 1024),
	anthropic("claude-sonnet-4-5", 3, 1024),
	anthropic("claude-sonnet-4", 3, 1024),
	anthropic("claude-3-7-sonnet", 3, 1024),
	anthropic("claude-haiku-4-5", 1, 4096),
	anthropic("claude-3-5-haiku", 0.8, 2048),
	anthropic("claude-3-haiku", 0.25, 2048),
	openai("gpt-5-nano", 0.05, 0.1),
	openai("gpt-5-mini", 0.25, 0.1),
	openai("gpt-5", 1.25, 0.1),
	openai("gpt-4.1", 2, 0.25),
	openai("gpt-4o", 2.5, 0.5),
}

func anthropic(name string, price float64, min int) Model {
	return Model{Name: name, Provider: Anthropic, InputPerMTok: price, ReadMult: 0.1,
		Write5mMult: 1.25, WriteLongMult: 2, MinPrefix: min}
}

func openai(name string, price, read float64) Model {
	return Model{Name: name, Provider: OpenAI, InputPerMTok: price, ReadMult: read,
		Write5mMult: 1, WriteLongMult: 1, MinPrefix: 1024, Step: 128}
}

// Default is the built-in table (see the package documentation for the
// sources).
func Default() Table { return Table{} }

// With returns a copy of t with m added; it replaces an entry of the same
// Name. Zero multipliers and MinPrefix of m take the provider's usual
// rules (Anthropic 0.1x read, 1.25x/2x write, 1,024 tokens; OpenAI 0.1x
// read, no write premium, 1,024 tokens in 128-token steps), so a host can
// give just a name, a provider and a price.
func (t Table) With(m Model) Table {
	base := anthropic(m.Name, m.InputPerMTok, 1024)
	if m.Provider == OpenAI {
		base = openai(m.Name, m.InputPerMTok, 0.1)
	}
	m.ReadMult = cmp.Or(m.ReadMult, base.ReadMult)
	m.Write5mMult = cmp.Or(m.Write5mMult, base.Write5mMult)
	m.WriteLongMult = cmp.Or(m.WriteLongMult, base.WriteLongMult)
	m.MinPrefix = cmp.Or(m.MinPrefix, base.MinPrefix)
	m.Step = cmp.Or(m.Step, base.Step)
	m.Provider = cmp.Or(m.Provider, Anthropic)
	out := Table{models: make([]Model, 0, len(t.models)+1)}
	for _, x := range t.models {
		if x.Name != m.Name {
			out.models = append(out.models, x)
		}
	}
	out.models = append(out.models, m)
	return out
}

// Lookup returns the model whose Name is the longest prefix of name, the
// host's entries before the defaults. A name nothing matches gets
// [Fallback] for its provider, guessed from the name ("gpt-", "o1"... are
// OpenAI, anything else Anthropic), with ok false.
func (t Table) Lookup(name string) (m Model, ok bool) {
	for _, list := range [][]Model{t.models, defaults} {
		best := -1
		for i, x := range list {
			if strings.HasPrefix(name, x.Name) && (best < 0 || len(x.Name) > len(list[best].Name)) {
				best = i
			}
		}
		if best >= 0 {
			return list[best], true
		}
	}
	p := Anthropic
	if strings.HasPrefix(name, "gpt-") || strings.HasPrefix(name, "o1") || strings.HasPrefix(name, "o3") || strings.HasPrefix(name, "o4") {
		p = OpenAI
	}
	m = Fallback(p)
	m.Name = name
	return m, false
}

// Fallback is the model assumed for a name the table does not know: the
// provider's usual rules at its mid-range price (Anthropic as Sonnet,
// OpenAI as gpt-5).
func Fallback(p Provider) Model {
	if p == OpenAI {
		return openai("", 1.25, 0.1)
	}
	return anthropic("", 3, 1024)
}
