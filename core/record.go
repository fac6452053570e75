package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stratamem/strata/storage"
)

// AssemblyRecord is what the runtime keeps of a thread's last assembly
// when Config.RecordAssemblies is on: what the model saw, band by band,
// and the usage report. memctl inspect reads it.
type AssemblyRecord struct {
	RunID    string `json:"run_id"`
	ThreadID string `json:"thread_id"`
	// ResourceID is the resource the thread belongs to, if any.
	ResourceID string `json:"resource_id,omitempty"`
	Turn       int    `json:"turn"`
	// Bands maps a band name to its items, in view order.
	Bands      []RecordedBand `json:"bands"`
	Tools      []string       `json:"tools,omitempty"`
	PrefixHash string         `json:"prefix_hash"`
	Usage      *Usage         `json:"usage"`
}

// RecordedBand is one band of a recorded view.
type RecordedBand struct {
	Band   string `json:"band"`
	Tokens int    `json:"tokens"`
	Items  []Item `json:"items"`
}

// recordKey is where the last assembly of a thread is kept: under the
// thread's scope id, so a thread of a resource is keyed by both. Layer ids
// may not start with '_', so it cannot collide with a layer's state.
func recordKey(resource, thread string) storage.Key {
	return storage.Key{Scope: string(ScopeThread), ScopeID: storage.ThreadScopeID(resource, thread), Layer: "_strata", Name: "last_assembly"}
}

// LastAssemblyKey is the key under which the runtime keeps the last
// assembly of a thread of resource ("" for a thread of no resource), for
// tools that erase or copy it.
func LastAssemblyKey(resource, thread string) storage.Key { return recordKey(resource, thread) }

// LastAssembly reads the recorded last assembly of a thread of resource
// ("" for a thread of no resource) from a store. A record written before
// threads were keyed by resource is found too, when the thread belongs to
// that resource.
func LastAssembly(ctx context.Context, st storage.Store, resource, thread string) (*AssemblyRecord, error) {
	e, err := st.Get(ctx, recordKey(resource, thread))
	if errors.Is(err, storage.ErrNotFound) && resource != "" {
		if owner, ok, berr := threadOwner(ctx, st, thread); berr == nil && ok && owner == resource {
			e, err = st.Get(ctx, recordKey("", thread))
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

// recordAssembly keeps the view as the thread's last assembly. Concurrent
// runs of a thread race for the record: the latest write wins, which is
// what "last" means, so a conflict is retried with the stored revision.
func (s *Session) recordAssembly(ctx context.Context, v *View) {
	if !s.rt.cfg.RecordAssemblies || s.info.ThreadID == "" || s.child {
		return
	}
	rec := AssemblyRecord{RunID: s.info.RunID, ThreadID: s.info.ThreadID, ResourceID: s.info.ResourceID, Turn: v.Turn, PrefixHash: v.PrefixHash, Usage: v.Usage}
	for b, items := range v.bands {
		if len(items) > 0 {
			rec.Bands = append(rec.Bands, RecordedBand{Band: Band(b).String(), Tokens: v.tokens[b], Items: items})
		}
	}
	for _, t := range v.Tools {
		rec.Tools = append(rec.Tools, t.Name)
	}
	raw, err := marshalNoEscape(rec)
	if err != nil {
		s.diagnose("_strata", "record", KindError, err)
		return
	}
	key := recordKey(s.info.ResourceID, s.info.ThreadID)
	for attempt := 0; attempt < 3; attempt++ {
		rev, err := s.rt.store.Put(ctx, key, raw, s.rev(key))
		if err == nil {
			s.setRev(key, rev)
			return
		}
		if !errors.Is(err, storage.ErrConflict) {
			s.diagnose("_strata", "record", KindError, err)
			return
		}
		e, gerr := s.rt.store.Get(ctx, key)
		switch {
		case errors.Is(gerr, storage.ErrNotFound):
			s.setRev(key, 0)
		case gerr != nil:
			s.diagnose("_strata", "record", KindError, gerr)
			return
		default:
			s.setRev(key, e.Revision)
		}
	}
}
