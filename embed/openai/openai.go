package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/internal/httpx"
)

// DefaultBaseURL is OpenAI's API root.
const DefaultBaseURL = "https://api.openai.com/v1"

// Options configures an Embedder. Only Model is required.
type Options struct {
	// BaseURL is the API root that /embeddings is appended to, e.g.
	// "https://api.openai.com/v1", "http://localhost:11434/v1" (Ollama),
	// "http://localhost:8000/v1" (vLLM) or "http://localhost:8080/v1" (TEI).
	// Empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer KEY"; empty sends no
	// Authorization header (local servers).
	APIKey string
	// Model is the model name sent in every request.
	Model string
	// Dimensions, when > 0, is sent as "dimensions" (supported by
	// text-embedding-3-*) and every returned vector must have that length.
	// When 0 the dimension is learned from the first response.
	Dimensions int
	// EncodingFormat is "float" (default) or "base64". base64 halves the
	// response size; every server listed above accepts float.
	EncodingFormat string
	// BatchSize is the largest number of texts per request; a larger Embed
	// call is split into sequential requests. 0 means 256 (OpenAI accepts
	// up to 2048 inputs per request).
	BatchSize int
	// Timeout bounds each HTTP attempt. 0 means 60s; negative means no
	// per-attempt bound (the ctx still applies).
	Timeout time.Duration
	// Retry says how failed attempts are retried; the zero value is sensible.
	Retry embed.RetryPolicy
	// HTTPClient is used for requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Header holds extra headers for every request (e.g.
	// OpenAI-Organization, OpenAI-Project).
	Header http.Header
}

// Embedder calls an OpenAI-compatible /v1/embeddings endpoint. It is safe for
// concurrent use.
type Embedder struct {
	url    string
	model  string
	id     string
	format string
	dims   int
	batch  int
	client *httpx.Client
	dim    httpx.Dim
}

var _ embed.Embedder = (*Embedder)(nil)

// New checks opts and returns an Embedder. It makes no request.
func New(opts Options) (*Embedder, error) {
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if err := httpx.CheckOptions("openai", opts.Model, base); err != nil {
		return nil, err
	}
	format := opts.EncodingFormat
	switch format {
	case "":
		format = "float"
	case "float", "base64":
	default:
		return nil, fmt.Errorf("openai embeddings: %w: EncodingFormat %q (want float or base64)", embed.ErrInvalidConfig, format)
	}
	if err := httpx.CheckDimensions("openai", opts.Dimensions); err != nil {
		return nil, err
	}
	batch := opts.BatchSize
	if batch <= 0 {
		batch = 256
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	h := httpx.CloneHeader(opts.Header)
	if opts.APIKey != "" {
		h.Set("Authorization", "Bearer "+opts.APIKey)
	}
	e := &Embedder{
		url:    strings.TrimRight(base, "/") + "/embeddings",
		model:  opts.Model,
		id:     embed.Spec{Kind: embed.KindOpenAI, Model: opts.Model, Dim: opts.Dimensions}.ID(),
		format: format,
		dims:   opts.Dimensions,
		batch:  batch,
		client: &httpx.Client{
			Backend:    "openai",
			HTTP:       opts.HTTPClient,
			Timeout:    timeout,
			Retry:      opts.Retry,
			Header:     h,
			ParseError: parseError,
		},
	}
	e.dim.Set(opts.Dimensions)
	return e, nil
}

// Model returns "openai:MODEL", with "?dimensions=N" appended when
// Dimensions was set (a shortened text-embedding-3 vector is a different
// space from the full one).
func (e *Embedder) Model() string { return e.id }

// Dimension returns the configured dimension, or the one learned from the
// first response, or 0 before any response.
func (e *Embedder) Dimension() int { return e.dim.Get() }

type request struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format,omitempty"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

type response struct {
	Data []struct {
		Index     *int            `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
}

// Embed implements embed.Embedder. Texts are sent in batches of BatchSize,
// one request after another; vectors come back in input order whatever order
// the server lists them in.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return httpx.EmbedBatches(ctx, texts, e.batch, e.embedBatch)
}

func (e *Embedder) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	var resp response
	if err := e.client.PostJSON(ctx, e.url, request{Model: e.model, Input: texts, EncodingFormat: e.format, Dimensions: e.dims}, &resp); err != nil {
		return nil, err
	}
	if err := httpx.CheckCount("openai", len(resp.Data), len(texts)); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	withIndex := resp.Data[0].Index != nil
	for i, d := range resp.Data {
		pos := i
		if (d.Index != nil) != withIndex {
			return nil, fmt.Errorf("openai embeddings: %w: some data items lack an index", embed.ErrBadResponse)
		}
		if withIndex {
			pos = *d.Index
		}
		if pos < 0 || pos >= len(texts) {
			return nil, fmt.Errorf("openai embeddings: %w: index %d out of range [0,%d)", embed.ErrBadResponse, pos, len(texts))
		}
		if out[pos] != nil {
			return nil, fmt.Errorf("openai embeddings: %w: duplicate index %d", embed.ErrBadResponse, pos)
		}
		v, err := decodeVector(d.Embedding)
		if err != nil {
			return nil, fmt.Errorf("openai embeddings: %w: item %d: %w", embed.ErrBadResponse, i, err)
		}
		out[pos] = v
	}
	if err := e.dim.Check("openai", out); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeVector accepts a JSON array of numbers or a base64 string of
// little-endian float32s, whichever the server sent.
func decodeVector(raw json.RawMessage) ([]float32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, fmt.Errorf("missing embedding")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("base64 embedding: %w", err)
		}
		if len(b)%4 != 0 {
			return nil, fmt.Errorf("base64 embedding has %d bytes, not a multiple of 4", len(b))
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			// Raw bits can encode what JSON numbers cannot: NaN and ±Inf.
			if f := float64(v[i]); math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("base64 embedding: component %d is %v", i, v[i])
			}
		}
		return v, nil
	}
	var v []float32
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// parseError reads OpenAI's {"error":{"message","type","code"}}, and the
// {"error":"..."} or {"message":"..."} shapes other servers use.
func parseError(body []byte) (msg, typ, code string) {
	var o struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal(body, &o) != nil {
		return "", "", ""
	}
	if len(o.Error) > 0 && o.Error[0] == '{' {
		var e struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(o.Error, &e) == nil {
			code := strings.Trim(string(e.Code), `"`)
			if code == "null" {
				code = ""
			}
			return e.Message, e.Type, code
		}
	}
	if len(o.Error) > 0 && o.Error[0] == '"' {
		var s string
		if json.Unmarshal(o.Error, &s) == nil {
			return s, "", ""
		}
	}
	if o.Message != "" {
		return o.Message, "", ""
	}
	return o.Detail, "", ""
}
