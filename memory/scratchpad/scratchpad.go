package scratchpad

import (
	"context"
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
	"github.com/stratamem/strata/tokens"
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

// Options configure the layer. The zero value is useful.
type Options struct {
	// ID names the layer and prefixes its function: "scratchpad" by
	// default.
	ID string
	// Slot defaults to core.SlotScratchpad.
	Slot core.Slot
	// Scope defaults to core.ScopeThread; ScopeResource and ScopeGlobal
	// share the notes wider. ScopeExecution is refused: records need a
	// durable scope.
	Scope core.Scope
	// Budget defaults to core.Range(100, 1000).
	Budget core.Budget
	// Tokenizer counts the rendered notes to fit the budget; nil means
	// tokens.Estimate(). Give it the runtime's tokenizer for exact fits.
	Tokenizer tokens.Tokenizer
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

type layer struct {
	id      string
	fn      string // "<id>/update"
	scope   core.Scope
	store   *memory.Store
	tk      tokens.Tokenizer
	maxKeys int
}

// New returns the scratchpad layer writing its notes to store. Invalid
// options fail with a *core.ConfigError naming the field; an unusable store
// with an error wrapping memory.ErrInvalidStore. Adjust the returned
// layer's fields (e.g. Placement) before handing it to core.NewRuntime if
// the defaults do not suit.
func New(store *memory.Store, opts Options) (core.Layer[State], error) {
	if err := store.Validate(); err != nil {
		return core.Layer[State]{}, fmt.Errorf("scratchpad: %w", err)
	}
	common, err := layerkit.Common{ID: opts.ID, Slot: opts.Slot, Scope: opts.Scope, Budget: opts.Budget}.Resolve(layerkit.Defaults{
		ID: DefaultID, Slot: core.SlotScratchpad, Budget: core.Range(100, 1000),
		Scopes: []core.Scope{core.ScopeThread, core.ScopeResource, core.ScopeGlobal}, CheckID: layerkit.NoSlash,
	})
	if err != nil {
		return core.Layer[State]{}, err
	}
	opts.ID, opts.Slot, opts.Scope, opts.Budget = common.ID, common.Slot, common.Scope, common.Budget
	if opts.MaxKeys < 0 {
		return core.Layer[State]{}, layerkit.ConfigError(opts.ID, "MaxKeys", "negative")
	}
	if opts.MaxKeys == 0 {
		opts.MaxKeys = DefaultMaxKeys
	}
	l := &layer{id: opts.ID, fn: opts.ID + "/update", scope: opts.Scope, store: store,
		tk: opts.Tokenizer, maxKeys: opts.MaxKeys}
	if l.tk == nil {
		l.tk = tokens.Estimate()
	}
	hooks := core.Hooks[State]{
		Init: func(ctx context.Context, p core.InitParams) (State, error) {
			if p.ClaimedThread {
				if _, err := layerkit.AdoptThreadRecords(ctx, l.store.Records, l.id, p.Run); err != nil {
					return State{}, fmt.Errorf("scratchpad: %w", err)
				}
			}
			return l.load(ctx, p.Run)
		},
		Recall: func(_ context.Context, p core.RecallParams[State]) (core.Recall[State], error) {
			return core.Text[State](l.render(p.State, p.Budget))
		},
		RenderDelta: func(_ context.Context, p core.RenderDeltaParams[State]) (string, bool, error) {
			d := renderDelta(p.State, p.Prev, p.Next)
			return d, d != "", nil
		},
		OnReturn: func(ctx context.Context, p core.ReturnParams[State]) (*State, error) {
			// A child writes its notes to the store directly; reload so the
			// parent sees them.
			st, err := l.load(ctx, p.Parent)
			if err != nil {
				return nil, err
			}
			st.calls = p.State.calls
			return &st, nil
		},
	}
	// No Store hook: "<id>/update" is applied only when the host routes
	// it, after the steering layers' BeforeToolCall, so a denial holds. A
	// store hook would run when the call is recorded, before anyone is
	// asked.
	return core.Layer[State]{
		ID: opts.ID, Name: "Scratchpad", Slot: opts.Slot, Scope: opts.Scope, Budget: opts.Budget,
		Placement: core.PlacementAuto,
		Hooks:     hooks,
		Functions: []core.Function[State]{{
			Name: "update",
			Description: "Update your scratchpad of working notes, shown to you on every turn. " +
				`"set" merges keys into the notes (other keys stay), "delete" removes keys. ` +
				`Example: {"set": {"plan": "1. read the file 2. fix the test"}, "delete": ["draft"]}. ` +
				"Keys up to 256 bytes, values up to 8 KiB, at most 100 keys per call.",
			Parameters: parametersSchema,
			Call: func(ctx context.Context, p core.FunctionParams[State]) (core.FunctionResult[State], error) {
				next, out, err := l.callOnce(ctx, p.Run, p.State, p.Call)
				return core.FunctionResult[State]{Output: out, State: next}, err
			},
		}},
		// The scoped state is empty (the records are the memory), so a
		// concurrent run's write never carries anything to merge.
		Merge: func(_, mine State) State { return mine },
	}, nil
}

var parametersSchema = []byte(`{"type":"object","properties":{` +
	`"set":{"type":"object","description":"Keys to set, with their new values (strings).","additionalProperties":{"type":"string","maxLength":8192}},` +
	`"delete":{"type":"array","description":"Keys to delete.","items":{"type":"string"}}` +
	`},"additionalProperties":false}`)

// callOnce applies call unless this session applied its call id already
// (a replay), in which case it answers with the first application's output
// and changes nothing. next is nil when nothing changed.
func (l *layer) callOnce(ctx context.Context, run core.RunInfo, st State, call core.Item) (*State, string, error) {
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
func (l *layer) scopeOf(run core.RunInfo) (vectorstore.Scope, string, vectorstore.Filter) {
	return layerkit.Scoped(l.id, KindNote, l.scope, run)
}

func (l *layer) recordID(scopeKey, key string) string {
	return layerkit.RecordID(KindNote, l.id, scopeKey, key)
}

// load reads the scope's notes into a fresh mirror.
func (l *layer) load(ctx context.Context, run core.RunInfo) (State, error) {
	_, _, f := l.scopeOf(run)
	st := State{notes: map[string]note{}, rendered: &render.Memo{}}
	for rec, err := range l.store.Records.All(ctx, vectorstore.ListOptions{Filter: f, Limit: 1000}) {
		if err != nil {
			return State{}, fmt.Errorf("scratchpad: load notes: %w", err)
		}
		key := rec.Metadata["key"]
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
		if t, err := time.Parse(time.RFC3339Nano, rec.Metadata["updated"]); err == nil {
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
func (l *layer) apply(ctx context.Context, run core.RunInfo, st State, u update) (State, string, error) {
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
		id := l.recordID(scopeKey, k)
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
		text := k + ": " + v
		recs = append(recs, vectorstore.Record{
			ID: l.recordID(scopeKey, k), Layer: l.id, Kind: KindNote, Scope: recScope, Text: text,
			Metadata:  map[string]string{"key": k, "updated": now.Format(time.RFC3339Nano), "scope": string(l.scope)},
			CreatedAt: now,
		})
		texts = append(texts, text)
	}
	for _, k := range u.del {
		if _, ok := st.notes[k]; !ok {
			missing = append(missing, k)
			continue
		}
		del = append(del, k)
		delIDs = append(delIDs, l.recordID(scopeKey, k))
		for _, oid := range st.notes[k].ids {
			if oid != l.recordID(scopeKey, k) {
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
		notes[k] = note{value: u.set[k], updated: now, ids: []string{l.recordID(scopeKey, k)}}
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
