package chromem

import (
	"context"
	"testing"

	"github.com/stratamem/strata/vectorstore/driver"
	"github.com/stratamem/strata/vectorstore/vectortest"
)

func TestConformance(t *testing.T) {
	dir := t.TempDir()
	vectortest.Run(t, vectortest.Harness{
		Open: func(ctx context.Context, t *testing.T, cfg driver.Config) (driver.Collection, error) {
			return OpenDriver(ctx, dir, cfg)
		},
	})
}
