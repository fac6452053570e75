package environment

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/storage"
)

// ErrCannotList is wrapped when a state store cannot enumerate its keys
// (it implements neither storage.Lister nor storage.ScopeLister), so its
// state cannot be copied or exported.
var ErrCannotList = errors.New("environment: the state store cannot list its keys")

// stateScopes are the scopes a state store keys values by.
var stateScopes = []string{"global", "resource", "thread"}

// StateKeys lists every key st holds, in every scope: the layers' state,
// the thread bindings, the runtime's recorded assemblies and whatever else
// the runtime keeps, ordered by storage.CompareKeys. The store must
// implement storage.Lister and storage.ScopeLister (Memory, filestore and
// postgres do), else the error wraps ErrCannotList. The list is a
// snapshot: keys written while it is taken may or may not be in it.
func StateKeys(ctx context.Context, st storage.Store) ([]storage.Key, error) {
	l, ok := st.(storage.Lister)
	sl, ok2 := st.(storage.ScopeLister)
	if !ok || !ok2 {
		return nil, fmt.Errorf("%w (%T)", ErrCannotList, st)
	}
	out := []storage.Key{}
	// stateScopes is in CompareKeys order, and each scope's ids and keys
	// come sorted: the result is too.
	for _, scope := range stateScopes {
		ids, err := sl.ScopeIDs(ctx, scope, "")
		if err != nil {
			return nil, fmt.Errorf("list the %s scopes: %w", scope, err)
		}
		for _, id := range ids {
			ks, err := l.Keys(ctx, scope, id)
			if err != nil {
				return nil, fmt.Errorf("list the keys of %s %q: %w", scope, id, err)
			}
			out = append(out, ks...)
		}
	}
	return out, nil
}

// StateAction is what PutState did to a key.
type StateAction string

// The actions of PutState.
const (
	StateAdded     StateAction = "added"
	StateUpdated   StateAction = "updated"
	StateUnchanged StateAction = "unchanged"
)

// PutState makes value the value at k in dst, whatever dst held there:
// created when absent, replaced (compare-and-swap at the revision read)
// when different, left alone when dst holds these bytes already, so a
// copy or an import run twice writes nothing the second time. A value a
// running session rewrites between the read and the write is read again,
// a few times, before PutState gives up with the conflict. The value is
// opaque: copied byte for byte, whatever its format.
func PutState(ctx context.Context, dst storage.Store, k storage.Key, value []byte) (StateAction, error) {
	if err := k.Validate(); err != nil {
		return "", err
	}
	for attempt := 1; ; attempt++ {
		var rev int64
		e, err := dst.Get(ctx, k)
		switch {
		case errors.Is(err, storage.ErrNotFound):
		case err != nil:
			return "", err
		case bytes.Equal(e.Value, value):
			return StateUnchanged, nil
		default:
			rev = e.Revision
		}
		_, err = dst.Put(ctx, k, value, rev)
		switch {
		case err == nil && rev == 0:
			return StateAdded, nil
		case err == nil:
			return StateUpdated, nil
		case !errors.Is(err, storage.ErrConflict) || attempt == 5:
			return "", err
		}
	}
}

// StateCopyOptions select and report what CopyState copies.
type StateCopyOptions struct {
	// Include selects the keys (nil: every key).
	Include func(storage.Key) bool
	// Progress, when set, is told of every key done.
	Progress func(n int)
}

// StateCopyResult counts a state copy: the keys selected, of them the
// runtime's recorded assemblies (inspect.IsAssemblyKey), and those
// written and those the target held already.
type StateCopyResult struct {
	Source, Assemblies, Written, Skipped int
}

// CopyState copies every selected key of src into dst, values byte for
// byte (PutState): the layers' state, the thread bindings and the
// recorded assemblies move with the records, whatever their format. dst
// gives every value its own revision. A key dst holds already with the
// same bytes is not written again, so a copy that failed part-way is run
// again to finish; a key that src no longer holds when it is read (a
// session deleted it meanwhile) is passed over. Check the result with
// VerifyState.
func CopyState(ctx context.Context, src, dst storage.Store, opts StateCopyOptions) (StateCopyResult, error) {
	var res StateCopyResult
	keys, err := selectedKeys(ctx, src, opts.Include)
	if err != nil {
		return res, err
	}
	for _, k := range keys {
		e, err := src.Get(ctx, k)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return res, fmt.Errorf("read %s: %w", k, err)
		}
		res.Source++
		if inspect.IsAssemblyKey(k) {
			res.Assemblies++
		}
		act, err := PutState(ctx, dst, k, e.Value)
		if err != nil {
			return res, fmt.Errorf("write %s: %w", k, err)
		}
		if act == StateUnchanged {
			res.Skipped++
		} else {
			res.Written++
		}
		if opts.Progress != nil {
			opts.Progress(1)
		}
	}
	return res, nil
}

// StateMismatch is a key VerifyState found different in the target.
type StateMismatch struct {
	Key storage.Key
	// Missing says dst does not hold the key; else its value differs.
	Missing bool
}

// VerifyState reads every selected key of src back from dst and compares
// the bytes. It returns the keys src holds, those dst holds alike, and the
// first few that differ. A key src no longer holds when it is read is
// not counted.
func VerifyState(ctx context.Context, src, dst storage.Store, opts StateCopyOptions) (source, verified int, bad []StateMismatch, err error) {
	keys, err := selectedKeys(ctx, src, opts.Include)
	if err != nil {
		return 0, 0, nil, err
	}
	for _, k := range keys {
		e, err := src.Get(ctx, k)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return source, verified, bad, fmt.Errorf("read %s: %w", k, err)
		}
		source++
		d, err := dst.Get(ctx, k)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			if len(bad) < 10 {
				bad = append(bad, StateMismatch{Key: k, Missing: true})
			}
		case err != nil:
			return source, verified, bad, fmt.Errorf("read %s back: %w", k, err)
		case bytes.Equal(d.Value, e.Value):
			verified++
		case len(bad) < 10:
			bad = append(bad, StateMismatch{Key: k})
		}
	}
	return source, verified, bad, nil
}

func selectedKeys(ctx context.Context, st storage.Store, include func(storage.Key) bool) ([]storage.Key, error) {
	keys, err := StateKeys(ctx, st)
	if err != nil || include == nil {
		return keys, err
	}
	out := keys[:0]
	for _, k := range keys {
		if include(k) {
			out = append(out, k)
		}
	}
	return out, nil
}
