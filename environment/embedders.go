package environment

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratamem/strata/embed"

	// The embedders a recorded model id opens (embed.Open).
	_ "github.com/stratamem/strata/embed/hashing"
	_ "github.com/stratamem/strata/embed/ollama"
	_ "github.com/stratamem/strata/embed/openai"
	_ "github.com/stratamem/strata/embed/uselite"
)

// openRecorded opens the embedder a collection records, by its model id
// (embed.Open): the default model, hashing, or a remote model configured
// from the environment (OPENAI_BASE_URL, OPENAI_API_KEY, OLLAMA_HOST). An
// id embed cannot read yields an error wrapping ErrUnknownEmbedder; one
// whose embedder makes another dimension than recorded, embed.ErrMismatch.
func openRecorded(ctx context.Context, rec Record) (embed.Embedder, error) {
	e, err := embed.Open(ctx, rec.Embedder, &embed.Options{Dimension: rec.Dimension})
	if errors.Is(err, embed.ErrInvalidSpec) {
		return nil, fmt.Errorf("%w %q (%d-d): pass Options.Embedder or Options.Resolve", ErrUnknownEmbedder, rec.Embedder, rec.Dimension)
	}
	return e, err
}
