package storage

import (
	"context"
	"slices"
	"strings"
	"sync"
)

// Memory is an in-process Store: a map under a mutex. It is the store of
// tests and of runs that need no persistence. Values are copied on the way
// in and out, so callers may reuse or mutate their slices freely.
//
// Revisions come from one counter for the whole store, so a key that is
// deleted and created again never reuses an old revision and a stale
// writer from before the delete cannot succeed.
type Memory struct {
	mu      sync.Mutex
	entries map[Key]Entry
	seq     int64
	closed  bool
}

var (
	_ Store       = (*Memory)(nil)
	_ Lister      = (*Memory)(nil)
	_ ScopeLister = (*Memory)(nil)
)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{entries: make(map[Key]Entry)}
}

func (m *Memory) check(ctx context.Context, key Key) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return key.Validate()
}

// Get returns a copy of the entry at key, or ErrNotFound.
func (m *Memory) Get(ctx context.Context, key Key) (Entry, error) {
	if err := m.check(ctx, key); err != nil {
		return Entry{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Entry{}, ErrClosed
	}
	e, ok := m.entries[key]
	if !ok {
		return Entry{}, ErrNotFound
	}
	return Entry{Value: clone(e.Value), Revision: e.Revision}, nil
}

// Put stores a copy of value if the stored revision equals expected.
func (m *Memory) Put(ctx context.Context, key Key, value []byte, expected int64) (int64, error) {
	if err := m.check(ctx, key); err != nil {
		return 0, err
	}
	v := clone(value) // copy outside the lock
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	cur := m.entries[key].Revision
	if cur != expected {
		return 0, &ConflictError{Key: key, Expected: expected, Actual: cur}
	}
	m.seq++
	m.entries[key] = Entry{Value: v, Revision: m.seq}
	return m.seq, nil
}

// Delete removes key if its revision equals expected.
func (m *Memory) Delete(ctx context.Context, key Key, expected int64) error {
	if err := m.check(ctx, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	cur := m.entries[key].Revision
	if cur != expected {
		return &ConflictError{Key: key, Expected: expected, Actual: cur}
	}
	delete(m.entries, key)
	return nil
}

// Keys returns the keys of one scope, ordered by CompareKeys. It walks the
// whole map: Memory holds test-sized data.
func (m *Memory) Keys(ctx context.Context, scope, scopeID string) ([]Key, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ValidateScope(scope, scopeID); err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	keys := []Key{}
	for k := range m.entries {
		if k.Scope == scope && k.ScopeID == scopeID {
			keys = append(keys, k)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(keys, CompareKeys)
	return keys, nil
}

// ScopeIDs returns the scope ids of scope that start with prefix, sorted.
// Like Keys it walks the whole map.
func (m *Memory) ScopeIDs(ctx context.Context, scope, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ValidateScopeName(scope); err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	seen := map[string]bool{}
	ids := []string{}
	for k := range m.entries {
		if k.Scope == scope && strings.HasPrefix(k.ScopeID, prefix) && !seen[k.ScopeID] {
			seen[k.ScopeID] = true
			ids = append(ids, k.ScopeID)
		}
	}
	m.mu.Unlock()
	slices.Sort(ids)
	return ids, nil
}

// Close drops all entries; later calls return ErrClosed.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	m.entries = nil
	return nil
}

// clone returns a copy of b that is never nil, so an empty value reads back
// as an empty, non-nil slice.
func clone(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	return out
}
