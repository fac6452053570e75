// Package storage persists the scoped state of context layers.
//
// A layer whose scope is thread, resource or global keeps its state between
// runs: the runtime reads it at init and writes it back whenever a hook
// returns new state. Every value carries a revision so that two runs of one
// resource never silently lose an update: a write names the revision it was
// based on and fails with ErrConflict when the stored value has moved on
// (compare-and-swap). Callers re-read and retry.
//
// Keys are namespaced by scope and scope id, so one thread or resource never
// reads another's state. The package holds the portable interface, its
// errors and an in-memory implementation; durable backends live in
// sub-packages (filestore, postgres) and all of them pass the conformance
// suite in storagetest.
package storage

import (
	"context"
	"errors"
	"fmt"
)

// Key addresses one stored value.
type Key struct {
	// Scope is the persistence boundary: "thread", "resource" or "global".
	Scope string
	// ScopeID identifies the thread or resource. It is empty for global.
	ScopeID string
	// Layer is the id of the layer that owns the value.
	Layer string
	// Name is the value's name within the layer; the runtime uses "state".
	Name string
}

// String renders the key for error messages and logs.
func (k Key) String() string {
	return fmt.Sprintf("%s/%s/%s/%s", k.Scope, k.ScopeID, k.Layer, k.Name)
}

// Validate reports whether the key is usable.
func (k Key) Validate() error {
	switch k.Scope {
	case "thread", "resource":
		if k.ScopeID == "" {
			return fmt.Errorf("%w: scope %q needs a scope id", ErrInvalidKey, k.Scope)
		}
	case "global":
	default:
		return fmt.Errorf("%w: scope %q is not thread, resource or global", ErrInvalidKey, k.Scope)
	}
	if k.Layer == "" {
		return fmt.Errorf("%w: empty layer", ErrInvalidKey)
	}
	if k.Name == "" {
		return fmt.Errorf("%w: empty name", ErrInvalidKey)
	}
	return nil
}

// Entry is a stored value with its revision.
type Entry struct {
	Value []byte
	// Revision increases by at least one on every successful write.
	// Revision 0 means "absent": Put with expected revision 0 creates.
	Revision int64
}

// Store is a revisioned key-value store for layer state. Implementations
// are safe for concurrent use.
type Store interface {
	// Get returns the entry at key, or ErrNotFound.
	Get(ctx context.Context, key Key) (Entry, error)
	// Put writes value at key if the stored revision equals expected (0 when
	// the key must not exist yet) and returns the new revision. A mismatch
	// returns an error wrapping ErrConflict and writes nothing.
	Put(ctx context.Context, key Key, value []byte, expected int64) (int64, error)
	// Delete removes key if its revision equals expected. Deleting an absent
	// key with expected 0 is not an error.
	Delete(ctx context.Context, key Key, expected int64) error
	// Close releases resources. Calls after Close return ErrClosed.
	Close() error
}

var (
	// ErrNotFound is returned by Get for an absent key.
	ErrNotFound = errors.New("storage: not found")
	// ErrConflict is returned when the expected revision does not match.
	ErrConflict = errors.New("storage: revision conflict")
	// ErrInvalidKey is returned for keys that fail Validate.
	ErrInvalidKey = errors.New("storage: invalid key")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("storage: store is closed")
)

// ConflictError details a failed compare-and-swap. It wraps ErrConflict.
type ConflictError struct {
	Key      Key
	Expected int64
	Actual   int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("storage: revision conflict at %s: expected %d, stored %d", e.Key, e.Expected, e.Actual)
}

// Unwrap lets errors.Is(err, ErrConflict) match.
func (e *ConflictError) Unwrap() error { return ErrConflict }
