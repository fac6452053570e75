package observations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"github.com/stratamem/strata/memory/internal/ledger"
	"github.com/stratamem/strata/memory/internal/render"
	"github.com/stratamem/strata/vectorstore"
)

// Kind is the record kind of an observation.
const Kind = "observation"

// DefaultID is the layer id when Options.ID is empty; the provided
// function is then "observations/record".
const DefaultID = "observations"

// DefaultMergeThreshold is the cosine similarity at or above which a new
// observation is merged into the nearest stored one. See the package doc
// for how it was chosen.
const DefaultMergeThreshold = 0.92

// Limits on what one write may carry. They bound the work a malformed or
// hostile function call can cause.
const (
	// MaxTextBytes bounds one observation's text.
	MaxTextBytes = 8 << 10
	// MaxPerCall bounds the observations of one record call.
	MaxPerCall = 100
	// MaxArgumentBytes bounds the raw JSON arguments of one call.
	MaxArgumentBytes = 256 << 10
	// MaxSources bounds the source ids kept per observation (the newest).
	MaxSources = 32
)

// Metadata keys of an observation record.
const (
	MetaImportance = "importance"
	MetaSources    = "sources"
	MetaLastSeen   = "last_seen"
	MetaMentions   = "mentions"
	MetaOrigin     = "origin"
)

// Origins of an observation, in the "origin" metadata.
const (
	OriginExtractor = "extractor"
	OriginFunction  = "function"
	OriginAPI       = "api"
)

var (
	// ErrScope is wrapped when a Go API call names a scope the layer
	// cannot use (an empty thread for a thread-scoped layer, ...).
	ErrScope = memory.ErrScope
	// ErrInvalidObservation is wrapped when an observation given to Put
	// is empty, too long or has an importance outside 1..5.
	ErrInvalidObservation = errors.New("observations: invalid observation")
)

// Observation is one remembered fact.
type Observation struct {
	// ID is the record id. It is kept when a near-duplicate is merged in.
	ID   string
	Text string
	// Importance is 1 (trivia) to 5 (must not forget); 0 on input means 3.
	Importance int
	// Sources are the ids of the items the observation came from: the
	// item's own ID, else "<runID>:<log index>"; for a record call,
	// "<runID>:call:<callID>". At most MaxSources, oldest dropped.
	Sources []string
	// Mentions counts the writes that observed it from a new source.
	Mentions int
	// CreatedAt is when it was first observed, LastSeen when last.
	CreatedAt time.Time
	LastSeen  time.Time
	// From is set by an Extractor only: positions, in the items it was
	// given, of the items the observation came from. The layer turns them
	// into Sources; empty means "all of them".
	From []int `json:"-"`
}

// Options configure the layer. The zero value is useful. The common
// options (memory.Common) default to: id "observations", name
// "Observations", slot core.SlotObservations (200), thread scope
// (core.ScopeResource is the other one accepted: whose conversation the
// observations belong to), auto budget and auto placement (see the
// package doc). The Logger receives the scope notice while Scope is left
// "" (see memory.Common.Logger). The layer's own default to the
// rule-based extractor and merge threshold 0.92.
type Options struct {
	memory.Common
	// Extractor reads new conversation items after each model call and
	// returns observations. Nil means Rules{}, the offline pattern-based
	// default. Set DisableExtraction to write only through the function
	// and the Go API.
	Extractor         Extractor
	DisableExtraction bool
	// MergeThreshold is the cosine similarity at or above which a new
	// observation merges into the nearest stored one; 0 means
	// DefaultMergeThreshold. It must be in (0, 1]; 1 merges exact
	// restatements only.
	MergeThreshold float64
}

// Layer is the observations layer bound to a store. It is a
// core.AnyLayer: hand it to the runtime in core.Config.Layers. Its
// methods are the Go API over the same records, through the same write
// path as the model's record calls and extraction.
type Layer struct {
	// Layer is the core layer the runtime runs, embedded so that *Layer
	// is a core.AnyLayer. New resolves its fields from Options: set them
	// there, not here (the Go API keeps using the resolved ID and Scope).
	core.Layer[State]
	store *memory.Store
	opts  Options
	// g is the skeleton shared with the temporal layer.
	g ledger.Ledger
	// fn is the full name of the provided function, "<id>/record".
	fn string
}

// New validates opts and returns the layer. Invalid options fail with a
// *core.ConfigError naming the field; an unusable store with an error
// wrapping memory.ErrInvalidStore.
func New(store *memory.Store, opts Options) (*Layer, error) {
	common, err := ledger.Open(store, opts.Common, layerkit.Defaults{
		ID: DefaultID, Name: "Observations", Slot: core.SlotObservations, Placement: core.PlacementAuto,
		Scopes: Format.Scopes(), CheckID: layerkit.RecordSafe,
	})
	if err != nil {
		return nil, err
	}
	notice := layerkit.NewScopeNotice(opts.Common, common)
	opts.Common = common
	switch {
	case opts.MergeThreshold == 0:
		opts.MergeThreshold = DefaultMergeThreshold
	case !(opts.MergeThreshold > 0 && opts.MergeThreshold <= 1):
		return nil, layerkit.ConfigError(opts.ID, "MergeThreshold", fmt.Sprintf("must be in (0, 1], got %v", opts.MergeThreshold))
	}
	if opts.Extractor == nil && !opts.DisableExtraction {
		opts.Extractor = Rules{}
	}
	if opts.DisableExtraction {
		opts.Extractor = nil
	}
	l := &Layer{store: store, opts: opts, fn: opts.ID + "/record",
		g: ledger.Ledger{Store: store, ID: opts.ID, Kind: Kind, Scope: opts.Scope, Name: "observations", Notice: notice}}
	l.Layer = l.runtimeLayer()
	return l, nil
}

// FunctionName is the full name of the provided record function.
func (l *Layer) FunctionName() string { return l.fn }

// State is the layer's per-session state. Only Applied is persisted (under
// the runtime's "state" key); the observations themselves are records in
// the store, mirrored in memory for rendering.
type State struct {
	// Applied lists the call ids of record calls already applied, newest
	// last (at most 256), so a replayed call id is answered, not applied
	// again, in this session or a later one.
	Applied []string `json:"applied,omitempty"`

	m *mirror
	// outputs holds the output of each call applied in this session, by
	// call id, so a replay gets the same answer. Not persisted.
	outputs map[string]string
}

// Observations returns the session's observations in render order
// (importance, then recency), or nil before init.
func (s State) Observations() []Observation {
	if s.m == nil {
		return nil
	}
	return s.m.sorted()
}

// mirror is a session's in-memory copy of its scope's observations.
type mirror struct{ layerkit.Mirror[Observation] }

func (m *mirror) put(o Observation) { m.Put(o.ID, o) }

func (m *mirror) sorted() []Observation {
	out := m.Values()
	sortObservations(out)
	return out
}

// sortObservations orders by importance, then last seen, then creation
// (newest first), then id: the render and priority order.
func sortObservations(obs []Observation) {
	slices.SortFunc(obs, func(a, b Observation) int {
		if a.Importance != b.Importance {
			return b.Importance - a.Importance
		}
		if c := b.LastSeen.Compare(a.LastSeen); c != 0 {
			return c
		}
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// runtimeLayer is the core layer the runtime runs.
func (l *Layer) runtimeLayer() core.Layer[State] {
	record := layerkit.Function[State, recordArgs]("record", l.fn,
		"Remember facts about the user or the task that will matter later in this conversation. "+
			"Each observation is one self-contained sentence with an importance from 1 (trivia) to 5 (must not forget). "+
			"Near-duplicates of what is already remembered are merged, not repeated.",
		MaxArgumentBytes, l.callRecord)
	return ledger.Spec(l.opts.Common, mergeState, core.Hooks[State]{
		Init: l.init, Recall: l.recall, RenderDelta: render.DeltaHook[State](Delta), Store: l.storeHook,
	}, record)
}

// mergeState resolves a compare-and-swap conflict between two sessions of
// one scope: the applied call ids of both are kept.
func mergeState(stored, mine State) State {
	mine.Applied = ledger.MergeCalls(stored.Applied, mine.Applied)
	return mine
}

// List returns the stored observations of a scope in render order, read
// from the store (so it sees writes of every session).
func (l *Layer) List(ctx context.Context, scope vectorstore.Scope) ([]Observation, error) {
	scope, err := l.g.Check(scope)
	if err != nil {
		return nil, err
	}
	recs, err := layerkit.Records(ctx, l.store.Records, l.g.Filter(scope), false)
	if err != nil {
		return nil, fmt.Errorf("observations: list: %w", err)
	}
	var out []Observation
	for _, r := range recs {
		out = append(out, fromRecord(r))
	}
	sortObservations(out)
	return out, nil
}

// Put writes observations to a scope through the same path as extraction
// and the record function: near-duplicates are merged. Importance 0 means
// 3; Sources are kept as given. Running sessions of the scope see the
// additions from their next run (their mirror was loaded at init).
func (l *Layer) Put(ctx context.Context, scope vectorstore.Scope, obs ...Observation) (Result, error) {
	scope, err := l.g.Check(scope)
	if err != nil {
		return Result{}, err
	}
	cands := make([]candidate, 0, len(obs))
	for i, o := range obs {
		c, err := newCandidate(o.Text, o.Importance, o.Sources, OriginAPI)
		if err != nil {
			return Result{}, fmt.Errorf("%w: observation %d: %v", ErrInvalidObservation, i, err)
		}
		cands = append(cands, c)
	}
	return l.apply(ctx, scope, cands, nil)
}

func (l *Layer) init(ctx context.Context, p core.InitParams) (State, error) {
	return ledger.Init(ctx, &l.g, p, func(st *State, scope vectorstore.Scope) (err error) {
		st.m, err = l.load(ctx, scope)
		return err
	})
}

func (l *Layer) load(ctx context.Context, scope vectorstore.Scope) (*mirror, error) {
	recs, err := layerkit.Records(ctx, l.store.Records, l.g.Filter(scope), false)
	if err != nil {
		return nil, fmt.Errorf("load observations: %w", err)
	}
	m := &mirror{}
	for _, r := range recs {
		m.put(fromRecord(r))
	}
	return m, nil
}

// mirrorOf returns the state's mirror, loading one when the state came
// from somewhere that did not run init (core.SetState).
func (l *Layer) mirrorOf(ctx context.Context, st State, run core.RunInfo) (*mirror, error) {
	if st.m != nil {
		return st.m, nil
	}
	return l.load(ctx, l.g.ScopeOf(run))
}

func (l *Layer) storeHook(ctx context.Context, p core.StoreParams[State]) (*State, error) {
	m, err := l.mirrorOf(ctx, p.State, p.Run)
	if err != nil {
		return nil, err
	}
	scope := l.g.ScopeOf(p.Run)
	base := len(p.History) - len(p.NewItems)
	var next *State
	if p.State.m == nil {
		// A state set from outside (core.SetState): keep the mirror just
		// loaded, which the extractor's writes below go to.
		st := p.State
		st.m = m
		next = &st
	}
	// No function-call application here: "<id>/record" is applied only
	// when the host routes it (ExecuteTool), after the steering layers'
	// BeforeToolCall, so a denial holds. This hook runs when the call is
	// recorded, before anyone is asked.
	if l.opts.Extractor == nil {
		return next, nil
	}
	// The extractor sees the new items except this layer's own calls and
	// their outputs.
	found, err := ledger.Extract(ctx, p.Run, p.NewItems, base, []string{l.fn}, l.opts.Extractor.Extract,
		func(o Observation) []int { return o.From })
	if err != nil {
		return next, err
	}
	var cands []candidate
	for _, f := range found {
		o, sources := f.Value, f.Sources
		imp := o.Importance
		if imp < 0 || imp > 5 {
			imp = min(max(imp, 1), 5) // an extractor's slip is clamped, not fatal
		}
		c, err := newCandidate(o.Text, imp, sources, OriginExtractor)
		if err != nil {
			continue // empty or oversized extractor output is dropped
		}
		cands = append(cands, c)
	}
	if len(cands) == 0 {
		return next, nil
	}
	if _, err := l.apply(ctx, scope, cands, m); err != nil {
		return next, err
	}
	return next, nil
}

// recordArgs are the arguments of the record function.
type recordArgs struct {
	Observations []recordArg `json:"observations" jsonschema:"the facts to remember, at most 100"`
}

type recordArg struct {
	Text       string `json:"text" jsonschema:"one self-contained sentence, e.g. 'The user is allergic to peanuts'"`
	Importance int    `json:"importance,omitempty" jsonschema:"1 (trivia) to 5 (must not forget); default 3"`
}

// parseRecord decodes and validates record arguments into candidates. Its
// errors are worded for the model.
func (l *Layer) parseRecord(raw string, sources []string) ([]candidate, error) {
	args, err := core.DecodeArguments[recordArgs](raw)
	if err != nil {
		return nil, err
	}
	switch n := len(args.Observations); {
	case n == 0:
		return nil, errors.New("observations: give at least one observation")
	case n > MaxPerCall:
		return nil, fmt.Errorf("observations: %d given, at most %d per call", n, MaxPerCall)
	}
	cands := make([]candidate, 0, len(args.Observations))
	for i, a := range args.Observations {
		c, err := newCandidate(a.Text, a.Importance, sources, OriginFunction)
		if err != nil {
			return nil, fmt.Errorf("observations[%d]: %v", i, err)
		}
		cands = append(cands, c)
	}
	return cands, nil
}

// callRecord applies a record call whose arguments passed the schema.
func (l *Layer) callRecord(ctx context.Context, p core.CallParams[State]) (core.FunctionResult[State], error) {
	var m *mirror
	out, applied, outputs, ok, err := ledger.Calls(p.State.Applied, p.State.outputs, p.Call.CallID, func() (string, error) {
		cands, err := l.parseRecord(p.Call.Arguments, []string{layerkit.CallSourceID(p.Run, p.Call)})
		if err != nil {
			return "", &core.ArgumentError{Function: l.fn, Err: err}
		}
		if m, err = l.mirrorOf(ctx, p.State, p.Run); err != nil {
			return "", err
		}
		res, err := l.apply(ctx, l.g.ScopeOf(p.Run), cands, m)
		return res.String(), err
	})
	if err != nil || !ok {
		return core.FunctionResult[State]{Output: out}, err
	}
	st := p.State
	st.m, st.Applied, st.outputs = m, applied, outputs
	return core.FunctionResult[State]{Output: out, State: &st}, nil
}

// Result counts what a write did.
type Result struct {
	// Added observations are new records; Merged ones updated an existing
	// near-duplicate; Unchanged ones were already known from the same
	// sources.
	Added, Merged, Unchanged int
	// IDs are the record ids written or matched, in input order.
	IDs []string
}

func (r Result) String() string {
	return fmt.Sprintf("Recorded %d observation(s): %d new, %d merged into existing ones, %d already known.",
		r.Added+r.Merged+r.Unchanged, r.Added, r.Merged, r.Unchanged)
}

// candidate is one observation on its way in.
type candidate struct {
	text       string // canonical
	fold       string // case-folded canonical text: the exact-duplicate key
	importance int
	sources    []string
	origin     string
}

// canonical collapses whitespace and drops trailing sentence punctuation:
// the default model scores "X." and "X" at 0.91, below the threshold, so
// the text is normalised before it is embedded or compared.
func canonical(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.TrimRight(s, " .,;:")
}

func newCandidate(text string, importance int, sources []string, origin string) (candidate, error) {
	// Function arguments with controls were refused already; what an
	// extractor read from the conversation loses them.
	text = layerkit.StripControls(text)
	if !utf8.ValidString(text) || strings.IndexByte(text, 0) >= 0 {
		return candidate{}, errors.New("text: not valid UTF-8 or contains a NUL byte")
	}
	if len(text) > MaxTextBytes {
		return candidate{}, fmt.Errorf("text: %d bytes, at most %d", len(text), MaxTextBytes)
	}
	t := canonical(text)
	if t == "" {
		return candidate{}, errors.New("text: empty")
	}
	switch {
	case importance == 0:
		importance = 3
	case importance < 1 || importance > 5:
		return candidate{}, fmt.Errorf("importance: must be 1..5, got %d", importance)
	}
	return candidate{text: t, fold: strings.ToLower(t), importance: importance, sources: sources, origin: origin}, nil
}

// recordID is the id of the observation of folded text fold of layer id
// in scope: deterministic in the layer, scope and folded text, so the
// first write of a text is idempotent and an exact restatement finds its
// record by id.
func recordID(id string, scope vectorstore.Scope, fold string) string {
	return ledger.RecordID("obs", id, scope, fold)
}

// apply writes candidates to scope: each either merges into an exact or
// near duplicate (stored or earlier in the batch) or becomes a new record.
// All texts are embedded in one batch. Each record is written against the
// revision it was read at, so a merge never overwrites what another
// session merged meanwhile: on a conflict the candidates are applied again
// to a fresh read. m, when not nil, is kept in step.
func (l *Layer) apply(ctx context.Context, scope vectorstore.Scope, cands []candidate, m *mirror) (Result, error) {
	var res Result
	if len(cands) == 0 {
		return res, nil
	}
	texts := make([]string, len(cands))
	for i, c := range cands {
		texts[i] = c.text
	}
	vecs, err := l.store.Embedder.Embed(ctx, texts)
	if err != nil {
		return res, &core.WriteError{Layer: l.opts.ID, Item: fmt.Sprintf("%d observation(s)", len(texts)), Err: fmt.Errorf("observations: embed: %w", err)}
	}
	if len(vecs) != len(cands) {
		return res, fmt.Errorf("observations: embed: %w: %d vectors for %d texts", embed.ErrBadResponse, len(vecs), len(cands))
	}
	now := l.store.Time()
	return layerkit.RetryConflicts(ctx, l.opts.ID, "observations", func() (Result, error) {
		return l.applyVectors(ctx, scope, cands, vecs, now, m)
	})
}

// applyVectors is one read-modify-write of apply, with the candidates'
// vectors computed.
func (l *Layer) applyVectors(ctx context.Context, scope vectorstore.Scope, cands []candidate, vecs [][]float32, now time.Time, m *mirror) (Result, error) {
	var res Result
	pending := map[string]*vectorstore.Record{} // written by this call, by id
	var order []string
	stage := func(r *vectorstore.Record) {
		if _, ok := pending[r.ID]; !ok {
			order = append(order, r.ID)
		}
		pending[r.ID] = r
	}
	for i, c := range cands {
		target, err := l.findDuplicate(ctx, scope, c, vecs[i], pending)
		if err != nil {
			return Result{}, err
		}
		if target == nil {
			r := &vectorstore.Record{
				ID: recordID(l.opts.ID, scope, c.fold), Layer: l.opts.ID, Kind: Kind, Scope: scope,
				Text: c.text, Vector: vecs[i], CreatedAt: now,
			}
			writeMeta(r, Observation{Importance: c.importance, Sources: capSources(c.sources), Mentions: 1, LastSeen: now}, c.origin)
			stage(r)
			res.Added++
			res.IDs = append(res.IDs, r.ID)
			continue
		}
		if merge(target, c, vecs[i], now) {
			stage(target)
			res.Merged++
		} else {
			res.Unchanged++
		}
		res.IDs = append(res.IDs, target.ID)
	}
	if len(order) == 0 {
		return res, nil
	}
	recs := make([]vectorstore.Record, 0, len(order))
	for _, id := range order {
		recs = append(recs, *pending[id])
	}
	if err := layerkit.WriteIf(ctx, l.store.Records, recs); err != nil {
		if errors.Is(err, vectorstore.ErrConflict) {
			return Result{}, err // applied again to a fresh read
		}
		return Result{}, &core.WriteError{Layer: l.opts.ID, Item: strings.Join(order, ", "), Err: fmt.Errorf("observations: write: %w", err)}
	}
	if m != nil {
		for _, r := range recs {
			m.put(fromRecord(r))
		}
	}
	return res, nil
}

// findDuplicate returns the record c should merge into, or nil. An exact
// (case-folded) restatement matches by id; otherwise the nearest record of
// the scope, stored or staged by this call, matches when its cosine
// similarity reaches the threshold. The returned record is a copy the
// caller may change.
func (l *Layer) findDuplicate(ctx context.Context, scope vectorstore.Scope, c candidate, vec []float32, pending map[string]*vectorstore.Record) (*vectorstore.Record, error) {
	id := recordID(l.opts.ID, scope, c.fold)
	if r, ok := pending[id]; ok {
		return r, nil
	}
	for _, pid := range slices.Sorted(maps.Keys(pending)) {
		if r := pending[pid]; strings.ToLower(r.Text) == c.fold {
			return r, nil
		}
	}
	if r, err := l.store.Records.Get(ctx, id); err == nil {
		if r.Layer == l.opts.ID && r.Kind == Kind && r.Scope == scope {
			return &r, nil
		}
	} else if !errors.Is(err, vectorstore.ErrNotFound) {
		return nil, fmt.Errorf("observations: read: %w", err)
	}
	var best *vectorstore.Record
	bestScore := -2.0
	ms, err := l.store.Records.Query(ctx, vec, vectorstore.QueryOptions{K: 1, Filter: l.g.Filter(scope), WithVectors: true})
	if err != nil {
		return nil, fmt.Errorf("observations: query: %w", err)
	}
	if len(ms) == 1 {
		r := ms[0].Record
		if p, ok := pending[r.ID]; ok {
			best = p // this call already changed it
		} else {
			best = &r
		}
		// Cosine computed here, not the collection's score, so the
		// threshold means the same on dot and euclidean collections.
		bestScore = embed.Cosine(vec, best.Vector)
	}
	for _, id := range slices.Sorted(maps.Keys(pending)) {
		r := pending[id]
		if s := embed.Cosine(vec, r.Vector); s > bestScore {
			best, bestScore = r, s
		}
	}
	if best != nil && bestScore >= l.opts.MergeThreshold {
		return best, nil
	}
	return nil, nil
}

// merge folds candidate c into record r and reports whether r changed.
// The newer wording wins (a near-duplicate is usually the same attribute
// restated or updated, e.g. "is 34" then "is 35"); sources are unioned; a
// restatement from a new source bumps importance by one (capped at 5) and
// counts a mention. A replay of the same sources with the same text
// changes nothing, so re-applying a write is idempotent.
func merge(r *vectorstore.Record, c candidate, vec []float32, now time.Time) bool {
	o := fromRecord(*r)
	newSource := false
	for _, s := range c.sources {
		if !slices.Contains(o.Sources, s) {
			o.Sources = append(o.Sources, s)
			newSource = true
		}
	}
	imp := max(o.Importance, c.importance)
	if newSource {
		imp = min(5, imp+1)
		o.Mentions++
	}
	textChanged := r.Text != c.text
	if !newSource && !textChanged && imp == o.Importance {
		return false
	}
	o.Importance = imp
	o.Sources = capSources(o.Sources)
	o.LastSeen = now
	if textChanged {
		r.Text = c.text
		r.Vector = vec
	}
	writeMeta(r, o, r.Metadata[MetaOrigin])
	return true
}

func capSources(s []string) []string {
	if len(s) > MaxSources {
		s = s[len(s)-MaxSources:]
	}
	return s
}

func writeMeta(r *vectorstore.Record, o Observation, origin string) {
	src, _ := json.Marshal(append([]string{}, o.Sources...)) // "[]", never "null"
	r.Metadata = map[string]string{
		MetaImportance: strconv.Itoa(o.Importance),
		MetaSources:    string(src),
		MetaLastSeen:   o.LastSeen.UTC().Format(time.RFC3339Nano),
		MetaMentions:   strconv.Itoa(max(o.Mentions, 1)),
	}
	if origin != "" {
		r.Metadata[MetaOrigin] = origin
	}
}

// fromRecord reads an observation back. Metadata edited by hand (memctl)
// that does not parse falls back to defaults rather than failing the load.
func fromRecord(r vectorstore.Record) Observation {
	o := Observation{ID: r.ID, Text: r.Text, CreatedAt: r.CreatedAt, Importance: 3, Mentions: 1}
	if v, err := strconv.Atoi(r.Metadata[MetaImportance]); err == nil && v >= 1 && v <= 5 {
		o.Importance = v
	}
	if v, err := strconv.Atoi(r.Metadata[MetaMentions]); err == nil && v >= 1 {
		o.Mentions = v
	}
	_ = json.Unmarshal([]byte(r.Metadata[MetaSources]), &o.Sources)
	o.LastSeen = r.CreatedAt
	if t, err := time.Parse(time.RFC3339Nano, r.Metadata[MetaLastSeen]); err == nil {
		o.LastSeen = t.UTC()
	}
	return o
}

// Delete removes the observations with these record ids from a scope and
// returns how many it removed; an id the scope does not hold is skipped.
// Running sessions of the scope keep rendering them until their next run
// (their mirror was loaded at init); no later write brings them back.
func (l *Layer) Delete(ctx context.Context, scope vectorstore.Scope, ids ...string) (int, error) {
	return l.g.Delete(ctx, scope, l.g.Filter, ids)
}
