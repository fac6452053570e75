// Package anthropic is a provider.Model for the Anthropic Messages API,
// built on github.com/anthropics/anthropic-sdk-go. It turns a core.View
// into a Messages request, asks for the prompt cache where the view says,
// and turns the answer back into items and the cache figures the runtime
// needs to re-anchor on a lost cache.
//
// # Using it with core
//
//	model, err := anthropic.New(anthropic.Options{Model: "claude-sonnet-4-5"}) // key from ANTHROPIC_API_KEY
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
//		calls := functionCalls(resp.Items)
//		if len(calls) == 0 {
//			break
//		}
//		for _, call := range calls {
//			out, _ := sess.ExecuteTool(ctx, call)
//			_ = sess.Append(ctx, out)
//		}
//	}
//
// Package agent runs this loop for you.
//
// # How a view becomes a request
//
//   - System and developer messages of the system band become the system
//     prompt, one text block per part.
//   - Every other developer (or system) message — anchored and live layer
//     output, the context-updates message, the tail — becomes a user-role
//     text block wrapped in <system-reminder>…</system-reminder>, so the
//     model can tell the runtime's context from what the user typed. The
//     Messages API has no developer role, and its system prompt must stay
//     put for the cache.
//   - User and assistant messages become text blocks of their role; empty
//     and whitespace-only parts are dropped, in the system prompt and
//     tool results too (the API rejects them with 400 "text content
//     blocks must contain non-whitespace text").
//   - A function_call becomes an assistant tool_use block (id = call id,
//     input = the parsed arguments, which must be a JSON object); a
//     function_call_output becomes a user tool_result block.
//   - Consecutive blocks of one role are merged into one message, as the
//     API requires alternating roles. An assistant message followed by its
//     calls therefore becomes one assistant message with text and tool_use
//     blocks, and parallel outputs one user message of tool_results.
//   - The first message must be the user's. When it would be the
//     assistant's (history windowed and no anchor band before it), a fixed
//     user block goes first: "<system-reminder>The conversation continues
//     from earlier messages.</system-reminder>" (with newlines inside the
//     tags), the same every time so the cached prefix does not move.
//   - Tools: every ToolSpec becomes a tool whose input_schema is its
//     Parameters, sent as they are. The schema must be an object with
//     "type": "object", as the API requires; any other fails with
//     ErrInvalidRequest naming the tool.
//
// # Tool names
//
// Provided functions are named "layer/fn", which the API's tool names
// (^[a-zA-Z0-9_-]{1,64}$) do not allow. WireName maps '/' to "__" and any
// other disallowed byte to '_', and shortens names over 64 bytes with a
// hash suffix. Tool calls in the answer are mapped back through the table
// of the request's tools, so the items carry "layer/fn" again; two tools
// that would share a wire name are refused with ErrInvalidRequest.
//
// # Cache breakpoints
//
// Anthropic caches nothing without a cache_control marker. While
// anchoring is enabled the view carries Breakpoints — the end of the
// system prompt (which covers the tools before it), of the anchor band and
// of history — and the adapter puts cache_control {type: "ephemeral"} on
// exactly the block of each breakpoint's item, even when merging put
// other blocks after it in the same message. Never after the live band,
// the updates or the tail; at most four; none at all when anchoring is
// disabled (View.Breakpoints is empty). Options.CacheTTL asks for the
// one-hour lifetime instead of the default five minutes. Request.ThreadID
// is not sent: the Messages API has no cache key, the markers are the
// whole contract.
//
// The API looks for a cached prefix at each marker and at the 20 block
// boundaries before it, no further. A round of many parallel tool calls
// (30 calls are 30 tool_use and 30 tool_result blocks) puts the previous
// request's history marker out of that reach, and the whole history
// would be written again. When 20 or more blocks separate the history
// marker from the end of the previous request of the loop — the block
// before the last assistant message — the adapter adds a fourth marker
// there (a bridge), which reads the previous entry back. Markers are not
// billed, only the tokens read and written, so a bridge costs nothing;
// it is added only while the request carries fewer than four.
//
// # Cache diagnostics
//
// The Claude API can say why a request missed the cache: given the id of
// an earlier response (diagnostics.previous_message_id) it compares the
// two requests and names the first divergence. Each request of a thread
// (Request.ThreadID) carries the diagnostics object: null on the thread's
// first request, which opts it in, and after that the id of the thread's
// previous response, kept by the Model (for the last 4096 threads). The
// answer's diagnostics become Response.Cache.Miss:
//
//   - null (nothing diverged, or none asked for): Miss is nil;
//   - cache_miss_reason null (the comparison had not finished): Pending;
//   - model_changed, system_changed, tools_changed, messages_changed,
//     previous_message_not_found, unavailable: Reason is the matching
//     core.MissReason, Detail the type as sent, MissedTokens its
//     cache_missed_input_tokens (the tokens the divergence cost, given for
//     the *_changed types). A type this adapter does not know is
//     MissUnavailable with the type in Detail.
//
// The comparison is about the request's structure, not whether the cache
// hit: messages_changed with a small MissedTokens is normal when content
// after the history marker (live band, updates, tail) changed. No
// beta header is needed. Diagnostics exist on the Claude API only, so a
// model id of an Amazon Bedrock ("anthropic." in it, or an ARN) or Vertex
// AI ('@' in it) deployment never asks; Options.NoCacheDiagnostics turns
// them off for servers that reject the field.
//
// # Cache figures
//
// input_tokens excludes the cache: ReadTokens = cache_read_input_tokens,
// WriteTokens = cache_creation_input_tokens, UncachedTokens =
// input_tokens, and Response.InputTokens is their sum. Reported is false
// when the usage carries neither cache field (some compatible servers),
// which lets the runtime mark the provider blind. FirstRound is left to
// the caller, who knows which call of the turn this was.
//
// # Truncated answers
//
// When the output cap stops the answer (stop_reason "max_tokens", or
// "model_context_window_exceeded"), Response.Truncated is set. A tool_use
// block at the end of such an answer was cut while its input was being
// written, and is dropped: streamed, the SDK replaces the unfinished input
// with {}, indistinguishable from a call without arguments, and Anthropic
// documents that block as incomplete. Text and the calls before it are
// kept. Whitespace-only text blocks of an answer are dropped as well, so
// a replay never sends them.
//
// # Errors and retries
//
// A failed call returns no Response and a *provider.Error: the HTTP
// status, Retryable for 408, 429, 5xx and 529 (overloaded), timeouts and
// broken connections or streams (the x-should-retry header overrides the
// status), RetryAfter from retry-after-ms or retry-after. An error event
// inside a stream maps to the status its type stands for. By default the
// SDK does not retry (Options.MaxRetries = 0), so the caller sees the
// failure and its advice at once; Options.Timeout bounds a call through
// its context. A view the adapter cannot send fails with
// ErrInvalidRequest before anything is sent.
//
// # Streaming
//
// Options.Stream sends stream=true and assembles the message from the
// server-sent events (message_start, content block deltas, message_delta,
// message_stop); a stream that ends before message_stop is a retryable
// error, never a partial answer. Requests whose output cap the SDK
// expects to run past ten minutes are always streamed.
//
// # Compatible servers
//
// Options.BaseURL (or ANTHROPIC_BASE_URL) points the client at any server
// that speaks the Messages API.
package anthropic
