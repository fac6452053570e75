package entity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"github.com/stratamem/strata/memory/internal/render"
	"github.com/stratamem/strata/vectorstore"
)

// Defaults and limits.
const (
	// DefaultID is the layer id when Options.ID is empty; the provided
	// function is then "entity/update".
	DefaultID = "entity"
	// DefaultCallName is the name of the layer's plain function
	// (core.Function.Plain): it is not offered as a tool, the system
	// prompt tells the model to call it, for hosts whose prompts predate
	// provided functions.
	DefaultCallName = "updateEntities"
	// KindEntity is the record kind of an entity.
	KindEntity = "entity"
	// DefaultMaxEntities bounds the entities of one scope when
	// Options.MaxEntities is 0.
	DefaultMaxEntities = 1000
	// DefaultMaxNotes bounds the notes of one entity when Options.MaxNotes
	// is 0.
	DefaultMaxNotes = 20
	// MaxEntitiesPerCall bounds one update; MaxNoteBytes one note;
	// MaxNameBytes a name; MaxNotesPerEntity the notes one update gives
	// one entity; MaxArgumentBytes the raw JSON of a call.
	MaxEntitiesPerCall = 100
	MaxNoteBytes       = 8 << 10
	MaxNameBytes       = 256
	MaxNotesPerEntity  = 50
	MaxArgumentBytes   = 1 << 20
	// MaxPriority is the highest explicit priority.
	MaxPriority = 10
)

// ErrInvalidUpdate is matched (errors.Is) by every rejection of an update's
// arguments. The error itself is a *core.ArgumentError, whose message is
// what the model reads.
var ErrInvalidUpdate = errors.New("entity: invalid update")

// Type is the kind of an entity.
type Type string

// Entity types.
const (
	Person       Type = "person"
	Organization Type = "organization"
	Place        Type = "place"
	Concept      Type = "concept"
	Other        Type = "other"
)

// ParseType reads a type case-insensitively, accepting "organisation",
// "org" and "location" as aliases.
func ParseType(s string) (Type, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "person":
		return Person, true
	case "organization", "organisation", "org":
		return Organization, true
	case "place", "location":
		return Place, true
	case "concept":
		return Concept, true
	case "other":
		return Other, true
	}
	return "", false
}

// Entity is one remembered entity.
type Entity struct {
	// Name is the first spelling seen (spaces collapsed).
	Name  string
	Type  Type
	Notes []string
	// Mentions counts the updates that named the entity.
	Mentions int
	// Priority is the explicit priority, 0 (none) to MaxPriority.
	Priority  int
	FirstSeen time.Time
	Updated   time.Time
}

func (e Entity) clone() Entity {
	e.Notes = append([]string(nil), e.Notes...)
	return e
}

type key struct {
	norm string
	typ  Type
}

// State is the layer's state: an in-memory mirror of the scope's entities,
// loaded at init. It has no exported fields and encodes to "{}": the
// records are the memory, not the runtime's scoped state. Read it with
// core.State[entity.State](session, id).
type State struct {
	entities map[key]Entity
	// calls are the calls applied in this session, so a replayed call id
	// is answered, not applied again.
	calls memory.CallLog
	// rendered caches the rendering of these entities.
	rendered *render.Memo
}

// Len is the number of entities.
func (s State) Len() int { return len(s.entities) }

// Get returns the entity with this name (compared normalised) and type.
func (s State) Get(name string, typ Type) (Entity, bool) {
	e, ok := s.entities[key{NormalizeName(name), typ}]
	if !ok {
		return Entity{}, false
	}
	return e.clone(), true
}

// Entities returns every entity, in the order they were first seen.
func (s State) Entities() []Entity {
	keys := s.sortedKeys(byFirstSeen)
	out := make([]Entity, len(keys))
	for i, k := range keys {
		out[i] = s.entities[k].clone()
	}
	return out
}

// Options configure the layer. The zero value is useful. The common
// options (memory.Common) default to: id "entity", name "Entities", slot
// core.SlotEntity, thread scope (core.ScopeResource shares entities
// across a resource's threads, core.ScopeGlobal across all), budget
// core.Range(200, 1000) and auto placement. The Logger receives the
// records skipped at load, and the scope notice while Scope is left ""
// (see memory.Common.Logger); a rejected plain call is a runtime
// diagnostic.
type Options struct {
	memory.Common
	// CallName is the name of the layer's plain function
	// (core.Function.Plain, a pseudo-tool: no schema is offered for it,
	// the system prompt tells the model to call it), which takes the
	// arguments of "<ID>/update"; "" means DefaultCallName. It is never
	// "<ID>/update" itself.
	CallName string
	// FunctionOnly leaves the plain function out, so that the routed
	// provided function is the only write path. With it every write is
	// one the host routed; without it, a plain call is applied as it is
	// recorded when no layer of the runtime can deny calls.
	FunctionOnly bool
	// MaxEntities bounds the entities of one scope; past it the lowest
	// ranked (priority, mentions, last update) are deleted. 0 means
	// DefaultMaxEntities.
	MaxEntities int
	// MaxNotes bounds the notes of one entity; the oldest go first. 0
	// means DefaultMaxNotes.
	MaxNotes int
}

// Layer is the entity layer bound to a store. It is a core.AnyLayer:
// hand it to the runtime in core.Config.Layers. Its methods are the Go
// API over the same records, through the same write path as the model's
// update calls.
type Layer struct {
	// Layer is the core layer the runtime runs, embedded so that *Layer
	// is a core.AnyLayer. New resolves its fields from Options: set them
	// there, not here (the Go API keeps using the resolved ID and Scope).
	core.Layer[State]
	id       string
	fn       string // "<id>/update"
	scope    core.Scope
	store    *memory.Store
	maxEnt   int
	maxNotes int
	logger   *slog.Logger
	// mu serialises apply's read-modify-write of the records, so two
	// sessions of this layer writing one entity at once cannot lose
	// either's update.
	mu sync.Mutex
}

// New returns the entity layer writing to store. Invalid options fail with
// a *core.ConfigError naming the field; an unusable store with an error
// wrapping memory.ErrInvalidStore.
func New(store *memory.Store, opts Options) (*Layer, error) {
	common, err := layerkit.Open(store, "entity", opts.Common, layerkit.Defaults{
		ID: DefaultID, Name: "Entities", Slot: core.SlotEntity, Budget: core.Range(200, 1000), Placement: core.PlacementAuto,
		Scopes: Format.Scopes(), CheckID: layerkit.NoSlash,
	})
	if err != nil {
		return nil, err
	}
	notice := layerkit.NewScopeNotice(opts.Common, common)
	opts.Common = common
	bad := func(field, reason string) error { return layerkit.ConfigError(opts.ID, field, reason) }
	if opts.CallName == "" {
		opts.CallName = DefaultCallName
	}
	if opts.CallName == opts.ID+"/update" {
		return nil, bad("CallName", "is the provided function's name already")
	}
	switch {
	case opts.MaxEntities < 0:
		return nil, bad("MaxEntities", "negative")
	case opts.MaxEntities == 0:
		opts.MaxEntities = DefaultMaxEntities
	case opts.MaxEntities < MaxEntitiesPerCall:
		return nil, bad("MaxEntities", fmt.Sprintf("%d is below the %d entities one call may record", opts.MaxEntities, MaxEntitiesPerCall))
	}
	switch {
	case opts.MaxNotes < 0:
		return nil, bad("MaxNotes", "negative")
	case opts.MaxNotes == 0:
		opts.MaxNotes = DefaultMaxNotes
	}
	l := &Layer{id: opts.ID, fn: opts.ID + "/update", scope: opts.Scope, store: store,
		maxEnt: opts.MaxEntities, maxNotes: opts.MaxNotes, logger: opts.Logger}
	// A child writes to the store directly: the parent reloads to see
	// what it recorded.
	hooks := layerkit.MirrorHooks(store, notice, l.id, "entity", l.load, l.render,
		func(_ State, prev, next []core.Item) string { return renderDelta(prev, next) },
		func(st *State, parent State) { st.calls = parent.calls })
	cl := layerkit.Spec[State](opts.Common)
	// Its writes go to the record store: a write that times out is
	// unconfirmed.
	cl.WritesRecords = true
	cl.Hooks = hooks
	update := layerkit.UpdateFunction(
		"Remember people, organizations, places and concepts you learn about, with short notes; "+
			"they are shown to you on every turn. Entities merge by name and type, notes accumulate. "+
			`Example: {"entities": [{"name": "Ada Lovelace", "type": "person", "notes": ["mathematician"]}]}. `+
			"At most 100 entities per call, notes up to 8 KiB.",
		parametersSchema, l.callOnce)
	cl.Functions = []core.Function[State]{update}
	if !opts.FunctionOnly {
		// The same call under its plain name: the runtime applies it.
		cl.Functions = append(cl.Functions, core.Function[State]{Spec: core.ToolSpec{Name: opts.CallName}, Plain: true, Call: update.Call})
	}
	cl.Merge = layerkit.KeepMine[State]
	l.Layer = cl
	return l, nil
}

var parametersSchema = []byte(`{"type":"object","properties":{"entities":{"type":"array","maxItems":100,"items":{` +
	`"type":"object","properties":{` +
	`"name":{"type":"string","description":"The entity's name."},` +
	`"type":{"type":"string","enum":["person","organization","place","concept","other"]},` +
	`"notes":{"type":"array","items":{"type":"string","maxLength":8192},"description":"Short facts about the entity."},` +
	`"note":{"type":"string","maxLength":8192,"description":"One more fact."},` +
	`"priority":{"type":"integer","minimum":0,"maximum":10,"description":"Optional importance; higher is kept first when space is short."}` +
	`},"required":["name","type"],"additionalProperties":false}}},"required":["entities"],"additionalProperties":false}`)

// callOnce applies call unless this session applied its call id already
// (a replay), in which case it answers with the first application's output
// and changes nothing.
func (l *Layer) callOnce(ctx context.Context, run core.RunInfo, st State, call core.Item) (*State, string, error) {
	if out, ok := st.calls.Replay(call.CallID); ok {
		return nil, out, nil
	}
	name := call.Name
	if name == "" {
		name = l.fn
	}
	ups, err := parseUpdate(call.Arguments)
	if err != nil {
		return nil, "", &core.ArgumentError{Function: name, Err: err}
	}
	next, out, err := l.apply(ctx, run, st, ups)
	if err != nil {
		var ae *core.ArgumentError
		if errors.As(err, &ae) {
			ae.Function = name
		}
		return nil, "", err
	}
	next.calls = next.calls.With(call.CallID, out)
	return &next, out, nil
}

// scopeOf returns the record scope, the scope key used in record ids, and
// the filter selecting this scope's entities.
func (l *Layer) scopeOf(run core.RunInfo) (vectorstore.Scope, string, vectorstore.Filter) {
	return layerkit.Scoped(l.id, KindEntity, l.scope, run)
}

// recordID is the id of the record of entity k of layer id in a scope
// (a layerkit.Scoped key).
func recordID(id, scopeKey string, k key) string {
	return layerkit.RecordID(KindEntity, id, scopeKey, string(k.typ)+"\x00"+k.norm)
}

// entityRecord is the record of entity e (of key k) of layer id, with
// the layer scope scope, in the record scope recScope (keyed scopeKey),
// written at now. It has no vector.
func entityRecord(id string, scope core.Scope, recScope vectorstore.Scope, scopeKey string, k key, e Entity, now time.Time) vectorstore.Record {
	return vectorstore.Record{
		ID: recordID(id, scopeKey, k), Layer: id, Kind: KindEntity, Scope: recScope, Text: recordText(e),
		Metadata: map[string]string{
			MetaName: e.Name, MetaType: string(e.Type), MetaMentions: strconv.Itoa(e.Mentions),
			MetaPriority: strconv.Itoa(e.Priority), MetaFirstSeen: e.FirstSeen.Format(time.RFC3339Nano),
			MetaUpdated: e.Updated.Format(time.RFC3339Nano), memory.MetaScope: string(scope),
		},
		CreatedAt: now,
	}
}

// recordText is the text of an entity's record: the line the layer renders
// without its "- ".
func recordText(e Entity) string {
	if len(e.Notes) == 0 {
		return e.Name + " (" + string(e.Type) + ")"
	}
	return e.Name + " (" + string(e.Type) + "): " + strings.Join(e.Notes, noteSep)
}

const noteSep = "; "

// load reads the scope's entities into a fresh mirror.
func (l *Layer) load(ctx context.Context, run core.RunInfo) (State, error) {
	entities, _, _, err := l.read(ctx, run)
	if err != nil {
		return State{}, err
	}
	return State{entities: entities, rendered: &render.Memo{}}, nil
}

// read reads the scope's entities from the store, with the ids of the
// records each was read from (more than one when records were made from
// outside for one entity; they are merged) and the revision of each
// record, against which apply writes.
func (l *Layer) read(ctx context.Context, run core.RunInfo) (map[key]Entity, map[key][]string, map[string]int64, error) {
	_, _, f := l.scopeOf(run)
	entities := map[key]Entity{}
	ids := map[key][]string{}
	revs := map[string]int64{}
	for rec, err := range l.store.Records.All(ctx, vectorstore.ListOptions{Filter: f, Limit: 1000}) {
		if err != nil {
			return nil, nil, nil, fmt.Errorf("entity: load entities: %w", err)
		}
		revs[rec.ID] = rec.Revision
		e, ok := fromRecord(rec)
		if !ok {
			l.logger.Warn("entity: skipping a record that does not describe an entity", "layer", l.id, "id", rec.ID)
			continue
		}
		k := key{NormalizeName(e.Name), e.Type}
		if old, ok := entities[k]; ok {
			// Two records for one entity (made from outside): merge.
			e = mergeEntities(old, e, l.maxNotes)
		}
		entities[k] = e
		ids[k] = append(ids[k], rec.ID)
	}
	return entities, ids, revs, nil
}

// fromRecord reads an entity back from its record. The metadata name and
// type are authoritative; the notes are read from the text, so an edit of
// the text (memctl) is what the layer sees.
func fromRecord(rec vectorstore.Record) (Entity, bool) {
	md := rec.Metadata
	typ, ok := ParseType(md[MetaType])
	name := collapseSpaces(md[MetaName])
	if !ok || name == "" || NormalizeName(name) == "" {
		return Entity{}, false
	}
	e := Entity{Name: name, Type: typ, Mentions: 1, FirstSeen: rec.CreatedAt, Updated: rec.CreatedAt}
	if n, err := strconv.Atoi(md[MetaMentions]); err == nil && n > 0 {
		e.Mentions = n
	}
	if n, err := strconv.Atoi(md[MetaPriority]); err == nil && n >= 0 && n <= MaxPriority {
		e.Priority = n
	}
	if t, err := time.Parse(time.RFC3339Nano, md[MetaFirstSeen]); err == nil {
		e.FirstSeen = t.UTC()
	}
	if t, err := time.Parse(time.RFC3339Nano, md[MetaUpdated]); err == nil {
		e.Updated = t.UTC()
	}
	notes := ""
	if rest, ok := strings.CutPrefix(rec.Text, name+" ("+string(typ)+"): "); ok {
		notes = rest
	} else if _, rest, ok := strings.Cut(rec.Text, "): "); ok {
		notes = rest
	}
	seen := map[string]bool{}
	for _, n := range splitNote(notes) {
		if nk := noteKey(n); !seen[nk] {
			seen[nk] = true
			e.Notes = append(e.Notes, n)
		}
	}
	return e, true
}

// mergeEntities folds b into a: notes united, mentions added, the earlier
// first sighting and the later update kept.
func mergeEntities(a, b Entity, maxNotes int) Entity {
	a = a.clone()
	a.Notes = addNotes(a.Notes, b.Notes, maxNotes)
	a.Mentions += b.Mentions
	a.Priority = max(a.Priority, b.Priority)
	if b.FirstSeen.Before(a.FirstSeen) {
		a.FirstSeen, a.Name = b.FirstSeen, b.Name
	}
	if b.Updated.After(a.Updated) {
		a.Updated = b.Updated
	}
	return a
}

// addNotes appends the notes of add that old does not hold (compared
// normalised) and keeps the newest maxNotes.
func addNotes(old, add []string, maxNotes int) []string {
	out := append([]string(nil), old...)
	seen := make(map[string]bool, len(old)+len(add))
	for _, n := range old {
		seen[noteKey(n)] = true
	}
	for _, n := range add {
		if k := noteKey(n); !seen[k] {
			seen[k] = true
			out = append(out, n)
		}
	}
	if len(out) > maxNotes {
		out = append([]string(nil), out[len(out)-maxNotes:]...)
	}
	return out
}

// apply writes the updates to the store and returns the new state and the
// output for the model. st is not modified.
//
// The updates are applied to the scope's entities as the store holds them
// now, not to the session's mirror: another session of the scope may have
// written since this one loaded, and an entity's record is rewritten whole,
// so building it from the mirror would drop that session's notes,
// mentions and priority. Every write of this session reached the store
// before its mirror, so the store's view holds all the mirror does (less
// what was deleted from outside, which stays deleted). The returned state
// is that fresh view with the updates applied.
//
// Every record is written conditionally, against the revision read: when
// another process wrote one of them since (the lock serialises this
// layer's sessions only), the update is applied again to a fresh read, up
// to maxApplyAttempts times, so two processes adding notes to one entity
// never lose one. An update naming several entities writes their records
// one by one: when a later one conflicts, the retry applies the update to
// the earlier ones again (their notes are not doubled; their mention
// count is counted again).
func (l *Layer) apply(ctx context.Context, run core.RunInfo, st State, ups []entityUpdate) (State, string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	type applied struct {
		st  State
		out string
	}
	r, err := layerkit.RetryConflicts(ctx, l.id, "entities", func() (applied, error) {
		st, out, err := l.applyOnce(ctx, run, st, ups)
		return applied{st, out}, err
	})
	return r.st, r.out, err
}

func (l *Layer) applyOnce(ctx context.Context, run core.RunInfo, st State, ups []entityUpdate) (State, string, error) {
	next, ids, revs, err := l.read(ctx, run)
	if err != nil {
		return State{}, "", err
	}
	now := l.store.Time().Truncate(time.Microsecond)
	var touched []key
	isTouched := map[key]bool{}
	created := map[key]bool{}
	for _, u := range ups {
		k := key{u.norm, u.typ}
		e, exists := next[k]
		if !exists {
			e = Entity{Name: u.name, Type: u.typ, FirstSeen: now}
			created[k] = true
		} else {
			e = e.clone()
		}
		if !isTouched[k] {
			// One mention per call, however often the call names it.
			isTouched[k] = true
			touched = append(touched, k)
			e.Mentions++
		}
		e.Notes = addNotes(e.Notes, u.notes, l.maxNotes)
		if u.priority != nil {
			e.Priority = *u.priority
		}
		e.Updated = now
		next[k] = e
	}
	// Past the limit, the lowest ranked entities not named by this call
	// go.
	var evicted []key
	if over := len(next) - l.maxEnt; over > 0 {
		s := State{entities: next}
		ranked := s.sortedKeys(byRank)
		for i := len(ranked) - 1; i >= 0 && len(evicted) < over; i-- {
			if !isTouched[ranked[i]] {
				evicted = append(evicted, ranked[i])
			}
		}
		for _, k := range evicted {
			delete(next, k)
		}
	}

	recScope, scopeKey, _ := l.scopeOf(run)
	recs := make([]vectorstore.Record, len(touched))
	texts := make([]string, len(touched))
	for i, k := range touched {
		recs[i] = entityRecord(l.id, l.scope, recScope, scopeKey, k, next[k], now)
		texts[i] = recs[i].Text
	}
	vecs, err := l.store.Embedder.Embed(ctx, texts)
	if err != nil {
		return State{}, "", &core.WriteError{Layer: l.id, Item: "entities " + keyNames(touched), Err: fmt.Errorf("entity: embed entities: %w", err)}
	}
	for i := range recs {
		recs[i].Vector = vecs[i]
	}
	for _, rec := range recs {
		// Against the revision read (0: the record must not exist yet),
		// so a concurrent writer's notes are never overwritten.
		if _, err := l.store.Records.UpsertIf(ctx, rec, revs[rec.ID]); err != nil {
			return State{}, "", &core.WriteError{Layer: l.id, Item: "entities " + keyNames(touched), Err: fmt.Errorf("entity: write entities: %w", err)}
		}
	}
	// The evicted entities go with every record they were read from, and
	// a touched entity read from records made from outside under other ids
	// now lives in its own record alone (it holds their merge).
	var stale []string
	for _, k := range evicted {
		stale = append(stale, ids[k]...)
	}
	for _, k := range touched {
		for _, id := range ids[k] {
			if id != recordID(l.id, scopeKey, k) {
				stale = append(stale, id)
			}
		}
	}
	for _, id := range stale {
		if err := l.store.Records.DeleteIf(ctx, id, revs[id]); err != nil && !errors.Is(err, vectorstore.ErrNotFound) {
			return State{}, "", &core.WriteError{Layer: l.id, Item: "stale entity records", Err: fmt.Errorf("entity: delete records: %w", err)}
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "ok: recorded %d %s: ", len(touched), plural(len(touched), "entity", "entities"))
	for i, k := range touched {
		if i > 0 {
			b.WriteString(", ")
		}
		e := next[k]
		fmt.Fprintf(&b, "%s (%s", e.Name, e.Type)
		if created[k] {
			b.WriteString(", new")
		}
		b.WriteString(")")
	}
	if len(evicted) > 0 {
		fmt.Fprintf(&b, "; forgot the %d least used to stay within %d", len(evicted), l.maxEnt)
	}
	fmt.Fprintf(&b, "; %d %s remembered.", len(next), plural(len(next), "entity", "entities"))
	return State{entities: next, calls: st.calls, rendered: &render.Memo{}}, b.String(), nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

type order int

const (
	byFirstSeen order = iota // rendering order
	byRank                   // keep order: priority, mentions, recency
)

// sortedKeys returns the keys in the given order, with the normalised name
// and type breaking ties so the order is total.
func (s State) sortedKeys(o order) []key {
	keys := make([]key, 0, len(s.entities))
	for k := range s.entities {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := s.entities[keys[i]], s.entities[keys[j]]
		switch o {
		case byFirstSeen:
			if !a.FirstSeen.Equal(b.FirstSeen) {
				return a.FirstSeen.Before(b.FirstSeen)
			}
		case byRank:
			if a.Priority != b.Priority {
				return a.Priority > b.Priority
			}
			if a.Mentions != b.Mentions {
				return a.Mentions > b.Mentions
			}
			if !a.Updated.Equal(b.Updated) {
				return a.Updated.After(b.Updated)
			}
		}
		if keys[i].norm != keys[j].norm {
			return keys[i].norm < keys[j].norm
		}
		return keys[i].typ < keys[j].typ
	})
	return keys
}

// keyNames lists entities for an error message: "Ada (person), Acme (organization)".
func keyNames(ks []key) string {
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = k.norm + " (" + string(k.typ) + ")"
	}
	return strings.Join(names, ", ")
}

// ErrScope is wrapped when a Go API call names a scope the layer cannot
// use (an empty thread for a thread-scoped layer, ...).
var ErrScope = memory.ErrScope

// Update is one entity written by Put: the fields of an entry of the
// model's update call, validated by the same rules.
type Update struct {
	Name string `json:"name"`
	Type Type   `json:"type"`
	// Notes are added to the entity's notes (duplicates are not).
	Notes []string `json:"notes,omitempty"`
	// Priority, when set, replaces the entity's priority (0..MaxPriority).
	Priority *int `json:"priority,omitempty"`
}

// List returns the entities stored in a scope, read from the store (so it
// sees writes of every session), in the order they were first seen.
func (l *Layer) List(ctx context.Context, scope vectorstore.Scope) ([]Entity, error) {
	st, err := layerkit.Load(ctx, l.id, l.scope, scope, l.load)
	if err != nil {
		return nil, err
	}
	return st.Entities(), nil
}

// Put writes entities to a scope through the model's update path: the
// same validation (errors match ErrInvalidUpdate), merging by name and
// type, note limits and eviction. It returns the update's summary, the
// output the model would read. Running sessions of the scope see the
// change from their next run (their mirror was loaded at init).
func (l *Layer) Put(ctx context.Context, scope vectorstore.Scope, ents ...Update) (string, error) {
	run, err := layerkit.Run(l.id, l.scope, scope)
	if err != nil {
		return "", err
	}
	ups, err := checkUpdate(len(ents), func(i int) (entityUpdate, error) {
		e := ents[i]
		return checkEntity(e.Name, string(e.Type), e.Notes, e.Priority)
	})
	if err != nil {
		return "", err
	}
	_, out, err := l.apply(ctx, run, State{}, ups)
	return out, err
}

// Delete removes the entities with these names and types from a scope
// (only Name and Type are read) and returns how many it removed; an
// entity the scope does not hold is skipped.
func (l *Layer) Delete(ctx context.Context, scope vectorstore.Scope, ents ...Entity) (int, error) {
	run, err := layerkit.Run(l.id, l.scope, scope)
	if err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ids, _, err := l.read(ctx, run)
	if err != nil {
		return 0, err
	}
	n := 0
	_, _, f := l.scopeOf(run)
	for _, e := range ents {
		k := key{NormalizeName(e.Name), e.Type}
		if len(ids[k]) == 0 {
			continue
		}
		if _, err := layerkit.Delete(ctx, l.store.Records, f, ids[k]); err != nil {
			return n, fmt.Errorf("entity: delete: %w", err)
		}
		delete(ids, k)
		n++
	}
	return n, nil
}
