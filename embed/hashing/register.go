package hashing

import (
	"context"

	"github.com/stratamem/strata/embed"
)

// Registered for embed.Open: "hash:DIM" (or the model id "hash-DIM").
func init() {
	embed.Register(embed.KindHash, func(_ context.Context, s embed.Spec, _ embed.Options) (embed.Embedder, error) {
		return New(s.Dim), nil
	})
}
