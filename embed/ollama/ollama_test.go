package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// fakeOllama speaks Ollama's documented /api/embed format:
// {"model","input":[...]} -> {"model","embeddings":[[...],...]}, errors as
// {"error":"..."}.
type fakeOllama struct {
	dim    int
	mu     sync.Mutex
	reqs   []map[string]any
	script []func(w http.ResponseWriter, r *http.Request) bool
	srv    *httptest.Server
}

func newFake(t *testing.T, dim int) *fakeOllama {
	f := &fakeOllama{dim: dim}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOllama) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/api/embed" {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":"404 page not found"}`)
		return
	}
	var raw map[string]any
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &raw); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":%q}`, err.Error())
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, raw)
	var step func(http.ResponseWriter, *http.Request) bool
	if len(f.script) > 0 {
		step, f.script = f.script[0], f.script[1:]
	}
	f.mu.Unlock()
	if step != nil && step(w, r) {
		return
	}
	var req request
	_ = json.Unmarshal(body, &req)
	if req.Model != "nomic-embed-text" {
		w.WriteHeader(http.StatusNotFound)
		msg, _ := json.Marshal(map[string]string{"error": fmt.Sprintf("model %q not found, try pulling it first", req.Model)})
		w.Write(msg)
		return
	}
	vecs, err := hashing.New(f.dim).Embed(r.Context(), req.Input)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":%q}`, err.Error())
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"model": req.Model, "embeddings": vecs, "total_duration": 1000, "load_duration": 10, "prompt_eval_count": len(req.Input),
	})
}

func (f *fakeOllama) requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

func mustNew(t *testing.T, o Options) *Embedder {
	t.Helper()
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	e.client.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	return e
}

func TestBatchingAndWireFormat(t *testing.T) {
	f := newFake(t, 12)
	no := false
	e := mustNew(t, Options{BaseURL: f.srv.URL + "/", Model: "nomic-embed-text", BatchSize: 2, Truncate: &no, KeepAlive: "5m"})
	in := []string{"one fish", "two fish", "red fish", "blue fish", "old fish"}
	got, err := e.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := hashing.New(12).Embed(context.Background(), in)
	for i := range in {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("vector %d is not the one for its text", i)
		}
	}
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	r0 := reqs[0]
	if r0["model"] != "nomic-embed-text" || r0["truncate"] != false || r0["keep_alive"] != "5m" || len(r0["input"].([]any)) != 2 {
		t.Errorf("request %v", r0)
	}
	if _, ok := r0["dimensions"]; ok {
		t.Error("dimensions sent though not configured")
	}
	if e.Dimension() != 12 || e.Model() != "ollama:nomic-embed-text" {
		t.Errorf("Dimension=%d Model=%q", e.Dimension(), e.Model())
	}
}

func TestModelNotFoundIsTypedAndNotRetried(t *testing.T) {
	f := newFake(t, 4)
	e := mustNew(t, Options{BaseURL: f.srv.URL, Model: "missing-model"})
	_, err := e.Embed(context.Background(), []string{"x"})
	var he *embed.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 404 || !strings.Contains(he.Message, "try pulling it first") || he.Backend != "ollama" {
		t.Fatalf("error %v", err)
	}
	if len(f.requests()) != 1 {
		t.Errorf("%d requests", len(f.requests()))
	}
}

func TestServerErrorThenSuccess(t *testing.T) {
	f := newFake(t, 4)
	f.script = append(f.script, func(w http.ResponseWriter, _ *http.Request) bool {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":"llama runner process has terminated"}`)
		return true
	})
	e := mustNew(t, Options{BaseURL: f.srv.URL, Model: "nomic-embed-text"})
	if _, err := e.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if len(f.requests()) != 2 {
		t.Errorf("%d requests, want 2", len(f.requests()))
	}
}

func TestRetriesExhausted(t *testing.T) {
	f := newFake(t, 4)
	for range 5 {
		f.script = append(f.script, func(w http.ResponseWriter, _ *http.Request) bool {
			w.WriteHeader(http.StatusBadGateway)
			return true
		})
	}
	e := mustNew(t, Options{BaseURL: f.srv.URL, Model: "nomic-embed-text", Retry: embed.RetryPolicy{MaxRetries: 1}})
	_, err := e.Embed(context.Background(), []string{"x"})
	var he *embed.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 502 || he.Attempts != 2 {
		t.Fatalf("error %v", err)
	}
}

func TestMalformedAndInconsistent(t *testing.T) {
	for name, tc := range map[string]struct {
		body string
		want error
	}{
		"not json":    {`{"embeddings": [[1,2]`, embed.ErrBadResponse},
		"wrong count": {`{"embeddings": [[1,2]]}`, embed.ErrBadResponse},
		"empty vec":   {`{"embeddings": [[], [1]]}`, embed.ErrBadResponse},
		"ragged":      {`{"embeddings": [[1,2], [1,2,3]]}`, embed.ErrDimensionMismatch},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, 4)
			f.script = append(f.script, func(w http.ResponseWriter, _ *http.Request) bool {
				io.WriteString(w, tc.body)
				return true
			})
			e := mustNew(t, Options{BaseURL: f.srv.URL, Model: "nomic-embed-text"})
			if _, err := e.Embed(context.Background(), []string{"a", "b"}); !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDimensionsOption(t *testing.T) {
	f := newFake(t, 6)
	e := mustNew(t, Options{BaseURL: f.srv.URL, Model: "nomic-embed-text", Dimensions: 6})
	if _, err := e.Embed(context.Background(), []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if f.requests()[0]["dimensions"] != float64(6) || e.Model() != "ollama:nomic-embed-text?dimensions=6" {
		t.Errorf("request %v, model %q", f.requests()[0], e.Model())
	}
	f.dim = 7
	if _, err := e.Embed(context.Background(), []string{"a"}); !errors.Is(err, embed.ErrDimensionMismatch) {
		t.Errorf("error %v", err)
	}
}

func TestContextCancelledDuringRequest(t *testing.T) {
	f := newFake(t, 4)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f.script = append(f.script, func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return true
	})
	e := mustNew(t, Options{BaseURL: f.srv.URL, Model: "nomic-embed-text"})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.Embed(ctx, []string{"x"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v", err)
	}
}

func TestValidation(t *testing.T) {
	if _, err := New(Options{}); !errors.Is(err, embed.ErrInvalidConfig) {
		t.Errorf("no model: %v", err)
	}
	if _, err := New(Options{Model: "m", BaseURL: "::"}); !errors.Is(err, embed.ErrInvalidConfig) {
		t.Errorf("bad url: %v", err)
	}
	e, err := New(Options{Model: "m"})
	if err != nil || e.url != "http://localhost:11434/api/embed" {
		t.Errorf("default url: %v %v", e, err)
	}
	if _, err := e.Embed(context.Background(), []string{}); !errors.Is(err, embed.ErrEmptyInput) {
		t.Errorf("empty batch: %v", err)
	}
}
