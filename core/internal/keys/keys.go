// Package keys names the store keys the runtime keeps of its own, beside
// the layers' state, so that core and core/inspect agree on them. Layer
// ids may not start with '_', so none collides with a layer's state.
package keys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/stratamem/strata/storage"
)

// scopeThread is core.ScopeThread.
const scopeThread = "thread"

// LastAssembly is where the last assembly of a thread is kept: under the
// thread's scope id, so a thread of a resource is keyed by both.
func LastAssembly(resource, thread string) storage.Key {
	return storage.Key{Scope: scopeThread, ScopeID: storage.ThreadScopeID(resource, thread), Layer: "_strata", Name: "last_assembly"}
}

// Binding is where a thread's owner (a JSON string) is kept.
func Binding(thread string) storage.Key {
	return storage.Key{Scope: scopeThread, ScopeID: thread, Layer: "_strata", Name: "resource"}
}

// Owner reads the resource a thread is bound to; ok is false when the
// thread is not bound yet.
func Owner(ctx context.Context, st storage.Store, thread string) (owner string, ok bool, err error) {
	e, err := st.Get(ctx, Binding(thread))
	if errors.Is(err, storage.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if err := json.Unmarshal(e.Value, &owner); err != nil {
		return "", false, fmt.Errorf("core: decode the owner of thread %q: %w", thread, err)
	}
	return owner, true, nil
}

// AssemblyIndex is where a thread keeps the index of its assembly
// records: the next turn number and the oldest record kept.
func AssemblyIndex(resource, thread string) storage.Key {
	return storage.Key{Scope: scopeThread, ScopeID: storage.ThreadScopeID(resource, thread), Layer: "_strata", Name: "assemblies"}
}

// Assembly is where the record of a thread's assembly turn is kept. The
// turn is zero-padded so the records list in turn order.
func Assembly(resource, thread string, turn int) storage.Key {
	return storage.Key{Scope: scopeThread, ScopeID: storage.ThreadScopeID(resource, thread), Layer: "_strata", Name: fmt.Sprintf("assembly-%010d", turn)}
}

// IsAssembly reports whether k is one of the runtime's recorded-assembly
// keys: the last view, the index of plan records, a plan record, or a
// chunk of recorded log items, or a recorded part kept by its digest.
func IsAssembly(k storage.Key) bool {
	if k.Scope != scopeThread || k.Layer != "_strata" {
		return false
	}
	return k.Name == "last_assembly" || k.Name == "assemblies" ||
		strings.HasPrefix(k.Name, "assembly-") || strings.HasPrefix(k.Name, "assemblylog-") ||
		strings.HasPrefix(k.Name, "assemblyblob-")
}

// LogChunk is the key of chunk c of the stored log of a run (by its tag).
func LogChunk(resource, thread, run string, c int) storage.Key {
	return storage.Key{Scope: scopeThread, ScopeID: storage.ThreadScopeID(resource, thread), Layer: "_strata", Name: fmt.Sprintf("assemblylog-%s-%08d", run, c)}
}

// Blob is the key of a recorded part by its content digest.
func Blob(resource, thread, digest string) storage.Key {
	return storage.Key{Scope: scopeThread, ScopeID: storage.ThreadScopeID(resource, thread), Layer: "_strata", Name: "assemblyblob-" + digest}
}
