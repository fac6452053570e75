package openai

import (
	"context"

	"github.com/stratamem/strata/embed"
)

// Registered for embed.Open: "openai:MODEL[?dimensions=N]".
func init() {
	embed.Register(embed.KindOpenAI, func(_ context.Context, s embed.Spec, o embed.Options) (embed.Embedder, error) {
		e, err := New(Options{Model: s.Model, Dimensions: s.Dim, BaseURL: o.BaseURL, APIKey: o.APIKey})
		if err != nil {
			return nil, err
		}
		return e, nil
	})
}
