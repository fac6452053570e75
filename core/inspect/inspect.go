// Package inspect reads what the runtime keeps of its own in a store,
// beside the layers' state, for tools such as memctl: the last assembly
// of a thread (kept when core.Config.RecordAssemblies is on) and the
// resource each thread is bound to. A runtime's hosts and layers do not
// need it.
package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/internal/keys"
	"github.com/stratamem/strata/storage"
)

// AssemblyRecord is what the runtime keeps of a thread's last assembly:
// what the model saw, band by band, and the usage report.
type AssemblyRecord struct {
	RunID    string `json:"run_id"`
	ThreadID string `json:"thread_id"`
	// ResourceID is the resource the thread belongs to, if any.
	ResourceID string `json:"resource_id,omitempty"`
	Turn       int    `json:"turn"`
	// Bands lists the view's non-empty bands, in view order.
	Bands []RecordedBand `json:"bands"`
	// Tools are the names of the tools the view offered.
	Tools      []string    `json:"tools,omitempty"`
	PrefixHash string      `json:"prefix_hash"`
	Usage      *core.Usage `json:"usage"`
}

// RecordedBand is one band of a recorded view.
type RecordedBand struct {
	// Band is the band's name (projector.Band.String).
	Band   string      `json:"band"`
	Tokens int         `json:"tokens"`
	Items  []core.Item `json:"items"`
}

// LastAssemblyKey is the key under which the runtime keeps the last
// assembly of a thread of resource ("" for a thread of no resource), for
// tools that erase or copy it.
func LastAssemblyKey(resource, thread string) storage.Key { return keys.LastAssembly(resource, thread) }

// LastAssembly reads the recorded last assembly of a thread of resource
// ("" for a thread of no resource) from a store. A record written before
// threads were keyed by resource is found too, when the thread belongs to
// that resource.
func LastAssembly(ctx context.Context, st storage.Store, resource, thread string) (*AssemblyRecord, error) {
	if p, err := LatestAssembly(ctx, st, resource, thread); err == nil {
		rec := &AssemblyRecord{RunID: p.RunID, ThreadID: p.ThreadID, ResourceID: p.ResourceID, Turn: p.RunTurn,
			PrefixHash: p.Hashes.Prefix, Usage: p.Usage}
		for _, b := range p.Bands {
			rec.Bands = append(rec.Bands, RecordedBand{Band: b.Band, Tokens: b.Tokens, Items: b.Items})
		}
		for _, t := range p.Tools {
			rec.Tools = append(rec.Tools, t.Name)
		}
		return rec, nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return nil, err
	}
	// A store written before every assembly was recorded keeps the last
	// view alone.
	e, err := st.Get(ctx, keys.LastAssembly(resource, thread))
	if errors.Is(err, storage.ErrNotFound) && resource != "" {
		if owner, ok, berr := keys.Owner(ctx, st, thread); berr == nil && ok && owner == resource {
			e, err = st.Get(ctx, keys.LastAssembly("", thread))
		}
	}
	if err != nil {
		return nil, err
	}
	var rec AssemblyRecord
	if err := json.Unmarshal(e.Value, &rec); err != nil {
		return nil, fmt.Errorf("core: decode recorded assembly of thread %q: %w", thread, err)
	}
	return &rec, nil
}

// ThreadBindingKey is the key under which the runtime keeps the resource a
// thread belongs to (a JSON string), for tools that erase a resource.
func ThreadBindingKey(thread string) storage.Key { return keys.Binding(thread) }

// ThreadOwner reports the resource a thread belongs to in a runtime's
// store ("" for a thread of no resource); ok is false for a thread no run
// has used since threads were bound.
func ThreadOwner(ctx context.Context, st storage.Store, thread string) (resource string, ok bool, err error) {
	return keys.Owner(ctx, st, thread)
}

// Plan is the record of one assembly of a thread: its plan (segment
// hashes, the usage report per layer, the history items kept, cut or
// summarised, the cache report of its call) and its bands, from which
// Plan.View renders the view again byte for byte.
type Plan = core.AssemblyRecord

// AssemblySummary is one line of a thread's list of assembly records.
type AssemblySummary struct {
	Turn       int    `json:"turn"`
	RunID      string `json:"run_id"`
	RunTurn    int    `json:"run_turn"`
	Tokens     int    `json:"tokens"`
	Items      int    `json:"items"`
	PrefixHash string `json:"prefix_hash"`
	AnchorHash string `json:"anchor_hash,omitempty"`
	// Epoch is the cache epoch id, "" when anchoring was disabled.
	Epoch      string `json:"epoch,omitempty"`
	Reanchored bool   `json:"reanchored,omitempty"`
	// HistoryDropped counts log items the view left out.
	HistoryDropped int `json:"history_dropped"`
}

// ErrNoRecords is returned (wrapping storage.ErrNotFound) for a thread
// without assembly records.
var ErrNoRecords = fmt.Errorf("no assembly records: %w", storage.ErrNotFound)

type assemblyIndex struct {
	Next  int `json:"next"`
	First int `json:"first"`
}

func readIndex(ctx context.Context, st storage.Store, resource, thread string) (assemblyIndex, error) {
	var idx assemblyIndex
	e, err := st.Get(ctx, keys.AssemblyIndex(resource, thread))
	if errors.Is(err, storage.ErrNotFound) {
		return idx, fmt.Errorf("thread %q: %w", thread, ErrNoRecords)
	}
	if err != nil {
		return idx, err
	}
	if err := json.Unmarshal(e.Value, &idx); err != nil {
		return idx, fmt.Errorf("core: decode the assembly index of thread %q: %w", thread, err)
	}
	return idx, nil
}

func readPlan(ctx context.Context, st storage.Store, resource, thread string, turn int) (*Plan, error) {
	e, err := st.Get(ctx, keys.Assembly(resource, thread, turn))
	if err != nil {
		return nil, err
	}
	var rec Plan
	if err := json.Unmarshal(e.Value, &rec); err != nil {
		return nil, fmt.Errorf("core: decode assembly %d of thread %q: %w", turn, thread, err)
	}
	return &rec, nil
}

// readHydrated reads a record with its bands and tools.
func readHydrated(ctx context.Context, st storage.Store, resource, thread string, turn int) (*Plan, error) {
	rec, err := readPlan(ctx, st, resource, thread, turn)
	if err != nil {
		return nil, err
	}
	if err := rec.Hydrate(ctx, st); err != nil {
		return nil, err
	}
	return rec, nil
}

// ListAssemblies lists the assembly records a thread of resource ("" for
// a thread of no resource) keeps, oldest first. A thread without records
// yields an error wrapping storage.ErrNotFound.
func ListAssemblies(ctx context.Context, st storage.Store, resource, thread string) ([]AssemblySummary, error) {
	idx, err := readIndex(ctx, st, resource, thread)
	if err != nil {
		return nil, err
	}
	out := []AssemblySummary{}
	for t := idx.First; t < idx.Next; t++ {
		rec, err := readPlan(ctx, st, resource, thread, t)
		if errors.Is(err, storage.ErrNotFound) {
			continue // dropped by retention meanwhile
		}
		if err != nil {
			return nil, err
		}
		sum := AssemblySummary{Turn: rec.Turn, RunID: rec.RunID, RunTurn: rec.RunTurn, PrefixHash: rec.Hashes.Prefix, AnchorHash: rec.Hashes.Anchor}
		for _, b := range rec.Bands {
			sum.Items += len(b.Items)
		}
		if rec.Stored != nil {
			for _, b := range rec.Stored.Bands {
				sum.Items += b.Count
			}
		}
		if u := rec.Usage; u != nil {
			sum.Tokens, sum.HistoryDropped = u.Total, u.HistoryDropped
			if u.Epoch != nil {
				sum.Epoch, sum.Reanchored = u.Epoch.ID, u.Epoch.Reanchored
			}
		}
		out = append(out, sum)
	}
	return out, nil
}

// ReadAssembly reads the record of a thread's assembly turn. Its Cache is
// the cache report the host gave for the call made with it, read from the
// thread's next record (nil when there is none yet). A turn not kept
// yields an error wrapping storage.ErrNotFound.
func ReadAssembly(ctx context.Context, st storage.Store, resource, thread string, turn int) (*Plan, error) {
	rec, err := readHydrated(ctx, st, resource, thread, turn)
	if err != nil {
		return nil, fmt.Errorf("assembly %d of thread %q: %w", turn, thread, err)
	}
	next, err := readPlan(ctx, st, resource, thread, turn+1)
	switch {
	case err == nil:
		if next.RunID == rec.RunID {
			rec.Cache = next.PrevCache
		}
	case !errors.Is(err, storage.ErrNotFound):
		return nil, err
	}
	return rec, nil
}

// LatestAssembly reads the newest record of a thread (see ReadAssembly).
func LatestAssembly(ctx context.Context, st storage.Store, resource, thread string) (*Plan, error) {
	idx, err := readIndex(ctx, st, resource, thread)
	if err != nil {
		return nil, err
	}
	for t := idx.Next - 1; t >= idx.First; t-- {
		rec, err := ReadAssembly(ctx, st, resource, thread, t)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		return rec, err
	}
	return nil, fmt.Errorf("thread %q: %w", thread, ErrNoRecords)
}

// IsAssemblyKey reports whether k holds part of a thread's recorded
// assemblies (the last view, the plan index, a plan record or recorded log
// items), for tools that erase, copy or count them: every such key lives
// in the thread's scope.
func IsAssemblyKey(k storage.Key) bool { return keys.IsAssembly(k) }
