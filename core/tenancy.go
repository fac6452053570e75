package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stratamem/strata/core/internal/keys"
	"github.com/stratamem/strata/storage"
)

// Tenancy: a thread belongs to one resource, and its
// state is keyed by both, so isolation is a property of keys, not of care.
//
//   - A thread of a resource keeps its state under the scope id
//     storage.ThreadScopeID(resource, thread); a thread of no resource
//     under its id alone.
//   - The first run on a thread binds the thread to its resource (or to
//     none) in the runtime's store; a later run naming the thread with
//     another resource, or without one, is refused with a
//     *ThreadBoundError. Two runtimes over one store agree, since the
//     binding is a compare-and-swap write like any state.
//   - Stores written before threads were keyed by resource keep their
//     thread state under the thread id alone. The run that binds such a
//     thread to a resource moves that state under the new key first: the
//     thread was its owner's, and no other resource can bind it after.

// checkRunIDs refuses thread and resource ids that cannot key state:
// control characters (one separates the resource from the thread in a
// thread's scope id) or invalid UTF-8.
func checkRunIDs(opts RunOptions) error {
	for _, f := range []struct{ field, v string }{
		{"RunOptions.ThreadID", opts.ThreadID}, {"RunOptions.ResourceID", opts.ResourceID},
	} {
		if strings.IndexFunc(f.v, unicode.IsControl) >= 0 || !utf8.ValidString(f.v) {
			return &ConfigError{Code: CodeInvalidRun, Field: f.field, Reason: "must be valid UTF-8 without control characters"}
		}
	}
	return nil
}

// bindThread checks that the run's thread belongs to the run's resource,
// binding it on first use. A child run shares its parent's binding.
func (s *Session) bindThread(ctx context.Context) error {
	thread, res := s.info.ThreadID, s.info.ResourceID
	if s.child || thread == "" {
		return nil
	}
	st := s.rt.store
	for attempt := 0; attempt < 3; attempt++ {
		owner, ok, err := keys.Owner(ctx, st, thread)
		if err != nil {
			return fmt.Errorf("core: read the owner of thread %q: %w", thread, err)
		}
		if ok {
			if owner != res {
				return &ThreadBoundError{Thread: thread, Bound: owner, Requested: res}
			}
			return nil
		}
		// Unbound: this run claims the thread. What an earlier version
		// kept under the thread id alone is the thread's, and so its
		// owner's: it moves before the claim, so a crash in between
		// leaves it where the next claim finds it.
		if res != "" {
			if err := s.adoptLegacyState(ctx); err != nil {
				return err
			}
		}
		raw, _ := json.Marshal(res)
		if _, err := st.Put(ctx, keys.Binding(thread), raw, 0); err != nil {
			if errors.Is(err, storage.ErrConflict) {
				continue // another run bound it meanwhile: check its owner
			}
			return fmt.Errorf("core: bind thread %q to its resource: %w", thread, err)
		}
		if res != "" {
			s.claimed = true
			s.dropLegacyState(ctx)
		}
		return nil
	}
	return fmt.Errorf("core: bind thread %q: %w", thread, storage.ErrConflict)
}

// legacyKeys are the keys an earlier version kept for the run's thread
// under the thread id alone: every value of the thread scope when the
// store can list them, else the state of each thread-scoped layer and the
// recorded assembly.
func (s *Session) legacyKeys(ctx context.Context) ([]storage.Key, error) {
	thread := s.info.ThreadID
	if l, ok := s.rt.store.(storage.Lister); ok {
		listed, err := l.Keys(ctx, string(ScopeThread), thread)
		if err != nil {
			return nil, fmt.Errorf("core: list the state of thread %q: %w", thread, err)
		}
		out := listed[:0]
		for _, k := range listed {
			if k != keys.Binding(thread) {
				out = append(out, k)
			}
		}
		return out, nil
	}
	legacy := []storage.Key{keys.LastAssembly("", thread)}
	for _, spec := range s.rt.specs {
		if spec.Scope == ScopeThread {
			legacy = append(legacy, storage.Key{Scope: string(ScopeThread), ScopeID: thread, Layer: spec.ID, Name: "state"})
		}
	}
	return legacy, nil
}

// adoptLegacyState copies the thread's legacy values under the
// resource's thread key. A value already there is newer and kept.
func (s *Session) adoptLegacyState(ctx context.Context) error {
	keys, err := s.legacyKeys(ctx)
	if err != nil {
		return err
	}
	st := s.rt.store
	for _, k := range keys {
		e, err := st.Get(ctx, k)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("core: read legacy state %s: %w", k, err)
		}
		nk := k
		nk.ScopeID = storage.ThreadScopeID(s.info.ResourceID, k.ScopeID)
		if _, err := st.Put(ctx, nk, e.Value, 0); err != nil && !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("core: move legacy state %s to %s: %w", k, nk, err)
		}
	}
	return nil
}

// dropLegacyState deletes the legacy values once the thread is bound and
// their copies are in place. A failure leaves a stale copy that no run
// reads (the thread is bound now): a diagnostic, not an error.
func (s *Session) dropLegacyState(ctx context.Context) {
	keys, err := s.legacyKeys(ctx)
	if err != nil {
		s.diagnose("_strata", "bind", KindError, err)
		return
	}
	for _, k := range keys {
		e, err := s.rt.store.Get(ctx, k)
		if err == nil {
			err = s.rt.store.Delete(ctx, k, e.Revision)
		}
		if err != nil && !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrConflict) {
			s.diagnose("_strata", "bind", KindError, fmt.Errorf("delete legacy state %s: %w", k, err))
		}
	}
}
