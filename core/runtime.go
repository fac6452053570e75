package core

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/stratamem/strata/projector"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/tokens"
)

// Policy holds a view to a hard token budget; see projector.Policy.
type Policy = projector.Policy[Item]

// Band names a part of the view; see projector.Band.
type Band = projector.Band

// The bands of a view, in order.
const (
	BandSystem  = projector.BandSystem
	BandAnchor  = projector.BandAnchor
	BandHistory = projector.BandHistory
	BandLive    = projector.BandLive
	BandUpdates = projector.BandUpdates
	BandTail    = projector.BandTail
)

// Unlimited is the budget of an uncapped layer or pool.
const Unlimited = projector.Unlimited

// ItemOverhead is the token count the runtime adds to each item's text for
// the framing a provider wraps around it (role, separators). It keeps
// budgets honest for many short items.
const ItemOverhead = 3

// Config configures a Runtime. The zero value works: no layers, an
// in-memory store, the fast token estimate and no budget.
//
// Every option of Config and CacheConfig has a useful zero value, its
// default, and is turned off one way, by its kind:
//
//   - an optional component is off when nil: Policy (no view budget),
//     Tracer, Logger;
//   - a numeric limit is lifted by a negative value: LayerPool (layers
//     uncapped), CacheConfig.HistoryStep (history cut item by item);
//   - a behaviour that is on by default has a bool that says so in its
//     name: CacheConfig.Disabled (no anchoring).
type Config struct {
	// Layers are the context layers, in any order: slot and band order
	// them in the view.
	Layers []AnyLayer
	// System is the system prompt, first in every view and never dropped.
	System []Item
	// Store persists thread, resource and global state. Nil means an
	// in-memory store, which forgets everything with the process.
	Store storage.Store
	// Tokenizer counts tokens. Nil means tokens.Estimate().
	Tokenizer tokens.Tokenizer
	// Policy holds each view to a hard token budget. Nil means no limit.
	Policy *Policy
	// LayerPool is the token pool the layer budgets split. Zero means half
	// of what the policy leaves after the system prompt, or no limit
	// without a policy. With a policy a finite pool may not exceed what
	// the policy leaves after the system prompt (BUDGET_EXCEEDS_POOL): the
	// view could not hold the output the budgets allow. A negative pool
	// (or Unlimited) leaves the layers uncapped under a policy that then
	// bounds only the view: anchor and live output it cannot hold is left
	// out, reported per layer (LayerUsage.Dropped) and as a diagnostic.
	LayerPool int
	// Timeouts override the default timeouts (see Timeouts) for every
	// layer that sets none.
	Timeouts Timeouts
	// Logger receives diagnostics. Nil discards them (they are still in
	// the usage report).
	Logger *slog.Logger
	// Cache configures prompt-cache anchoring.
	Cache CacheConfig
	// Tools are offered to the model next to the layers' provided
	// functions; Session.ExecuteTool runs them. Their context state layers
	// come from layers/toolcalls.
	Tools []Tool
	// ToolTimeout limits each execution of Tools; zero means two minutes.
	// The layers' provided functions (Layer.Functions) run under their
	// layer's Store timeout instead.
	ToolTimeout time.Duration
	// RecordAssemblies records every assembly of a thread in Store
	// (AssemblyRecord, by the thread's turn number: what the model was
	// sent, re-rendered byte for byte by package core/inspect and memctl
	// inspect --list / --turn N). Off by default: it writes to the store
	// on every assembly (a few small writes whose size does not grow with
	// the conversation; see BenchmarkAssembleRecording). Only sessions
	// with a thread are recorded (RunOptions.ThreadID: records are kept
	// per thread); a child run (Spawn) is not, its parent's record shows
	// what the parent was sent, and a child that must be inspected runs
	// as a session of its own thread. A record that cannot be written is
	// a diagnostic, not a failed assembly.
	RecordAssemblies bool
	// AssemblyRetention bounds the records a thread keeps, the oldest
	// dropped first: zero means 200, a negative value keeps them all.
	AssemblyRetention int
	// Tracer observes every assembly, e.g. to emit OpenTelemetry spans
	// (package telemetry: Tracer: tr.StartAssemble). Nil traces nothing.
	// It is called before the recalls run; the context it returns is the
	// one hooks receive, so their own spans nest under it. end is called
	// once with the usage report (nil when the assembly failed) and the
	// error.
	Tracer func(ctx context.Context, run RunInfo, turn int) (_ context.Context, end func(*Usage, error))
	// Compaction folds old history into a summary, logged as an event,
	// when the view nears the model's window (see CompactionConfig). Nil
	// is off.
	Compaction *CompactionConfig
	// ContentKinds are the host's resident-content kinds, rendered after
	// the built-in ones in this order (see Session.Activate).
	ContentKinds []ContentKind
	// TailTrim clears old tool outputs when the view nears the model's
	// window (see TailTrimConfig). Nil is off.
	TailTrim *TailTrimConfig
	// Reminders are the host's compose-time reminders, rendered after the
	// runtime's own at the very end of every view (see Reminder).
	Reminders []Reminder
}

// Runtime holds validated configuration and starts sessions. It is safe
// for concurrent use; sessions are not.
type Runtime struct {
	cfg     Config
	policy  *Policy    // cfg.Policy with the cache's truncation step
	layers  []AnyLayer // sorted by slot, then id
	specs   []layerConfig
	budgets []int
	pool    int
	logger  *slog.Logger
	counter *tokens.Cache
	store   storage.Store
	system  []projector.Entry[Item]
	// routes says where a call goes by its name: provided functions
	// ("layer/fn"), the layers' plain functions (by name alone) and the
	// host's tools share one name space.
	routes     map[string]route
	tools      []ToolSpec // provided functions and tools, sorted by name
	layerIndex map[string]int
	ownedStore bool
	kinds      contentKinds
}

// route is where a call by name goes: a function of a layer (fn set;
// plain for a Function.Plain, called by its name alone) or a host tool
// (tool set, layer -1).
type route struct {
	layer int
	fn    string
	plain bool
	tool  Tool
}

// offer adds a tool or provided function to the list the model is
// offered, its schema checked and canonical: both kinds take this one path.
func (rt *Runtime) offer(t ToolSpec) error {
	params := t.Parameters
	if len(params) == 0 {
		params = []byte(`{"type":"object"}`)
	}
	if err := checkSchema(params); err != nil {
		return err
	}
	t.Parameters = canonicalJSON(params)
	rt.tools = append(rt.tools, t)
	return nil
}

// NewRuntime validates cfg and returns a runtime. Invalid configuration
// fails here with a *ConfigError naming the field.
func NewRuntime(cfg Config) (*Runtime, error) {
	rt := &Runtime{cfg: cfg, logger: cfg.Logger, store: cfg.Store, routes: map[string]route{}, layerIndex: map[string]int{}}
	if rt.logger == nil {
		rt.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if rt.store == nil {
		rt.store = storage.NewMemory()
		rt.ownedStore = true
	}
	tk := cfg.Tokenizer
	if tk == nil {
		tk = tokens.Estimate()
	}
	rt.counter = tokens.NewCache(tk, 0)
	if cfg.Policy != nil {
		if err := cfg.Policy.Validate(); err != nil {
			field := "Policy"
			if pe, ok := err.(*projector.PolicyError); ok {
				field = "Policy." + pe.Field
			}
			return nil, &ConfigError{Code: CodeInvalidPolicy, Field: field, Reason: err.Error()}
		}
	}
	if err := cfg.Cache.validate(); err != nil {
		return nil, err
	}
	if err := cfg.Compaction.validate(); err != nil {
		return nil, err
	}
	if err := cfg.TailTrim.validate(cfg.Compaction); err != nil {
		return nil, err
	}
	if err := validateReminders(cfg.Reminders); err != nil {
		return nil, err
	}
	kinds, err := newContentKinds(cfg.ContentKinds)
	if err != nil {
		return nil, err
	}
	rt.kinds = kinds
	rt.policy = cfg.Policy
	if p := cfg.Policy; p != nil && p.Overflow == projector.OverflowSummarize {
		cp := *p
		cp.Summarize = rt.countedSummaries(p.Summarize)
		rt.policy = &cp
	}
	if p := cfg.Policy; p != nil && !cfg.Cache.Disabled && p.TruncateStep == 0 &&
		cfg.Cache.historyStep() > 0 && (p.Overflow == "" || p.Overflow == projector.OverflowTruncate) {
		cp := *rt.policy
		cp.TruncateStep = max(1, int(cfg.Cache.historyStep()*float64(p.Available())))
		rt.policy = &cp
	}
	seen := map[string]bool{}
	for k, l := range cfg.Layers {
		if l == nil {
			return nil, &ConfigError{Code: CodeInvalidLayer, Field: fmt.Sprintf("Layers[%d]", k), Reason: "nil layer"}
		}
		spec := l.config()
		if err := validateSpec(spec); err != nil {
			return nil, err
		}
		if seen[spec.ID] {
			return nil, &ConfigError{Code: CodeDuplicateLayerID, Layer: spec.ID, Field: "ID", Reason: "two layers share this id"}
		}
		seen[spec.ID] = true
	}
	rt.layers = append([]AnyLayer(nil), cfg.Layers...)
	sort.SliceStable(rt.layers, func(a, b int) bool {
		sa, sb := rt.layers[a].Spec(), rt.layers[b].Spec()
		if sa.Slot != sb.Slot {
			return sa.Slot < sb.Slot
		}
		return sa.ID < sb.ID
	})
	for k, l := range rt.layers {
		spec := l.config()
		rt.specs = append(rt.specs, spec)
		rt.layerIndex[spec.ID] = k
		for _, f := range spec.functions {
			if f.plain {
				if prev, dup := rt.routes[f.Name]; dup {
					return nil, &ConfigError{Code: CodeDuplicateFunction, Layer: spec.ID, Field: "Functions",
						Reason: fmt.Sprintf("call name %q is also applied by layer %q", f.Name, rt.specs[prev.layer].ID)}
				}
				rt.routes[f.Name] = route{layer: k, fn: f.Name, plain: true}
				continue
			}
			name := spec.ID + "/" + f.Name
			if _, dup := rt.routes[name]; dup {
				return nil, &ConfigError{Code: CodeDuplicateFunction, Layer: spec.ID, Field: "Functions", Reason: fmt.Sprintf("function %q declared twice", f.Name)}
			}
			rt.routes[name] = route{layer: k, fn: f.Name}
			if err := rt.offer(ToolSpec{Name: name, Description: f.Description, Parameters: f.Parameters}); err != nil {
				return nil, &ConfigError{Code: CodeInvalidLayer, Layer: spec.ID, Field: "Functions." + f.Name + ".Parameters", Reason: err.Error()}
			}
		}
	}
	for k, t := range cfg.Tools {
		if t == nil {
			return nil, &ConfigError{Code: CodeInvalidLayer, Field: fmt.Sprintf("Tools[%d]", k), Reason: "nil tool"}
		}
		spec := t.Spec()
		if prev, dup := rt.routes[spec.Name]; dup {
			clash := "declared twice"
			switch {
			case prev.plain:
				clash = "clashes with a layer's call name"
			case prev.fn != "":
				clash = "clashes with a provided function"
			}
			return nil, &ConfigError{Code: CodeDuplicateFunction, Field: fmt.Sprintf("Tools[%d].Name", k), Reason: fmt.Sprintf("tool %q %s", spec.Name, clash)}
		}
		if id := t.StateID(); id != "" {
			if _, ok := rt.layerIndex[id]; !ok {
				return nil, &ConfigError{Code: CodeInvalidLayer, Field: fmt.Sprintf("Tools[%d].State", k),
					Reason: fmt.Sprintf("tool %q declares state %q but no such layer is configured (add toolcalls.Layers(tools...))", spec.Name, id)}
			}
		}
		rt.routes[spec.Name] = route{layer: -1, tool: t}
		if err := rt.offer(spec); err != nil {
			return nil, &ConfigError{Code: CodeInvalidLayer, Field: fmt.Sprintf("Tools[%d].Parameters", k), Reason: err.Error()}
		}
	}
	if cfg.Compaction != nil || cfg.TailTrim != nil {
		if _, dup := rt.routes[RecallHistoryTool]; dup {
			return nil, &ConfigError{Code: CodeDuplicateFunction, Field: "Tools",
				Reason: fmt.Sprintf("the runtime offers %q with Compaction or TailTrim on: rename the host's tool", RecallHistoryTool)}
		}
		rt.routes[RecallHistoryTool] = route{layer: -1, tool: recallHistory{}}
		if err := rt.offer(recallHistorySpec); err != nil {
			return nil, err
		}
	}
	sort.Slice(rt.tools, func(a, b int) bool { return rt.tools[a].Name < rt.tools[b].Name })

	sysTokens := 0
	for _, it := range cfg.System {
		if err := it.Validate(); err != nil {
			return nil, &ConfigError{Code: CodeInvalidLayer, Field: "System", Reason: err.Error()}
		}
		e := rt.entry(it)
		sysTokens += e.Tokens
		rt.system = append(rt.system, e)
	}
	rt.pool = cfg.LayerPool
	switch {
	case cfg.LayerPool < 0:
		rt.pool = Unlimited
	case cfg.LayerPool > 0 && cfg.LayerPool != Unlimited && cfg.Policy != nil && cfg.LayerPool > cfg.Policy.Available()-sysTokens:
		// Budgets the view cannot hold would let the projector drop layer
		// output (pinned anchors included) that the layers were promised.
		return nil, &ConfigError{Code: CodeBudgetExceedsPool, Field: "LayerPool",
			Reason: fmt.Sprintf("%d tokens, but the policy leaves %d after the system prompt (%d available - %d system)",
				cfg.LayerPool, max(0, cfg.Policy.Available()-sysTokens), cfg.Policy.Available(), sysTokens)}
	case cfg.LayerPool == 0 && cfg.Policy != nil:
		rt.pool = max(0, (cfg.Policy.Available()-sysTokens)/2)
	case cfg.LayerPool == 0:
		rt.pool = Unlimited
	}
	budgets := make([]Budget, len(rt.specs))
	for k, s := range rt.specs {
		budgets[k] = s.Budget
	}
	alloc, err := allocate(rt.pool, budgets)
	if err != nil {
		return nil, err
	}
	rt.budgets = alloc.tokens
	return rt, nil
}

func validateSpec(s layerConfig) error {
	bad := func(code ErrorCode, field, reason string) error {
		return &ConfigError{Code: code, Layer: s.ID, Field: field, Reason: reason}
	}
	if s.ID == "" {
		return bad(CodeInvalidLayer, "ID", "empty")
	}
	if strings.ContainsAny(s.ID, "/ \t\n") {
		return bad(CodeInvalidLayer, "ID", "must not contain '/' or white space")
	}
	if strings.HasPrefix(s.ID, "_") {
		return bad(CodeInvalidLayer, "ID", "ids starting with '_' are reserved for the runtime")
	}
	switch s.Scope {
	case ScopeThread, ScopeResource, ScopeGlobal, ScopeExecution:
	default:
		return bad(CodeInvalidLayer, "Scope", fmt.Sprintf("unknown scope %q", s.Scope))
	}
	switch s.Placement {
	case PlacementAuto, PlacementAnchor, PlacementLive, PlacementTail:
	default:
		return bad(CodeInvalidLayer, "Placement", fmt.Sprintf("unknown placement %q", s.Placement))
	}
	switch s.onInitError {
	case InitErrorAbort, InitErrorDisable:
	default:
		return bad(CodeInvalidLayer, "OnInitError", fmt.Sprintf("unknown policy %q", s.onInitError))
	}
	if err := s.Budget.Validate(); err != nil {
		ce := err.(*ConfigError)
		ce.Layer = s.ID
		return ce
	}
	for _, f := range s.functions {
		switch {
		case !f.plain && (f.Name == "" || strings.ContainsAny(f.Name, "/ \t\n")):
			return bad(CodeInvalidLayer, "Functions", fmt.Sprintf("function name %q must be non-empty without '/' or white space", f.Name))
		case f.plain && (f.Name == "" || strings.ContainsAny(f.Name, " \t\n")):
			return bad(CodeInvalidLayer, "Functions", fmt.Sprintf("plain call name %q must be non-empty without white space", f.Name))
		case f.plain && f.noCall:
			return bad(CodeInvalidLayer, "Functions", fmt.Sprintf("plain function %q has no Call", f.Name))
		}
	}
	return nil
}

// Store returns the runtime's state store.
func (rt *Runtime) Store() storage.Store { return rt.store }

// entry counts an item once and wraps it for the projector.
func (rt *Runtime) entry(it Item) projector.Entry[Item] {
	e := projector.Entry[Item]{Item: it, Tokens: rt.counter.Count(it.Text()) + ItemOverhead}
	if it.CallID != "" {
		e.Group = it.CallID
		e.Opens = it.Type == TypeFunctionCall
	}
	return e
}

// CountItems returns the token count of items as the runtime counts them.
func (rt *Runtime) CountItems(items []Item) int {
	n := 0
	for _, it := range items {
		n += rt.entry(it).Tokens
	}
	return n
}
