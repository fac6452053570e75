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
