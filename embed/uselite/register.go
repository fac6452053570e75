package uselite

import (
	"context"

	"github.com/stratamem/strata/embed"
)

// Registered for embed.Open: "uselite" (or ModelID) loads Default.
func init() {
	embed.Register(embed.KindUseLite, func(context.Context, embed.Spec, embed.Options) (embed.Embedder, error) {
		m, err := Default()
		if err != nil {
			return nil, err
		}
		return m, nil
	})
}
