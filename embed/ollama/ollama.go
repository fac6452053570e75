package ollama

import (
	"context"
	"encoding/json"
	"net/http"
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
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	if err := httpx.CheckOptions("ollama", opts.Model, opts.BaseURL); err != nil {
		return nil, err
	}
	if err := httpx.CheckDimensions("ollama", opts.Dimensions); err != nil {
		return nil, err
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 64
	}
	if opts.Timeout == 0 {
		opts.Timeout = 120 * time.Second
	}
	e := &Embedder{
		url:  strings.TrimRight(opts.BaseURL, "/") + "/api/embed",
		opts: opts,
		id:   embed.Spec{Kind: embed.KindOllama, Model: opts.Model, Dim: opts.Dimensions}.ID(),
		client: &httpx.Client{
			Backend:    "ollama",
			HTTP:       opts.HTTPClient,
			Timeout:    opts.Timeout,
			Retry:      opts.Retry,
			Header:     httpx.CloneHeader(opts.Header),
			ParseError: parseError,
		},
	}
	e.dim.Set(opts.Dimensions)
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
	return httpx.EmbedBatches(ctx, texts, e.opts.BatchSize, e.embedBatch)
}

func (e *Embedder) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	var resp response
	if err := e.client.PostJSON(ctx, e.url, request{
		Model: e.opts.Model, Input: texts, Truncate: e.opts.Truncate,
		KeepAlive: e.opts.KeepAlive, Dimensions: e.opts.Dimensions,
	}, &resp); err != nil {
		return nil, err
	}
	if err := httpx.CheckCount("ollama", len(resp.Embeddings), len(texts)); err != nil {
		return nil, err
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
