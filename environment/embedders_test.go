package environment_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/environment"
)

func TestDefaultResolve(t *testing.T) {
	ctx := context.Background()
	e, err := environment.DefaultResolve(ctx, environment.Record{Embedder: "hash-16", Dimension: 16})
	if err != nil || e.Model() != "hash-16" {
		t.Fatalf("hash-16: %v, %v", e, err)
	}
	if _, err := environment.DefaultResolve(ctx, environment.Record{Embedder: "hash-16", Dimension: 32}); !errors.Is(err, embed.ErrMismatch) {
		t.Errorf("hash-16 recorded as 32-d: %v", err)
	}
	if _, err := environment.DefaultResolve(ctx, environment.Record{Embedder: "custom-7", Dimension: 7}); !errors.Is(err, environment.ErrUnknownEmbedder) {
		t.Errorf("custom-7: %v", err)
	}
	// A remote model recorded with its id is configured from the
	// environment; nothing is sent until something is embedded.
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	e, err = environment.DefaultResolve(ctx, environment.Record{Embedder: "openai:m?dimensions=8", Dimension: 8})
	if err != nil || e.Model() != "openai:m?dimensions=8" || e.Dimension() != 8 {
		t.Errorf("openai: %v, %v", e, err)
	}
}
