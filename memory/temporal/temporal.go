package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"github.com/stratamem/strata/memory/internal/ledger"
	"github.com/stratamem/strata/memory/internal/render"
	"github.com/stratamem/strata/vectorstore"
)

// Record kinds. A fact replaced by a correction (a fact with the same
// ValidFrom) keeps its record, validity and text under KindCorrected, so
// it stays in the ledger's history but no as-of query returns it.
const (
	Kind          = "fact"
	KindCorrected = "fact_corrected"
)

// DefaultID is the layer id when Options.ID is empty; the provided
// functions are then "temporal/record" and "temporal/as_of".
const DefaultID = "temporal"

// DefaultSlot is the layer's slot when Options.Slot is 0. core has no
// slot constant for a temporal ledger; 175 puts it between entity memory (150)
// and observations (200), with the other grounding facts.
const DefaultSlot core.Slot = 175

// Limits on what one write may carry.
const (
	// MaxFieldBytes bounds a fact's subject and predicate.
	MaxFieldBytes = 256
	// MaxValueBytes bounds a fact's value.
	MaxValueBytes = 8 << 10
	// MaxWhenBytes bounds a time phrase.
	MaxWhenBytes = 64
	// MaxPerCall bounds the facts of one record call.
	MaxPerCall = 100
	// MaxArgumentBytes bounds the raw JSON arguments of one call.
	MaxArgumentBytes = 256 << 10
	maxSources       = 32
)

// Metadata keys of a fact record. The chain of a fact, the facts it
// supersedes or is superseded by, is every record of the scope with the
// same subject_key and predicate_key.
const (
	MetaSubject      = "subject"
	MetaPredicate    = "predicate"
	MetaValue        = "value"
	MetaSubjectKey   = "subject_key"
	MetaPredicateKey = "predicate_key"
	MetaWhen         = "when"
	MetaRefersTo     = "refers_to"
	MetaRecordedAt   = "recorded_at"
	MetaSources      = "sources"
	MetaOrigin       = "origin"
	MetaCorrectedBy  = "corrected_by"
)

// Origins of a fact, in the "origin" metadata.
const (
	OriginExtractor = "extractor"
	OriginFunction  = "function"
	OriginAPI       = "api"
)

var (
	// ErrScope is wrapped when a Go API call names a scope the layer
	// cannot use.
	ErrScope = memory.ErrScope
	// ErrInvalidFact is wrapped when a fact given to Put is malformed.
	ErrInvalidFact = errors.New("temporal: invalid fact")
)

// Input is a fact on its way in: the arguments of temporal/record, what an
// Extractor returns and what Record takes.
type Input struct {
	Subject   string `json:"subject" jsonschema:"who or what the fact is about, e.g. user, Alice, project-x"`
	Predicate string `json:"predicate" jsonschema:"the attribute, e.g. lives in, employer, deadline"`
	Value     string `json:"value" jsonschema:"its value, e.g. Berlin"`
	When      string `json:"when,omitempty" jsonschema:"when it became true, if not now: yesterday, last Friday, two weeks ago, 2026-11-20, on November 20"`
	// From is set by an Extractor only: positions, in the items it was
	// given, of the items the fact came from. The first one's timestamp
	// resolves When; the layer turns them into sources.
	From []int `json:"-"`
}

// Fact is one entry of the ledger.
type Fact struct {
	// ID is the record id.
	ID        string
	Subject   string
	Predicate string
	Value     string
	// When is the time phrase as given, "" when none was.
	When string
	// RefersTo is When resolved against the time of the message that said
	// it; zero when no When was given.
	RefersTo time.Time
	// RecordedAt is the time of the message that stated the fact (the
	// store clock when it was recorded).
	RecordedAt time.Time
	// ValidFrom is RefersTo, or RecordedAt when no When was given.
	// ValidTo, exclusive, is zero while the fact is current; a later fact
	// with the same subject and predicate sets it to its own ValidFrom.
	ValidFrom, ValidTo time.Time
	// CorrectedBy, when set, is the id of a fact with the same ValidFrom
	// that replaced this one: the statement was wrong, so it never held.
	CorrectedBy string
	// Sources are the ids of the items the fact came from.
	Sources []string

	key string // chainKey, cached when the fact was read or resolved
}

// ValidAt reports whether f holds at t: ValidFrom <= t < ValidTo, and f
// was not corrected.
func (f Fact) ValidAt(t time.Time) bool {
	return !f.Corrected() && !t.Before(f.ValidFrom) && (f.ValidTo.IsZero() || t.Before(f.ValidTo))
}

// Corrected reports whether f was replaced by a fact with the same
// ValidFrom, so it never held.
func (f Fact) Corrected() bool { return f.CorrectedBy != "" }

func (f Fact) subjectKey() string   { return SubjectKey(f.Subject) }
func (f Fact) predicateKey() string { return PredicateKey(f.Predicate) }

// chainKey identifies the chain of f: subject key, NUL, predicate key. It
// orders like the (subject key, predicate key) pair, keys having no NUL.
func (f Fact) chainKey() string {
	if f.key != "" {
		return f.key
	}
	return f.subjectKey() + "\x00" + f.predicateKey()
}

// SubjectKey normalises a subject for chaining: case, spaces, '_' and '-'
// do not matter, and "I", "me", "myself", "the user" and "user" are one
// subject.
func SubjectKey(s string) string {
	k := normKey(s)
	switch k {
	case "i", "me", "myself", "the user", "user":
		return "user"
	}
	return k
}

// PredicateKey normalises a predicate for chaining: "Lives_in" and
// "lives in" are one predicate.
func PredicateKey(s string) string { return normKey(s) }

func normKey(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return ' '
		}
		return r
	}, strings.ToLower(s))
	return strings.Join(strings.Fields(s), " ")
}

func normValue(s string) string {
	return strings.ToLower(strings.TrimRight(strings.Join(strings.Fields(s), " "), " .,;:"))
}

// Options configure the layer. The zero value is useful. The common
// options (memory.Common) default to: id "temporal", name "Temporal
// facts", slot DefaultSlot (175), thread scope (core.ScopeResource is
// the other one accepted), auto budget and anchored placement (see the
// package doc; memory.PlacementAuto asks for the runtime's choice). The
// Logger receives the scope notice while Scope is left "" (see
// memory.Common.Logger). The layer's own default to no extractor (writes
// come from the model's temporal/record calls and Put) and calendar days
// in UTC.
type Options struct {
	memory.Common
	// Extractor, when set, reads new conversation items after each model
	// call and returns facts; Patterns is the offline pattern-based one.
	Extractor Extractor
	// Location sets the calendar for "yesterday", "last Friday" and the
	// rendered dates; nil means UTC.
	Location *time.Location
}

// Layer is the temporal fact ledger bound to a store. It is a
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
	// g is the skeleton shared with the observations layer.
	g      ledger.Ledger
	fnRec  string
	fnAsOf string
}

// New validates opts and returns the layer. Invalid options fail with a
// *core.ConfigError naming the field; an unusable store with an error
// wrapping memory.ErrInvalidStore.
func New(store *memory.Store, opts Options) (*Layer, error) {
	common, err := ledger.Open(store, opts.Common, layerkit.Defaults{
		ID: DefaultID, Name: "Temporal facts", Slot: DefaultSlot, Placement: core.PlacementAnchor,
		Scopes: Format.Scopes(), CheckID: layerkit.RecordSafe,
	})
	if err != nil {
		return nil, err
	}
	notice := layerkit.NewScopeNotice(opts.Common, common)
	opts.Common = common
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	l := &Layer{store: store, opts: opts, fnRec: opts.ID + "/record", fnAsOf: opts.ID + "/as_of",
		g: ledger.Ledger{Store: store, ID: opts.ID, Kind: Kind, Scope: opts.Scope, Name: "temporal", Notice: notice}}
	l.Layer = l.runtimeLayer()
	return l, nil
}

// State is the layer's per-session state. Only Applied is persisted; the
// facts are records in the store, mirrored in memory for rendering.
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

// Facts returns every fact of the session's scope, closed ones included,
// ordered by subject, predicate and ValidFrom; nil before init.
func (s State) Facts() []Fact {
	if s.m == nil {
		return nil
	}
	return s.m.all()
}

// mergeState resolves a compare-and-swap conflict between two sessions of
// one scope: the applied call ids of both are kept.
func mergeState(stored, mine State) State {
	mine.Applied = ledger.MergeCalls(stored.Applied, mine.Applied)
	return mine
}

// mirror is a session's in-memory copy of its scope's facts, and the
// times at which the session's items were recorded (the "message
// timestamps" relative phrases resolve against).
type mirror struct {
	layerkit.Mirror[Fact]
	mu    sync.Mutex           // guards times
	times map[string]time.Time // by source id
}

func (m *mirror) put(f Fact) { m.Put(f.ID, f) }

func (m *mirror) all() []Fact {
	out := m.Values()
	sortFacts(out)
	return out
}

func sortFacts(fs []Fact) {
	slices.SortFunc(fs, func(a, b Fact) int {
		if c := strings.Compare(a.chainKey(), b.chainKey()); c != 0 {
			return c
		}
		return compareChain(a, b)
	})
}

// compareChain orders a chain: by ValidFrom, then RecordedAt, then id.
func compareChain(a, b Fact) int {
	if c := a.ValidFrom.Compare(b.ValidFrom); c != 0 {
		return c
	}
	if c := a.RecordedAt.Compare(b.RecordedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// runtimeLayer is the core layer the runtime runs.
func (l *Layer) runtimeLayer() core.Layer[State] {
	record := layerkit.Function[State, recordArgs]("record", l.fnRec,
		"Record facts that hold from a point in time, e.g. where someone lives, who they work for, a deadline. "+
			"A newer fact with the same subject and predicate supersedes the older one, which is kept as history. "+
			"Give 'when' if the fact became true at another time than now (yesterday, last Friday, 2026-11-20).",
		MaxArgumentBytes, l.callRecord)
	asOf := layerkit.Function[State, asOfArgs]("as_of", l.fnAsOf,
		"List the facts that were true on a date (at the end of that day), e.g. to answer 'where did Alice live in March?'.",
		MaxArgumentBytes, l.callAsOf)
	return ledger.Spec(l.opts.Common, mergeState, core.Hooks[State]{
		Init: l.init, Recall: l.recall, RenderDelta: render.DeltaHook[State](Delta), OnItemAppend: l.onItemAppend, Store: l.storeHook,
	}, record, asOf)
}

func (l *Layer) list(ctx context.Context, f vectorstore.Filter, withVectors bool) ([]vectorstore.Record, error) {
	recs, err := layerkit.Records(ctx, l.store.Records, f, withVectors)
	if err != nil {
		return nil, fmt.Errorf("temporal: list: %w", err)
	}
	return recs, nil
}

// AsOf returns the facts of scope that held at t (ValidFrom <= t <
// ValidTo), read from the store with a ValidAt filter, ordered by subject,
// predicate and ValidFrom.
func (l *Layer) AsOf(ctx context.Context, scope vectorstore.Scope, t time.Time) ([]Fact, error) {
	scope, err := l.g.Check(scope)
	if err != nil {
		return nil, err
	}
	f := l.g.Filter(scope)
	f.ValidAt = t
	return l.facts(ctx, f)
}

// List returns every fact of scope, closed and corrected ones
// included, ordered by subject, predicate and ValidFrom, read from the
// store (so it sees writes of every session).
func (l *Layer) List(ctx context.Context, scope vectorstore.Scope) ([]Fact, error) {
	scope, err := l.g.Check(scope)
	if err != nil {
		return nil, err
	}
	return l.facts(ctx, l.g.AllKinds(scope))
}

// facts reads the facts f selects, ordered by subject, predicate and
// ValidFrom.
func (l *Layer) facts(ctx context.Context, f vectorstore.Filter) ([]Fact, error) {
	recs, err := l.list(ctx, f, false)
	if err != nil {
		return nil, err
	}
	out := make([]Fact, 0, len(recs))
	for _, r := range recs {
		out = append(out, fromRecord(r))
	}
	sortFacts(out)
	return out, nil
}

// Put writes facts to scope as stated at time at (the message time
// their When phrases resolve against; zero means the store clock). It is
// the path the record function and extraction take.
func (l *Layer) Put(ctx context.Context, scope vectorstore.Scope, at time.Time, facts ...Input) (Result, error) {
	scope, err := l.g.Check(scope)
	if err != nil {
		return Result{}, err
	}
	if at.IsZero() {
		at = l.store.Time()
	}
	ins := make([]pending, 0, len(facts))
	for i, in := range facts {
		p, err := l.resolve(in, at, nil, OriginAPI)
		if err != nil {
			return Result{}, fmt.Errorf("%w: fact %d: %w", ErrInvalidFact, i, err)
		}
		ins = append(ins, p)
	}
	return l.apply(ctx, scope, ins, nil)
}

func (l *Layer) init(ctx context.Context, p core.InitParams) (State, error) {
	return ledger.Init(ctx, &l.g, p, func(st *State, scope vectorstore.Scope) (err error) {
		st.m, err = l.load(ctx, scope)
		return err
	})
}

func (l *Layer) load(ctx context.Context, scope vectorstore.Scope) (*mirror, error) {
	recs, err := l.list(ctx, l.g.AllKinds(scope), false)
	if err != nil {
		return nil, err
	}
	m := &mirror{times: map[string]time.Time{}}
	for _, r := range recs {
		m.put(fromRecord(r))
	}
	return m, nil
}

func (l *Layer) mirrorOf(ctx context.Context, st State, run core.RunInfo) (*mirror, error) {
	if st.m != nil {
		return st.m, nil
	}
	return l.load(ctx, l.g.ScopeOf(run))
}

// onItemAppend stamps each item with the store clock as it is recorded:
// that is the message timestamp its relative phrases resolve against.
func (l *Layer) onItemAppend(_ context.Context, p core.ItemAppendParams[State]) (*State, error) {
	if m := p.State.m; m != nil {
		m.mu.Lock()
		m.times[layerkit.SourceID(p.Run, p.Item, p.Index)] = l.store.Time()
		m.mu.Unlock()
	}
	return nil, nil
}

// itemTime returns the time the item with this source id was recorded,
// or the store clock for items recorded before the session started. The
// store hook forgets the times of the items it processed.
func (l *Layer) itemTime(m *mirror, source string) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.times[source]; ok {
		return t
	}
	return l.store.Time()
}

func (l *Layer) storeHook(ctx context.Context, p core.StoreParams[State]) (*State, error) {
	m, err := l.mirrorOf(ctx, p.State, p.Run)
	if err != nil {
		return nil, err
	}
	scope := l.g.ScopeOf(p.Run)
	base := len(p.History) - len(p.NewItems)
	ids := make([]string, len(p.NewItems))
	for i, it := range p.NewItems {
		ids[i] = layerkit.SourceID(p.Run, it, base+i)
	}
	defer func() {
		m.mu.Lock()
		for _, id := range ids {
			delete(m.times, id)
		}
		m.mu.Unlock()
	}()
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
	// The extractor does not see this layer's own calls and their outputs.
	found, err := ledger.Extract(ctx, p.Run, p.NewItems, base, []string{l.fnRec, l.fnAsOf}, l.opts.Extractor.Extract,
		func(in Input) []int { return in.From })
	if err != nil {
		return next, err
	}
	var ins []pending
	for _, f := range found {
		in, sources := f.Value, f.Sources
		// The message time the fact's phrase resolves against: the first
		// item it names, else the latest item read.
		ref := l.itemTime(m, ids[f.Items[0]])
		if !f.Named {
			ref = l.itemTime(m, ids[f.Items[len(f.Items)-1]])
		}
		pin, err := l.resolve(in, ref, sources, OriginExtractor)
		if errors.Is(err, ErrUnknownTime) {
			// The phrase was taken for a time but does not resolve at the
			// message's time ("on February 29" in a year without one, "in
			// the spring"): keep the fact, valid from the message, with
			// the phrase back in its value, as Patterns keeps a tail
			// ParseWhen does not know.
			in.Value, in.When = strings.TrimSpace(in.Value)+" "+strings.TrimSpace(in.When), ""
			pin, err = l.resolve(in, ref, sources, OriginExtractor)
		}
		if err != nil {
			continue // an extractor's malformed fact is dropped
		}
		ins = append(ins, pin)
	}
	if len(ins) == 0 {
		return next, nil
	}
	if _, err := l.apply(ctx, scope, ins, m); err != nil {
		return next, err
	}
	return next, nil
}

type recordArgs struct {
	Facts []Input `json:"facts" jsonschema:"the facts to record, at most 100"`
}

type asOfArgs struct {
	Date string `json:"date" jsonschema:"the day to look at: 2026-03-15, last Friday, two weeks ago; or an RFC 3339 instant"`
}

// parseRecord decodes and validates record arguments. Its errors are
// worded for the model.
func (l *Layer) parseRecord(raw string, at time.Time, sources []string) ([]pending, error) {
	args, err := core.DecodeArguments[recordArgs](raw)
	if err != nil {
		return nil, err
	}
	switch n := len(args.Facts); {
	case n == 0:
		return nil, errors.New("facts: give at least one fact")
	case n > MaxPerCall:
		return nil, fmt.Errorf("facts: %d given, at most %d per call", n, MaxPerCall)
	}
	out := make([]pending, 0, len(args.Facts))
	for i, in := range args.Facts {
		p, err := l.resolve(in, at, sources, OriginFunction)
		if err != nil {
			return nil, fmt.Errorf("facts[%d].%w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// callRecord applies a record call whose arguments passed the schema.
func (l *Layer) callRecord(ctx context.Context, p core.CallParams[State]) (core.FunctionResult[State], error) {
	var m *mirror
	out, applied, outputs, ok, err := ledger.Calls(p.State.Applied, p.State.outputs, p.Call.CallID, func() (string, error) {
		// The call is applied now, when the host routes it: the store
		// clock is its message time (in the usual loop, right after the
		// model's answer was recorded).
		ins, err := l.parseRecord(p.Call.Arguments, l.store.Time(), []string{layerkit.CallSourceID(p.Run, p.Call)})
		if err != nil {
			return "", &core.ArgumentError{Function: l.fnRec, Err: err}
		}
		if m, err = l.mirrorOf(ctx, p.State, p.Run); err != nil {
			return "", err
		}
		res, err := l.apply(ctx, l.g.ScopeOf(p.Run), ins, m)
		if err != nil {
			return "", err
		}
		return l.describe(res), nil
	})
	if err != nil || !ok {
		return core.FunctionResult[State]{Output: out}, err
	}
	st := p.State
	st.m, st.Applied, st.outputs = m, applied, outputs
	return core.FunctionResult[State]{Output: out, State: &st}, nil
}

// AsOfInstant turns a date argument into the instant an as-of query
// looks at: a day (a date or a phrase ParseWhen understands) means the
// end of that day in loc, an RFC 3339 timestamp means itself. ref
// resolves relative phrases. An instant outside years 1..9999 (UTC) is
// refused with a *TimeError.
func AsOfInstant(date string, ref time.Time, loc *time.Location) (time.Time, error) {
	if loc == nil {
		loc = time.UTC
	}
	t, err := asOfInstant(date, ref, loc)
	if err == nil && !inRange(t) {
		return time.Time{}, &TimeError{Phrase: date, Reason: "outside years 1..9999"}
	}
	return t, err
}

func asOfInstant(date string, ref time.Time, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(strings.TrimSpace(date))); err == nil {
		return t.UTC(), nil
	}
	if strings.EqualFold(strings.TrimSpace(date), "now") {
		return ref.UTC(), nil
	}
	start, err := ParseWhen(date, ref, loc)
	if err != nil {
		return time.Time{}, err
	}
	return endOfDay(start, loc), nil
}

// endOfDay is the last instant (at the store's microsecond precision) of
// t's calendar day in loc, in UTC.
func endOfDay(t time.Time, loc *time.Location) time.Time {
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, loc).Add(-time.Microsecond).UTC()
}

// callAsOf answers an as_of call whose arguments passed the schema.
func (l *Layer) callAsOf(ctx context.Context, p core.CallParams[State]) (core.FunctionResult[State], error) {
	argErr := func(err error) error { return &core.ArgumentError{Function: l.fnAsOf, Err: err} }
	args, err := core.DecodeArguments[asOfArgs](p.Call.Arguments)
	if err != nil {
		return core.FunctionResult[State]{}, argErr(err)
	}
	now := l.store.Time()
	t, err := AsOfInstant(args.Date, now, l.opts.Location)
	if err != nil {
		return core.FunctionResult[State]{}, argErr(fmt.Errorf("date: %w", err))
	}
	facts, err := l.AsOf(ctx, l.g.ScopeOf(p.Run), t)
	if err != nil {
		return core.FunctionResult[State]{}, err
	}
	return core.FunctionResult[State]{Output: l.renderAsOf(facts, t, now)}, nil
}

// pending is a validated, resolved fact on its way in.
type pending struct {
	f      Fact
	origin string
}

// resolve validates in and resolves its When against at. Errors name the
// field, for the model.
func (l *Layer) resolve(in Input, at time.Time, sources []string, origin string) (pending, error) {
	clean := func(field, s string, max int) (string, error) {
		// Function arguments with controls were refused already; what an
		// extractor read from the conversation loses them.
		s = layerkit.StripControls(s)
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return "", fmt.Errorf("%s: not valid UTF-8 or contains a NUL byte", field)
		}
		if len(s) > max {
			return "", fmt.Errorf("%s: %d bytes, at most %d", field, len(s), max)
		}
		s = strings.Join(strings.Fields(s), " ")
		if s == "" {
			return "", fmt.Errorf("%s: empty", field)
		}
		return s, nil
	}
	var f Fact
	var err error
	if f.Subject, err = clean("subject", in.Subject, MaxFieldBytes); err != nil {
		return pending{}, err
	}
	if f.Predicate, err = clean("predicate", in.Predicate, MaxFieldBytes); err != nil {
		return pending{}, err
	}
	if f.Value, err = clean("value", in.Value, MaxValueBytes); err != nil {
		return pending{}, err
	}
	f.RecordedAt = at.UTC().Truncate(time.Microsecond)
	f.ValidFrom = f.RecordedAt
	if strings.TrimSpace(in.When) != "" {
		if f.When, err = clean("when", in.When, MaxWhenBytes); err != nil {
			return pending{}, err
		}
		t, err := ParseWhen(f.When, at, l.opts.Location)
		if err != nil {
			return pending{}, fmt.Errorf("when: %w", err)
		}
		f.RefersTo = t.Truncate(time.Microsecond)
		f.ValidFrom = f.RefersTo
	}
	if len(sources) > maxSources {
		sources = sources[len(sources)-maxSources:]
	}
	f.Sources = sources
	f.key = f.chainKey()
	return pending{f: f, origin: origin}, nil
}

// recordID is the id of fact f of layer id in scope: deterministic in
// the layer, scope, chain, value and ValidFrom, so re-applying a write is
// idempotent.
func recordID(id string, scope vectorstore.Scope, f Fact) string {
	return ledger.RecordID("fact", id, scope, f.subjectKey(), f.predicateKey(), normValue(f.Value), f.ValidFrom.UTC().Format(time.RFC3339Nano))
}

// Result counts what a write did.
type Result struct {
	// Added facts are new records. Closed counts older facts whose
	// validity the new ones ended; Corrected those replaced by a fact with
	// the same ValidFrom. Unchanged facts restated what was already valid
	// then.
	Added, Closed, Corrected, Unchanged int
	// Facts are the facts of the input, as stored (or as found, when
	// unchanged), in input order.
	Facts []Fact
	// Superseded are the older facts the write closed or corrected, as
	// they are now.
	Superseded []Fact
}

func (l *Layer) describe(r Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Recorded %d fact(s): %d new, %d unchanged", len(r.Facts), r.Added, r.Unchanged)
	if r.Closed+r.Corrected > 0 {
		fmt.Fprintf(&b, "; %d older fact(s) superseded", r.Closed+r.Corrected)
	}
	b.WriteString(".")
	for _, f := range r.Facts {
		fmt.Fprintf(&b, "\n- %s · %s: %s, valid from %s", f.Subject, f.Predicate, f.Value, l.day(f.ValidFrom))
	}
	for _, f := range r.Superseded {
		if f.Corrected() {
			fmt.Fprintf(&b, "\n- corrected (never held): %s · %s: %s from %s", f.Subject, f.Predicate, f.Value, l.day(f.ValidFrom))
			continue
		}
		fmt.Fprintf(&b, "\n- superseded: %s · %s: %s, valid %s to %s", f.Subject, f.Predicate, f.Value, l.day(f.ValidFrom), l.day(f.ValidTo))
	}
	return b.String()
}

func (l *Layer) day(t time.Time) string { return t.In(l.opts.Location).Format("2006-01-02") }

// chainRec is a record of a chain being updated, with its fact view.
type chainRec struct {
	rec     vectorstore.Record
	f       Fact
	changed bool
}

// apply writes facts to scope. For each, the chain of its subject and
// predicate is read from the store (so writes of other sessions of the
// scope are seen), the fact is placed in it by ValidFrom, and its
// neighbours' validity adjusted: the fact valid at its ValidFrom is closed
// there, and it stays valid until the next fact's ValidFrom. A fact with
// the same ValidFrom as an existing one corrects it (the old one is kept
// as KindCorrected). A fact whose value is the one already valid at
// its ValidFrom changes nothing. New texts are embedded in one batch.
// Each record is written against the revision it was read at, so a chain
// another session changed meanwhile is never overwritten: on a conflict
// the facts are applied again to a fresh read of their chains.
func (l *Layer) apply(ctx context.Context, scope vectorstore.Scope, ins []pending, m *mirror) (Result, error) {
	if len(ins) == 0 {
		return Result{}, nil
	}
	return layerkit.RetryConflicts(ctx, l.opts.ID, "facts", func() (Result, error) {
		return l.applyOnce(ctx, scope, ins, m)
	})
}

func (l *Layer) applyOnce(ctx context.Context, scope vectorstore.Scope, ins []pending, m *mirror) (Result, error) {
	var res Result
	chains := map[string][]*chainRec{}
	var written []*chainRec // in first-change order
	for _, in := range ins {
		f := in.f
		key := f.chainKey()
		chain, ok := chains[key]
		if !ok {
			flt := l.g.Filter(scope)
			flt.Metadata = map[string]string{MetaSubjectKey: f.subjectKey(), MetaPredicateKey: f.predicateKey()}
			recs, err := l.list(ctx, flt, true)
			if err != nil {
				return Result{}, err
			}
			for _, r := range recs {
				chain = append(chain, &chainRec{rec: r, f: fromRecord(r)})
			}
		}
		f.ID = recordID(l.opts.ID, scope, f)
		var live []*chainRec
		var dup *chainRec
		for _, c := range chain {
			if c.f.ID == f.ID {
				dup = c
			}
			if !c.f.Corrected() {
				live = append(live, c)
			}
		}
		slices.SortFunc(live, func(a, b *chainRec) int { return compareChain(a.f, b.f) })
		var cur, pred, succ *chainRec
		for _, c := range live {
			if c.f.ValidAt(f.ValidFrom) {
				cur = c
			}
			if !c.f.ValidFrom.After(f.ValidFrom) {
				pred = c
			} else if succ == nil {
				succ = c
			}
		}
		if dup != nil {
			res.Unchanged++
			res.Facts = append(res.Facts, dup.f)
			chains[key] = chain
			continue
		}
		if cur != nil && normValue(cur.f.Value) == normValue(f.Value) {
			res.Unchanged++
			res.Facts = append(res.Facts, cur.f)
			chains[key] = chain
			continue
		}
		touch := func(c *chainRec) {
			if !c.changed {
				c.changed = true
				written = append(written, c)
			}
		}
		switch {
		case pred != nil && pred.f.ValidFrom.Equal(f.ValidFrom):
			f.ValidTo = pred.f.ValidTo
			pred.f.CorrectedBy = f.ID
			touch(pred)
			res.Corrected++
			res.Superseded = append(res.Superseded, pred.f)
		case pred != nil && (pred.f.ValidTo.IsZero() || pred.f.ValidTo.After(f.ValidFrom)):
			f.ValidTo = pred.f.ValidTo
			pred.f.ValidTo = f.ValidFrom
			touch(pred)
			res.Closed++
			res.Superseded = append(res.Superseded, pred.f)
		case succ != nil:
			f.ValidTo = succ.f.ValidFrom
		}
		nc := &chainRec{f: f, rec: vectorstore.Record{
			ID: f.ID, Layer: l.opts.ID, Kind: Kind, Scope: scope, Text: factText(f), CreatedAt: l.store.Time(),
			Metadata: meta(f, in.origin),
		}}
		touch(nc)
		chain = append(chain, nc)
		chains[key] = chain
		res.Added++
		res.Facts = append(res.Facts, f)
	}
	if len(written) == 0 {
		return res, nil
	}
	var texts []string
	var need []*chainRec
	for _, c := range written {
		if c.rec.Vector == nil {
			texts = append(texts, c.rec.Text)
			need = append(need, c)
		}
	}
	if len(texts) > 0 {
		vecs, err := l.store.Embedder.Embed(ctx, texts)
		if err != nil {
			return Result{}, &core.WriteError{Layer: l.opts.ID, Item: fmt.Sprintf("%d fact(s)", len(texts)), Err: fmt.Errorf("temporal: embed: %w", err)}
		}
		if len(vecs) != len(texts) {
			return Result{}, fmt.Errorf("temporal: embed: %d vectors for %d texts", len(vecs), len(texts))
		}
		for i, c := range need {
			c.rec.Vector = vecs[i]
		}
	}
	recs := make([]vectorstore.Record, 0, len(written))
	for _, c := range written {
		c.rec.ValidFrom = c.f.ValidFrom
		c.rec.ValidTo = c.f.ValidTo
		if c.f.Corrected() {
			c.rec.Kind = KindCorrected
			c.rec.Metadata[MetaCorrectedBy] = c.f.CorrectedBy
		}
		recs = append(recs, c.rec)
	}
	if err := layerkit.WriteIf(ctx, l.store.Records, recs); err != nil {
		if errors.Is(err, vectorstore.ErrConflict) {
			return Result{}, err // applied again to a fresh read
		}
		return Result{}, &core.WriteError{Layer: l.opts.ID, Item: factIDs(recs), Err: fmt.Errorf("temporal: write: %w", err)}
	}
	if m != nil {
		for _, c := range written {
			m.put(c.f)
		}
	}
	// Report facts as they finally are: a later input of the same call
	// may have closed or corrected one written or superseded earlier.
	final := make(map[string]Fact, len(written))
	for _, c := range written {
		final[c.f.ID] = c.f
	}
	for _, list := range [][]Fact{res.Facts, res.Superseded} {
		for i, f := range list {
			if g, ok := final[f.ID]; ok {
				list[i] = g
			}
		}
	}
	return res, nil
}

func factText(f Fact) string { return f.Subject + " " + f.Predicate + ": " + f.Value }

func meta(f Fact, origin string) map[string]string {
	src, _ := json.Marshal(append([]string{}, f.Sources...)) // "[]", never "null"
	md := map[string]string{
		MetaSubject:      f.Subject,
		MetaPredicate:    f.Predicate,
		MetaValue:        truncate(f.Value, vectorstore.MaxMetadataValue),
		MetaSubjectKey:   f.subjectKey(),
		MetaPredicateKey: f.predicateKey(),
		MetaRecordedAt:   f.RecordedAt.UTC().Format(time.RFC3339Nano),
		MetaSources:      string(src),
		MetaOrigin:       origin,
	}
	if f.When != "" {
		md[MetaWhen] = f.When
		md[MetaRefersTo] = f.RefersTo.UTC().Format(time.RFC3339Nano)
	}
	return md
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// fromRecord reads a fact back. Hand-edited metadata that does not parse
// falls back to what the record's own fields say.
func fromRecord(r vectorstore.Record) Fact {
	f := Fact{
		ID: r.ID, Subject: r.Metadata[MetaSubject], Predicate: r.Metadata[MetaPredicate], Value: r.Metadata[MetaValue],
		When: r.Metadata[MetaWhen], ValidFrom: r.ValidFrom, ValidTo: r.ValidTo, RecordedAt: r.CreatedAt,
	}
	if f.Value == "" {
		f.Value = r.Text
	}
	if sk, pk := r.Metadata[MetaSubjectKey], r.Metadata[MetaPredicateKey]; sk != "" && pk != "" {
		f.key = sk + "\x00" + pk
	}
	if r.Kind == KindCorrected {
		f.CorrectedBy = r.Metadata[MetaCorrectedBy]
		if f.CorrectedBy == "" {
			f.CorrectedBy = "unknown"
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, r.Metadata[MetaRecordedAt]); err == nil {
		f.RecordedAt = t.UTC()
	}
	if t, err := time.Parse(time.RFC3339Nano, r.Metadata[MetaRefersTo]); err == nil {
		f.RefersTo = t.UTC()
	}
	_ = json.Unmarshal([]byte(r.Metadata[MetaSources]), &f.Sources)
	return f
}

// factIDs lists the ids of records for an error message.
func factIDs(recs []vectorstore.Record) string {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	return strings.Join(ids, ", ")
}

// Delete removes the facts with these record ids from a scope and returns
// how many it removed; an id the scope does not hold is skipped. The other
// facts of a chain keep the validity they were given: deleting the fact
// that superseded another does not reopen it. Running sessions of the
// scope keep rendering the deleted facts until their next run (their
// mirror was loaded at init).
func (l *Layer) Delete(ctx context.Context, scope vectorstore.Scope, ids ...string) (int, error) {
	return l.g.Delete(ctx, scope, l.g.AllKinds, ids)
}
