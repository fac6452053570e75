package httpx

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/stratamem/strata/embed"
)

// CheckOptions checks the options every remote embedder requires: a
// model name and an http(s) base URL (already defaulted) naming a host.
// Errors wrap embed.ErrInvalidConfig.
func CheckOptions(backend, model, baseURL string) error {
	if strings.TrimSpace(model) == "" {
		return fmt.Errorf("%s embeddings: %w: Model is required", backend, embed.ErrInvalidConfig)
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s embeddings: %w: BaseURL %q is not an http(s) URL", backend, embed.ErrInvalidConfig, baseURL)
	}
	return nil
}

// CheckDimensions rejects a negative Dimensions option.
func CheckDimensions(backend string, n int) error {
	if n < 0 {
		return fmt.Errorf("%s embeddings: %w: Dimensions %d < 0", backend, embed.ErrInvalidConfig, n)
	}
	return nil
}

// CloneHeader returns a deep copy of h with canonical keys, so that a
// caller's later changes to h do not reach the requests.
func CloneHeader(h http.Header) http.Header {
	out := http.Header{}
	for k, vs := range h {
		out[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	return out
}

// PostJSON encodes req as JSON, posts it to url (see Post) and decodes the
// answer into resp. A response that is not valid JSON for resp is an error
// wrapping embed.ErrBadResponse.
func (c *Client) PostJSON(ctx context.Context, url string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%s embeddings: encoding request: %w", c.Backend, err)
	}
	data, err := c.Post(ctx, url, body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, resp); err != nil {
		return fmt.Errorf("%s embeddings: %w: decoding response: %w", c.Backend, embed.ErrBadResponse, err)
	}
	return nil
}

// CheckCount rejects a response holding got embeddings for want inputs.
func CheckCount(backend string, got, want int) error {
	if got != want {
		return fmt.Errorf("%s embeddings: %w: %d embeddings for %d inputs", backend, embed.ErrBadResponse, got, want)
	}
	return nil
}

// EmbedBatches validates texts (embed.ValidateTexts) and embeds them in
// consecutive batches of at most size, one call of embedBatch after
// another, each of which must return one vector per text of its batch.
// It returns the vectors in input order and stops at the first error.
func EmbedBatches(ctx context.Context, texts []string, size int, embedBatch func(context.Context, []string) ([][]float32, error)) ([][]float32, error) {
	if err := embed.ValidateTexts(texts); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for _, b := range Batches(len(texts), size) {
		vecs, err := embedBatch(ctx, texts[b[0]:b[1]])
		if err != nil {
			return nil, err
		}
		copy(out[b[0]:b[1]], vecs)
	}
	return out, nil
}
