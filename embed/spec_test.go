package embed_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stratamem/strata/embed"
	_ "github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embed/ollama"
	"github.com/stratamem/strata/embed/openai"
)

func TestParseSpec(t *testing.T) {
	for in, want := range map[string]embed.Spec{
		"uselite":                   {Kind: embed.KindUseLite},
		"default":                   {Kind: embed.KindUseLite},
		embed.DefaultModelID:        {Kind: embed.KindUseLite},
		" hash:512 ":                {Kind: embed.KindHash, Dim: 512},
		"hash-8":                    {Kind: embed.KindHash, Dim: 8},
		"openai:text-embedding-3-s": {Kind: embed.KindOpenAI, Model: "text-embedding-3-s"},
		"openai:m?dimensions=256":   {Kind: embed.KindOpenAI, Model: "m", Dim: 256},
		"ollama:nomic-embed-text":   {Kind: embed.KindOllama, Model: "nomic-embed-text"},
	} {
		got, err := embed.ParseSpec(in)
		if err != nil || got != want {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", in, got, err, want)
			continue
		}
		// The model id parses back to the same spec.
		if back, err := embed.ParseSpec(got.ID()); err != nil || back != got {
			t.Errorf("ParseSpec(%q.ID() = %q) = %+v, %v", in, got.ID(), back, err)
		}
	}
	for _, in := range []string{"", "word2vec", "hash:0", "hash:x", "hash:65537", "openai:", "ollama: ",
		"openai:m?dims=3", "openai:m?dimensions=0", "openai:m?%zz", "cohere:x"} {
		if _, err := embed.ParseSpec(in); !errors.Is(err, embed.ErrInvalidSpec) {
			t.Errorf("ParseSpec(%q) error %v, want ErrInvalidSpec", in, err)
		}
	}
}

func TestSpecDimensionAndString(t *testing.T) {
	for in, want := range map[string]struct {
		dim int
		str string
	}{
		"uselite": {0, "uselite"}, "hash-32": {32, "hash:32"},
		"openai:m": {0, "openai:m"}, "ollama:m?dimensions=7": {7, "ollama:m?dimensions=7"},
	} {
		sp, err := embed.ParseSpec(in)
		if err != nil || sp.KnownDimension() != want.dim || sp.String() != want.str {
			t.Errorf("%q: KnownDimension %d, String %q, %v; want %d, %q", in, sp.KnownDimension(), sp.String(), err, want.dim, want.str)
		}
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	e, err := embed.Open(ctx, "hash-16", &embed.Options{Dimension: 16})
	if err != nil || e.Model() != "hash-16" || e.Dimension() != 16 {
		t.Fatalf("Open hash-16: %v, %v", e, err)
	}
	if _, err := embed.Open(ctx, "hash:16", &embed.Options{Dimension: 32}); !errors.Is(err, embed.ErrMismatch) {
		t.Fatalf("hash:16 for a 32-d store: %v, want ErrMismatch", err)
	}
	if _, err := embed.Open(ctx, "bert", nil); !errors.Is(err, embed.ErrInvalidSpec) {
		t.Fatalf("bert: %v", err)
	}
	// embed/uselite is not linked into this test: its kind is unknown.
	if _, err := embed.Open(ctx, "uselite", nil); !errors.Is(err, embed.ErrNotRegistered) {
		t.Fatalf("uselite without its package: %v", err)
	}
	if !slices.Equal(embed.Kinds(), []string{"hash", "ollama", "openai"}) {
		t.Errorf("Kinds() = %v", embed.Kinds())
	}

	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "k")
	e, err = embed.Open(ctx, "openai:m?dimensions=8", nil)
	if _, ok := e.(*openai.Embedder); !ok || err != nil || e.Model() != "openai:m?dimensions=8" || e.Dimension() != 8 {
		t.Fatalf("openai: %T %v", e, err)
	}
	t.Setenv("OLLAMA_HOST", "127.0.0.1:1")
	e, err = embed.Open(ctx, "ollama:m", &embed.Options{BaseURL: "http://127.0.0.1:2"})
	if _, ok := e.(*ollama.Embedder); !ok || err != nil || e.Model() != "ollama:m" {
		t.Fatalf("ollama: %T %v", e, err)
	}
}

func TestLazy(t *testing.T) {
	ctx := context.Background()
	sp, _ := embed.ParseSpec("hash:8")
	l := embed.NewLazy(sp, 16, nil) // declared 16-d, makes 8-d
	if l.Loaded() || l.Dimension() != 16 || l.Model() != "hash-8" {
		t.Fatalf("before loading: %v %d %q", l.Loaded(), l.Dimension(), l.Model())
	}
	if _, err := l.Embed(ctx, []string{"x"}); !errors.Is(err, embed.ErrMismatch) {
		t.Fatalf("Embed: %v, want ErrMismatch", err)
	}
	l = embed.NewLazy(sp, 0, nil)
	if d, err := l.Resolve(ctx); d != 8 || err != nil {
		t.Fatalf("Resolve: %d %v", d, err)
	}
}
