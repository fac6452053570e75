package embedspec

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embed/ollama"
	"github.com/stratamem/strata/embed/openai"
	"github.com/stratamem/strata/embed/uselite"
)

// Kinds of embedder.
const (
	UseLite = "uselite"
	Hash    = "hash"
	OpenAI  = "openai"
	Ollama  = "ollama"
)

// MaxHashDimension bounds hash:DIM; the vector stores accept up to 65536,
// and a hashing embedder that wide is never useful.
const MaxHashDimension = 65536

// ErrInvalidSpec is wrapped by Parse for a specification it cannot read.
var ErrInvalidSpec = errors.New("invalid embedder")

// ErrMismatch is wrapped when an embedder does not produce what it was
// declared to (another model id or dimension).
var ErrMismatch = errors.New("embedder mismatch")

// Spec is a parsed embedder specification.
type Spec struct {
	// Kind is UseLite, Hash, OpenAI or Ollama.
	Kind string
	// Model is the remote model name (OpenAI, Ollama).
	Model string
	// Dim is the hashing dimension, or the requested dimensions of a
	// remote model (0: as the model answers).
	Dim int
}

// Parse reads an embedder specification. It accepts the flag forms
//
//	uselite                       the offline default model
//	hash:DIM                      deterministic hashing (tests)
//	openai:MODEL[?dimensions=N]   an OpenAI-compatible /v1/embeddings
//	ollama:MODEL[?dimensions=N]   Ollama's /api/embed
//
// and the model ids embedders report (embed.Embedder.Model), as recorded
// in an embedded store's strata.json: "use-lite-en@0.2.0", "hash-64",
// "openai:text-embedding-3-small?dimensions=256".
func Parse(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	bad := func(format string, args ...any) (Spec, error) {
		return Spec{}, fmt.Errorf("%w %q: "+format, append([]any{ErrInvalidSpec, s}, args...)...)
	}
	switch {
	case s == "":
		return bad("empty (want uselite, hash:DIM, openai:MODEL or ollama:MODEL)")
	case s == UseLite || s == uselite.ModelID || s == "default":
		return Spec{Kind: UseLite}, nil
	case strings.HasPrefix(s, "hash:") || strings.HasPrefix(s, "hash-"):
		n, err := strconv.Atoi(s[len("hash:"):])
		if err != nil || n < 1 || n > MaxHashDimension {
			return bad("the dimension must be an integer in 1..%d", MaxHashDimension)
		}
		return Spec{Kind: Hash, Dim: n}, nil
	}
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || (kind != OpenAI && kind != Ollama) {
		return bad("want uselite, hash:DIM, openai:MODEL or ollama:MODEL")
	}
	model, query, _ := strings.Cut(rest, "?")
	if strings.TrimSpace(model) == "" {
		return bad("no model name after %q", kind+":")
	}
	sp := Spec{Kind: kind, Model: model}
	if query != "" {
		q, err := url.ParseQuery(query)
		if err != nil {
			return bad("cannot parse %q", query)
		}
		for k := range q {
			if k != "dimensions" {
				return bad("unknown parameter %q (known: dimensions)", k)
			}
		}
		n, err := strconv.Atoi(q.Get("dimensions"))
		if err != nil || n < 1 || n > MaxHashDimension {
			return bad("dimensions must be an integer in 1..%d", MaxHashDimension)
		}
		sp.Dim = n
	}
	return sp, nil
}

// ID is the model id the embedder reports (embed.Embedder.Model), the
// identity of its vector space.
func (s Spec) ID() string {
	switch s.Kind {
	case UseLite:
		return uselite.ModelID
	case Hash:
		return hashing.New(s.Dim).Model()
	}
	id := s.Kind + ":" + s.Model
	if s.Dim > 0 {
		id += "?dimensions=" + strconv.Itoa(s.Dim)
	}
	return id
}

// String is the flag form of s.
func (s Spec) String() string {
	switch s.Kind {
	case UseLite:
		return UseLite
	case Hash:
		return Hash + ":" + strconv.Itoa(s.Dim)
	}
	return s.ID()
}

// KnownDimension is the dimension s declares without loading anything: the
// hashing dimension or the requested dimensions of a remote model; 0 when
// only the model knows (the default model, a remote model without
// dimensions).
func (s Spec) KnownDimension() int {
	if s.Kind == Hash || s.Kind == OpenAI || s.Kind == Ollama {
		return s.Dim
	}
	return 0
}

// New builds the embedder. The default model is loaded from disk
// (uselite.Default: $STRATA_MODEL_DIR, $STRATA_DATA_DIR or the nearest
// .strata/models); remote embedders read their address and key from the
// environment: OPENAI_BASE_URL and OPENAI_API_KEY, OLLAMA_HOST. No request
// is made.
func (s Spec) New() (embed.Embedder, error) {
	switch s.Kind {
	case UseLite:
		return uselite.Default()
	case Hash:
		return hashing.New(s.Dim), nil
	case OpenAI:
		return openai.New(openai.Options{Model: s.Model, Dimensions: s.Dim,
			BaseURL: os.Getenv("OPENAI_BASE_URL"), APIKey: os.Getenv("OPENAI_API_KEY")})
	case Ollama:
		base := os.Getenv("OLLAMA_HOST")
		if base != "" && !strings.Contains(base, "://") {
			base = "http://" + base
		}
		return ollama.New(ollama.Options{Model: s.Model, Dimensions: s.Dim, BaseURL: base})
	}
	return nil, fmt.Errorf("%w: unknown kind %q", ErrInvalidSpec, s.Kind)
}

// Lazy is an embed.Embedder that knows its model id and dimension before
// the model is loaded, and loads it on the first Embed. It lets memctl open
// a store whose records were embedded with a large model for commands that
// never embed (ls, show, rm, export), at no cost.
type Lazy struct {
	spec Spec
	dim  int

	once sync.Once
	e    embed.Embedder
	err  error
}

var _ embed.Embedder = (*Lazy)(nil)

// NewLazy returns a lazy embedder for spec with dimension dim (0: learn it
// by loading, see Resolve).
func NewLazy(spec Spec, dim int) *Lazy {
	if dim == 0 {
		dim = spec.KnownDimension()
	}
	return &Lazy{spec: spec, dim: dim}
}

// Spec returns the specification.
func (l *Lazy) Spec() Spec { return l.spec }

// Model implements embed.Embedder.
func (l *Lazy) Model() string { return l.spec.ID() }

// Dimension implements embed.Embedder: the declared dimension, or the
// loaded model's when none was declared.
func (l *Lazy) Dimension() int {
	if l.dim > 0 {
		return l.dim
	}
	if l.e != nil {
		return l.e.Dimension()
	}
	return 0
}

// Loaded reports whether the model has been loaded.
func (l *Lazy) Loaded() bool { return l.e != nil }

// Load loads the model if needed and checks it against the declared id
// and dimension.
func (l *Lazy) Load() (embed.Embedder, error) {
	l.once.Do(func() {
		e, err := l.spec.New()
		if err != nil {
			l.err = err
			return
		}
		if e.Model() != l.spec.ID() {
			l.err = fmt.Errorf("%w: %s reports model %q", ErrMismatch, l.spec, e.Model())
			return
		}
		if d := e.Dimension(); d != 0 && l.dim != 0 && d != l.dim {
			l.err = fmt.Errorf("%w: %s has dimension %d, the store's is %d", ErrMismatch, l.spec, d, l.dim)
			return
		}
		l.e = e
	})
	return l.e, l.err
}

// Resolve makes the dimension known: it loads the model and, for a remote
// model that only learns its dimension from an answer, embeds one probe
// text.
func (l *Lazy) Resolve(ctx context.Context) (int, error) {
	if l.dim > 0 {
		return l.dim, nil
	}
	e, err := l.Load()
	if err != nil {
		return 0, err
	}
	if d := e.Dimension(); d > 0 {
		l.dim = d
		return d, nil
	}
	vs, err := e.Embed(ctx, []string{"dimension probe"})
	if err != nil {
		return 0, err
	}
	if len(vs) != 1 || len(vs[0]) == 0 {
		return 0, fmt.Errorf("%w: %s returned no vector for a probe", embed.ErrBadResponse, l.spec)
	}
	l.dim = len(vs[0])
	return l.dim, nil
}

// Embed implements embed.Embedder, loading the model on first use. Every
// vector must have the declared dimension.
func (l *Lazy) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e, err := l.Load()
	if err != nil {
		return nil, err
	}
	vs, err := e.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	for i, v := range vs {
		if l.dim > 0 && len(v) != l.dim {
			return nil, fmt.Errorf("%w: %s returned %d values for text %d, want %d", embed.ErrDimensionMismatch, l.spec, len(v), i, l.dim)
		}
	}
	return vs, nil
}
