package openai

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/internal/lastresp"
	"github.com/stratamem/strata/provider/internal/wirename"
)

// API picks the OpenAI endpoint a Model calls.
type API int

const (
	// Responses is POST /responses, OpenAI's current API. The zero value.
	Responses API = iota
	// ChatCompletions is POST /chat/completions, the API that every
	// OpenAI-compatible server (Ollama, vLLM, OpenRouter, LM Studio)
	// speaks.
	ChatCompletions
)

func (a API) String() string {
	switch a {
	case Responses:
		return "responses"
	case ChatCompletions:
		return "chat-completions"
	}
	return fmt.Sprintf("API(%d)", int(a))
}

// DeveloperMode says how developer messages travel.
type DeveloperMode int

const (
	// DeveloperNative sends role "developer", as OpenAI's models expect.
	// The zero value.
	DeveloperNative DeveloperMode = iota
	// DeveloperAsSystem sends role "system", for servers whose chat
	// templates know no developer role but accept system messages
	// anywhere.
	DeveloperAsSystem
	// DeveloperAsUser sends developer messages after the system prompt as
	// user messages wrapped in <system-reminder>…</system-reminder>, for
	// templates that accept a system message only at the start (those of
	// the system band stay system messages).
	DeveloperAsUser
)

// Options configure a Model. Only Model is required.
type Options struct {
	// Model is the model name, e.g. "gpt-5-mini", or the compatible
	// server's name for its model ("llama3.2" on Ollama). Required.
	Model string
	// API is the endpoint: Responses (the zero value) or ChatCompletions.
	API API
	// APIKey authenticates the requests. Empty means OPENAI_API_KEY, read
	// by the SDK. Local servers usually need none.
	APIKey string
	// BaseURL points the client at an OpenAI-compatible server, e.g.
	// "http://localhost:11434/v1" for Ollama, "http://localhost:8000/v1"
	// for vLLM, "https://openrouter.ai/api/v1". Empty means
	// OPENAI_BASE_URL, else the OpenAI API.
	BaseURL string
	// MaxOutputTokens is used when a Request sets none; zero leaves the
	// cap to the server.
	MaxOutputTokens int
	// MaxRetries is how often the SDK itself retries a failed request
	// (429, 5xx, connection errors), honouring retry-after. Zero means no
	// SDK retries: the failure comes back at once as a *provider.Error
	// with its retry advice, and the caller decides.
	MaxRetries int
	// Timeout bounds one Respond call, retries included, through its
	// context. Zero means only the caller's context bounds it.
	Timeout time.Duration
	// Stream sends stream=true and assembles the answer and its usage
	// from the server-sent events (Chat Completions asks for the usage
	// chunk with stream_options.include_usage).
	Stream bool
	// Developer says how developer messages travel; see DeveloperMode.
	Developer DeveloperMode
	// LegacyMaxTokens sends the output cap as max_tokens instead of
	// max_completion_tokens (Chat Completions), for servers that only
	// know the old field.
	LegacyMaxTokens bool
	// ExplicitBreakpoints marks the view's breakpoints with OpenAI's
	// prompt_cache_breakpoint {mode: "explicit"} on the last input text
	// at or before each breakpoint's item. OpenAI caches automatically;
	// models from gpt-5.6 on also match a cached prefix only at a
	// breakpoint, so marking the ends of the system prompt, anchor band
	// and history keeps them reusable while the live band changes.
	// Older models may reject the field: off by default.
	ExplicitBreakpoints bool
	// CacheControl adds Anthropic's cache_control {type: "ephemeral"} to
	// the content part at each breakpoint (Chat Completions only),
	// injected into the final request body because the SDK has no such
	// field. For gateways that forward it to Claude, such as OpenRouter;
	// OpenAI itself would reject it.
	CacheControl bool
	// NoCacheKey leaves prompt_cache_key out, for servers that reject
	// unknown fields. By default the thread id is sent as the key, so a
	// thread's requests are routed to the same cache; an id over 64 bytes,
	// the key's limit, is sent as a stable hash of it.
	NoCacheKey bool
	// NoCacheDiagnostics stops asking for prompt-cache diagnostics. By
	// default, on the Responses API with a model that has them (gpt-5.6
	// and later), each request of a thread (Request.ThreadID) after the
	// first names the thread's previous response in
	// prompt_cache_options.comparison_response_id, and the answer's
	// account of a miss comes back in Response.Cache.Miss.
	NoCacheDiagnostics bool
	// CacheRetention is prompt_cache_retention, the longest OpenAI keeps
	// a cached prefix: "" (the server's default), "in_memory" or "24h"
	// (extended retention). gpt-5.5 and later accept only "24h".
	CacheRetention string
	// CacheTTL is prompt_cache_options.ttl, the shortest lifetime of the
	// cache entries a request writes (Responses API, gpt-5.6 and later):
	// "" (the server's default, 30 minutes), "30m" or "12h".
	CacheTTL string
	// HTTPClient replaces the SDK's HTTP client.
	HTTPClient *http.Client
	// RequestOptions are appended to the adapter's SDK options (extra
	// headers such as OpenRouter's HTTP-Referer, middleware).
	RequestOptions []option.RequestOption
}

// Model is a provider.Model for the OpenAI Responses or Chat Completions
// API and the servers compatible with them. It is safe for concurrent
// use.
type Model struct {
	client sdk.Client
	opts   Options
	// diagnose is whether requests ask for prompt-cache diagnostics; last
	// holds each thread's latest response id, the baseline they name.
	diagnose bool
	last     lastresp.Table
}

var _ provider.Model = (*Model)(nil)

// New validates opts and returns a Model. Invalid options fail with an
// *OptionError naming the field.
func New(opts Options) (*Model, error) {
	opts.Model = strings.TrimSpace(opts.Model)
	switch {
	case opts.Model == "":
		return nil, &OptionError{Field: "Model", Reason: `required: the model name, e.g. "gpt-5-mini"`}
	case opts.API != Responses && opts.API != ChatCompletions:
		return nil, &OptionError{Field: "API", Reason: fmt.Sprintf("unknown API %d", int(opts.API))}
	case opts.Developer < DeveloperNative || opts.Developer > DeveloperAsUser:
		return nil, &OptionError{Field: "Developer", Reason: fmt.Sprintf("unknown mode %d", int(opts.Developer))}
	case opts.MaxOutputTokens < 0:
		return nil, &OptionError{Field: "MaxOutputTokens", Reason: "must not be negative"}
	case opts.MaxRetries < 0:
		return nil, &OptionError{Field: "MaxRetries", Reason: "must not be negative"}
	case opts.Timeout < 0:
		return nil, &OptionError{Field: "Timeout", Reason: "must not be negative"}
	case opts.CacheControl && opts.API != ChatCompletions:
		return nil, &OptionError{Field: "CacheControl", Reason: "only Chat Completions carries cache_control (set API: ChatCompletions)"}
	case opts.LegacyMaxTokens && opts.API != ChatCompletions:
		return nil, &OptionError{Field: "LegacyMaxTokens", Reason: "only Chat Completions has max_tokens"}
	case opts.CacheRetention != "" && opts.CacheRetention != "in_memory" && opts.CacheRetention != "24h":
		return nil, &OptionError{Field: "CacheRetention", Reason: fmt.Sprintf(`%q: want "", "in_memory" or "24h"`, opts.CacheRetention)}
	case opts.CacheTTL != "" && opts.CacheTTL != "30m" && opts.CacheTTL != "12h":
		return nil, &OptionError{Field: "CacheTTL", Reason: fmt.Sprintf(`%q: want "", "30m" or "12h"`, opts.CacheTTL)}
	case opts.CacheTTL != "" && opts.API != Responses:
		return nil, &OptionError{Field: "CacheTTL", Reason: "only the Responses API has prompt_cache_options"}
	}
	ro := []option.RequestOption{option.WithMaxRetries(opts.MaxRetries)}
	if opts.APIKey != "" {
		ro = append(ro, option.WithAPIKey(opts.APIKey))
	}
	if opts.BaseURL != "" {
		ro = append(ro, option.WithBaseURL(opts.BaseURL))
	}
	if opts.HTTPClient != nil {
		ro = append(ro, option.WithHTTPClient(opts.HTTPClient))
	}
	ro = append(ro, opts.RequestOptions...)
	return &Model{client: sdk.NewClient(ro...), opts: opts,
		diagnose: opts.API == Responses && !opts.NoCacheDiagnostics && diagnosticsSupported(opts.Model)}, nil
}

// Respond sends one request built from req.View and returns the model's
// items and cache figures. It records nothing; on failure it returns a
// *provider.Error and no items.
func (m *Model) Respond(ctx context.Context, req provider.Request) (*provider.Response, error) {
	if req.View == nil {
		return nil, fmt.Errorf("%w: no view", ErrInvalidRequest)
	}
	maxTokens := req.MaxOutputTokens
	if maxTokens <= 0 {
		maxTokens = m.opts.MaxOutputTokens
	}
	names, err := wirename.NewTable(req.View.Tools, ErrInvalidRequest)
	if err != nil {
		return nil, err
	}
	if m.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.opts.Timeout)
		defer cancel()
	}
	var resp *provider.Response
	if m.opts.API == ChatCompletions {
		resp, err = m.respondChat(ctx, req, maxTokens, names)
	} else {
		resp, err = m.respondResponses(ctx, req, maxTokens, names)
	}
	if err != nil {
		return nil, toError(ctx, err)
	}
	return resp, nil
}

// reminder wraps developer text that travels as a user message.
func reminder(text string) string {
	return "<system-reminder>\n" + text + "\n</system-reminder>"
}

// messageTexts is the text a message item sends: its non-empty parts, or
// with wrap its whole text as one reminder (nothing when it has none).
func messageTexts(it core.Item, wrap bool) []string {
	if wrap {
		if text := it.Text(); text != "" {
			return []string{reminder(text)}
		}
		return nil
	}
	var texts []string
	for _, p := range it.Content {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return texts
}

// roleOf is the wire role of a message item in band b.
func (m *Model) roleOf(b core.Band, it core.Item) (role string, wrap bool) {
	switch it.Role {
	case core.RoleUser, core.RoleAssistant:
		return string(it.Role), false
	case core.RoleSystem:
		if b == core.BandSystem {
			return "system", false
		}
	}
	// Developer messages anywhere, system messages outside the system
	// band.
	switch {
	case m.opts.Developer == DeveloperAsSystem:
		return "system", false
	case m.opts.Developer == DeveloperAsUser && b == core.BandSystem:
		return "system", false
	case m.opts.Developer == DeveloperAsUser:
		return "user", true
	case it.Role == core.RoleSystem:
		return "system", false
	}
	return "developer", false
}

// breakpointSet returns the indexes of the items a breakpoint follows,
// only in the bands that may carry one and at most four.
func breakpointSet(v *core.View) map[int]bool {
	marks := map[int]bool{}
	for _, bp := range v.Breakpoints {
		if len(marks) == 4 {
			break
		}
		switch bp.Band {
		case core.BandSystem, core.BandAnchor, core.BandHistory:
			marks[bp.Index] = true
		}
	}
	return marks
}

// schemaObject decodes a tool's parameters, keeping numbers as written.
func schemaObject(t core.ToolSpec) (map[string]any, error) {
	raw := bytes.TrimSpace(t.Parameters)
	if len(raw) == 0 {
		raw = []byte(`{"type":"object"}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var schema map[string]any
	if err := dec.Decode(&schema); err != nil || schema == nil {
		return nil, fmt.Errorf("%w: tool %q: parameters are not a JSON schema object", ErrInvalidRequest, t.Name)
	}
	if schema["type"] != "object" {
		// Both APIs require it ("schema must be a JSON Schema of 'type:
		// "object"'"); say so before sending rather than get a 400 back.
		got, _ := json.Marshal(schema["type"])
		return nil, fmt.Errorf(`%w: tool %q: parameters must be a schema of "type": "object", got "type": %s`, ErrInvalidRequest, t.Name, got)
	}
	return schema, nil
}

// maxCacheKey is the longest prompt_cache_key OpenAI accepts; a longer
// one is refused with 400 string_above_max_length.
const maxCacheKey = 64

// cacheKey is the prompt_cache_key for a thread: its id when that fits,
// else "s_" and the start of the hex SHA-256 of the id, 64 bytes in all,
// the same for every request of the thread.
func cacheKey(threadID string) string {
	if len(threadID) <= maxCacheKey {
		return threadID
	}
	sum := sha256.Sum256([]byte(threadID))
	return ("s_" + hex.EncodeToString(sum[:]))[:maxCacheKey]
}

// completeArgs reports whether a function call's arguments are a whole
// JSON object, as opposed to arguments the output cap cut off.
func completeArgs(args string) bool {
	raw := strings.TrimSpace(args)
	return raw != "" && raw[0] == '{' && json.Valid([]byte(raw))
}

// cacheReport reads OpenAI-style usage: the prompt count includes the
// cached tokens (and the tokens written to the cache, where reported).
func cacheReport(prompt, cached, written int64, reported bool) core.CacheReport {
	if !reported {
		return core.CacheReport{UncachedTokens: int(prompt)}
	}
	return core.CacheReport{Reported: true, ReadTokens: int(cached), WriteTokens: int(written),
		UncachedTokens: int(max(0, prompt-cached-written))}
}

// retention is the prompt_cache_retention a request sends: the extended
// 24 hours when it asks for more than the default five minutes (its
// CacheTTL), the in-memory default when it asks for at most that, the
// adapter's Options.CacheRetention when it asks for nothing.
func (m *Model) retention(req provider.Request) string {
	switch {
	case req.CacheTTL > 5*time.Minute:
		return "24h"
	case req.CacheTTL > 0:
		return "in_memory"
	}
	return m.opts.CacheRetention
}
