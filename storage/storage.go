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
//
// # Opening by URL
//
// Open opens a store from a URL, as vectorstore.Open does for vector
// stores, with the driver registered for its scheme (Register; drivers
// register from init, so a blank import is enough):
//
//	st, err := storage.Open(ctx, "/var/lib/strata/state")        // filestore (file:///... too)
//	st, err := storage.Open(ctx, "postgres://app@db/strata")      // storage/postgres
//	st, err := storage.Open(ctx, "mem://")                        // a new Memory
//
// The postgres driver takes the URL of a pgvector collection unchanged:
// it checks and ignores the vector side's parameters (collection,
// dimension, distance, ...; see postgres.VectorParams), so one URL opens
// both halves of an environment (package environment).
//
// # Enumerating a scope
//
// Store has no way to list keys: the runtime always knows the key it
// wants. Tools that must find every value of one thread or resource, such
// as erasing everything kept about a user, type-assert the optional Lister
// interface, which Memory and both durable backends implement:
//
//	if l, ok := st.(storage.Lister); ok {
//		keys, err := l.Keys(ctx, "resource", "alice")
//		...
//	}
//
// Lister needs the exact scope id. A tool that must also find scopes it
// cannot name, such as every thread of a resource (whose scope ids start
// with ThreadScopeID(resource, "")), type-asserts the optional ScopeLister
// interface, which the same stores implement:
//
//	if sl, ok := st.(storage.ScopeLister); ok {
//		ids, err := sl.ScopeIDs(ctx, "thread", storage.ThreadScopeID("alice", ""))
//		...
//	}
package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	if err := ValidateScope(k.Scope, k.ScopeID); err != nil {
		return err
	}
	if k.Layer == "" {
		return fmt.Errorf("%w: empty layer", ErrInvalidKey)
	}
	if k.Name == "" {
		return fmt.Errorf("%w: empty name", ErrInvalidKey)
	}
	return nil
}

// ValidateScope reports whether scope and scopeID can be the scope part of
// a Key: scope is "thread" or "resource" with a non-empty id, or "global"
// (whose id is normally empty). The error wraps ErrInvalidKey.
func ValidateScope(scope, scopeID string) error {
	if err := ValidateScopeName(scope); err != nil {
		return err
	}
	if scope != "global" && scopeID == "" {
		return fmt.Errorf("%w: scope %q needs a scope id", ErrInvalidKey, scope)
	}
	return nil
}

// ValidateScopeName reports whether scope is "thread", "resource" or
// "global", whatever the scope id. The error wraps ErrInvalidKey.
func ValidateScopeName(scope string) error {
	switch scope {
	case "thread", "resource", "global":
		return nil
	}
	return fmt.Errorf("%w: scope %q is not thread, resource or global", ErrInvalidKey, scope)
}

// CompareKeys orders keys by Scope, ScopeID, Layer and Name, each compared
// byte by byte. It is the order Lister.Keys returns.
func CompareKeys(a, b Key) int {
	if c := strings.Compare(a.Scope, b.Scope); c != 0 {
		return c
	}
	if c := strings.Compare(a.ScopeID, b.ScopeID); c != 0 {
		return c
	}
	if c := strings.Compare(a.Layer, b.Layer); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
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
	// returns an error wrapping ErrConflict and writes nothing. Any other
	// error leaves the outcome unknown (the value may be in place, e.g. a
	// directory fsync or a commit acknowledgement failed after the write):
	// re-read with Get before retrying, or the retry reports a conflict.
	Put(ctx context.Context, key Key, value []byte, expected int64) (int64, error)
	// Delete removes key if its revision equals expected. Deleting an absent
	// key with expected 0 is not an error.
	Delete(ctx context.Context, key Key, expected int64) error
	// Close releases resources. Calls after Close return ErrClosed.
	Close() error
}

// Lister is implemented by stores that can enumerate the keys of one
// scope. It is optional: type-assert a Store to find out.
type Lister interface {
	// Keys returns the keys that hold a value under scope and scopeID
	// (deleted keys are not listed), ordered by CompareKeys: by Layer, then
	// Name. None is an empty, non-nil slice. A scope that ValidateScope
	// rejects yields an error wrapping ErrInvalidKey; after Close, ErrClosed.
	// The list is a snapshot: writes that race with the call may or may not
	// be in it.
	Keys(ctx context.Context, scope, scopeID string) ([]Key, error)
}

// ScopeLister is implemented by stores that can enumerate the scope ids of
// one scope. It is optional: type-assert a Store to find out. Lister lists
// the keys of one scope id; ScopeLister finds the scope ids, e.g. every
// thread of a resource (prefix ThreadScopeID(resource, "")).
type ScopeLister interface {
	// ScopeIDs returns the distinct scope ids of scope that hold at least
	// one value (deleted keys do not count) and start with prefix ("" for
	// all of them), sorted byte by byte (the order of CompareKeys). None is
	// an empty, non-nil slice. A scope ValidateScopeName rejects yields an
	// error wrapping ErrInvalidKey; after Close, ErrClosed. The list is a
	// snapshot: writes that race with the call may or may not be in it.
	ScopeIDs(ctx context.Context, scope, prefix string) ([]string, error)
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

// resourceThreadSep separates the resource from the thread in the ScopeID
// of a thread that belongs to a resource. It is a C0 control (unit
// separator): the runtime refuses thread and resource ids holding control
// characters, so no plain thread id can equal a composite one.
const resourceThreadSep = "\x1f"

// ThreadScopeID is the ScopeID of thread-scoped state: the thread id alone
// for a thread that belongs to no resource, else the resource and the
// thread, so two resources that both name a thread "main" never share a
// key: isolation is a property of keys.
//
// ThreadScopeID(resource, "") with a non-empty resource is the prefix that
// the ScopeIDs of all the threads of resource share, to find them with
// ScopeLister.ScopeIDs. No other scope id starts with it, since the runtime
// refuses thread and resource ids holding control characters.
func ThreadScopeID(resource, thread string) string {
	if resource == "" {
		return thread
	}
	return resource + resourceThreadSep + thread
}

// SplitThreadScopeID is the inverse of ThreadScopeID: the resource ("" for
// a thread of no resource) and the thread of a thread ScopeID.
func SplitThreadScopeID(scopeID string) (resource, thread string) {
	if r, t, ok := strings.Cut(scopeID, resourceThreadSep); ok {
		return r, t
	}
	return "", scopeID
}
