package semantic_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
)

var day0 = time.Date(2024, 3, 4, 9, 0, 0, 0, time.UTC) // a Monday

func newClock() *memtest.Clock { return &memtest.Clock{T: day0} }

func newLayer(t *testing.T, store *memory.Store, opts semantic.Options) *semantic.Layer {
	t.Helper()
	l, err := semantic.New(store, opts)
	if err != nil {
		t.Fatalf("semantic.New: %v", err)
	}
	return l
}

func newRuntime(t *testing.T, layers ...core.AnyLayer) *core.Runtime {
	t.Helper()
	rt, err := core.NewRuntime(core.Config{Layers: layers})
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
	return rt
}

func start(t *testing.T, rt *core.Runtime, thread, resource string) *core.Session {
	t.Helper()
	s, err := rt.Start(context.Background(), core.RunOptions{ThreadID: thread, ResourceID: resource})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return s
}

// talk records user/assistant pairs, one minute apart.
func talk(t *testing.T, s *core.Session, clk *memtest.Clock, pairs ...string) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i+1 < len(pairs); i += 2 {
		clk.Advance(time.Minute)
		if err := s.Append(ctx, core.UserMessage(pairs[i])); err != nil {
			t.Fatalf("Append: %v", err)
		}
		clk.Advance(time.Minute)
		if err := s.Record(ctx, core.AssistantMessage(pairs[i+1])); err != nil {
			t.Fatalf("Record: %v", err)
		}
	}
	noDiagnostics(t, s)
}

func noDiagnostics(t *testing.T, s *core.Session) {
	t.Helper()
	if d := s.Diagnostics(); len(d) > 0 {
		t.Fatalf("unexpected diagnostics: %+v", d)
	}
}

// ask appends a user message and returns what the layer rendered for it.
func ask(t *testing.T, s *core.Session, clk *memtest.Clock, layerID, question string) string {
	t.Helper()
	clk.Advance(time.Minute)
	if err := s.Append(context.Background(), core.UserMessage(question)); err != nil {
		t.Fatalf("Append: %v", err)
	}
	return recalled(t, s, layerID)
}

// recalled assembles and returns the layer's output.
func recalled(t *testing.T, s *core.Session, layerID string) string {
	t.Helper()
	v, err := s.Assemble(context.Background())
	if err != nil {
		t.Fatalf("Assemble: %v", err)
	}
	noDiagnostics(t, s)
	var out []string
	for _, it := range v.Band(core.BandLive) {
		if it.ID == layerID {
			out = append(out, it.Text())
		}
	}
	return strings.Join(out, "\n")
}

func state(t *testing.T, s *core.Session, id string) semantic.State {
	t.Helper()
	st, ok := core.State[semantic.State](s, id)
	if !ok {
		t.Fatalf("no state for %q", id)
	}
	return st
}

// records lists the collection's records of a layer.
func records(t *testing.T, store *memory.Store, f vectorstore.Filter) []vectorstore.Record {
	t.Helper()
	var out []vectorstore.Record
	for r, err := range store.Records.All(context.Background(), vectorstore.ListOptions{Filter: f, WithVectors: true}) {
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		out = append(out, r)
	}
	return out
}

// flaky wraps an embedder: while failing it returns an error, and it can
// report a different model id.
type flaky struct {
	embed.Embedder
	mu    sync.Mutex
	fail  bool
	model string
	calls int
}

func (f *flaky) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	f.calls++
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return nil, errEmbedDown
	}
	return f.Embedder.Embed(ctx, texts)
}

func (f *flaky) Model() string {
	if f.model != "" {
		return f.model
	}
	return f.Embedder.Model()
}

func (f *flaky) setFail(v bool) {
	f.mu.Lock()
	f.fail = v
	f.mu.Unlock()
}

var errEmbedDown = &embedDown{}

type embedDown struct{}

func (*embedDown) Error() string { return "embedding service unavailable" }

// length is st.Len, failing the test on an error.
func length(t *testing.T, st semantic.State) int {
	t.Helper()
	n, err := st.Len(context.Background())
	if err != nil {
		t.Fatalf("Len: %v", err)
	}
	return n
}

// pending is st.Pending, failing the test on an error.
func pending(t *testing.T, st semantic.State) int {
	t.Helper()
	n, err := st.Pending(context.Background())
	if err != nil {
		t.Fatalf("Pending: %v", err)
	}
	return n
}
