package chromem

import (
	"context"
	"testing"

	"github.com/stratamem/strata/vectorstore/driver"
	"github.com/stratamem/strata/vectorstore/vectortest"
)

// withSealing runs f with every full slab moved to the slab file, however
// small, so that the small collections of tests read mapped vectors.
func withSealing(t *testing.T, f func()) {
	old := sealMinBytes
	sealMinBytes = 1
	defer func() { sealMinBytes = old }()
	f()
}

// TestVecStoreRandomSealed is TestVecStoreRandom with sealed slabs.
func TestVecStoreRandomSealed(t *testing.T) {
	withSealing(t, func() {
		for _, dist := range []driver.Distance{driver.DistanceCosine, driver.DistanceDot, driver.DistanceEuclidean} {
			t.Run(string(dist), func(t *testing.T) { randomVecOps(t, dist) })
		}
	})
}

// TestConformanceSealed is the conformance suite with sealed slabs.
func TestConformanceSealed(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	withSealing(t, func() {
		dir := t.TempDir()
		vectortest.Run(t, vectortest.Harness{
			Open: func(ctx context.Context, t *testing.T, cfg driver.Config) (driver.Collection, error) {
				return openDriver(ctx, dir, cfg)
			},
		})
	})
}

// TestSealedSlabs: full slabs move to the slab file, their records' vectors
// with them, and read the same values; Close unmaps them.
func TestSealedSlabs(t *testing.T) {
	withSealing(t, func() {
		ctx := context.Background()
		dir := t.TempDir()
		d, err := openDriver(ctx, dir, driver.Config{Name: "c", Dimension: 4})
		if err != nil {
			t.Fatal(err)
		}
		c := d.(*collection)
		var recs []driver.Record
		for i := 0; i < 100; i++ {
			recs = append(recs, driver.Record{ID: string(rune('a'+i%26)) + string(rune('0'+i/26)), Scope: driver.Scope{Resource: "u"}, Vector: []float32{float32(i), 1, 2, 3}})
		}
		if err := d.Upsert(ctx, recs); err != nil {
			t.Fatal(err)
		}
		c.mu.RLock()
		ch := c.vecs.chain("u")
		sealed := 0
		for _, s := range ch.slabs {
			if c.vecs.file.mapped(s) {
				sealed++
			}
		}
		c.mu.RUnlock()
		if c.vecs.file != nil && sealed == 0 {
			t.Fatalf("no sealed slab among %d", len(ch.slabs))
		}
		for i, r := range recs {
			got, ok, err := d.Get(ctx, r.ID)
			if err != nil || !ok || got.Vector[0] != float32(i) || got.Vector[3] != 3 {
				t.Fatalf("%s: %v %v %v", r.ID, got.Vector, ok, err)
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
