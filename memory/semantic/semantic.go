package semantic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"github.com/stratamem/strata/memory/lexical"
)

// Layer is a configured semantic-recall layer. It is a core.AnyLayer:
// hand it to the runtime in core.Config.Layers; one Layer serves any
// number of sessions. Its methods are the Go API over the same records.
type Layer struct {
	// Layer is the core layer the runtime runs, embedded so that *Layer
	// is a core.AnyLayer. New resolves its fields from Options: set them
	// there, not here (the Go API keeps using the resolved ID and Scope).
	core.Layer[State]
	o     resolved
	store *memory.Store
	an    *lexical.Analyzer
	qstop []string
	// placeholder is the vector of a record written before its
	// embedding: the collection requires one, and the record's
	// MetaEmbedding says it means nothing.
	placeholder []float32
	// upgraded remembers the scopes whose records are up to date (see
	// upgrade).
	upgraded sync.Map
	// notice is the scope notice its Init hook checks; nil when the host
	// set Scope.
	notice *layerkit.ScopeNotice
}

// State is the layer's per-session state: a handle on the session's
// view of its scope's message records (which stay in the collection: the
// state holds only the thread's latest messages and the writes in
// flight). It holds nothing to persist, so the layer never commits it.
// Layer.Search searches a scope without it.
type State struct {
	s *session
}

// Len is the number of messages stored in the session's scope.
func (s State) Len(ctx context.Context) (int, error) {
	if s.s == nil {
		return 0, ErrNotInitialised
	}
	return s.s.count(ctx, "")
}

// Pending is the number of the scope's messages whose vector is not
// computed yet (written by this session or by one that stopped before
// embedding them). Messages embedded by another model than the
// embedder's are not counted: see Reembed.
func (s State) Pending(ctx context.Context) (int, error) {
	if s.s == nil {
		return 0, ErrNotInitialised
	}
	return s.s.count(ctx, EmbeddingPending)
}

// Flush embeds every pending message now: the session's own and those
// stopped sessions left in the scope.
func (s State) Flush(ctx context.Context) error {
	if s.s == nil {
		return ErrNotInitialised
	}
	return s.s.flush(ctx)
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
	l := &Layer{o: o, store: store, an: an, notice: layerkit.NewScopeNotice(opts.Common, o.Common)}
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
	l.Layer = l.runtimeLayer()
	return l, nil
}

// runtimeLayer is the core layer the runtime runs. Its placement
// defaults to live (see Options).
func (l *Layer) runtimeLayer() core.Layer[State] {
	cl := layerkit.Spec[State](l.o.Common)
	// Its hooks write message records: one that times out leaves them
	// unconfirmed, and the session method says so.
	cl.WritesRecords = true
	cl.Hooks = core.Hooks[State]{
		Init:         layerkit.WithScopeNotice(l.notice, l.init),
		OnItemAppend: l.onItemAppend,
		Store:        l.storeHook,
		Recall:       l.recall,
		OnComplete:   l.onComplete,
	}
	cl.Functions = []core.Function[State]{
		core.NewFunction[State, SearchArgs]("search",
			"Search the earlier messages of this conversation for ones about a topic; returns them with their dates.",
			l.searchFunction),
	}
	return cl
}

func (l *Layer) init(ctx context.Context, p core.InitParams) (State, error) {
	if p.ClaimedThread {
		if _, err := layerkit.AdoptThreadRecords(ctx, l.store.Records, l.o.ID, p.Run); err != nil {
			return State{}, fmt.Errorf("semantic: %w", err)
		}
	}
	s := l.newSession(p.Run)
	if err := l.upgrade(ctx, s); err != nil {
		return State{}, err
	}
	if err := s.loadTail(ctx); err != nil {
		return State{}, err
	}
	return State{s: s}, nil
}

// onItemAppend writes the message durably, before Append or Record
// returns, with a placeholder vector and its lexical document: it is
// findable by words at once. The model call is left to a later batched
// embedding pass.
func (l *Layer) onItemAppend(ctx context.Context, p core.ItemAppendParams[State]) (*State, error) {
	s := p.State.s
	if s == nil {
		return nil, ErrNotInitialised
	}
	if p.Run.ParentRunID != "" {
		// A child run's messages are its own working; what it learned
		// reaches the parent through its result.
		return nil, nil
	}
	return nil, s.add(ctx, p.Run, p.Item, p.Index)
}

// add writes the message it, at log position index of run, durably with
// a placeholder vector and its lexical document: the one write path of
// onItemAppend and Put. Items that are not messages of a recorded role,
// or whose text is blank, are skipped.
func (s *session) add(ctx context.Context, run core.RunInfo, it core.Item, index int) error {
	l := s.l
	if it.Type != core.TypeMessage || !l.o.roles[it.Role] {
		return nil
	}
	text, trunc := cleanText(it.Text())
	if strings.TrimSpace(text) == "" {
		return nil
	}
	e := &entry{
		id: recordID(l.o.ID, run, it, index, text), thread: run.ThreadID, res: run.ResourceID,
		role: it.Role, text: text, itemID: it.ID, run: run.RunID,
		// The record must hold the time the collection will store, so
		// the order the session assumes is the order a reader sees.
		created: l.store.Time().Truncate(time.Microsecond), trunc: trunc,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.recent {
		if o.id == e.id && o.text == e.text && o.role == e.role {
			// The same message appended again: stored already (an
			// earlier one may still wait for the collection).
			return s.storeUnstoredLocked(ctx)
		}
	}
	s.unstored = append(s.unstored, e)
	s.appendLocked(e)
	return s.storeUnstoredLocked(ctx)
}

// storeHook writes what is unstored and, once EmbedBatch of the
// session's messages have a complete context, embeds them in one batched
// pass, after the model has answered: a turn pays for the model call
// once per batch, not once per message.
func (l *Layer) storeHook(ctx context.Context, p core.StoreParams[State]) (*State, error) {
	s, err := storedSession(ctx, p.State)
	if err != nil {
		return nil, err
	}
	if l.o.Mode == ModeLexical {
		// Vectors are still computed, at the end of the run, so the mode
		// can be switched later; lexical recall does not wait for them.
		return nil, nil
	}
	for {
		s.mu.Lock()
		ready := len(s.readyLocked(l.o.EmbedBatch, false))
		s.mu.Unlock()
		if ready < l.o.EmbedBatch {
			return nil, nil
		}
		if _, err := s.embedPending(ctx, l.o.EmbedBatch, false, false); err != nil {
			return nil, err
		}
	}
}

func (l *Layer) onComplete(ctx context.Context, p core.CompleteParams[State]) (*State, error) {
	s, err := storedSession(ctx, p.State)
	if err != nil {
		return nil, err
	}
	return nil, s.flush(ctx)
}

// storedSession is how the store and complete hooks start: the state's
// session, once what it has not stored yet is written.
func storedSession(ctx context.Context, st State) (*session, error) {
	s := st.s
	if s == nil {
		return nil, ErrNotInitialised
	}
	if err := s.storeUnstored(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (l *Layer) recall(ctx context.Context, p core.RecallParams[State]) (core.Recall[State], error) {
	s := p.State.s
	if s == nil {
		return core.Recall[State]{}, ErrNotInitialised
	}
	query := latestUserText(p.History)
	if strings.TrimSpace(query) == "" {
		return core.Recall[State]{}, nil
	}
	vis := visibleSet(p.Visible)
	skip := func(h Hit) bool { return vis.has(h.ItemID, h.Role, h.Text) }
	hits, seen, err := s.search(ctx, query, l.o.TopK, l.o.Mode, skip, vis.n)
	if err != nil {
		return core.Recall[State]{}, err
	}
	if len(hits) == 0 {
		return core.Recall[State]{}, nil
	}
	r := &renderer{s: s, thread: p.Run.ThreadID, skip: func(e *entry) bool { return vis.has(e.itemID, e.role, e.text) }, tk: p.Tokens}
	text, err := r.show(ctx, hits, seen, l.o.rng, p.Budget)
	if err != nil || text == "" {
		return core.Recall[State]{}, err
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
	n     int // messages
}

func visibleSet(items []core.Item) visible {
	v := visible{ids: map[string]bool{}, texts: map[string]bool{}}
	for _, it := range items {
		if it.Type != core.TypeMessage {
			continue
		}
		v.n++
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
	if st.s == nil {
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
	hits, seen, err := st.s.search(ctx, args.Query, k, l.o.Mode, nil, 0)
	if err != nil {
		return "", nil, err
	}
	if len(hits) == 0 {
		return "No earlier messages match.", nil, nil
	}
	r := &renderer{s: st.s, thread: st.s.run.ThreadID, skip: func(*entry) bool { return false }}
	text, err := r.show(ctx, hits, seen, MessageRange{}, math.MaxInt)
	return text, nil, err
}
