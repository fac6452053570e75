// Package faulty wraps a vectorstore driver so that tests can make its
// calls fail, or slow down, on demand: a full disk, a dead server, a write
// that outlives its caller's deadline. Production code never imports it.
//
//	col, fc, err := faulty.Open(ctx, "chromem://"+t.TempDir()+"?dimension=4", nil)
//	fc.FailWrites(faulty.ErrInjected) // every write now fails, nothing is written
//	fc.FailWrites(nil)                // healed
//
// Failures are injected in front of the wrapped driver: a failed call never
// reaches it, so the store is left exactly as it was. That is the contract a
// real backend offers for a failed write too (drivers apply a call entirely
// or not at all), so code under test sees what it would see in production,
// without the ambiguity of a write that failed after being applied.
//
// Writes are Upsert, UpsertIf, Delete, DeleteIf and DeleteWhere; reads are
// Get, List, Query, Count and SearchTerms. Info and Close always reach the
// driver.
//
// A Collection is a driver.TermSearcher whatever it wraps, so that wrapping
// a backend with a native term index (chromem, pgvector) keeps it in use:
// SearchTerms goes to the wrapped driver's SearchTerms when it has one, and
// otherwise ranks the corpus read from the wrapped driver's List with
// driver.RankTerms, as the portable layer would. Either way it is one read.
// A Collection has no As, so a portable collection over it supports no
// driver-specific type (vectorstore.Collection.As returns false): what As
// hands out would reach the wrapped driver past the injected faults.
// A Collection is safe for concurrent use, and its settings may change
// while calls are in flight (a call uses the settings it started with).
package faulty

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
	"github.com/stratamem/strata/vectorstore/internal/hook"
)

// ErrInjected is a ready-made failure, for tests that only need "the store
// refused": a full disk, a lost connection. Injected errors are wrapped, so
// test with errors.Is.
var ErrInjected = errors.New("faulty: injected failure")

// Collection is a driver.Collection that forwards to another one until told
// to fail. The zero value is not usable; call Wrap.
type Collection struct {
	d driver.Collection

	mu       sync.Mutex
	writeErr error         // every write fails with it (FailWrites)
	readErr  error         // every read fails with it (FailReads)
	nextN    int           // the next nextN writes fail with nextErr (FailNextWrites)
	nextErr  error         //
	delay    time.Duration // writes wait this long first (SetWriteDelay)

	writes, writesFailed int
	reads, readsFailed   int
}

var (
	_ driver.Collection   = (*Collection)(nil)
	_ driver.TermSearcher = (*Collection)(nil)
)

// Wrap returns a Collection forwarding every call to d.
func Wrap(d driver.Collection) *Collection { return &Collection{d: d} }

// Open opens rawURL with vectorstore.Open and puts a fault injector between
// the portable collection and its driver. Close the returned collection
// (it closes the driver); the *Collection controls the faults.
func Open(ctx context.Context, rawURL string, opts *vectorstore.Options) (*vectorstore.Collection, *Collection, error) {
	col, err := vectorstore.Open(ctx, rawURL, opts)
	if err != nil {
		return nil, nil, err
	}
	return rewrap(col, opts)
}

// WrapCollection moves the driver of col behind a fault injector and
// returns a new portable collection over it, with opts (the options col was
// opened with: metadata keys and clock are not recoverable from col). col
// itself must not be used or closed afterwards; close the returned
// collection instead.
func WrapCollection(col *vectorstore.Collection, opts *vectorstore.Options) (*vectorstore.Collection, *Collection, error) {
	return rewrap(col, opts)
}

func rewrap(col *vectorstore.Collection, opts *vectorstore.Options) (*vectorstore.Collection, *Collection, error) {
	fc := Wrap(hook.DriverOf(col))
	out, err := vectorstore.NewCollection(fc, opts)
	if err != nil {
		_ = col.Close()
		return nil, nil, err
	}
	return out, fc, nil
}

// Driver returns the wrapped driver.
func (c *Collection) Driver() driver.Collection { return c.d }

// FailWrites makes every write return err (wrapped) without reaching the
// driver, until FailWrites(nil).
func (c *Collection) FailWrites(err error) {
	c.mu.Lock()
	c.writeErr = err
	c.mu.Unlock()
}

// FailReads makes every read return err (wrapped) without reaching the
// driver, until FailReads(nil).
func (c *Collection) FailReads(err error) {
	c.mu.Lock()
	c.readErr = err
	c.mu.Unlock()
}

// FailNextWrites makes the next n writes fail with err (ErrInjected when
// err is nil); later writes reach the driver again. It takes precedence over
// FailWrites while n lasts; n <= 0 cancels it.
func (c *Collection) FailNextWrites(n int, err error) {
	if err == nil {
		err = ErrInjected
	}
	c.mu.Lock()
	c.nextN, c.nextErr = max(n, 0), err
	c.mu.Unlock()
}

// SetWriteDelay makes every write wait d before it goes on (to fail or to
// reach the driver). The wait ends early when the call's context does, and
// the call then returns the context's error: this is how a test makes a
// write outlive its caller's deadline. 0 removes the delay.
func (c *Collection) SetWriteDelay(d time.Duration) {
	c.mu.Lock()
	c.delay = d
	c.mu.Unlock()
}

// Writes returns how many writes were attempted and how many of them
// returned an error (injected, the context's during a delay, or the
// driver's own).
func (c *Collection) Writes() (attempted, failed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes, c.writesFailed
}

// Reads returns how many reads were attempted and how many of them returned
// an error.
func (c *Collection) Reads() (attempted, failed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads, c.readsFailed
}

// injected wraps a test's error with the operation, keeping it (and, for a
// *driver.Error, its code) visible to errors.Is and errors.As.
func injected(op string, err error) error {
	return fmt.Errorf("faulty: %s: %w", op, err)
}

// write runs fn, the forwarding of one write, unless a failure is due.
func (c *Collection) write(ctx context.Context, op string, fn func() error) error {
	c.mu.Lock()
	c.writes++
	var fail error
	switch {
	case c.nextN > 0:
		c.nextN--
		fail = c.nextErr
	case c.writeErr != nil:
		fail = c.writeErr
	}
	delay := c.delay
	c.mu.Unlock()
	err := func() error {
		if delay > 0 {
			t := time.NewTimer(delay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if fail != nil {
			return injected(op, fail)
		}
		return fn()
	}()
	if err != nil {
		c.mu.Lock()
		c.writesFailed++
		c.mu.Unlock()
	}
	return err
}

// into returns a forwarding for read or write that runs call and keeps
// its result in *v.
func into[T any](v *T, call func() (T, error)) func() error {
	return func() error {
		var err error
		*v, err = call()
		return err
	}
}

// read runs fn, the forwarding of one read, unless reads are failing.
func (c *Collection) read(op string, fn func() error) error {
	c.mu.Lock()
	c.reads++
	fail := c.readErr
	c.mu.Unlock()
	var err error
	if fail != nil {
		err = injected(op, fail)
	} else {
		err = fn()
	}
	if err != nil {
		c.mu.Lock()
		c.readsFailed++
		c.mu.Unlock()
	}
	return err
}

// Info forwards to the driver.
func (c *Collection) Info() driver.Info { return c.d.Info() }

// Upsert forwards to the driver unless writes are failing.
func (c *Collection) Upsert(ctx context.Context, recs []driver.Record) error {
	return c.write(ctx, "upsert", func() error { return c.d.Upsert(ctx, recs) })
}

// UpsertIf forwards to the driver unless writes are failing.
func (c *Collection) UpsertIf(ctx context.Context, rec driver.Record, expected int64) (int64, error) {
	var rev int64
	err := c.write(ctx, "upsert if", into(&rev, func() (int64, error) { return c.d.UpsertIf(ctx, rec, expected) }))
	return rev, err
}

// Delete forwards to the driver unless writes are failing.
func (c *Collection) Delete(ctx context.Context, ids []string) error {
	return c.write(ctx, "delete", func() error { return c.d.Delete(ctx, ids) })
}

// DeleteIf forwards to the driver unless writes are failing.
func (c *Collection) DeleteIf(ctx context.Context, id string, expected int64) error {
	return c.write(ctx, "delete if", func() error { return c.d.DeleteIf(ctx, id, expected) })
}

// DeleteWhere forwards to the driver unless writes are failing.
func (c *Collection) DeleteWhere(ctx context.Context, f driver.Filter) (int, error) {
	var n int
	err := c.write(ctx, "delete where", into(&n, func() (int, error) { return c.d.DeleteWhere(ctx, f) }))
	return n, err
}

// Get forwards to the driver unless reads are failing.
func (c *Collection) Get(ctx context.Context, id string) (driver.Record, bool, error) {
	var (
		rec   driver.Record
		found bool
	)
	err := c.read("get", func() error {
		var err error
		rec, found, err = c.d.Get(ctx, id)
		return err
	})
	return rec, found, err
}

// Count forwards to the driver unless reads are failing.
func (c *Collection) Count(ctx context.Context, f driver.Filter) (int, error) {
	var n int
	err := c.read("count", into(&n, func() (int, error) { return c.d.Count(ctx, f) }))
	return n, err
}

// List forwards to the driver unless reads are failing.
func (c *Collection) List(ctx context.Context, q driver.ListQuery) ([]driver.Record, error) {
	var recs []driver.Record
	err := c.read("list", into(&recs, func() ([]driver.Record, error) { return c.d.List(ctx, q) }))
	return recs, err
}

// Query forwards to the driver unless reads are failing.
func (c *Collection) Query(ctx context.Context, q driver.VectorQuery) ([]driver.Match, error) {
	var ms []driver.Match
	err := c.read("query", into(&ms, func() ([]driver.Match, error) { return c.d.Query(ctx, q) }))
	return ms, err
}

// SearchTerms forwards to the driver's SearchTerms unless reads are
// failing; for a driver without one it ranks the corpus in process (see
// the package documentation).
func (c *Collection) SearchTerms(ctx context.Context, q driver.TermQuery) (driver.TermResult, error) {
	var res driver.TermResult
	err := c.read("search terms", func() error {
		var err error
		if ts, ok := c.d.(driver.TermSearcher); ok {
			res, err = ts.SearchTerms(ctx, q)
		} else {
			res, err = rankInProcess(ctx, c.d, q)
		}
		return err
	})
	return res, err
}

// rankInProcess is the portable layer's fallback for a driver without a
// term index: read the corpus page by page, rank it with the reference.
func rankInProcess(ctx context.Context, d driver.Collection, q driver.TermQuery) (driver.TermResult, error) {
	corpus := driver.Filter{Layer: q.Filter.Layer, Kind: q.Filter.Kind, Thread: q.Filter.Thread, Resource: q.Filter.Resource}
	var recs []*driver.Record
	var after *driver.Cursor
	for {
		page, err := d.List(ctx, driver.ListQuery{Filter: corpus, Limit: vectorstore.MaxListLimit, After: after, WithVectors: q.WithVectors})
		if err != nil {
			return driver.TermResult{}, err
		}
		for i := range page {
			recs = append(recs, &page[i])
		}
		if len(page) < vectorstore.MaxListLimit {
			break
		}
		last := page[len(page)-1]
		after = &driver.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	return driver.RankTerms(recs, q, q.Filter.Matches), nil
}

// Close closes the driver; injected failures do not apply to it.
func (c *Collection) Close() error { return c.d.Close() }
