package faulty_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
	"github.com/stratamem/strata/vectorstore/driver"
	"github.com/stratamem/strata/vectorstore/faulty"
	"github.com/stratamem/strata/vectorstore/vectortest"
)

var ctx = context.Background()

func open(t *testing.T) (*vectorstore.Collection, *faulty.Collection) {
	t.Helper()
	col, fc, err := faulty.Open(ctx, "chromem://"+t.TempDir()+"?dimension=2", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { col.Close() })
	return col, fc
}

func rec(id string) vectorstore.Record {
	return vectorstore.Record{ID: id, Vector: []float32{1, 0}}
}

func count(t *testing.T, col *vectorstore.Collection) int {
	t.Helper()
	n, err := col.Count(ctx, vectorstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Without faults the wrapper is invisible: it passes the conformance suite.
func TestConformance(t *testing.T) {
	dir := t.TempDir()
	vectortest.Run(t, vectortest.Harness{
		Open: func(ctx context.Context, t *testing.T, cfg driver.Config) (driver.Collection, error) {
			d, err := chromem.OpenDriver(ctx, dir, cfg)
			if err != nil {
				return nil, err
			}
			return faulty.Wrap(d), nil
		},
	})
}

func TestFailWrites(t *testing.T) {
	col, fc := open(t)
	if err := col.Upsert(ctx, rec("a")); err != nil {
		t.Fatal(err)
	}
	a, err := col.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	fc.FailWrites(faulty.ErrInjected)
	writes := map[string]func() error{
		"upsert":       func() error { return col.Upsert(ctx, rec("b")) },
		"upsert if":    func() error { _, err := col.UpsertIf(ctx, rec("a"), a.Revision); return err },
		"delete":       func() error { return col.Delete(ctx, "a") },
		"delete if":    func() error { return col.DeleteIf(ctx, "a", a.Revision) },
		"delete where": func() error { _, err := col.DeleteWhere(ctx, vectorstore.Filter{IDs: []string{"a"}}); return err },
	}
	for name, w := range writes {
		if err := w(); !errors.Is(err, faulty.ErrInjected) {
			t.Errorf("%s while writes fail: %v, want ErrInjected", name, err)
		}
	}
	// Nothing reached the store, and reads still work.
	got, err := col.Get(ctx, "a")
	if err != nil || got.Revision != a.Revision || count(t, col) != 1 {
		t.Fatalf("store changed by failed writes: %+v %v", got, err)
	}
	if attempted, failed := fc.Writes(); attempted != 6 || failed != 5 {
		t.Fatalf("Writes() = %d, %d; want 6, 5", attempted, failed)
	}
	fc.FailWrites(nil)
	if err := col.Upsert(ctx, rec("b")); err != nil || count(t, col) != 2 {
		t.Fatalf("after FailWrites(nil): %v", err)
	}
}

// An injected error keeps its identity through the portable layer: a
// syscall error for "disk full", a typed vectorstore error with its code.
func TestInjectedErrorIdentity(t *testing.T) {
	col, fc := open(t)
	fc.FailWrites(syscall.ENOSPC)
	if err := col.Upsert(ctx, rec("a")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("upsert: %v, want ENOSPC", err)
	}
	fc.FailWrites(driver.Conflict("upsert if", "a", 3, 4))
	_, err := col.UpsertIf(ctx, rec("a"), 3)
	if !errors.Is(err, vectorstore.ErrConflict) || vectorstore.CodeOf(err) != vectorstore.CodeConflict {
		t.Fatalf("upsert if: %v, want a conflict", err)
	}
}

func TestFailReads(t *testing.T) {
	col, fc := open(t)
	if err := col.Upsert(ctx, rec("a")); err != nil {
		t.Fatal(err)
	}
	fc.FailReads(faulty.ErrInjected)
	if _, err := col.Get(ctx, "a"); !errors.Is(err, faulty.ErrInjected) {
		t.Errorf("get: %v", err)
	}
	if _, err := col.Count(ctx, vectorstore.Filter{}); !errors.Is(err, faulty.ErrInjected) {
		t.Errorf("count: %v", err)
	}
	if _, _, err := col.List(ctx, vectorstore.ListOptions{}); !errors.Is(err, faulty.ErrInjected) {
		t.Errorf("list: %v", err)
	}
	if _, err := col.Query(ctx, []float32{1, 0}, vectorstore.QueryOptions{K: 1}); !errors.Is(err, faulty.ErrInjected) {
		t.Errorf("query: %v", err)
	}
	if err := col.Upsert(ctx, rec("b")); err != nil {
		t.Errorf("write while reads fail: %v", err)
	}
	if attempted, failed := fc.Reads(); attempted != 4 || failed != 4 {
		t.Errorf("Reads() = %d, %d; want 4, 4", attempted, failed)
	}
	fc.FailReads(nil)
	if count(t, col) != 2 {
		t.Fatal("reads not healed")
	}
}

func TestFailNextWrites(t *testing.T) {
	col, fc := open(t)
	fc.FailNextWrites(2, nil)
	for i := 0; i < 2; i++ {
		if err := col.Upsert(ctx, rec("a")); !errors.Is(err, faulty.ErrInjected) {
			t.Fatalf("write %d: %v, want ErrInjected", i, err)
		}
	}
	if err := col.Upsert(ctx, rec("a")); err != nil {
		t.Fatalf("third write: %v, want healed", err)
	}
	if attempted, failed := fc.Writes(); attempted != 3 || failed != 2 {
		t.Fatalf("Writes() = %d, %d; want 3, 2", attempted, failed)
	}
	// It takes precedence over FailWrites, with its own error.
	custom := errors.New("custom")
	fc.FailWrites(faulty.ErrInjected)
	fc.FailNextWrites(1, custom)
	if err := col.Upsert(ctx, rec("b")); !errors.Is(err, custom) {
		t.Fatalf("with both: %v, want the FailNextWrites error", err)
	}
	if err := col.Upsert(ctx, rec("b")); !errors.Is(err, faulty.ErrInjected) {
		t.Fatalf("after FailNextWrites ran out: %v, want the FailWrites error", err)
	}
}

func TestWriteDelay(t *testing.T) {
	col, fc := open(t)
	fc.SetWriteDelay(time.Hour)
	dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := col.Upsert(dctx, rec("a")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("delayed write past its deadline: %v, want DeadlineExceeded", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("the delay ignored the context")
	}
	if count(t, col) != 0 {
		t.Fatal("a write that timed out in the delay reached the store")
	}
	fc.SetWriteDelay(10 * time.Millisecond)
	start = time.Now()
	if err := col.Upsert(ctx, rec("a")); err != nil || time.Since(start) < 10*time.Millisecond {
		t.Fatalf("delayed write: %v after %v", err, time.Since(start))
	}
	if _, failed := fc.Writes(); failed != 1 {
		t.Fatalf("failed writes %d, want 1", failed)
	}
	fc.SetWriteDelay(0)
	if count(t, col) != 1 {
		t.Fatal("delayed write lost")
	}
}

// WrapCollection keeps the options it is given (here a closed set of
// metadata keys) and closes the driver when the new collection closes.
func TestWrapCollection(t *testing.T) {
	dir := t.TempDir()
	opts := &vectorstore.Options{Dimension: 2, MetadataKeys: []string{"lang"}}
	orig, err := chromem.OpenCollection(ctx, dir, "c", opts)
	if err != nil {
		t.Fatal(err)
	}
	col, fc, err := faulty.WrapCollection(orig, opts)
	if err != nil {
		t.Fatal(err)
	}
	if fc.Driver() != orig.Driver() {
		t.Fatal("Driver() is not the wrapped driver")
	}
	r := rec("a")
	r.Metadata = map[string]string{"color": "red"}
	if err := col.Upsert(ctx, r); !errors.Is(err, vectorstore.ErrInvalidRecord) {
		t.Fatalf("undeclared metadata key: %v, want ErrInvalidRecord", err)
	}
	if err := col.Close(); err != nil {
		t.Fatal(err)
	}
	// The directory lock is free again: the driver was closed.
	again, err := chromem.OpenCollection(ctx, dir, "c", nil)
	if err != nil {
		t.Fatalf("reopen after closing the wrapper: %v", err)
	}
	again.Close()
}
