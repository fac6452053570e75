// Package openai is a provider.Model for OpenAI's Responses and Chat
// Completions APIs, built on the official github.com/openai/openai-go SDK,
// and for the servers compatible with them (Ollama, vLLM, OpenRouter, LM
// Studio) reached by Options.BaseURL. It turns a core.View into a request
// and the answer back into items and the cache figures the runtime needs
// to re-anchor on a lost cache.
//
// # Using it with core
//
//	model, err := openai.New(openai.Options{Model: "gpt-5-mini"}) // key from OPENAI_API_KEY
//	...
//	_ = sess.Append(ctx, core.UserMessage(question))
//	for round := 0; ; round++ {
//		view, err := sess.Assemble(ctx)
//		...
//		resp, err := model.Respond(ctx, provider.Request{View: view, ThreadID: threadID})
//		if err != nil {
//			return err // *provider.Error: Retryable and RetryAfter say whether to try again
//		}
//		report := resp.Cache
//		report.FirstRound = round == 0 // only a turn's first call can reveal a lost cache
//		sess.ReportCache(report)
//		_ = sess.Record(ctx, resp.Items...)
//		... run the function calls, Append their outputs, or break
//	}
//
// Package agent runs this loop for you. For a local Ollama:
//
//	openai.New(openai.Options{Model: "llama3.2", API: openai.ChatCompletions,
//		BaseURL: "http://localhost:11434/v1", Developer: openai.DeveloperAsSystem})
//
// # How a view becomes a request
//
// Responses (the zero value of Options.API): every item is an input item.
// Messages keep their role (system, developer, user) with input_text
// parts; assistant messages carry their text as a string; function_call
// and function_call_output items map field for field. Function tools are
// sent with strict: false, since this API would otherwise require every
// schema to list all properties as required.
//
// Chat Completions: system, developer and user messages as messages of
// that role, with string content (text parts when an item has several
// parts or a part carries a cache marker); an assistant message and the
// function calls after it become one assistant message with tool_calls;
// each function_call_output a tool message. Assistant text that follows a
// call in the same turn (text, call, text, as Claude writes and a replay
// carries) joins that message too: the API requires the message with
// tool_calls to be followed directly by its tool messages.
//
// Tool parameters must be a JSON schema of "type": "object", as both APIs
// require; any other fails with ErrInvalidRequest naming the tool.
//
// Developer messages travel as role "developer" by default. Servers whose
// chat templates know no such role take DeveloperAsSystem, or
// DeveloperAsUser, which sends those after the system prompt as user
// messages wrapped in <system-reminder>…</system-reminder>.
//
// Provided functions are named "layer/fn", which function names
// (^[a-zA-Z0-9_-]{1,64}$) do not allow: WireName maps '/' to "__" and
// other disallowed bytes to '_', and the calls in the answer are mapped
// back through the table of the request's tools.
//
// # Prompt caching
//
// OpenAI caches prompt prefixes by itself. The adapter sends the thread id
// as prompt_cache_key (Options.NoCacheKey turns it off), so one thread's
// requests meet the same cache. The key takes at most 64 characters: a
// longer thread id is sent as "s_" and the first 62 hex digits of its
// SHA-256, stable for the thread. Two opt-in markers place the view's
// breakpoints (the ends of the system prompt, the anchor band and
// history, never after the live band), each on the last input text at or
// before the breakpoint's item — assistant output cannot carry one:
//
//   - ExplicitBreakpoints: prompt_cache_breakpoint {mode: "explicit"}, for
//     OpenAI models that support explicit breakpoints (gpt-5.6 and later).
//   - CacheControl (Chat Completions): Anthropic's cache_control {type:
//     "ephemeral"}, injected into the final request body because the SDK
//     has no such field, for gateways that forward it to Claude
//     (OpenRouter). Pair it with DeveloperAsUser: Claude has one system
//     prompt, and a gateway may fold developer and system messages found
//     anywhere into it, which would move the cached prefix every turn.
//
// Neither is sent when anchoring is disabled (no breakpoints).
//
// Options.CacheRetention sends prompt_cache_retention ("in_memory", or
// "24h" for extended retention: the longest a prefix is kept) on either
// API; Options.CacheTTL sends prompt_cache_options.ttl ("30m" or "12h":
// the shortest lifetime of what a request writes; Responses, gpt-5.6 and
// later). Neither is sent by default, which leaves the server's own.
//
// # Prompt-cache diagnostics
//
// On the Responses API, gpt-5.6 and later models say why a request could
// not reuse the prefix of an earlier response named in
// prompt_cache_options.comparison_response_id. The Model keeps each
// thread's latest response id (for the last 4096 threads) and names it in
// the thread's next request; the first request of a thread, requests
// without Request.ThreadID, Chat Completions and other models ask for
// nothing, and Options.NoCacheDiagnostics turns it off. Naming a baseline
// only asks for the comparison: it loads no conversation and changes
// nothing about which cached prefix the request may use. The response's
// prompt_cache_diagnostics become Response.Cache.Miss:
//
//   - absent, null or cache_hit: Miss is nil;
//   - cache_miss: Detail is its reason as sent, MissedTokens its
//     cache_missed_tokens, and Reason MissModelChanged for model_changed
//     and service_tier_changed, MissToolsChanged for tools_changed,
//     MissMessagesChanged for input_changed and context_compacted (the
//     system prompt travels as input, so its changes show here too), and
//     MissUnavailable for a changed prompt_cache_key, text format,
//     reasoning effort or verbosity, or a reason added later;
//   - comparison_response_not_found: MissPreviousNotFound;
//   - unavailable, or a type added later: MissUnavailable.
//
// # Cache figures
//
// The prompt count includes the cached tokens: ReadTokens = cached_tokens,
// WriteTokens = cache_write_tokens where the server reports it (else 0),
// UncachedTokens = prompt - read - write. Reported is false when the usage
// has no prompt_tokens_details.cached_tokens (Chat) or
// input_tokens_details.cached_tokens (Responses), as on servers that do
// not cache or do not say, so the runtime can mark the provider blind.
// FirstRound is left to the caller.
//
// # Errors and retries
//
// A failed call returns no Response and a *provider.Error: the HTTP
// status, Retryable for 408, 429 and 5xx, timeouts and broken connections
// or streams (x-should-retry overrides), RetryAfter from retry-after-ms or
// retry-after. insufficient_quota is final although it comes as a 429:
// waiting does not refill the account. Errors inside a stream (an {"error": …} chunk, whose code
// may be a number on gateways; response.failed; an error event) map to
// the status their code stands for. By default the SDK does not retry
// (Options.MaxRetries = 0); Options.Timeout bounds a call through its
// context. A view the adapter cannot send fails with ErrInvalidRequest
// before anything is sent.
//
// # Truncated answers
//
// When the output cap stops the answer (Chat finish_reason "length",
// Responses status "incomplete" for max_output_tokens), Response.Truncated
// is set, and a function call at its end whose arguments are not a whole
// JSON object (or, on Responses, whose status is "incomplete") is
// dropped: it was cut while being written and must not run. Text and the
// calls before it are kept.
//
// # Streaming
//
// Options.Stream sends stream=true. Chat Completions also asks for
// stream_options.include_usage and assembles choices with the SDK's
// accumulator and the usage from the final chunk; Responses takes the
// whole response from its terminal event (response.completed, or
// response.incomplete when the output cap cut it). A stream that ends
// before that is a retryable error, never a partial answer.
package openai
