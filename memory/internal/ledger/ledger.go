// Package ledger is the skeleton the observations and temporal layers
// share: both keep records of one kind in a thread or resource scope,
// mirrored per session and loaded at init; both are written by the
// model's routed record calls (applied once per call id, the ids kept in
// the persisted state so a later session does not apply them again) and
// by an extractor that reads each model call's new items; both have the
// same Go API over a scope. What differs, the records, their merge rules
// and each layer's defaults, stays in the layers.
package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"github.com/stratamem/strata/vectorstore"
)

// Ledger is a layer's resolved identity: its store, id, record kind and
// scope (core.ScopeThread or core.ScopeResource), and the name its errors
// start with.
type Ledger struct {
	Store *memory.Store
	// ID is the layer id: the layer of its records.
	ID string
	// Kind is the record kind of the layer's current records.
	Kind  string
	Scope core.Scope
	// Name prefixes errors: "observations", "temporal".
	Name string
	// Notice is the layer's scope notice (layerkit.NewScopeNotice), which
	// Init checks; nil when there is nothing to notice.
	Notice *layerkit.ScopeNotice
}

// Open is how both layers' New start: store must be usable (else its
// error, wrapping memory.ErrInvalidStore), then c is resolved from d
// (layerkit.Resolve).
func Open(store *memory.Store, c memory.Common, d layerkit.Defaults) (memory.Common, error) {
	if err := store.Validate(); err != nil {
		return c, err
	}
	return layerkit.Resolve(c, d)
}

// ScopeOf is the record scope of a run. A thread's records name its
// resource too.
func (g *Ledger) ScopeOf(run core.RunInfo) vectorstore.Scope {
	return layerkit.ThreadOrResource(g.Scope, run)
}

// Check normalises a scope given to the Go API; naming none is an error
// wrapping memory.ErrScope.
func (g *Ledger) Check(s vectorstore.Scope) (vectorstore.Scope, error) {
	return layerkit.CheckScope(g.ID, g.Scope, s, memory.ErrScope)
}

// Filter selects the layer's current records of a scope.
func (g *Ledger) Filter(s vectorstore.Scope) vectorstore.Filter {
	return vectorstore.Filter{Layer: g.ID, Kind: g.Kind, Thread: s.Thread, Resource: s.Resource}
}

// AllKinds selects every record of the layer in a scope, whatever its
// kind.
func (g *Ledger) AllKinds(s vectorstore.Scope) vectorstore.Filter {
	return vectorstore.Filter{Layer: g.ID, Thread: s.Thread, Resource: s.Resource}
}

// RecordID is the deterministic id of a record of layer id in scope with
// this natural key (its parts): prefix, "-", and 16 bytes of SHA-256 over
// the layer, the scope's thread and resource and the parts, each ended by
// a NUL, so re-applying a write is idempotent.
func RecordID(prefix, id string, scope vectorstore.Scope, parts ...string) string {
	h := sha256.New()
	for _, s := range append([]string{id, scope.Thread, scope.Resource}, parts...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return prefix + "-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// Delete removes the records with these ids that f selects and returns
// how many it removed (Layer.Delete of both layers).
func (g *Ledger) Delete(ctx context.Context, scope vectorstore.Scope, f func(vectorstore.Scope) vectorstore.Filter, ids []string) (int, error) {
	scope, err := g.Check(scope)
	if err != nil {
		return 0, err
	}
	n, err := layerkit.Delete(ctx, g.Store.Records, f(scope), ids)
	if err != nil {
		return n, fmt.Errorf("%s: delete: %w", g.Name, err)
	}
	return n, nil
}

// Init is both layers' Init hook: it checks the scope notice, adopts the
// thread's records of an earlier version when the run has just bound the
// thread, decodes the persisted state and completes it with load, which
// loads the mirror of the run's scope.
func Init[S any](ctx context.Context, g *Ledger, p core.InitParams, load func(*S, vectorstore.Scope) error) (S, error) {
	g.Notice.Check(ctx, p)
	if p.ClaimedThread {
		if _, err := layerkit.AdoptThreadRecords(ctx, g.Store.Records, g.ID, p.Run); err != nil {
			var zero S
			return zero, fmt.Errorf("%s: %w", g.Name, err)
		}
	}
	scope := g.ScopeOf(p.Run)
	return layerkit.InitState(p.Stored, func(st *S) error { return load(st, scope) })
}

// Calls returns the state's call log after applying a record call: a
// replay (an id already applied, in this session or a persisted one) is
// answered with out of the first application and ok false; otherwise
// apply runs and its output is logged under the call id (a call without
// one is not logged), keeping the newest memory.MaxPersistedCalls ids.
func Calls(applied []string, outputs map[string]string, callID string, apply func() (string, error)) (out string, ids []string, outs map[string]string, ok bool, err error) {
	calls := memory.CallLog{IDs: applied, Outputs: outputs}
	if out, replay := calls.Replay(callID); replay {
		return out, applied, outputs, false, nil
	}
	out, err = apply()
	if err != nil {
		return "", applied, outputs, false, err
	}
	if callID != "" {
		calls = calls.With(callID, out).Trim(memory.MaxPersistedCalls)
	}
	return out, calls.IDs, calls.Outputs, true, nil
}

// MergeCalls is both layers' Merge of a compare-and-swap conflict: the
// applied call ids of both sessions are kept.
func MergeCalls(stored, mine []string) []string {
	return memory.MergeCallIDs(stored, mine, memory.MaxPersistedCalls)
}

// Spec is both layers' core layer: the resolved common options, their
// hooks and functions, and merge, which resolves a compare-and-swap
// conflict between two sessions of one scope (MergeCalls). The layers'
// memories are records their hooks write: a hook that times out leaves
// them unconfirmed, and the session method says so (WritesRecords).
func Spec[S any](c memory.Common, merge func(stored, mine S) S, hooks core.Hooks[S], fns ...core.Function[S]) core.Layer[S] {
	cl := layerkit.Spec[S](c)
	cl.Functions = fns
	cl.Merge = merge
	cl.WritesRecords = true
	cl.Hooks = hooks
	return cl
}

// Found is one value an extractor returned, with where it came from.
type Found[T any] struct {
	Value T
	// Items are the positions, in the store hook's NewItems, of the items
	// the value came from: those the extractor named, else all it was
	// given. Named says which.
	Items []int
	Named bool
	// Sources are the source ids of those items (layerkit.SourceID).
	Sources []string
}

// Extract is both layers' extraction in the store hook: it hands the new
// items, except the layer's own calls (own, full names) and their outputs,
// to extract, and returns what it found, each value with the items it
// names by position among those it was given (from; out-of-range positions
// are ignored) or, when it names none, all of them. base is the log index
// of newItems[0]. It returns nil when no item is left to read.
func Extract[T any](ctx context.Context, run core.RunInfo, newItems []core.Item, base int, own []string,
	extract func(context.Context, []core.Item) ([]T, error), from func(T) []int) ([]Found[T], error) {
	items, idx := layerkit.Foreign(newItems, own...)
	if len(items) == 0 {
		return nil, nil
	}
	found, err := extract(ctx, items)
	if err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	out := make([]Found[T], 0, len(found))
	for _, v := range found {
		f := Found[T]{Value: v, Named: true}
		for _, j := range from(v) {
			if j >= 0 && j < len(items) {
				f.Items = append(f.Items, idx[j])
			}
		}
		if len(f.Items) == 0 {
			f.Items, f.Named = idx, false
		}
		for _, i := range f.Items {
			f.Sources = append(f.Sources, layerkit.SourceID(run, newItems[i], base+i))
		}
		out = append(out, f)
	}
	return out, nil
}
