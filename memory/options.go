package memory

import (
	"errors"
	"log/slog"

	"github.com/stratamem/strata/core"
)

// PlacementAuto asks, in Common.Placement, for the runtime's choice of
// band (core.PlacementAuto). It is needed because core.PlacementAuto is
// the zero value, which in Common means "the layer's default placement",
// and some layers default to another band (temporal anchors, semantic
// recall renders live).
const PlacementAuto core.Placement = "auto"

// Common are the options every memory layer has; each layer's Options
// embeds it. Every field's zero value means the layer's own default,
// which its Options documents (the defaults differ because the layers
// do: a ledger of facts anchors, a recall of the latest message renders
// live), so the same zero Common configures every layer sensibly.
type Common struct {
	// ID names the layer: unique in a runtime, the layer name of its
	// records and the prefix of its provided functions ("<ID>/<name>").
	// "" means the layer's DefaultID. It must not contain '/'.
	ID string
	// Name is the layer's display name; "" means the layer's own.
	Name string
	// Slot orders the layer in its band; 0 means the layer's default
	// slot.
	Slot core.Slot
	// Scope is whose memories the layer reads and writes: "" means the
	// layer's default. Every layer accepts core.ScopeThread and
	// core.ScopeResource, some also core.ScopeGlobal; none accepts
	// core.ScopeExecution, since memories exist to outlive the run.
	Scope core.Scope
	// Budget caps the rendered tokens; the zero value means the layer's
	// default (auto for some layers, a range for others).
	Budget core.Budget
	// Placement picks the layer's band: "" means the layer's default,
	// PlacementAuto the runtime's choice, core.PlacementAnchor and
	// core.PlacementLive those bands.
	Placement core.Placement
	// Timeouts override the runtime's per-hook limits; a hook it does
	// not list keeps the runtime's.
	Timeouts core.Timeouts
	// OnInitError says what a failure to load the layer's records at init
	// does; the zero value aborts the run (core.InitErrorAbort).
	OnInitError core.InitErrorPolicy
	// Logger receives the warnings a layer recovers from (what each layer
	// logs is documented on its Options). Nil discards them, with one
	// exception: the scope notice. A layer whose Scope is left "" and
	// whose default is core.ScopeThread warns, once per layer (per New),
	// when a run names a resource and starts a new thread of it: the
	// host evidently expects the resource's memories, and the new thread
	// has none of them. With a nil Logger that warning goes to
	// slog.Default(), because the host that configured nothing is the
	// one it is for and a discarded warning would leave the surprise
	// silent; it is logged at most once, so it cannot flood the default
	// logger. Setting Scope (core.ScopeResource to share the memories
	// across the resource's threads, core.ScopeThread to keep them per
	// thread) silences it.
	Logger *slog.Logger
}

// ErrScope is wrapped when a layer's Go API is given a scope the layer
// cannot use: an empty thread for a thread-scoped layer, an empty
// resource for a resource-scoped one. Every layer's ErrScope is this
// error.
var ErrScope = errors.New("memory: invalid scope")
