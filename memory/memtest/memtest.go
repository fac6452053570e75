// Package memtest builds memory stores for tests: the embedded chromem
// collection in a temporary directory, with the deterministic hashing
// embedder (not semantic; quality tests use the real default model). It
// also holds what the memory layers' tests share to drive a layer through
// a real session: building layers, runtimes and sessions, reading a
// layer's block, the host's tool-call loop with a steering layer that
// denies, concurrent sessions, reopening, and option checks.
package memtest

import (
	"context"
	"testing"
	"time"

	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
	"github.com/stratamem/strata/vectorstore/faulty"
)

// Dimension of the hashing embedder used by NewStore.
const Dimension = 256

// Clock is a settable clock for tests.
type Clock struct{ T time.Time }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return c.T }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) { c.T = c.T.Add(d) }

// NewStore opens a chromem collection under dir (t.TempDir() when empty)
// with the hashing embedder and the given clock (nil: time.Now). The
// collection is closed when the test ends.
func NewStore(t testing.TB, dir string, clock *Clock) *memory.Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	col, err := chromem.OpenCollection(context.Background(), dir, "memories", &vectorstore.Options{Dimension: Dimension})
	if err != nil {
		t.Fatalf("memtest: open chromem collection: %v", err)
	}
	t.Cleanup(func() { _ = col.Close() })
	s := &memory.Store{Records: col, Embedder: hashing.New(Dimension)}
	if clock != nil {
		s.Now = clock.Now
	}
	return s
}

// NewFaultyStore is NewStore with a fault injector between the collection
// and its chromem driver: the returned *faulty.Collection makes the
// store's writes or reads fail, or stall, on demand. Every memory layer's
// failure tests use it.
func NewFaultyStore(t testing.TB, dir string, clock *Clock) (*memory.Store, *faulty.Collection) {
	t.Helper()
	s := NewStore(t, dir, clock)
	col, fc, err := faulty.WrapCollection(s.Records, &vectorstore.Options{Dimension: Dimension})
	if err != nil {
		t.Fatalf("memtest: wrap collection: %v", err)
	}
	t.Cleanup(func() { _ = col.Close() })
	s.Records = col
	return s, fc
}
