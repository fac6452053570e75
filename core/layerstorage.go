package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stratamem/strata/storage"
)

// layerStorage is a layer's window on the runtime's store: its values
// under its scope key. It remembers the revision it last saw of each value
// so every write is a compare-and-swap.
type layerStorage struct {
	s    *Session
	base storage.Key
}

// layerStorage returns the storage of a durable layer, or nil for an
// execution-scoped layer or a child run.
func (s *Session) layerStorage(spec LayerSpec) *layerStorage {
	if s.child {
		return nil
	}
	key := storage.Key{Scope: string(spec.Scope), Layer: spec.ID}
	switch spec.Scope {
	case ScopeThread:
		key.ScopeID = s.info.ThreadID
	case ScopeResource:
		key.ScopeID = s.info.ResourceID
	case ScopeGlobal:
	default:
		return nil
	}
	return &layerStorage{s: s, base: key}
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
		l.s.revs[k] = 0
		return false, nil
	}
	if err != nil {
		return false, err
	}
	l.s.revs[k] = e.Revision
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
	// A value this session never read is expected to be absent: writing
	// over a value it has not seen would be a blind overwrite.
	expected := l.s.revs[k]
	rev, err := l.s.rt.store.Put(ctx, k, raw, expected)
	if err != nil {
		return err
	}
	l.s.revs[k] = rev
	return nil
}
