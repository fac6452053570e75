package pgvector

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

// TestEmbedderRecordConcurrent: of two first records racing with different
// embedders one stands, and both callers are told which.
func TestEmbedderRecordConcurrent(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t, testDSN(t))
	name := fmt.Sprintf("emb_race_%08x", rand.Uint32())
	c, err := OpenCollection(ctx, pool, name, &Options{Options: vectorstore.Options{Dimension: 4}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropCollection(t, pool, name) })
	defer c.Close()
	d := driverOf(c)
	var p *pgxpool.Pool
	var rec vectorstore.EmbedderRecorder
	var dc driver.Collection
	if !c.As(&p) || p != pool || !c.As(&rec) || c.As(&dc) {
		t.Fatal("As: want the pool and an EmbedderRecorder, and never the driver collection")
	}
	if _, ok := rec.(driver.Collection); ok {
		t.Fatal("the EmbedderRecorder is the driver collection")
	}
	if m, _, err := rec.EmbedderRecord(ctx); err != nil || m != "" {
		t.Fatalf("new collection through As: %q, %v", m, err)
	}
	if m, _, err := d.EmbedderRecord(ctx); err != nil || m != "" {
		t.Fatalf("new collection: %q, %v", m, err)
	}
	var wg sync.WaitGroup
	got := make([]string, 2)
	for i, m := range []string{"model-a", "model-b"} {
		wg.Go(func() {
			var err error
			if got[i], _, err = d.RecordEmbedder(ctx, m, 4); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got[0] != got[1] || got[0] == "" {
		t.Fatalf("racing records: %q", got)
	}
	if m, dim, err := d.EmbedderRecord(ctx); err != nil || m != got[0] || dim != 4 {
		t.Errorf("read back %q %d %v, want %q", m, dim, err, got[0])
	}
}
