package scratchpad

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
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
	// function is then "scratchpad/update".
	DefaultID = "scratchpad"
	// KindNote is the record kind of a scratchpad key.
	KindNote = "note"
	// DefaultMaxKeys bounds the keys one scope holds when Options.MaxKeys
	// is 0.
	DefaultMaxKeys = 100
	// MaxKeyBytes bounds a key, MaxValueBytes a value.
	MaxKeyBytes   = 256
	MaxValueBytes = 8 << 10
	// MaxKeysPerCall bounds the keys one update sets and deletes together.
	MaxKeysPerCall = 100
	// MaxArgumentBytes bounds the raw JSON arguments of one call.
	MaxArgumentBytes = 1 << 20
)

// ErrInvalidUpdate is matched (errors.Is) by every rejection of an update's
// arguments. The error itself is a *core.ArgumentError, whose message is
// what the model reads.
var ErrInvalidUpdate = errors.New("scratchpad: invalid update")

// Options configure the layer. The zero value is useful. The common
// options (memory.Common) default to: id "scratchpad", name
// "Scratchpad", slot core.SlotScratchpad, thread scope (core.ScopeResource
// and core.ScopeGlobal share the notes wider), budget core.Range(100,
// 1000) and auto placement. The layer logs only the scope notice, while
// Scope is left "" (see memory.Common.Logger).
type Options struct {
	memory.Common
	// MaxKeys bounds the keys one scope holds; an update that would grow
	// past it is rejected. 0 means DefaultMaxKeys.
	MaxKeys int
}

// State is the layer's state: an in-memory mirror of the scope's notes,
// loaded at init. It has no exported fields and encodes to "{}": the
// records are the memory, not the runtime's scoped state. Read it with
// core.State[scratchpad.State](session, id).
type State struct {
	notes map[string]note
	// calls are the calls applied in this session, so a replayed call id
	// is answered, not applied again.
	calls memory.CallLog
	// rendered caches the rendering of these notes.
	rendered *render.Memo
}

type note struct {
	value   string
	updated time.Time
	// ids are the records the note was read from when they are not (only)
	// its own id: written by an earlier version, whose ids did not name
	// the thread's resource, or duplicated from outside. The next write
	// of the key replaces them, its delete removes them.
	ids []string
}

// Get returns the value of key.
func (s State) Get(key string) (string, bool) {
	n, ok := s.notes[key]
	return n.value, ok
}

// Keys returns the keys, sorted.
func (s State) Keys() []string {
	keys := make([]string, 0, len(s.notes))
	for k := range s.notes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Len is the number of keys.
func (s State) Len() int { return len(s.notes) }

// Snapshot returns a copy of the notes.
func (s State) Snapshot() map[string]string {
	out := make(map[string]string, len(s.notes))
	for k, n := range s.notes {
		out[k] = n.value
	}
	return out
}

// Updated returns when key was last written.
func (s State) Updated(key string) (time.Time, bool) {
	n, ok := s.notes[key]
	return n.updated, ok
}

// Layer is the scratchpad layer bound to a store. It is a
// core.AnyLayer: hand it to the runtime in core.Config.Layers. Its
// methods are the Go API over the same records, through the same write
// path as the model's update calls.
type Layer struct {
	// Layer is the core layer the runtime runs, embedded so that *Layer
	// is a core.AnyLayer. New resolves its fields from Options: set them
	// there, not here (the Go API keeps using the resolved ID and Scope).
	core.Layer[State]
	id      string
	fn      string // "<id>/update"
	scope   core.Scope
	store   *memory.Store
	maxKeys int
}

// New returns the scratchpad layer writing its notes to store. Invalid
// options fail with a *core.ConfigError naming the field; an unusable store
// with an error wrapping memory.ErrInvalidStore.
func New(store *memory.Store, opts Options) (*Layer, error) {
	common, err := layerkit.Open(store, "scratchpad", opts.Common, layerkit.Defaults{
		ID: DefaultID, Name: "Scratchpad", Slot: core.SlotScratchpad, Budget: core.Range(100, 1000), Placement: core.PlacementAuto,
		Scopes: Format.Scopes(), CheckID: layerkit.NoSlash,
	})
	if err != nil {
		return nil, err
	}
	notice := layerkit.NewScopeNotice(opts.Common, common)
	opts.Common = common
	if opts.MaxKeys < 0 {
		return nil, layerkit.ConfigError(opts.ID, "MaxKeys", "negative")
	}
	if opts.MaxKeys == 0 {
		opts.MaxKeys = DefaultMaxKeys
	}
	l := &Layer{id: opts.ID, fn: opts.ID + "/update", scope: opts.Scope, store: store, maxKeys: opts.MaxKeys}
	cl := layerkit.Spec[State](opts.Common)
	// A child writes its notes to the store directly: the parent reloads
	// to see them.
	cl.Hooks = layerkit.MirrorHooks(store, notice, l.id, "scratchpad", l.load, l.render, renderDelta,
		func(st *State, parent State) { st.calls = parent.calls })
	// No Store hook: "<id>/update" is applied only when the host routes
	// it, after the steering layers' BeforeToolCall, so a denial holds. A
	// store hook would run when the call is recorded, before anyone is
	// asked.
	cl.Functions = []core.Function[State]{layerkit.UpdateFunction(
		"Update your scratchpad of working notes, shown to you on every turn. "+
			`"set" merges keys into the notes (other keys stay), "delete" removes keys. `+
			`Example: {"set": {"plan": "1. read the file 2. fix the test"}, "delete": ["draft"]}. `+
			"Keys up to 256 bytes, values up to 8 KiB, at most 100 keys per call.",
		parametersSchema, l.callOnce)}
	cl.Merge = layerkit.KeepMine[State]
	l.Layer = cl
	return l, nil
}

var parametersSchema = []byte(`{"type":"object","properties":{` +
	`"set":{"type":"object","description":"Keys to set, with their new values (strings).","additionalProperties":{"type":"string","maxLength":8192}},` +
	`"delete":{"type":"array","description":"Keys to delete.","items":{"type":"string"}}` +
	`},"additionalProperties":false}`)

// callOnce applies call unless this session applied its call id already
// (a replay), in which case it answers with the first application's output
// and changes nothing. next is nil when nothing changed.
func (l *Layer) callOnce(ctx context.Context, run core.RunInfo, st State, call core.Item) (*State, string, error) {
	if out, ok := st.calls.Replay(call.CallID); ok {
		return nil, out, nil
	}
	u, err := parseUpdate(call.Arguments)
	if err != nil {
		return nil, "", &core.ArgumentError{Function: l.fn, Err: err}
	}
	next, out, err := l.apply(ctx, run, st, u)
	if err != nil {
		return nil, "", err
	}
	next.calls = next.calls.With(call.CallID, out)
	return &next, out, nil
}

// scopeOf returns the record scope, the scope key used in record ids, and
// the filter selecting this scope's notes.
func (l *Layer) scopeOf(run core.RunInfo) (vectorstore.Scope, string, vectorstore.Filter) {
	return layerkit.Scoped(l.id, KindNote, l.scope, run)
}

// recordID is the id of the note of key of layer id in a scope (a
// layerkit.Scoped key).
func recordID(id, scopeKey, key string) string {
	return layerkit.RecordID(KindNote, id, scopeKey, key)
}

// noteRecord is the record of key set to value in layer id, with the
// layer scope scope, in the record scope recScope (keyed scopeKey),
// written at now. It has no vector.
func noteRecord(id string, scope core.Scope, recScope vectorstore.Scope, scopeKey, key, value string, now time.Time) vectorstore.Record {
	return vectorstore.Record{
		ID: recordID(id, scopeKey, key), Layer: id, Kind: KindNote, Scope: recScope, Text: key + ": " + value,
		Metadata:  map[string]string{MetaKey: key, MetaUpdated: now.Format(time.RFC3339Nano), memory.MetaScope: string(scope)},
		CreatedAt: now,
	}
}

// load reads the scope's notes into a fresh mirror.
func (l *Layer) load(ctx context.Context, run core.RunInfo) (State, error) {
	_, _, f := l.scopeOf(run)
	st := State{notes: map[string]note{}, rendered: &render.Memo{}}
	for rec, err := range l.store.Records.All(ctx, vectorstore.ListOptions{Filter: f, Limit: 1000}) {
		if err != nil {
			return State{}, fmt.Errorf("scratchpad: load notes: %w", err)
		}
		key := rec.Metadata[MetaKey]
		if key == "" {
			// Edited from outside without the metadata: the text is
			// "key: value".
			k, _, ok := strings.Cut(rec.Text, ": ")
			if !ok || strings.TrimSpace(k) == "" {
				continue
			}
			key = k
		}
		value := rec.Text
		if v, ok := strings.CutPrefix(rec.Text, key+": "); ok {
			value = v
		} else if rec.Text == key+":" {
			value = ""
		}
		updated := rec.CreatedAt
		if t, err := time.Parse(time.RFC3339Nano, rec.Metadata[MetaUpdated]); err == nil {
			updated = t.UTC()
		}
		old, dup := st.notes[key]
		ids := append(old.ids, rec.ID)
		if dup && old.updated.After(updated) {
			// A duplicate made from outside: the newer wins.
			old.ids = ids
			st.notes[key] = old
			continue
		}
		st.notes[key] = note{value: value, updated: updated, ids: ids}
	}
	return st, nil
}

// update is a parsed, validated set of changes.
type update struct {
	set map[string]string
	del []string
}

// apply writes u to the store and returns the new state and the output for
// the model. st is not modified.
func (l *Layer) apply(ctx context.Context, run core.RunInfo, st State, u update) (State, string, error) {
	final := len(st.notes)
	for k := range u.set {
		if _, ok := st.notes[k]; !ok {
			final++
		}
	}
	for _, k := range u.del {
		if _, ok := st.notes[k]; ok {
			final--
		}
	}
	if final > l.maxKeys {
		return State{}, "", &core.ArgumentError{Function: l.fn, Err: argErrorf(
			"the scratchpad would hold %d keys, the limit is %d: delete keys you no longer need", final, l.maxKeys)}
	}
	recScope, scopeKey, _ := l.scopeOf(run)
	now := l.store.Time().Truncate(time.Microsecond)
	var (
		recs                         []vectorstore.Record
		texts                        []string
		set, unchanged, del, missing []string
		delIDs                       []string
	)
	for _, k := range sortedKeys(u.set) {
		v := u.set[k]
		id := recordID(l.id, scopeKey, k)
		old, ok := st.notes[k]
		if ok && old.value == v && (len(old.ids) == 0 || len(old.ids) == 1 && old.ids[0] == id) {
			unchanged = append(unchanged, k)
			continue
		}
		set = append(set, k)
		for _, oid := range old.ids {
			if oid != id {
				delIDs = append(delIDs, oid)
			}
		}
		rec := noteRecord(l.id, l.scope, recScope, scopeKey, k, v, now)
		recs = append(recs, rec)
		texts = append(texts, rec.Text)
	}
	for _, k := range u.del {
		if _, ok := st.notes[k]; !ok {
			missing = append(missing, k)
			continue
		}
		del = append(del, k)
		id := recordID(l.id, scopeKey, k)
		delIDs = append(delIDs, id)
		for _, oid := range st.notes[k].ids {
			if oid != id {
				delIDs = append(delIDs, oid)
			}
		}
	}
	if len(texts) > 0 {
		vecs, err := l.store.Embedder.Embed(ctx, texts)
		if err != nil {
			return State{}, "", &core.WriteError{Layer: l.id, Item: "notes " + strings.Join(set, ", "), Err: fmt.Errorf("scratchpad: embed notes: %w", err)}
		}
		for i := range recs {
			recs[i].Vector = vecs[i]
		}
		if err := l.store.Records.Upsert(ctx, recs...); err != nil {
			return State{}, "", &core.WriteError{Layer: l.id, Item: "notes " + strings.Join(set, ", "), Err: fmt.Errorf("scratchpad: write notes: %w", err)}
		}
	}
	if len(delIDs) > 0 {
		if err := l.store.Records.Delete(ctx, delIDs...); err != nil {
			return State{}, "", &core.WriteError{Layer: l.id, Item: "deletion of notes " + strings.Join(del, ", "), Err: fmt.Errorf("scratchpad: delete notes: %w", err)}
		}
	}
	notes := make(map[string]note, final)
	for k, n := range st.notes {
		notes[k] = n
	}
	for _, k := range set {
		notes[k] = note{value: u.set[k], updated: now, ids: []string{recordID(l.id, scopeKey, k)}}
	}
	for _, k := range del {
		delete(notes, k)
	}
	next := State{notes: notes, calls: st.calls, rendered: &render.Memo{}}

	var b strings.Builder
	b.WriteString("ok:")
	part := func(label string, keys []string) {
		if len(keys) == 0 {
			return
		}
		quoted := make([]string, len(keys))
		for i, k := range keys {
			quoted[i] = strconv.Quote(k)
		}
		fmt.Fprintf(&b, " %s %s;", label, strings.Join(quoted, ", "))
	}
	part("set", set)
	part("unchanged", unchanged)
	part("deleted", del)
	part("not present (nothing to delete)", missing)
	if len(notes) == 1 {
		b.WriteString(" the scratchpad holds 1 key.")
	} else {
		fmt.Fprintf(&b, " the scratchpad holds %d keys.", len(notes))
	}
	return next, b.String(), nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ErrScope is wrapped when a Go API call names a scope the layer cannot
// use (an empty thread for a thread-scoped layer, ...).
var ErrScope = memory.ErrScope

// Note is one note of the scratchpad, as List returns it.
type Note struct {
	Key, Value string
	Updated    time.Time
}

// List returns the notes stored in a scope, sorted by key, read from the
// store (so it sees writes of every session).
func (l *Layer) List(ctx context.Context, scope vectorstore.Scope) ([]Note, error) {
	st, err := layerkit.Load(ctx, l.id, l.scope, scope, l.load)
	if err != nil {
		return nil, err
	}
	out := make([]Note, 0, st.Len())
	for _, k := range st.Keys() {
		n := st.notes[k]
		out = append(out, Note{Key: k, Value: n.value, Updated: n.updated})
	}
	return out, nil
}

// Put sets notes of a scope (other keys stay) through the model's update
// path: the same validation (errors match ErrInvalidUpdate) and key
// limit. It returns the update's summary, the output the model would
// read. Running sessions of the scope see the change from their next run
// (their mirror was loaded at init).
func (l *Layer) Put(ctx context.Context, scope vectorstore.Scope, set map[string]string) (string, error) {
	if set == nil {
		set = map[string]string{}
	}
	return l.update(ctx, scope, struct {
		Set map[string]string `json:"set"`
	}{set}, nil)
}

// Delete removes keys from a scope through the model's update path and
// returns how many of them the scope held; a key it does not hold is
// skipped.
func (l *Layer) Delete(ctx context.Context, scope vectorstore.Scope, keys ...string) (int, error) {
	if keys == nil {
		keys = []string{}
	}
	n := 0
	_, err := l.update(ctx, scope, struct {
		Delete []string `json:"delete"`
	}{keys}, func(st State, u update) {
		for _, k := range u.del {
			if _, ok := st.notes[k]; ok {
				n++
			}
		}
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// update applies the update args encode as a call's arguments would;
// seen, when not nil, is shown the scope's notes and the parsed update
// before it is applied.
func (l *Layer) update(ctx context.Context, scope vectorstore.Scope, args any, seen func(State, update)) (string, error) {
	run, err := layerkit.Run(l.id, l.scope, scope)
	if err != nil {
		return "", err
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidUpdate, err)
	}
	u, err := parseUpdate(string(raw))
	if err != nil {
		return "", err
	}
	st, err := l.load(ctx, run)
	if err != nil {
		return "", err
	}
	if seen != nil {
		seen(st, u)
	}
	_, out, err := l.apply(ctx, run, st, u)
	return out, err
}
