package semantic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"github.com/stratamem/strata/memory/lexical"
)

// Layer is a configured semantic-recall layer. Hand Layer() to the
// runtime; one Layer serves any number of sessions.
type Layer struct {
	o     resolved
	store *memory.Store
	an    *lexical.Analyzer
	qstop []string
	// placeholder is the vector of a record written before its
	// embedding: the collection requires one, and the record's
	// MetaEmbedding says it means nothing.
	placeholder []float32
}

// State is the layer's per-session state: a handle on the session's
// in-memory mirror of its scope's message records. It holds nothing to
// persist (the records in the collection are the memory), so the layer
// never commits it. Get it with core.State[semantic.State](session, id)
// to search explicitly.
type State struct {
	m *mirror
}

// Len is the number of messages in the session's scope.
func (s State) Len() int {
	if s.m == nil {
		return 0
	}
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	return len(s.m.byID)
}

// Pending is the number of messages whose vector is not computed yet (or
// was computed by another embedding model).
func (s State) Pending() int {
	if s.m == nil {
		return 0
	}
	return s.m.countPending(s.m.l.store.Embedder.Model())
}

// Flush embeds every pending message now.
func (s State) Flush(ctx context.Context) error {
	if s.m == nil {
		return ErrNotInitialised
	}
	return s.m.flush(ctx)
}

// New validates store and opts and returns the layer. Option errors are
// *core.ConfigError naming the field; an unusable store is an error
// wrapping memory.ErrInvalidStore.
func New(store *memory.Store, opts Options) (*Layer, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if err := store.Validate(); err != nil {
		return nil, fmt.Errorf("semantic: layer %q: %w", o.ID, err)
	}
	an := lexical.DefaultAnalyzer()
	l := &Layer{o: o, store: store, an: an}
	seen := map[string]bool{}
	for _, w := range queryStopwords {
		for _, t := range an.Terms(w) {
			if !seen[t] {
				seen[t] = true
				l.qstop = append(l.qstop, t)
			}
		}
	}
	l.placeholder = make([]float32, store.Embedder.Dimension())
	l.placeholder[0] = 1
	return l, nil
}

// ID is the layer's id.
func (l *Layer) ID() string { return l.o.ID }

// Layer returns the core layer.
func (l *Layer) Layer() core.Layer[State] {
	return core.Layer[State]{
		ID: l.o.ID, Name: l.o.Name, Slot: l.o.Slot, Scope: l.o.Scope, Budget: l.o.Budget,
		// Live: the output is a function of the latest user message, so
		// it changes nearly every turn. Anchored, it would either pin a
		// stale recall or publish a supersede each turn; after history it
		// costs only its own tokens.
		Placement: core.PlacementLive,
		// Its hooks write message records: one that times out leaves
		// them unconfirmed, and the session method says so.
		WritesRecords: true,
		Timeouts:      l.o.Timeouts,
		OnInitError:   l.o.OnInitError,
		Hooks: core.Hooks[State]{
			Init:         l.init,
			OnItemAppend: l.onItemAppend,
			Store:        l.storeHook,
			Recall:       l.recall,
			OnComplete:   l.onComplete,
		},
		Functions: []core.Function[State]{
			core.NewFunction[State, SearchArgs]("search",
				"Search the earlier messages of this conversation for ones about a topic; returns them with their dates.",
				l.searchFunction),
		},
	}
}

func (l *Layer) init(ctx context.Context, p core.InitParams) (State, error) {
	if p.ClaimedThread {
		if _, err := layerkit.AdoptThreadRecords(ctx, l.store.Records, l.o.ID, p.Run); err != nil {
			return State{}, fmt.Errorf("semantic: %w", err)
		}
	}
	m := l.newMirror(p.Run)
	if err := m.load(ctx); err != nil {
		return State{}, err
	}
	return State{m: m}, nil
}

// onItemAppend writes the message durably, before Append or Record
// returns, with a placeholder vector: the model call is left to the next
// batched embedding pass.
func (l *Layer) onItemAppend(ctx context.Context, p core.ItemAppendParams[State]) (*State, error) {
	m := p.State.m
	if m == nil {
		return nil, ErrNotInitialised
	}
	it := p.Item
	if it.Type != core.TypeMessage || !l.o.roles[it.Role] || p.Run.ParentRunID != "" {
		// A child run's messages are its own working; what it learned
		// reaches the parent through its result.
		return nil, nil
	}
	text, trunc := cleanText(it.Text())
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	e := &entry{
		id: recordID(l.o.ID, p.Run, it, p.Index, text), thread: p.Run.ThreadID, res: p.Run.ResourceID,
		role: it.Role, text: text, itemID: it.ID, run: p.Run.RunID,
		created: l.store.Time(), trunc: trunc,
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.byID[e.id]; old != nil && old.text == e.text && old.role == e.role {
		// The same message appended again: already stored (but an
		// earlier one may still wait for the collection).
		return nil, m.storeUnstoredLocked(ctx)
	}
	for _, u := range m.unstored {
		if u.id == e.id && u.text == e.text && u.role == e.role {
			return nil, m.storeUnstoredLocked(ctx) // already waiting
		}
	}
	e.seq = m.nextSeq[e.thread]
	m.nextSeq[e.thread] = e.seq + 1
	// The record must hold the time the collection will store, so the
	// mirror's order matches a reload's.
	e.created = e.created.Truncate(time.Microsecond)
	m.unstored = append(m.unstored, e)
	return nil, m.storeUnstoredLocked(ctx)
}

// storeHook embeds what the model call just recorded (and anything still
// pending), in one batched pass after the model has answered.
func (l *Layer) storeHook(ctx context.Context, p core.StoreParams[State]) (*State, error) {
	if p.State.m == nil {
		return nil, ErrNotInitialised
	}
	if err := p.State.m.storeUnstored(ctx); err != nil {
		return nil, err
	}
	if l.o.Mode == ModeLexical {
		// Vectors are still computed, at the end of the run, so the mode
		// can be switched later; lexical recall does not wait for them.
		return nil, nil
	}
	_, err := p.State.m.embedPending(ctx, l.o.EmbedBatch, true, false)
	return nil, err
}

func (l *Layer) onComplete(ctx context.Context, p core.CompleteParams[State]) (*State, error) {
	if p.State.m == nil {
		return nil, ErrNotInitialised
	}
	if err := p.State.m.storeUnstored(ctx); err != nil {
		return nil, err
	}
	return nil, p.State.m.flush(ctx)
}

func (l *Layer) recall(ctx context.Context, p core.RecallParams[State]) (core.Recall[State], error) {
	m := p.State.m
	if m == nil {
		return core.Recall[State]{}, ErrNotInitialised
	}
	query := latestUserText(p.History)
	if strings.TrimSpace(query) == "" {
		return core.Recall[State]{}, nil
	}
	vis := visibleSet(p.Visible)
	skip := func(h Hit) bool { return vis.has(h.ItemID, h.Role, h.Text) }
	hits, err := State{m}.Search(ctx, query, SearchOptions{Exclude: skip})
	if err != nil {
		if errors.Is(err, ErrInvalidQuery) {
			return core.Recall[State]{}, nil
		}
		return core.Recall[State]{}, err
	}
	if len(hits) == 0 {
		return core.Recall[State]{}, nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	r := &renderer{m: m, thread: p.Run.ThreadID, skip: func(e *entry) bool { return vis.has(e.itemID, e.role, e.text) }}
	text := r.fit(hits, l.o.rng, p.Budget)
	if text == "" {
		return core.Recall[State]{}, nil
	}
	return core.Recall[State]{Items: []core.Item{{Type: core.TypeMessage, ID: l.o.ID, Role: core.RoleDeveloper,
		Content: []core.Part{{Type: "input_text", Text: text}}}}}, nil
}

// latestUserText is the text of the last user message of history.
func latestUserText(history []core.Item) string {
	for i := len(history) - 1; i >= 0; i-- {
		if it := history[i]; it.Type == core.TypeMessage && it.Role == core.RoleUser {
			if t := it.Text(); strings.TrimSpace(t) != "" {
				return t
			}
		}
	}
	return ""
}

// visible is the set of messages the model already sees in its history
// window: recalling them again would only repeat them. Messages are
// matched by item id when they have one, else by role and text (the
// window may hold messages seeded from an earlier run, whose log
// positions mean nothing here).
type visible struct {
	ids   map[string]bool
	texts map[string]bool
}

func visibleSet(items []core.Item) visible {
	v := visible{ids: map[string]bool{}, texts: map[string]bool{}}
	for _, it := range items {
		if it.Type != core.TypeMessage {
			continue
		}
		if it.ID != "" {
			v.ids[it.ID] = true
		}
		text, _ := cleanText(it.Text())
		v.texts[string(it.Role)+"\x00"+text] = true
	}
	return v
}

func (v visible) has(itemID string, role core.Role, text string) bool {
	if itemID != "" && v.ids[itemID] {
		return true
	}
	return v.texts[string(role)+"\x00"+text]
}

// SearchArgs are the arguments of the provided function "search".
type SearchArgs struct {
	Query string `json:"query" jsonschema:"what to look for in earlier messages, in words"`
	K     int    `json:"k,omitempty" jsonschema:"how many messages to return, 1 to 20 (default 5)"`
}

const maxFunctionK = 20

func (l *Layer) searchFunction(ctx context.Context, st State, args SearchArgs) (string, *State, error) {
	if st.m == nil {
		return "", nil, ErrNotInitialised
	}
	switch {
	case strings.TrimSpace(args.Query) == "":
		return "", nil, &core.ArgumentError{Function: "search", Err: errors.New("query is empty: say what to look for")}
	case len([]rune(args.Query)) > MaxQueryChars:
		return "", nil, &core.ArgumentError{Function: "search", Err: fmt.Errorf("query is longer than %d characters: use a few words", MaxQueryChars)}
	case args.K < 0 || args.K > maxFunctionK:
		return "", nil, &core.ArgumentError{Function: "search", Err: fmt.Errorf("k must be between 1 and %d, got %d", maxFunctionK, args.K)}
	}
	k := args.K
	if k == 0 {
		k = 5
	}
	hits, err := st.Search(ctx, args.Query, SearchOptions{K: k})
	if err != nil {
		return "", nil, err
	}
	if len(hits) == 0 {
		return "No earlier messages match.", nil, nil
	}
	st.m.mu.RLock()
	defer st.m.mu.RUnlock()
	r := &renderer{m: st.m, thread: st.m.run.ThreadID, skip: func(*entry) bool { return false }}
	return r.fit(hits, MessageRange{}, math.MaxInt), nil, nil
}
