package faulty_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
	"github.com/stratamem/strata/vectorstore/driver"
	"github.com/stratamem/strata/vectorstore/faulty"
	"github.com/stratamem/strata/vectorstore/internal/hook"
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
			d, err := openChromem(ctx, dir, cfg)
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
	if fc.Driver() != hook.DriverOf(orig) {
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

// nativeTerms is a driver with a term index of its own: it counts the
// searches that reach it and marks its answers.
type nativeTerms struct {
	driver.Collection
	mu       sync.Mutex
	searches int
}

func (n *nativeTerms) SearchTerms(ctx context.Context, q driver.TermQuery) (driver.TermResult, error) {
	n.mu.Lock()
	n.searches++
	n.mu.Unlock()
	return driver.TermResult{Docs: 4242, DocFreq: map[string]int{}}, nil
}

// hidden is a driver without SearchTerms (the embedded interface has only
// the driver.Collection methods), whatever it wraps.
type hidden struct{ driver.Collection }

func termRecs() []vectorstore.Record {
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	return []vectorstore.Record{
		{ID: "a", Layer: "l", Vector: []float32{1, 0}, Terms: vectorstore.Terms{"x": 1, "y": 2}, CreatedAt: at},
		{ID: "b", Layer: "l", Vector: []float32{0, 1}, Terms: vectorstore.Terms{"x": 3}, CreatedAt: at},
		{ID: "c", Layer: "l", Vector: []float32{1, 1}, Terms: vectorstore.Terms{"z": 1}, CreatedAt: at},
		{ID: "d", Layer: "other", Vector: []float32{1, 1}, Terms: vectorstore.Terms{"x": 1}, CreatedAt: at},
	}
}

// A native SearchTerms stays in use behind the wrapper: the portable
// layer sees a TermSearcher and the search reaches the driver's own.
func TestSearchTermsForwarded(t *testing.T) {
	d, err := openChromem(ctx, t.TempDir(), driver.Config{Name: "c", Dimension: 2})
	if err != nil {
		t.Fatal(err)
	}
	native := &nativeTerms{Collection: d}
	fc := faulty.Wrap(native)
	col, err := vectorstore.NewCollection(fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	opts := vectorstore.TermOptions{Terms: map[string]float64{"x": 1}, K: 3, Filter: vectorstore.Filter{Layer: "l"}}
	res, err := col.SearchTerms(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Docs != 4242 || native.searches != 1 {
		t.Fatalf("SearchTerms answered %+v after %d native searches: the wrapper did not forward to the driver's SearchTerms", res, native.searches)
	}
	if attempted, failed := fc.Reads(); attempted != 1 || failed != 0 {
		t.Fatalf("Reads() = %d, %d; want 1, 0", attempted, failed)
	}
	fc.FailReads(faulty.ErrInjected)
	if _, err := col.SearchTerms(ctx, opts); !errors.Is(err, faulty.ErrInjected) {
		t.Fatalf("search while reads fail: %v, want ErrInjected", err)
	}
	if native.searches != 1 {
		t.Fatal("a failed search reached the driver")
	}
	if attempted, failed := fc.Reads(); attempted != 2 || failed != 1 {
		t.Fatalf("Reads() = %d, %d; want 2, 1", attempted, failed)
	}
	// Writes failing do not fail searches.
	fc.FailReads(nil)
	fc.FailWrites(faulty.ErrInjected)
	if _, err := col.SearchTerms(ctx, opts); err != nil || native.searches != 2 {
		t.Fatalf("search while writes fail: %v (%d native searches)", err, native.searches)
	}
}

// A driver without SearchTerms is ranked in process behind the wrapper
// exactly as the portable layer ranks it without one.
func TestSearchTermsFallback(t *testing.T) {
	d, err := openChromem(ctx, t.TempDir(), driver.Config{Name: "c", Dimension: 2})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := vectorstore.NewCollection(hidden{d}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	fc := faulty.Wrap(hidden{d})
	col, err := vectorstore.NewCollection(fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := col.Upsert(ctx, termRecs()...); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []vectorstore.TermOptions{
		{Terms: map[string]float64{"x": 1}, K: 3, Filter: vectorstore.Filter{Layer: "l"}},
		{Terms: map[string]float64{"x": 1, "y": 0.5, "nope": 1}, K: 1, Filter: vectorstore.Filter{Layer: "l"}, WithVectors: true},
		{Terms: map[string]float64{"x": 1}, K: 5, Filter: vectorstore.Filter{Layer: "l", IDs: []string{"b", "c"}}, K1: 2, B: 1},
		{Terms: map[string]float64{"x": 1}, K: 5, Filter: vectorstore.Filter{Layer: "none"}},
	} {
		want, err := plain.SearchTerms(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := col.SearchTerms(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v:\nwrapped %+v\n  plain %+v", opts, got, want)
		}
	}
	if attempted, _ := fc.Reads(); attempted != 4 {
		t.Fatalf("Reads() attempted %d, want 4: one per search", attempted)
	}
	fc.FailReads(faulty.ErrInjected)
	if _, err := col.SearchTerms(ctx, vectorstore.TermOptions{Terms: map[string]float64{"x": 1}, K: 1, Filter: vectorstore.Filter{Layer: "l"}}); !errors.Is(err, faulty.ErrInjected) {
		t.Fatalf("search while reads fail: %v, want ErrInjected", err)
	}
}

// pagedList is a driver whose only working read is List, over records in
// memory, counting its calls: enough for the in-process ranking.
type pagedList struct {
	driver.Collection // nil: any other call panics
	recs              []driver.Record
	lists             int
}

func (p *pagedList) Info() driver.Info {
	return driver.Info{Name: "paged", Dimension: 1, Distance: driver.DistanceDot, Driver: "paged"}
}

func (p *pagedList) List(_ context.Context, q driver.ListQuery) ([]driver.Record, error) {
	p.lists++
	var out []driver.Record
	for i := range p.recs {
		r := &p.recs[i]
		if q.Filter.Matches(r) && (q.After == nil || driver.ComesAfter(r, q.After, false)) {
			out = append(out, r.Clone())
			if len(out) == q.Limit {
				break
			}
		}
	}
	return out, nil
}

func (p *pagedList) Close() error { return nil }

// The in-process ranking reads a corpus larger than one List page whole.
func TestSearchTermsFallbackPages(t *testing.T) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	n := vectorstore.MaxListLimit + 7
	p := &pagedList{}
	for i := 0; i < n; i++ {
		p.recs = append(p.recs, driver.Record{ID: fmt.Sprintf("r%06d", i), Layer: "l", Vector: []float32{1},
			Terms: driver.Terms{"w": float32(1 + i%5), "pad": 1}, CreatedAt: at.Add(time.Duration(i/3) * time.Second)})
	}
	// The best document is on the last page.
	p.recs[n-1].Terms = driver.Terms{"w": 50}
	slices.SortFunc(p.recs, func(a, b driver.Record) int { return driver.CompareRecords(&a, &b) })
	fc := faulty.Wrap(p)
	col, err := vectorstore.NewCollection(fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := col.SearchTerms(ctx, vectorstore.TermOptions{Terms: map[string]float64{"w": 1}, K: 2, Filter: vectorstore.Filter{Layer: "l"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Docs != n || res.DocFreq["w"] != n || len(res.Matches) != 2 || res.Matches[0].Record.ID != fmt.Sprintf("r%06d", n-1) {
		t.Fatalf("docs %d, df %v, matches %v; want %d documents, r%06d first", res.Docs, res.DocFreq, res.Matches, n, n-1)
	}
	if p.lists != 2 {
		t.Fatalf("%d List calls, want 2 pages", p.lists)
	}
	if attempted, _ := fc.Reads(); attempted != 1 {
		t.Fatalf("Reads() attempted %d, want 1", attempted)
	}
}

// openChromem opens the chromem driver collection cfg names under dir,
// through the portable constructor (the driver's own opener is unexported).
func openChromem(ctx context.Context, dir string, cfg driver.Config) (driver.Collection, error) {
	c, err := chromem.OpenCollection(ctx, dir, cfg.Name, &vectorstore.Options{Dimension: cfg.Dimension, Distance: cfg.Distance, MetadataKeys: cfg.MetadataKeys})
	if err != nil {
		return nil, err
	}
	return hook.DriverOf(c), nil
}
