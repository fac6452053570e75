// Package cachesim is a deterministic simulator of LLM providers' prompt
// prefix caches. strata's cache-stability benchmark and tests feed it the
// block sequence of each assembled request and read back what the provider
// would bill: tokens read from cache, written to cache, and processed
// uncached, with their cost.
//
// The simulator sees no text. A request is a sequence of blocks ([Block]), each a
// content hash and a token count (see [TextBlock], [TokenBlock],
// [BlocksFromTexts]); a [Request] adds the model name and the time it is sent.
// There is no wall clock: time only moves with Request.At, so the same
// sequence of requests always yields the same sequence of [Usage] values.
// The package imports nothing of strata.
//
// A prefix is identified by a hash chain over the model name and every
// block's hash and token count up to it, so a change anywhere in a block
// changes the identity of every prefix that contains it, as a provider's
// byte-exact prefix match does.
//
// # Anthropic (explicit caching)
//
// [Anthropic] follows Anthropic's prompt-caching documentation
// (docs.anthropic.com, "Prompt caching"):
//
//   - Nothing is cached without a cache_control breakpoint ([Block.Breakpoint]).
//     At most 4 breakpoints per request; more is rejected with
//     [ErrTooManyBreakpoints], as the API rejects it.
//   - A cache entry is the prefix up to and including a breakpoint's block.
//     Only breakpoint positions are written; block boundaries without a
//     breakpoint never become entries.
//   - Reads: for every breakpoint bp the cache is checked at bp and at each of
//     the 20 block boundaries before it (the documented 20-block lookback):
//     positions bp-20 … bp, both inclusive. The read is the longest live
//     entry found at any of those positions. An entry 21 or more blocks
//     before every breakpoint is not found even though it is cached.
//   - Writes: the prefix of every breakpoint after the read is written, each
//     breakpoint's segment (from the previous cached boundary to it) billed
//     at its own TTL's write price. Tokens after the last breakpoint are
//     uncached. So read + write + uncached = the request's tokens.
//   - Minimum cacheable length: a breakpoint whose prefix has fewer tokens
//     than the model's minimum is not written and its tokens stay uncached,
//     unless a later, long enough breakpoint covers them. The minimum
//     depends on the model family, as the docs list it
//     ([AnthropicMinCacheableTokens], keyed by model id prefix): 2048 for
//     Claude Haiku 3 and 3.5, 4096 for Claude Haiku 4.5, Opus 4.5 and Opus
//     4.6, and 1024 for every other model (Sonnet 3.7 to 4.6, Opus 4 and
//     4.1; [DefaultAnthropicMinTokens]). [AnthropicOptions].MinCacheableTokens
//     overrides it per model prefix, e.g. {"claude-3-5-haiku": 2048}, and
//     DefaultMinCacheableTokens for the models no key matches.
//   - TTL: 5 minutes by default, 1 hour with [TTL1h]; every hit refreshes the
//     entry at no cost. An entry is alive while Request.At <= last use + TTL,
//     so a request exactly 5m after the last use hits and one 5m+1s after
//     misses. The docs require 1h breakpoints to come before 5m ones; the
//     reverse is rejected with [ErrTTLOrder].
//   - Billing (multipliers of the base input price, [AnthropicPrices]):
//     5m write 1.25x, 1h write 2x, read 0.1x, uncached 1x. The default base
//     price is $3 per million tokens (Claude Sonnet 4.x).
//
// Decisions where the docs are silent:
//
//   - A hit refreshes the entry read and every live entry that is a prefix of
//     it (an earlier breakpoint of this or an older request): they are part
//     of the content just used.
//   - A breakpoint inside the read prefix whose own entry is missing is not
//     written: its tokens were billed as a read, and nothing suggests the
//     provider creates an entry it was not asked to pay for.
//   - Where a 1h breakpoint is below the minimum, its segment is billed with
//     the next breakpoint that is written, at that breakpoint's TTL.
//   - Caches are per model and never evicted for capacity: the docs promise
//     a lifetime, not a capacity, and a simulator that evicted at random
//     would not be deterministic.
//   - A TTL on a block without Breakpoint is rejected ([ErrTTLWithoutBreak])
//     because it is certainly a mistake in the caller's request building.
//
// # OpenAI (automatic caching)
//
// [OpenAI] follows OpenAI's prompt-caching guide (platform.openai.com,
// "Prompt caching"):
//
//   - Caching is automatic; breakpoints and TTLs on blocks are ignored.
//   - Prompts of 1024 tokens or more are cached; hits come in increments of
//     128 tokens: the cached length is the largest 1024 + 128k not above the
//     matched prefix, 0 when the match is shorter than 1024.
//   - There is no write fee: what is not read is billed at the base price.
//     The read discount depends on the model (0.5x for gpt-4o, 0.25x for
//     gpt-4.1, 0.1x for gpt-5); the default is 0.1x at $1.25 per million
//     ([OpenAIPrices]), set both in [OpenAIOptions].Prices.
//   - A prefix stays cached for 5 to 10 minutes of inactivity (up to an hour
//     off-peak); the simulator uses a fixed 5 minutes by default, refreshed
//     whenever the prefix is used, configurable with [OpenAIOptions].TTL.
//
// Approximation: the provider matches tokens, the simulator sees blocks. The
// matched length is the token length of the longest prefix of whole blocks
// that equals a prefix of a live earlier request (of the same model), then
// rounded down to the 128-token grid. Every request of at least 1024 tokens
// stores all its block-boundary prefixes of at least 1024 tokens. A real
// provider may additionally match the first tokens of the first differing
// block, so the simulator's reads are a lower bound by less than one block.
// Request routing (prompt_cache_key, overflow to other machines) is not
// modelled: every request sees the whole cache.
//
// # Usage and totals
//
// [Usage] partitions each request's tokens into read, 5m write, 1h write and
// uncached, and prices them: BaseEquivalent is the billed input in base-price
// tokens, Cost the same in dollars. [Totals] sums usages; its HitRatio is
// read / (read + write + uncached).
//
// Both simulators are safe for concurrent use, but time must not go back:
// a request earlier than the previous one is rejected with [ErrTimeReversed].
// Every error wraps a sentinel usable with errors.Is; request problems are
// *[RequestError] and leave the simulator unchanged.
package cachesim
