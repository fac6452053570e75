package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/internal/lastresp"
	"github.com/stratamem/strata/provider/internal/wirename"
)

// DefaultMaxOutputTokens caps the answer when neither the request nor
// Options say otherwise. The Messages API requires a cap.
const DefaultMaxOutputTokens = 4096

// Options configure a Model. Only Model is required.
type Options struct {
	// Model is the model name, e.g. "claude-sonnet-4-5". Required.
	Model string
	// APIKey authenticates the requests. Empty means the SDK's own
	// credential chain: ANTHROPIC_API_KEY, then ANTHROPIC_AUTH_TOKEN and
	// the SDK's profiles.
	APIKey string
	// BaseURL points the client at another server that speaks the
	// Messages API (a gateway, a proxy, a test server). Empty means
	// ANTHROPIC_BASE_URL, else the Anthropic API.
	BaseURL string
	// MaxOutputTokens is used when a Request sets none; zero means
	// DefaultMaxOutputTokens.
	MaxOutputTokens int
	// MaxRetries is how often the SDK itself retries a failed request
	// (429, 5xx, connection errors), honouring retry-after. Zero means no
	// SDK retries: the failure comes back at once as a *provider.Error
	// with its retry advice, and the caller (package agent, say) decides.
	MaxRetries int
	// Timeout bounds one Respond call, retries included, through its
	// context. Zero means only the caller's context bounds it.
	Timeout time.Duration
	// Stream sends the request with stream=true and assembles the answer
	// from the server-sent events. Requests whose MaxOutputTokens the SDK
	// expects to take over ten minutes are always streamed (the SDK
	// refuses them otherwise).
	Stream bool
	// CacheTTL is the lifetime of the cache entries the breakpoints ask
	// for: "" (the API's default, five minutes), "5m" or "1h".
	CacheTTL string
	// NoCacheDiagnostics stops asking for the API's cache diagnostics.
	// By default every request of a thread (Request.ThreadID) carries
	// diagnostics.previous_message_id, the id of the thread's previous
	// response (null on the first, which opts the thread in), and the
	// answer's account of a cache miss comes back in
	// Response.Cache.Miss. Model ids of Amazon Bedrock or Vertex AI
	// deployments, where the API has no diagnostics, never ask. Set it
	// for servers that speak the Messages API but reject the field.
	NoCacheDiagnostics bool
	// HTTPClient replaces the SDK's HTTP client.
	HTTPClient *http.Client
	// RequestOptions are appended to the adapter's SDK options (extra
	// headers, middleware).
	RequestOptions []option.RequestOption
}

// Model is a provider.Model for the Anthropic Messages API. It is safe
// for concurrent use.
type Model struct {
	client sdk.Client
	opts   Options
	// diagnose is whether requests ask for cache diagnostics; last holds
	// each thread's latest response id for them.
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
		return nil, &OptionError{Field: "Model", Reason: `required: the model name, e.g. "claude-sonnet-4-5"`}
	case opts.MaxOutputTokens < 0:
		return nil, &OptionError{Field: "MaxOutputTokens", Reason: "must not be negative"}
	case opts.MaxRetries < 0:
		return nil, &OptionError{Field: "MaxRetries", Reason: "must not be negative"}
	case opts.Timeout < 0:
		return nil, &OptionError{Field: "Timeout", Reason: "must not be negative"}
	case opts.CacheTTL != "" && opts.CacheTTL != "5m" && opts.CacheTTL != "1h":
		return nil, &OptionError{Field: "CacheTTL", Reason: fmt.Sprintf(`%q: want "", "5m" or "1h"`, opts.CacheTTL)}
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
		diagnose: !opts.NoCacheDiagnostics && diagnosticsSupported(opts.Model)}, nil
}

// Respond sends one Messages request built from req.View and returns the
// model's items and cache figures. It records nothing; on failure it
// returns a *provider.Error and no items.
func (m *Model) Respond(ctx context.Context, req provider.Request) (*provider.Response, error) {
	maxTokens := req.MaxOutputTokens
	if maxTokens <= 0 {
		maxTokens = m.opts.MaxOutputTokens
	}
	if maxTokens <= 0 {
		maxTokens = DefaultMaxOutputTokens
	}
	params, names, err := m.buildParams(req.View, maxTokens, m.cacheTTL(req))
	if err != nil {
		return nil, err
	}
	if d, ok := m.diagnostics(req.ThreadID); ok {
		params.Diagnostics = d
	}
	if m.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.opts.Timeout)
		defer cancel()
	}
	stream := m.opts.Stream
	if _, err := sdk.CalculateNonStreamingTimeout(maxTokens, params.Model, nil); err != nil {
		stream = true
	}
	var msg *sdk.Message
	if stream {
		msg, err = m.stream(ctx, params)
	} else {
		msg, err = m.client.Messages.New(ctx, params)
	}
	if err != nil {
		return nil, toError(ctx, err)
	}
	resp, err := toResponse(msg, names)
	if err != nil {
		return nil, err
	}
	if m.diagnose && req.ThreadID != "" && msg.ID != "" {
		// The thread's next request is compared with this one.
		m.last.Set(req.ThreadID, msg.ID)
	}
	return resp, nil
}

// errIncompleteStream: the event stream ended without message_stop.
var errIncompleteStream = errors.New("anthropic: stream ended before message_stop")

// stream runs the request as a server-sent event stream and assembles the
// final message from its events.
func (m *Model) stream(ctx context.Context, params sdk.MessageNewParams) (*sdk.Message, error) {
	s := m.client.Messages.NewStreaming(ctx, params)
	defer s.Close()
	var msg sdk.Message
	stopped := false
	for s.Next() {
		ev := s.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, fmt.Errorf("anthropic: malformed stream: %w", err)
		}
		if ev.Type == "message_stop" {
			stopped = true
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if !stopped {
		return nil, errIncompleteStream
	}
	return &msg, nil
}

// toResponse turns a Messages answer into items and cache figures.
func toResponse(msg *sdk.Message, names wirename.Table) (*provider.Response, error) {
	resp := &provider.Response{StopReason: string(msg.StopReason), Model: string(msg.Model)}
	// The output cap (or the context window) stopped the answer.
	resp.Truncated = msg.StopReason == sdk.StopReasonMaxTokens || msg.StopReason == sdk.StopReasonModelContextWindowExceeded
	blocks := msg.Content
	if n := len(blocks); resp.Truncated && n > 0 && blocks[n-1].Type == "tool_use" {
		// The cap cut this call while its input was being written. A
		// streamed answer cannot show it: the SDK replaces unfinished
		// input with {} when the block stops, which is also what a call
		// without arguments sends. Anthropic documents a trailing
		// tool_use at max_tokens as incomplete, so it is dropped rather
		// than run on half its arguments.
		blocks = blocks[:n-1]
	}
	var text []core.Part
	flush := func() {
		if len(text) > 0 {
			resp.Items = append(resp.Items, core.Item{Type: core.TypeMessage, Role: core.RoleAssistant, Content: text})
			text = nil
		}
	}
	for _, blk := range blocks {
		switch blk.Type {
		case "text":
			// Whitespace-only blocks are not kept: replayed, the API
			// would reject them.
			if hasText(blk.Text) {
				text = append(text, core.Part{Type: "output_text", Text: blk.Text})
			}
		case "tool_use":
			flush()
			args := "{}"
			if raw := bytes.TrimSpace(blk.Input); len(raw) > 0 {
				var buf bytes.Buffer
				if err := json.Compact(&buf, raw); err != nil {
					return nil, &provider.Error{Provider: providerName, Message: fmt.Sprintf("tool_use %q input is not JSON", blk.Name), Err: err}
				}
				args = buf.String()
			}
			resp.Items = append(resp.Items, core.FunctionCall(blk.ID, names.Original(blk.Name), args))
		}
		// Thinking and server-tool blocks have no item form; they are
		// not replayed.
	}
	flush()
	u := msg.Usage
	resp.OutputTokens = int(u.OutputTokens)
	resp.InputTokens = int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens)
	// input_tokens excludes what was read from or written to the cache.
	resp.Cache = core.CacheReport{
		Reported:       u.JSON.CacheReadInputTokens.Valid() || u.JSON.CacheCreationInputTokens.Valid(),
		ReadTokens:     int(u.CacheReadInputTokens),
		WriteTokens:    int(u.CacheCreationInputTokens),
		UncachedTokens: int(u.InputTokens),
		Miss:           cacheMiss(msg),
	}
	return resp, nil
}

// cacheTTL is the cache_control ttl of a request's breakpoints: one hour
// when it asks for more than the default five minutes (its CacheTTL),
// five when it asks for at most that, the adapter's Options.CacheTTL
// when it asks for nothing. An explicit "5m" is sent only to override an
// adapter set to "1h", so the default request stays byte-identical.
func (m *Model) cacheTTL(req provider.Request) string {
	switch {
	case req.CacheTTL > 5*time.Minute:
		return "1h"
	case req.CacheTTL > 0 && m.opts.CacheTTL == "1h":
		return "5m"
	}
	return m.opts.CacheTTL
}
