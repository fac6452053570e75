package openai

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/hashing"
)

// fakeServer speaks the documented /v1/embeddings wire format. Vectors come
// from the hashing embedder so every text has a known, distinct answer. Each
// request is handled by the next function of script, if any, before the
// normal answer; a script function that returns true has written the
// response itself.
type fakeServer struct {
	t      *testing.T
	dim    int
	mu     sync.Mutex
	reqs   []request
	hdrs   []http.Header
	script []func(w http.ResponseWriter, r *http.Request, req request) bool
	// reverse lists data items in reverse index order.
	reverse bool
	srv     *httptest.Server
}

func newFake(t *testing.T, dim int) *fakeServer {
	f := &fakeServer{t: t, dim: dim}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","code":null}}`, err.Error())
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.hdrs = append(f.hdrs, r.Header.Clone())
	var step func(http.ResponseWriter, *http.Request, request) bool
	if len(f.script) > 0 {
		step, f.script = f.script[0], f.script[1:]
	}
	f.mu.Unlock()
	if step != nil && step(w, r, req) {
		return
	}
	vecs, err := hashing.New(f.dim).Embed(r.Context(), req.Input)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":%q}}`, err.Error())
		return
	}
	type item struct {
		Object    string `json:"object"`
		Embedding any    `json:"embedding"`
		Index     int    `json:"index"`
	}
	items := make([]item, len(vecs))
	for i, v := range vecs {
		var e any = v
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			e = base64.StdEncoding.EncodeToString(b)
		}
		items[i] = item{Object: "embedding", Embedding: e, Index: i}
	}
	if f.reverse {
		slices.Reverse(items)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list", "data": items, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)},
	})
}

func (f *fakeServer) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// recordSleeps replaces the backoff wait with a recorder.
func recordSleeps(e *Embedder) *[]time.Duration {
	var waits []time.Duration
	var mu sync.Mutex
	e.client.Sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	return &waits
}

func mustNew(t *testing.T, o Options) *Embedder {
	t.Helper()
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("text number %d about topic %d", i, i*7)
	}
	return out
}

func TestBatchingOrderingAndWireFormat(t *testing.T) {
	f := newFake(t, 16)
	f.reverse = true
	e := mustNew(t, Options{BaseURL: f.srv.URL + "/v1/", APIKey: "sk-test", Model: "text-embedding-3-small", BatchSize: 3,
		Header: http.Header{"Openai-Project": {"proj_1"}}})
	in := texts(7)
	got, err := e.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := hashing.New(16).Embed(context.Background(), in)
	for i := range in {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("vector %d is not the one for its text", i)
		}
	}
	reqs := f.requests()
	var sizes []int
	for _, r := range reqs {
		sizes = append(sizes, len(r.Input))
		if r.Model != "text-embedding-3-small" || r.EncodingFormat != "float" || r.Dimensions != 0 {
			t.Errorf("request %+v", r)
		}
	}
	if !slices.Equal(sizes, []int{3, 3, 1}) {
		t.Errorf("batch sizes %v, want [3 3 1]", sizes)
	}
	h := f.hdrs[0]
	if h.Get("Authorization") != "Bearer sk-test" || h.Get("Content-Type") != "application/json" || h.Get("OpenAI-Project") != "proj_1" {
		t.Errorf("headers %v", h)
	}
	if e.Dimension() != 16 || e.Model() != "openai:text-embedding-3-small" {
		t.Errorf("Dimension=%d Model=%q", e.Dimension(), e.Model())
	}
}

func TestBase64AndDimensions(t *testing.T) {
	f := newFake(t, 8)
	e := mustNew(t, Options{BaseURL: f.srv.URL + "/v1", Model: "m", EncodingFormat: "base64", Dimensions: 8})
	if e.Dimension() != 8 || e.Model() != "openai:m?dimensions=8" {
		t.Errorf("Dimension=%d Model=%q", e.Dimension(), e.Model())
	}
	got, err := e.Embed(context.Background(), []string{"alpha beta"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := hashing.New(8).Embed(context.Background(), []string{"alpha beta"})
	if !slices.Equal(got[0], want[0]) {
		t.Errorf("base64 vector %v, want %v", got[0], want[0])
	}
	if r := f.requests()[0]; r.EncodingFormat != "base64" || r.Dimensions != 8 {
		t.Errorf("request %+v", r)
	}
	if _, ok := f.hdrs[0]["Authorization"]; ok {
		t.Error("Authorization sent without an API key")
	}
}

func TestRateLimitThenSuccessHonoursRetryAfter(t *testing.T) {
	f := newFake(t, 8)
	f.script = append(f.script, func(w http.ResponseWriter, _ *http.Request, _ request) bool {
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
		return true
	}, func(w http.ResponseWriter, _ *http.Request, _ request) bool {
		w.Header().Set("Retry-After-Ms", "1500")
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	})
	e := mustNew(t, Options{BaseURL: f.srv.URL + "/v1", Model: "m",
		Retry: embed.RetryPolicy{BaseDelay: 100 * time.Millisecond, NoJitter: true}})
	waits := recordSleeps(e)
	if _, err := e.Embed(context.Background(), []string{"hi"}); err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{2 * time.Second, 1500 * time.Millisecond}; !slices.Equal(*waits, want) {
		t.Errorf("waits %v, want %v (Retry-After over the 100ms/200ms backoff)", *waits, want)
	}
	if n := len(f.requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestRetryAfterTooLongGivesUp(t *testing.T) {
	f := newFake(t, 8)
	f.script = append(f.script, func(w http.ResponseWriter, _ *http.Request, _ request) bool {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	})
	e := mustNew(t, Options{BaseURL: f.srv.URL + "/v1", Model: "m"})
	waits := recordSleeps(e)
	_, err := e.Embed(context.Background(), []string{"hi"})
	var he *embed.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 429 || he.RetryAfter != time.Hour {
		t.Fatalf("error %v", err)
	}
	if len(*waits) != 0 || len(f.requests()) != 1 {
		t.Errorf("waited %v over %d requests", *waits, len(f.requests()))
	}
}

func TestServerErrorsExhaustRetries(t *testing.T) {
	f := newFake(t, 8)
	for range 10 {
		f.script = append(f.script, func(w http.ResponseWriter, _ *http.Request, _ request) bool {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"message":"The server is overloaded","type":"server_error","code":null}}`)
			return true
		})
	}
	schedule := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}
	e := mustNew(t, Options{BaseURL: f.srv.URL + "/v1", Model: "m", Retry: embed.RetryPolicy{Schedule: schedule}})
	waits := recordSleeps(e)
	_, err := e.Embed(context.Background(), []string{"hi"})
	var he *embed.HTTPError
	if !errors.As(err, &he) {
		t.Fatalf("error %v is not *embed.HTTPError", err)
	}
	if he.StatusCode != 503 || he.Attempts != 4 || he.Message != "The server is overloaded" || he.Type != "server_error" || !he.Retryable() {
		t.Errorf("HTTPError %+v", he)
	}
	if !strings.Contains(err.Error(), "HTTP 503") || !strings.Contains(err.Error(), "after 4 attempts") {
		t.Errorf("message %q", err)
	}
	if !slices.Equal(*waits, schedule) {
		t.Errorf("waits %v, want %v", *waits, schedule)
	}
	if n := len(f.requests()); n != 4 {
		t.Errorf("%d requests, want 4", n)
	}
}

func TestBadRequestIsNotRetried(t *testing.T) {
	f := newFake(t, 8)
	f.script = append(f.script, func(w http.ResponseWriter, _ *http.Request, _ request) bool {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`)
		return true
	})
	e := mustNew(t, Options{BaseURL: f.srv.URL + "/v1", Model: "m"})
	waits := recordSleeps(e)
	_, err := e.Embed(context.Background(), []string{"hi"})
	var he *embed.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 400 || he.Code != "context_length_exceeded" || he.Attempts != 1 || he.Retryable() {
		t.Fatalf("error %v (%+v)", err, he)
	}
	if len(*waits) != 0 || len(f.requests()) != 1 {
		t.Errorf("retried a 400: waits %v", *waits)
	}
}

func TestNonJSONErrorBody(t *testing.T) {
	f := newFake(t, 8)
	f.script = append(f.script, func(w http.ResponseWriter, _ *http.Request, _ request) bool {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "<html>401 Authorization Required</html>")
		return true
	})
	e := mustNew(t, Options{BaseURL: f.srv.URL + "/v1", Model: "m"})
	_, err := e.Embed(context.Background(), []string{"hi"})
	var he *embed.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 401 || !strings.Contains(he.Body, "Authorization Required") {
		t.Fatalf("error %v", err)
	}
}

func TestContextTimeout(t *testing.T) {
	f := newFake(t, 8)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f.script = append(f.script, func(w http.ResponseWriter, r *http.Request, _ request) bool {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return true
	})
	e := mustNew(t, Options{BaseURL: f.srv.URL + "/v1", Model: "m"})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := e.Embed(ctx, []string{"hi"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want context.DeadlineExceeded", err)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d requests after the caller's deadline, want 1", n)
	}
}

func TestPerAttemptTimeoutIsRetried(t *testing.T) {
	f := newFake(t, 8)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f.script = append(f.script, func(w http.ResponseWriter, r *http.Request, _ request) bool {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return true
	})
	e := mustNew(t, Options{BaseURL: f.srv.URL + "/v1", Model: "m", Timeout: 50 * time.Millisecond})
	waits := recordSleeps(e)
	got, err := e.Embed(context.Background(), []string{"hi"})
	if err != nil || len(got) != 1 {
		t.Fatalf("Embed = %v, %v", got, err)
	}
	if len(*waits) != 1 || len(f.requests()) != 2 {
		t.Errorf("waits %v, requests %d", *waits, len(f.requests()))
	}
}

func TestMalformedResponses(t *testing.T) {
	for name, tc := range map[string]struct {
		body string
		want error
	}{
		"not json":        {`{"data": [`, embed.ErrBadResponse},
		"html":            {`<html>ok</html>`, embed.ErrBadResponse},
		"too few":         {`{"data":[]}`, embed.ErrBadResponse},
		"duplicate index": {`{"data":[{"embedding":[1,0],"index":0},{"embedding":[0,1],"index":0}]}`, embed.ErrBadResponse},
		"index range":     {`{"data":[{"embedding":[1,0],"index":0},{"embedding":[0,1],"index":2}]}`, embed.ErrBadResponse},
		"mixed index":     {`{"data":[{"embedding":[1,0],"index":0},{"embedding":[0,1]}]}`, embed.ErrBadResponse},
		"null embedding":  {`{"data":[{"embedding":null,"index":0},{"embedding":[0,1],"index":1}]}`, embed.ErrBadResponse},
		"bad base64":      {`{"data":[{"embedding":"!!","index":0},{"embedding":[0,1],"index":1}]}`, embed.ErrBadResponse},
		"string numbers":  {`{"data":[{"embedding":["a"],"index":0},{"embedding":[0,1],"index":1}]}`, embed.ErrBadResponse},
		"ragged dims":     {`{"data":[{"embedding":[1,0],"index":0},{"embedding":[0,1,0],"index":1}]}`, embed.ErrDimensionMismatch},
		// Base64 carries raw float32 bits, so NaN and ±Inf can arrive.
		"base64 NaN":    {`{"data":[{"embedding":"AADAfwAAgD8=","index":0},{"embedding":[0,1],"index":1}]}`, embed.ErrBadResponse},
		"base64 Inf":    {`{"data":[{"embedding":[1,0],"index":0},{"embedding":"AACAfwAAgD8=","index":1}]}`, embed.ErrBadResponse},
		"base64 -Inf":   {`{"data":[{"embedding":"AACAPwAAgP8=","index":0},{"embedding":[0,1],"index":1}]}`, embed.ErrBadResponse},
		"json overflow": {`{"data":[{"embedding":[1e39,0],"index":0},{"embedding":[0,1],"index":1}]}`, embed.ErrBadResponse},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, 8)
			f.script = append(f.script, func(w http.ResponseWriter, _ *http.Request, _ request) bool {
				io.WriteString(w, tc.body)
				return true
			})
			e := mustNew(t, Options{BaseURL: f.srv.URL + "/v1", Model: "m"})
			_, err := e.Embed(context.Background(), []string{"a", "b"})
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDimensionChangesBetweenCalls(t *testing.T) {
	f := newFake(t, 8)
	e := mustNew(t, Options{BaseURL: f.srv.URL + "/v1", Model: "m"})
	if e.Dimension() != 0 {
		t.Fatalf("Dimension before any call = %d", e.Dimension())
	}
	if _, err := e.Embed(context.Background(), []string{"a"}); err != nil {
		t.Fatal(err)
	}
	f.dim = 9 // the server switched models under us
	_, err := e.Embed(context.Background(), []string{"b"})
	if !errors.Is(err, embed.ErrDimensionMismatch) || !strings.Contains(err.Error(), "9 dimensions, want 8") {
		t.Fatalf("error %v", err)
	}

	g := newFake(t, 5)
	e2 := mustNew(t, Options{BaseURL: g.srv.URL + "/v1", Model: "m", Dimensions: 4})
	if _, err := e2.Embed(context.Background(), []string{"a"}); !errors.Is(err, embed.ErrDimensionMismatch) {
		t.Fatalf("configured 4, got 5: %v", err)
	}
}

func TestEmptyInputMakesNoRequest(t *testing.T) {
	f := newFake(t, 8)
	e := mustNew(t, Options{BaseURL: f.srv.URL + "/v1", Model: "m"})
	for _, in := range [][]string{nil, {""}, {"a", "   "}} {
		if _, err := e.Embed(context.Background(), in); !errors.Is(err, embed.ErrEmptyInput) {
			t.Errorf("Embed(%q) = %v", in, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests for empty input", n)
	}
}

func TestTransportErrorIsRetriedThenReported(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	e := mustNew(t, Options{BaseURL: url + "/v1", Model: "m", Retry: embed.RetryPolicy{MaxRetries: 2, NoJitter: true}})
	waits := recordSleeps(e)
	_, err := e.Embed(context.Background(), []string{"a"})
	if err == nil || !strings.Contains(err.Error(), "openai embeddings: POST") {
		t.Fatalf("error %v", err)
	}
	if want := []time.Duration{500 * time.Millisecond, time.Second}; !slices.Equal(*waits, want) {
		t.Errorf("waits %v, want %v", *waits, want)
	}
}

func TestOptionsValidation(t *testing.T) {
	for name, o := range map[string]Options{
		"no model":   {},
		"bad url":    {Model: "m", BaseURL: "localhost:8080"},
		"bad scheme": {Model: "m", BaseURL: "ftp://x/v1"},
		"bad format": {Model: "m", EncodingFormat: "int8"},
		"neg dims":   {Model: "m", Dimensions: -1},
	} {
		if _, err := New(o); !errors.Is(err, embed.ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	e := mustNew(t, Options{Model: "text-embedding-3-large"})
	if e.url != "https://api.openai.com/v1/embeddings" {
		t.Errorf("default url %q", e.url)
	}
}
