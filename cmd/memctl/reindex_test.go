package main_test

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stratamem/strata/embedded"
)

// embeddingServer is an OpenAI-compatible /v1/embeddings endpoint that
// answers failAfter requests and then refuses (400, not retried), to
// interrupt a reindex for real, through its embedder.
type embeddingServer struct {
	*httptest.Server
	requests  atomic.Int64
	failAfter atomic.Int64
}

func newEmbeddingServer(t *testing.T, dim int) *embeddingServer {
	s := &embeddingServer{}
	s.failAfter.Store(math.MaxInt64)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" {
			http.NotFound(w, r)
			return
		}
		if s.requests.Add(1) > s.failAfter.Load() {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"message":"quota exhausted","type":"invalid_request_error"}}`))
			return
		}
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var data []item
		for i, text := range req.Input {
			v := make([]float32, dim)
			for _, word := range strings.Fields(text) {
				h := fnv.New32a()
				h.Write([]byte(word))
				v[h.Sum32()%uint32(dim)] += 1
			}
			v[0] += 0.01
			data = append(data, item{Index: i, Embedding: v})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data, "model": "test-embed"})
	}))
	t.Cleanup(s.Close)
	return s
}

// seedMany imports n generated records without vectors.
func seedMany(t *testing.T, e *env, store string, n int) {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"id":"obs-%04d","layer":"observations","kind":"observation","scope":{"thread":"t%d"},"text":"observation number %d about topic %d","metadata":{"importance":"3"},"created_at":"2026-01-01T00:%02d:%02dZ"}`+"\n",
			i, i%7, i, i%13, i/60, i%60)
	}
	e.input(b.String()).ok("--store", store, "--embedder", "hash:64", "import")
}

func TestReindexResumes(t *testing.T) {
	e := newEnv(t)
	srv := newEmbeddingServer(t, 16)
	e = e.with("OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY=test")
	store := filepath.Join(e.dir, "data")
	seedMany(t, e, store, 200)
	before := e.ok("--store", store, "export", "--no-vectors", "--no-header").stdout
	const target = "openai:test-embed?dimensions=16"

	// Interrupted: the embedding service fails after 3 batches of 20.
	srv.failAfter.Store(3)
	e.fails(1, "quota exhausted", "--store", store, "reindex", target, "--batch", "20")
	if meta, _ := embedded.ReadMeta(store); meta.Embedder != "hash-64" {
		t.Fatalf("the store switched embedder before the reindex finished: %+v", meta)
	}
	// The store stays usable meanwhile, on its old vectors.
	if n := len(jsonLines(t, e.ok("--store", store, "ls", "--json", "--all").stdout)); n != 200 {
		t.Fatalf("%d records during the interrupted reindex", n)
	}
	// Resumed: the 60 records embedded before are kept.
	srv.failAfter.Store(math.MaxInt64)
	srv.requests.Store(0)
	out := e.ok("--store", store, "reindex", target, "--batch", "20").stdout
	if !strings.Contains(out, "200 records, 140 written, 60 already there, verified 200/200 (target holds 200)") {
		t.Errorf("resumed reindex: %s", out)
	}
	if got := srv.requests.Load(); got != 7 {
		t.Errorf("resumed reindex made %d embedding requests, want 7 (140 records / 20)", got)
	}
	meta, err := embedded.ReadMeta(store)
	if err != nil || meta.Embedder != target || meta.Dimension != 16 {
		t.Fatalf("meta after reindex: %+v %v", meta, err)
	}
	if _, err := os.Stat(filepath.Join(store, ".reindex")); err == nil {
		t.Error("work directory left behind")
	}
	if after := e.ok("--store", store, "export", "--no-vectors", "--no-header").stdout; after != before {
		t.Error("reindex changed records beyond their vectors")
	}
	var r record
	decodeJSON(t, e.ok("--store", store, "show", "obs-0042", "--json", "--vectors").stdout, &r)
	if len(r.Vector) != 16 {
		t.Errorf("vector has %d values after reindex", len(r.Vector))
	}
	// The query is embedded by the new embedder: the record's own text
	// scores 1.
	hits := jsonLines(t, e.ok("--store", store, "search", "observation number 42 about topic 3", "--json", "-n", "5").stdout)
	found := false
	for _, h := range hits {
		found = found || h.ID == "obs-0042" && h.Score > 0.999
	}
	if !found {
		t.Errorf("search with the new embedder: %+v", hits)
	}
	// The old embedder no longer matches the store.
	e.fails(1, "reindex", "--store", store, "--embedder", "hash:64", "search", "x")
	e.ok("--store", store, "reindex", target) // nothing to do
	e.fails(2, "invalid embedder", "--store", store, "reindex", "word2vec")
}

// TestReindexFinishesSwap: a crash while switching collections is
// finished by the next reindex, and other commands refuse the store
// until then instead of reading half-switched data.
func TestReindexFinishesSwap(t *testing.T) {
	e := newEnv(t)
	store, done := filepath.Join(e.dir, "data"), filepath.Join(e.dir, "done")
	seedMany(t, e, store, 30)
	e.ok("migrate", "--from", store, "--to", done)
	e.ok("--store", done, "reindex", "hash:32")
	// The state a crash right after "phase swap" leaves.
	work := filepath.Join(store, ".reindex")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(done, "records"), filepath.Join(work, "records")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "state.json"), []byte(`{"embedder":"hash-32","dimension":32,"phase":"swap"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	e.fails(1, "memctl reindex", "--store", store, "ls")
	e.fails(1, "finish it first", "--store", store, "reindex", "hash:16")
	e.ok("--store", store, "reindex", "hash:32")
	meta, _ := embedded.ReadMeta(store)
	if meta.Embedder != "hash-32" || meta.Dimension != 32 {
		t.Fatalf("meta %+v", meta)
	}
	if n := len(jsonLines(t, e.ok("--store", store, "ls", "--json", "--all").stdout)); n != 30 {
		t.Errorf("%d records after the swap", n)
	}
}
