package ollama

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/internal/httpx"
)

// DefaultBaseURL is where a local Ollama listens.
const DefaultBaseURL = "http://localhost:11434"

// Options configures an Embedder. Only Model is required.
type Options struct {
	// BaseURL is the server root; /api/embed is appended. Empty means
	// DefaultBaseURL.
	BaseURL string
	// Model is the Ollama model, e.g. "nomic-embed-text" or "all-minilm:l6-v2".
	Model string
	// Dimensions, when > 0, is sent as "dimensions" (models that support
	// truncated output) and enforced on every vector. When 0 the dimension is
	// learned from the first response.
	Dimensions int
	// Truncate, when non-nil, is sent as "truncate": false makes Ollama
	// return an error for inputs longer than the context instead of cutting
	// them.
	Truncate *bool
	// KeepAlive, when set, is sent as "keep_alive" (e.g. "5m", "-1").
	KeepAlive string
	// BatchSize is the largest number of texts per request. 0 means 64.
	BatchSize int
	// Timeout bounds each HTTP attempt. 0 means 120s (the first call may
	// load the model); negative means no per-attempt bound.
	Timeout time.Duration
	// Retry says how failed attempts are retried; the zero value is sensible.
	Retry embed.RetryPolicy
	// HTTPClient is used for requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Header holds extra headers for every request (e.g. a proxy's auth).
	Header http.Header
}

// Embedder calls Ollama's /api/embed. It is safe for concurrent use.
type Embedder struct {
	url    string
	opts   Options
	id     string
	client *httpx.Client
	dim    httpx.Dim
}

var _ embed.Embedder = (*Embedder)(nil)

// New checks opts and returns an Embedder. It makes no request.
func New(opts Options) (*Embedder, error) {
	if strings.TrimSpace(opts.Model) == "" {
		return nil, fmt.Errorf("ollama embeddings: %w: Model is required", embed.ErrInvalidConfig)
	}
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(opts.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("ollama embeddings: %w: BaseURL %q is not an http(s) URL", embed.ErrInvalidConfig, opts.BaseURL)
	}
	if opts.Dimensions < 0 {
		return nil, fmt.Errorf("ollama embeddings: %w: Dimensions %d < 0", embed.ErrInvalidConfig, opts.Dimensions)
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 64
	}
	if opts.Timeout == 0 {
		opts.Timeout = 120 * time.Second
	}
	h := http.Header{}
	for k, vs := range opts.Header {
		h[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	e := &Embedder{
		url:  strings.TrimRight(opts.BaseURL, "/") + "/api/embed",
		opts: opts,
		id:   "ollama:" + opts.Model,
		client: &httpx.Client{
			Backend:    "ollama",
			HTTP:       opts.HTTPClient,
			Timeout:    opts.Timeout,
			Retry:      opts.Retry,
			Header:     h,
			ParseError: parseError,
		},
	}
	if opts.Dimensions > 0 {
		e.id += "?dimensions=" + strconv.Itoa(opts.Dimensions)
		e.dim.Set(opts.Dimensions)
	}
	return e, nil
}

// Model returns "ollama:MODEL" (with "?dimensions=N" when Dimensions is set).
func (e *Embedder) Model() string { return e.id }

// Dimension returns the configured or learned dimension, 0 before the first
// response when none was configured.
func (e *Embedder) Dimension() int { return e.dim.Get() }

type request struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Truncate   *bool    `json:"truncate,omitempty"`
	KeepAlive  string   `json:"keep_alive,omitempty"`
	Dimensions int      `json:"dimensions,omitempty"`
}

type response struct {
	Model      string      `json:"model"`
	Embeddings [][]float32 `json:"embeddings"`
}

// Embed implements embed.Embedder.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := embed.ValidateTexts(texts); err != nil {
		return nil, err
	}
	out := make([][]float32, 0, len(texts))
	for _, b := range httpx.Batches(len(texts), e.opts.BatchSize) {
		vecs, err := e.embedBatch(ctx, texts[b[0]:b[1]])
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *Embedder) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(request{
		Model: e.opts.Model, Input: texts, Truncate: e.opts.Truncate,
		KeepAlive: e.opts.KeepAlive, Dimensions: e.opts.Dimensions,
	})
	if err != nil {
		return nil, fmt.Errorf("ollama embeddings: encoding request: %w", err)
	}
	data, err := e.client.Post(ctx, e.url, body)
	if err != nil {
		return nil, err
	}
	var resp response
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Errorf("ollama embeddings: %w: decoding response: %w", embed.ErrBadResponse, err)
	}
	if len(resp.Embeddings) != len(texts) {
		return nil, fmt.Errorf("ollama embeddings: %w: %d embeddings for %d inputs", embed.ErrBadResponse, len(resp.Embeddings), len(texts))
	}
	if err := e.dim.Check("ollama", resp.Embeddings); err != nil {
		return nil, err
	}
	return resp.Embeddings, nil
}

func parseError(body []byte) (msg, typ, code string) {
	var o struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &o) == nil {
		return o.Error, "", ""
	}
	return "", "", ""
}
