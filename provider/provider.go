// Package provider is the seam between strata's assembled view and a model
// provider's API. Adapters (provider/anthropic, provider/openai) turn a
// core.View into the provider's request — system, tools, messages, and the
// cache breakpoints the view asks for — and the response back into items
// and the cache figures the runtime needs (core.CacheReport).
package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratamem/strata/core"
)

// Model is a provider adapter.
type Model interface {
	// Respond sends one model call built from the view and returns what
	// the model wrote. It never records anything: the caller records the
	// items and reports the cache figures.
	Respond(ctx context.Context, req Request) (*Response, error)
}

// Request is one model call.
type Request struct {
	// View is the assembled input: items by band, tools, breakpoints.
	View *core.View
	// ThreadID keys provider-side prompt caching where it exists (OpenAI
	// prompt_cache_key, which the adapter hashes when the id is longer
	// than the key's 64 characters).
	ThreadID string
	// MaxOutputTokens caps the answer; zero uses the adapter's default.
	MaxOutputTokens int
	// CacheTTL is how long this request asks the provider to keep its
	// prompt prefix cached; zero leaves the adapter's options. Adapters
	// ask for the provider's extended lifetime when CacheTTL is over its
	// default five minutes (Anthropic: cache_control ttl "1h"; OpenAI:
	// prompt_cache_retention "24h") and for the default otherwise. A
	// host sets it from the pause it expects (agent.Options.CacheTTL,
	// agent.TTLByCost) and reports it back in core.CacheReport.TTL.
	CacheTTL time.Duration
}

// Response is what came back.
type Response struct {
	// Items are the model's output: assistant messages and function calls.
	Items []core.Item
	// Cache holds the provider's cache figures. Reported is false when the
	// response carried none. FirstRound is left false: the caller knows
	// whether this was the first call of a turn.
	Cache core.CacheReport
	// InputTokens and OutputTokens as billed (input includes cached).
	InputTokens, OutputTokens int
	// StopReason is the provider's reason, e.g. "end_turn", "tool_use".
	StopReason string
	// Truncated is true when the answer stopped at the output cap
	// (Anthropic stop_reason "max_tokens" or
	// "model_context_window_exceeded", OpenAI finish_reason "length" or
	// an incomplete response for max_output_tokens). The model did not
	// finish: a function call the cap cut off has already been dropped
	// from Items, since its arguments are unfinished (or were replaced by
	// the SDK) and running it would act on half a request; the calls
	// before it are complete. Callers should not carry on as if the model
	// had ended its turn; package agent ends the turn with StopTruncated.
	Truncated bool
	// Model is the model that answered.
	Model string
}

// ErrProvider is matched by every *Error.
var ErrProvider = errors.New("provider error")

// Error is a failed model call, typed so callers can decide to retry.
type Error struct {
	// Provider is "anthropic" or "openai".
	Provider string
	// StatusCode is the HTTP status, 0 for transport failures and timeouts.
	StatusCode int
	// Retryable is true for rate limits (429), overload and server errors
	// (5xx) and timeouts: the same request may succeed later.
	Retryable bool
	// RetryAfter is the provider's advice, zero when it gave none.
	RetryAfter time.Duration
	// Message is the provider's error message.
	Message string
	Err     error
}

func (e *Error) Error() string {
	advice := ""
	if e.Retryable {
		advice = " (retryable"
		if e.RetryAfter > 0 {
			advice += fmt.Sprintf(" after %s", e.RetryAfter)
		}
		advice += ")"
	}
	if e.StatusCode != 0 {
		return fmt.Sprintf("%s: status %d: %s%s", e.Provider, e.StatusCode, e.Message, advice)
	}
	return fmt.Sprintf("%s: %s%s", e.Provider, e.Message, advice)
}

// Unwrap returns the cause; errors.Is(err, ErrProvider) also matches.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrProvider, e.Err}
	}
	return []error{ErrProvider}
}
