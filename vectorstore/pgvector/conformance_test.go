package pgvector

import (
	"context"
	"sync"
	"testing"

	"github.com/stratamem/strata/vectorstore/driver"
	"github.com/stratamem/strata/vectorstore/vectortest"
)

// harness opens collections over one pool with opts and drops every
// collection it created when the test ends.
func harness(t *testing.T, opts Options) vectortest.Harness {
	pool := testPool(t, testDSN(t))
	var mu sync.Mutex
	created := map[string]bool{}
	t.Cleanup(func() {
		for name := range created {
			dropCollection(t, pool, name)
		}
	})
	return vectortest.Harness{
		Open: func(ctx context.Context, t *testing.T, cfg driver.Config) (driver.Collection, error) {
			d, err := openDriver(ctx, pool, cfg, &opts)
			if err == nil {
				mu.Lock()
				created[cfg.Name] = true
				mu.Unlock()
			}
			return d, err
		},
	}
}

// Defaults: HNSW index on every collection, index search, unnest upserts
// for small batches.
func TestConformance(t *testing.T) {
	vectortest.Run(t, harness(t, Options{}))
}

// Exact search, no index, and every batch of two or more records loaded
// with COPY into a temporary table.
func TestConformanceExactCopy(t *testing.T) {
	vectortest.Run(t, harness(t, Options{Exact: true, Index: IndexNone, CopyThreshold: 2}))
}
