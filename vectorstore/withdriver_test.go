package vectorstore

import (
	"context"
	"errors"
	"testing"

	"github.com/stratamem/strata/vectorstore/driver"
)

// countingDriver counts the upserts that reach the driver under it.
type countingDriver struct {
	driver.Collection
	upserts int
}

func (d *countingDriver) Upsert(ctx context.Context, recs []driver.Record) error {
	d.upserts++
	return d.Collection.Upsert(ctx, recs)
}

// WithDriver routes the second handle's calls through the wrapper over
// the same records, and refuses what cannot be a wrapper.
func TestWithDriver(t *testing.T) {
	ctx := context.Background()
	c := newTermColl(t, newMem())
	var counted *countingDriver
	w, err := c.WithDriver(func(d driver.Collection) driver.Collection {
		counted = &countingDriver{Collection: d}
		return counted
	})
	if err != nil {
		t.Fatal(err)
	}
	if w.Info() != c.Info() {
		t.Fatalf("wrapped info %+v, collection's %+v", w.Info(), c.Info())
	}
	rec := Record{ID: "a", Vector: []float32{1, 0}, Text: "hello"}
	if err := w.Upsert(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if counted.upserts != 1 {
		t.Fatalf("%d upserts reached the wrapper", counted.upserts)
	}
	// The same records under both handles.
	if got, err := c.Get(ctx, "a"); err != nil || got.Text != "hello" {
		t.Fatalf("record written through the wrapper, read through the collection: %+v, %v", got, err)
	}
	for _, wrap := range []func(driver.Collection) driver.Collection{nil, func(driver.Collection) driver.Collection { return nil }} {
		var e *Error
		if _, err := c.WithDriver(wrap); !errors.As(err, &e) || e.Code != CodeInvalidArgument {
			t.Fatalf("bad wrapper: %v", err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WithDriver(func(d driver.Collection) driver.Collection { return d }); !errors.Is(err, ErrClosed) {
		t.Fatalf("WithDriver on a closed collection: %v", err)
	}
}
