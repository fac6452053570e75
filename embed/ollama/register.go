package ollama

import (
	"context"

	"github.com/stratamem/strata/embed"
)

// Registered for embed.Open: "ollama:MODEL[?dimensions=N]".
func init() {
	embed.Register(embed.KindOllama, func(_ context.Context, s embed.Spec, o embed.Options) (embed.Embedder, error) {
		e, err := New(Options{Model: s.Model, Dimensions: s.Dim, BaseURL: o.BaseURL})
		if err != nil {
			return nil, err
		}
		return e, nil
	})
}
