package semantic

import (
	"fmt"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
)

// Mode is how recall ranks the stored messages.
type Mode string

// Ranking modes. In Options the empty Mode means ModeHybrid; in
// SearchOptions it means the layer's mode.
const (
	// ModeHybrid fuses the lexical (BM25) and the vector ranking.
	ModeHybrid Mode = "hybrid"
	// ModeDense ranks by vector similarity only.
	ModeDense Mode = "dense"
	// ModeLexical ranks by BM25 only; no embedding is needed to recall
	// (messages are still embedded, so the mode can be changed later).
	ModeLexical Mode = "lexical"
)

func (m Mode) valid() bool { return m == ModeHybrid || m == ModeDense || m == ModeLexical }

// MessageRange is how many messages of the same thread are shown around
// each hit: Before earlier ones and After later ones. Ranges that overlap
// or touch are merged.
type MessageRange struct {
	Before, After int
}

// Limits on options and on the arguments of the provided search function.
const (
	MaxTopK          = 50
	MaxRange         = 20
	MaxQueryChars    = 2000
	maxCandidates    = 1000
	defaultTopK      = 4
	defaultMaxChars  = 2000
	defaultBatch     = 64
	defaultCandidate = 100
)

// Options configure the layer. The zero value is useful. The common
// options (memory.Common) default to: id "semantic", name "Semantic
// recall", slot core.SlotSemanticRecall, thread scope (recall searches
// the messages of the current thread; core.ScopeResource searches every
// thread of the resource, e.g. everything one user said to the agent),
// auto budget and live placement (the output is a function of the latest
// user message, so it changes nearly every turn: anchored, it would
// either pin a stale recall or publish a supersede each turn, while after
// history it costs only its own tokens). The Logger receives warnings the
// layer recovers from (an embedder that fails at recall, when lexical
// results are served alone), and the scope notice while Scope is left ""
// (see memory.Common.Logger). The layer's own options default to the 4
// best messages each with one neighbour before and after, hybrid
// ranking, user and assistant messages recorded.
type Options struct {
	memory.Common
	// TopK is the number of hits recalled per turn, 1..MaxTopK; 0 means 4.
	TopK int
	// MessageRange is the context shown around each hit; nil means
	// {Before: 1, After: 1}, &MessageRange{} shows the hits alone. Each
	// side at most MaxRange.
	MessageRange *MessageRange
	// Mode picks the ranking; "" means ModeHybrid.
	Mode Mode
	// Roles are the message roles recorded; nil means user and assistant.
	Roles []core.Role
	// Location is the time zone dates are rendered in; nil means UTC.
	Location *time.Location
	// MaxMessageChars cuts a recalled message longer than this when it is
	// rendered (the record keeps the whole text); 0 means 2000.
	MaxMessageChars int
	// EmbedBatch is the most messages embedded in one call; 0 means 64.
	EmbedBatch int
	// Candidates is how many results each ranking contributes to the
	// fusion before the top K are taken; 0 means 100.
	Candidates int
	// Ranking tunes the hybrid ranking; the zero value is the default
	// documented on Ranking.
	Ranking Ranking
}

// configError builds the *core.ConfigError for a bad field.
func configError(id, field, format string, args ...any) error {
	return &core.ConfigError{Code: core.CodeInvalidLayer, Layer: id, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// resolved is Options with the defaults applied.
type resolved struct {
	Options
	rng   MessageRange
	roles map[core.Role]bool
}

func (o Options) resolve() (resolved, error) {
	common, err := layerkit.Resolve(o.Common, layerkit.Defaults{
		ID: DefaultID, Name: "Semantic recall", Slot: core.SlotSemanticRecall, Placement: core.PlacementLive,
		Scopes: Format.Scopes(), CheckID: layerkit.NoSlash,
	})
	if err != nil {
		return resolved{}, err
	}
	o.Common = common
	id := o.ID
	switch {
	case o.TopK == 0:
		o.TopK = defaultTopK
	case o.TopK < 0 || o.TopK > MaxTopK:
		return resolved{}, configError(id, "TopK", "must be in 1..%d, got %d", MaxTopK, o.TopK)
	}
	r := resolved{rng: MessageRange{Before: 1, After: 1}}
	if o.MessageRange != nil {
		mr := *o.MessageRange
		if mr.Before < 0 || mr.Before > MaxRange {
			return resolved{}, configError(id, "MessageRange.Before", "must be in 0..%d, got %d", MaxRange, mr.Before)
		}
		if mr.After < 0 || mr.After > MaxRange {
			return resolved{}, configError(id, "MessageRange.After", "must be in 0..%d, got %d", MaxRange, mr.After)
		}
		r.rng = mr
	}
	if o.Mode == "" {
		o.Mode = ModeHybrid
	}
	if !o.Mode.valid() {
		return resolved{}, configError(id, "Mode", "must be %q, %q or %q, got %q", ModeHybrid, ModeDense, ModeLexical, o.Mode)
	}
	r.roles = map[core.Role]bool{}
	if o.Roles == nil {
		r.roles[core.RoleUser] = true
		r.roles[core.RoleAssistant] = true
	}
	for i, role := range o.Roles {
		switch role {
		case core.RoleUser, core.RoleAssistant, core.RoleSystem, core.RoleDeveloper:
			r.roles[role] = true
		default:
			return resolved{}, configError(id, fmt.Sprintf("Roles[%d]", i), "unknown role %q", role)
		}
	}
	if len(r.roles) == 0 {
		return resolved{}, configError(id, "Roles", "empty: no message would be recorded")
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	switch {
	case o.MaxMessageChars == 0:
		o.MaxMessageChars = defaultMaxChars
	case o.MaxMessageChars < 20:
		return resolved{}, configError(id, "MaxMessageChars", "must be 0 (default) or at least 20, got %d", o.MaxMessageChars)
	}
	switch {
	case o.EmbedBatch == 0:
		o.EmbedBatch = defaultBatch
	case o.EmbedBatch < 1 || o.EmbedBatch > 4096:
		return resolved{}, configError(id, "EmbedBatch", "must be in 1..4096, got %d", o.EmbedBatch)
	}
	switch {
	case o.Candidates == 0:
		o.Candidates = defaultCandidate
	case o.Candidates < 1 || o.Candidates > maxCandidates:
		return resolved{}, configError(id, "Candidates", "must be in 1..%d, got %d", maxCandidates, o.Candidates)
	}
	rk, err := o.Ranking.resolve(id)
	if err != nil {
		return resolved{}, err
	}
	o.Ranking = rk
	r.Options = o
	return r, nil
}
