package semantic

import (
	"context"
	"fmt"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/memtest"
)

// Record does not scan the scope for embedding work: after a flush, one
// appended message leaves a handful of entries to look at (its own and its
// neighbours'), however many the scope holds.
func TestRecordLooksOnlyAtWhatChanged(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", nil)
	l, err := New(store, Options{Scope: core.ScopeResource})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l.Layer()}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t1", ResourceID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		if err := s.Append(ctx, core.UserMessage(fmt.Sprintf("message %d about topic %d", i, i%17))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}

	s, err = rt.Start(ctx, core.RunOptions{ThreadID: "t2", ResourceID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := core.State[State](s, l.ID())
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	m := st.m
	m.mu.Lock()
	_ = m.jobsLocked(store.Embedder.Model(), 1000, false)
	left := len(m.dirty)
	m.mu.Unlock()
	if left > 0 {
		t.Fatalf("%d entries still dirty after a flush and a pass", left)
	}
	if err := s.Append(ctx, core.UserMessage("one more message")); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	dirty := len(m.dirty)
	jobs := m.jobsLocked(store.Embedder.Model(), 1000, false)
	m.mu.Unlock()
	if dirty > 4 || len(jobs) != 1 {
		t.Fatalf("one append left %d dirty entries and %d jobs (scope of %d)", dirty, len(jobs), st.Len())
	}
}
