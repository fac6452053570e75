// Package memory holds what strata's memory layers share: the Store they
// write their records to. The layers themselves live in the sub-packages
// (episodic, semantic, entity, observations, temporal, scratchpad).
//
// Memories are records, not opaque blobs: each layer
// writes vectorstore.Records with its layer name, the thread or resource
// they belong to, a kind, text, metadata, validity times and an embedding,
// so memctl can list, search, edit, delete, export and re-embed them across
// backends. A layer keeps an in-memory mirror of what it needs to render,
// loaded at init and kept in step on every write, so recall does not query
// the store every turn; changes made from outside (memctl) are seen by the
// next run.
//
// Every layer has one shape: New(store, Options) (*Layer, error). Its
// Options embed Common, the options all layers share (id, name, slot,
// scope, budget, placement, timeouts, init-error policy, logger), whose
// zero values mean the layer's own defaults. *Layer is a core.AnyLayer (it
// embeds the core.Layer[State] the runtime runs), so a host lists the
// layers themselves:
//
//	Layers: []core.AnyLayer{ents, eps, facts, obs, recall, pad}
//
// and its methods are the Go API over the same records, taking the scope
// (a vectorstore.Scope) directly: List, Put and Delete on every layer,
// Search on semantic. Put goes through the path the model's calls (or the
// layer's extraction) take, with the same validation and record ids.
// Layers fit their rendering with the runtime's token counter
// (core.RecallParams.Tokens), so none needs a tokenizer of its own; only
// episodic keeps Options.Tokenizer, for the token count it stores with an
// episode when a run completes, where no hook is given the counter.
package memory

import (
	"errors"
	"fmt"
	"time"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/vectorstore"
)

// Store is what a memory layer needs to persist and find its memories.
type Store struct {
	// Records is the collection memories are written to. Several layers
	// may share one collection: every record names its layer.
	Records *vectorstore.Collection
	// Embedder embeds record text; its dimension must match the
	// collection's.
	Embedder embed.Embedder
	// Now returns the current time; nil means time.Now. Inject a clock for
	// tests and replays: rendered output that mentions time reads it here.
	Now func() time.Time
}

// ErrInvalidStore is wrapped by Validate's errors.
var ErrInvalidStore = errors.New("memory: invalid store")

// Validate reports a store a layer cannot use, naming the field.
func (s *Store) Validate() error {
	switch {
	case s == nil:
		return fmt.Errorf("%w: nil store", ErrInvalidStore)
	case s.Records == nil:
		return fmt.Errorf("%w: Records is nil", ErrInvalidStore)
	case s.Embedder == nil:
		return fmt.Errorf("%w: Embedder is nil", ErrInvalidStore)
	case s.Embedder.Dimension() != s.Records.Info().Dimension:
		return fmt.Errorf("%w: Embedder dimension %d does not match the collection's %d",
			ErrInvalidStore, s.Embedder.Dimension(), s.Records.Info().Dimension)
	}
	return nil
}

// Time returns the store's current time in UTC.
func (s *Store) Time() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// ScopeKey is the part a record's scope contributes to the deterministic
// ids the layers give their records (the record of one entity, note or
// episode in one scope): scope is "thread", "resource" or "global". A
// thread of a resource is keyed by both, so two resources that name a
// thread alike never write one record. Tools that create or find a layer's
// records by id (memctl) use it rather than a copy.
func ScopeKey(scope string, s vectorstore.Scope) string {
	switch scope {
	case "thread":
		if s.Resource != "" {
			return "thread\x00" + s.Resource + "\x00" + s.Thread
		}
		return "thread\x00" + s.Thread
	case "resource":
		return "resource\x00" + s.Resource
	}
	return "global"
}
