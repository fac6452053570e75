package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/stratamem/strata/storage"
)

// ErrStorageRevoked is returned by the LayerStorage given to an Init hook
// when it is used after the hook returned or timed out. A hook that
// outlives its timeout (it ignored its context) could otherwise go on
// writing for a layer the run has disabled, concurrently with the run.
var ErrStorageRevoked = errors.New("core: layer storage used after its init hook returned or timed out")

// layerStorage is a layer's window on the runtime's store: its values
// under its scope key. It remembers the revision it last saw of each value
// so every write is a compare-and-swap.
type layerStorage struct {
	s    *Session
	base storage.Key
}

// layerStorage returns the storage of a durable layer, or nil for an
// execution-scoped layer or a child run.
func (s *Session) layerStorage(spec layerConfig) *layerStorage {
	if s.child {
		return nil
	}
	key := storage.Key{Scope: string(spec.Scope), Layer: spec.ID}
	switch spec.Scope {
	case ScopeThread:
		// A thread of a resource is keyed by both: two resources that
		// name a thread alike never share its state.
		key.ScopeID = storage.ThreadScopeID(s.info.ResourceID, s.info.ThreadID)
	case ScopeResource:
		key.ScopeID = s.info.ResourceID
	case ScopeGlobal:
	default:
		return nil
	}
	return &layerStorage{s: s, base: key}
}

// rev is the revision the session last saw of key (0: absent).
func (s *Session) rev(k storage.Key) int64 {
	s.revsMu.Lock()
	defer s.revsMu.Unlock()
	return s.revs[k]
}

func (s *Session) setRev(k storage.Key, rev int64) {
	s.revsMu.Lock()
	s.revs[k] = rev
	delete(s.seen, k)
	s.revsMu.Unlock()
}

// setSeen records the revision of k and the bytes it holds.
func (s *Session) setSeen(k storage.Key, rev int64, value []byte) {
	s.revsMu.Lock()
	s.revs[k] = rev
	s.seen[k] = value
	s.revsMu.Unlock()
}

// unchanged reports whether value is what the revision this session last
// saw of k holds.
func (s *Session) unchanged(k storage.Key, value []byte) bool {
	s.revsMu.Lock()
	defer s.revsMu.Unlock()
	old, ok := s.seen[k]
	return ok && s.revs[k] != 0 && bytes.Equal(old, value)
}

func (l *layerStorage) key(name string) storage.Key {
	k := l.base
	k.Name = name
	return k
}

// Load implements LayerStorage.
func (l *layerStorage) Load(ctx context.Context, name string, v any) (bool, error) {
	k := l.key(name)
	e, err := l.s.rt.store.Get(ctx, k)
	if errors.Is(err, storage.ErrNotFound) {
		l.s.setRev(k, 0)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	l.s.setSeen(k, e.Revision, e.Value)
	if err := json.Unmarshal(e.Value, v); err != nil {
		return true, fmt.Errorf("core: decode %s: %w", k, err)
	}
	return true, nil
}

// Save implements LayerStorage.
func (l *layerStorage) Save(ctx context.Context, name string, v any) error {
	k := l.key(name)
	raw, err := marshalNoEscape(v)
	if err != nil {
		return fmt.Errorf("core: encode %s: %w", k, err)
	}
	// Saving what the store holds already changes nothing: no write, so
	// no conflict with a run that wrote meanwhile (layers whose state
	// holds nothing to persist save on every change of their records).
	if l.s.unchanged(k, raw) {
		return nil
	}
	// A value this session never read is expected to be absent: writing
	// over a value it has not seen would be a blind overwrite.
	rev, err := l.s.rt.store.Put(ctx, k, raw, l.s.rev(k))
	if err != nil {
		return err
	}
	l.s.setSeen(k, rev, raw)
	return nil
}

// initStorage is the LayerStorage an Init hook gets: usable only while
// the hook's context lives, that is until the hook returns or its
// deadline passes. Each call runs under a context that ends with the
// hook's, and revoke waits for the calls in flight, so once revoke returns
// nothing more reaches the store through this handle.
type initStorage struct {
	inner   LayerStorage
	hook    context.Context // the init hook's context
	mu      sync.RWMutex    // held shared by each call, exclusively by revoke
	revoked bool
}

func newInitStorage(inner LayerStorage, hook context.Context) *initStorage {
	return &initStorage{inner: inner, hook: hook}
}

// call runs op unless the handle is revoked, with a context that ends
// when the hook's does.
func (s *initStorage) call(ctx context.Context, op func(context.Context) error) error {
	if s.hook.Err() != nil {
		return ErrStorageRevoked
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.revoked {
		return ErrStorageRevoked
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.hook, cancel)
	defer stop()
	return op(ctx)
}

func (s *initStorage) Load(ctx context.Context, name string, v any) (found bool, err error) {
	err = s.call(ctx, func(ctx context.Context) error {
		found, err = s.inner.Load(ctx, name, v)
		return err
	})
	return found, err
}

func (s *initStorage) Save(ctx context.Context, name string, v any) error {
	return s.call(ctx, func(ctx context.Context) error { return s.inner.Save(ctx, name, v) })
}

// revoke is called once the hook's context has ended: it waits for the
// calls in flight (cancelled with that context) and refuses later ones.
func (s *initStorage) revoke() {
	s.mu.Lock()
	s.revoked = true
	s.mu.Unlock()
}
