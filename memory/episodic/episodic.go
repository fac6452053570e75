package episodic

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"github.com/stratamem/strata/tokens"
	"github.com/stratamem/strata/vectorstore"
)

// Defaults.
const (
	// DefaultID is the layer id when Options.ID is empty.
	DefaultID = "episodic"
	// KindEpisode is the record kind of an episode.
	KindEpisode = "episode"
	// DefaultMaxEpisodes is the default cap on a scope's episodes: enough
	// for continuity across recent sessions, few enough that recency and
	// relevance pick from a short list.
	DefaultMaxEpisodes = 20
	// DefaultMaxSummaryBytes bounds a stored summary when
	// Options.MaxSummaryBytes is 0.
	DefaultMaxSummaryBytes = 4096
	// MinSummaryBytes is the smallest Options.MaxSummaryBytes: a clipped
	// summary ends in " …" (4 bytes) and must keep some words before it.
	MinSummaryBytes = 16
	// maxOutcomeBytes bounds the stored outcome.
	maxOutcomeBytes = 256
)

// Mode is how recall picks episodes.
type Mode int

// Recall modes. The zero value is Recency.
const (
	// Recency takes the newest episodes first.
	Recency Mode = iota
	// Relevance takes the episodes most similar to the run's latest user
	// message first.
	Relevance
)

func (m Mode) String() string {
	switch m {
	case Recency:
		return "recency"
	case Relevance:
		return "relevance"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Episode is one remembered run.
type Episode struct {
	ID      string
	Summary string
	// Timestamp is when the run completed, by the store's clock, UTC.
	Timestamp time.Time
	// Outcome is what Session.Complete was given.
	Outcome string
	// Tokens is the summary's token count.
	Tokens   int
	RunID    string
	ThreadID string
}

// State is the layer's state: the scope's episodes, oldest first, loaded at
// init. It has no exported fields and encodes to "{}": the records are the
// memory. Read it with core.State[episodic.State](session, id).
type State struct {
	episodes []Episode
	// memo caches the relevance ranking of this session's episodes per
	// query; shared by the copies of one state, guarded by its mutex.
	memo *memo
}

// Episodes returns the episodes, oldest first.
func (s State) Episodes() []Episode { return append([]Episode(nil), s.episodes...) }

type memo struct {
	mu    sync.Mutex
	query string
	order []int
	ok    bool
}

// Options configure the layer. The zero value is useful. The common
// options (memory.Common) default to: id "episodic", name "Episodic
// memory", slot core.SlotEpisodic, resource scope (episodes are shared by
// a resource's threads; core.ScopeThread keeps them per thread,
// core.ScopeGlobal shares them across resources), budget
// core.Range(300, 2000), and the placement Mode implies: anchor for
// Recency, auto for Relevance (see the package doc). The Logger receives
// relevance queries that failed and fell back to recency.
type Options struct {
	memory.Common
	// Tokenizer counts Episode.Tokens, the token count stored with each
	// episode when its run completes (and computed at load for a record
	// stored without it): those hooks are not given the runtime's
	// counter. Nil means tokens.Estimate(), the runtime's default. The
	// rendering is fitted with the runtime's counter whatever this is.
	Tokenizer tokens.Tokenizer
	// MaxEpisodes caps the episodes of a scope; the oldest are deleted
	// past it. 0 means DefaultMaxEpisodes.
	MaxEpisodes int
	// Summarizer summarises a completed run; nil means
	// ExtractiveSummarizer{}.
	Summarizer Summarizer
	// Mode picks episodes by recency (the default) or by relevance to the
	// latest user message. It also sets the default placement.
	Mode Mode
	// MaxSummaryBytes clips a summary before it is stored; 0 means
	// DefaultMaxSummaryBytes. Values below MinSummaryBytes are refused.
	MaxSummaryBytes int
}

// Layer is the episodic layer bound to a store. It is a core.AnyLayer:
// hand it to the runtime in core.Config.Layers. Its methods are the Go
// API over the same records, through the same write path as a completed
// run's episode.
type Layer struct {
	// Layer is the core layer the runtime runs, embedded so that *Layer
	// is a core.AnyLayer. New resolves its fields from Options: set them
	// there, not here (the Go API keeps using the resolved ID and Scope).
	core.Layer[State]
	id         string
	scope      core.Scope
	store      *memory.Store
	tk         tokens.Tokenizer
	max        int
	maxSummary int
	summarizer Summarizer
	mode       Mode
	logger     *slog.Logger
}

// New returns the episodic layer storing episodes in store. Invalid options
// fail with a *core.ConfigError naming the field; an unusable store with an
// error wrapping memory.ErrInvalidStore.
func New(store *memory.Store, opts Options) (*Layer, error) {
	placement := core.PlacementAnchor
	if opts.Mode == Relevance {
		placement = core.PlacementAuto
	}
	// Episodes exist to outlive the run, and are shared by a resource's
	// threads by default.
	common, err := layerkit.Open(store, "episodic", opts.Common, layerkit.Defaults{
		ID: DefaultID, Name: "Episodic memory", Slot: core.SlotEpisodic, Budget: core.Range(300, 2000), Placement: placement,
		Scopes: Format.Scopes(), CheckID: layerkit.NoSlash,
	})
	if err != nil {
		return nil, err
	}
	// Nil while the default stays resource: a layer whose host chose
	// core.ScopeThread has nothing to be told.
	notice := layerkit.NewScopeNotice(opts.Common, common)
	opts.Common = common
	bad := func(field, reason string) error { return layerkit.ConfigError(opts.ID, field, reason) }
	switch {
	case opts.MaxEpisodes < 0:
		return nil, bad("MaxEpisodes", "negative")
	case opts.MaxEpisodes == 0:
		opts.MaxEpisodes = DefaultMaxEpisodes
	case opts.MaxEpisodes > vectorstore.MaxK:
		return nil, bad("MaxEpisodes", fmt.Sprintf("%d is above %d", opts.MaxEpisodes, vectorstore.MaxK))
	}
	switch {
	case opts.MaxSummaryBytes < 0:
		return nil, bad("MaxSummaryBytes", "negative")
	case opts.MaxSummaryBytes == 0:
		opts.MaxSummaryBytes = DefaultMaxSummaryBytes
	case opts.MaxSummaryBytes < MinSummaryBytes:
		return nil, bad("MaxSummaryBytes", fmt.Sprintf("%d is below %d, too short for a summary clipped with \" …\"", opts.MaxSummaryBytes, MinSummaryBytes))
	case opts.MaxSummaryBytes > vectorstore.MaxTextBytes:
		return nil, bad("MaxSummaryBytes", fmt.Sprintf("%d is above a record's %d", opts.MaxSummaryBytes, vectorstore.MaxTextBytes))
	}
	switch opts.Mode {
	case Recency, Relevance:
	default:
		return nil, bad("Mode", fmt.Sprintf("unknown mode %d", opts.Mode))
	}
	l := &Layer{id: opts.ID, scope: opts.Scope, store: store, tk: opts.Tokenizer, max: opts.MaxEpisodes,
		maxSummary: opts.MaxSummaryBytes, summarizer: opts.Summarizer, mode: opts.Mode, logger: opts.Logger}
	if l.tk == nil {
		l.tk = tokens.Estimate()
	}
	if l.summarizer == nil {
		l.summarizer = ExtractiveSummarizer{}
	}
	cl := layerkit.Spec[State](opts.Common)
	// The episode is written in OnComplete: a timeout there leaves it
	// unconfirmed, and Complete says so.
	cl.WritesRecords = true
	cl.Hooks = core.Hooks[State]{
		Init:       layerkit.MirrorInit(store, notice, l.id, "episodic", l.load),
		Recall:     l.recall,
		OnComplete: l.complete,
		RenderDelta: func(_ context.Context, p core.RenderDeltaParams[State]) (string, bool, error) {
			d := renderDelta(p.Prev, p.Next)
			return d, d != "", nil
		},
	}
	cl.Merge = layerkit.KeepMine[State]
	l.Layer = cl
	return l, nil
}

// scopeOf returns the record scope, the scope key used in record ids, and
// the filter selecting this scope's episodes.
func (l *Layer) scopeOf(run core.RunInfo) (vectorstore.Scope, string, vectorstore.Filter) {
	return layerkit.Scoped(l.id, KindEpisode, l.scope, run)
}

// recordID is the id of the episode of run runID of layer id in a scope
// (a layerkit.Scoped key).
func recordID(id, scopeKey, runID string) string {
	return layerkit.RecordID(KindEpisode, id, scopeKey, runID)
}

// episodeRecord is the record of the episode of run in layer id with the
// layer scope scope: summary its text, md (which it takes) its metadata
// with the run, the scope, and the thread and outcome when not empty. It
// has no vector nor creation time.
func episodeRecord(id string, scope core.Scope, run core.RunInfo, summary, outcome string, md map[string]string) vectorstore.Record {
	if md == nil {
		md = map[string]string{}
	}
	recScope, scopeKey, _ := layerkit.Scoped(id, KindEpisode, scope, run)
	md[MetaRun], md[memory.MetaScope] = run.RunID, string(scope)
	if run.ThreadID != "" {
		md[MetaThread] = run.ThreadID
	}
	if outcome != "" {
		md[MetaOutcome] = outcome
	}
	return vectorstore.Record{ID: recordID(id, scopeKey, run.RunID), Layer: id, Kind: KindEpisode, Scope: recScope, Text: summary, Metadata: md}
}

// load reads the scope's episodes, oldest first.
func (l *Layer) load(ctx context.Context, run core.RunInfo) (State, error) {
	_, _, f := l.scopeOf(run)
	recs, err := l.list(ctx, f)
	if err != nil {
		return State{}, fmt.Errorf("episodic: load episodes: %w", err)
	}
	eps := make([]Episode, len(recs))
	for i, rec := range recs {
		eps[i] = fromRecord(rec, l.tk)
	}
	return State{episodes: eps, memo: &memo{}}, nil
}

// metaSeq is the metadata key of an episode's sequence number: one more
// than the highest of its scope when it was stored.
const metaSeq = "seq"

// list reads the records f selects, oldest first: by time, then sequence
// number, then id. The store orders by time and id only, and the id is a
// hash of the run id, so episodes stored at one instant (a frozen or coarse
// clock) would otherwise be in an arbitrary order, and so would be the one
// evicted first.
func (l *Layer) list(ctx context.Context, f vectorstore.Filter) ([]vectorstore.Record, error) {
	var recs []vectorstore.Record
	for rec, err := range l.store.Records.All(ctx, vectorstore.ListOptions{Filter: f, Limit: 1000}) {
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	slices.SortStableFunc(recs, func(a, b vectorstore.Record) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		if c := cmp.Compare(seqOf(a), seqOf(b)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return recs, nil
}

// seqOf is a record's sequence number; 0 for one stored without (before
// sequence numbers, or from outside).
func seqOf(r vectorstore.Record) int64 {
	n, err := strconv.ParseInt(r.Metadata[metaSeq], 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func fromRecord(rec vectorstore.Record, tk tokens.Tokenizer) Episode {
	md := rec.Metadata
	ep := Episode{ID: rec.ID, Summary: rec.Text, Timestamp: rec.CreatedAt.UTC(), Outcome: md[MetaOutcome],
		RunID: md[MetaRun], ThreadID: md[MetaThread]}
	if n, err := strconv.Atoi(md[MetaTokens]); err == nil && n >= 0 {
		ep.Tokens = n
	} else {
		ep.Tokens = tk.Count(rec.Text)
	}
	return ep
}

// complete summarises the run into an episode, stores it and evicts the
// oldest episodes past the cap.
func (l *Layer) complete(ctx context.Context, p core.CompleteParams[State]) (*State, error) {
	if p.Run.ParentRunID != "" {
		return nil, nil // a child's work is part of its parent's episode
	}
	summary, err := l.summarizer.Summarize(ctx, p.Log)
	if err != nil {
		return nil, &core.WriteError{Layer: l.id, Item: "episode of run " + p.Run.RunID, Err: fmt.Errorf("episodic: summarize run %s: %w", p.Run.RunID, err)}
	}
	st, err := l.write(ctx, p.Run, summary, p.Outcome)
	if err != nil || st == nil {
		return nil, err
	}
	return st, nil
}

// write stores summary, clipped, as the episode of run (replacing the
// run's earlier one) and evicts the oldest episodes past the cap: the one
// path of complete and Put. It returns the scope's episodes after, nil
// when the summary is empty.
func (l *Layer) write(ctx context.Context, run core.RunInfo, summary, outcome string) (*State, error) {
	summary = sanitize(summary, l.maxSummary)
	if summary == "" {
		return nil, nil
	}
	_, _, f := l.scopeOf(run)
	stored, err := l.list(ctx, f)
	if err != nil {
		return nil, &core.WriteError{Layer: l.id, Item: "episode of run " + run.RunID, Err: fmt.Errorf("episodic: list episodes: %w", err)}
	}
	var seq int64
	for _, r := range stored {
		seq = max(seq, seqOf(r))
	}
	now := l.store.Time().Truncate(time.Microsecond)
	ntok := l.tk.Count(summary)
	rec := episodeRecord(l.id, l.scope, run, summary, sanitize(outcome, maxOutcomeBytes),
		map[string]string{MetaTokens: strconv.Itoa(ntok), MetaSeq: strconv.FormatInt(seq+1, 10)})
	vecs, err := l.store.Embedder.Embed(ctx, []string{summary})
	if err != nil {
		return nil, &core.WriteError{Layer: l.id, Item: "episode of run " + run.RunID, Err: fmt.Errorf("episodic: embed summary: %w", err)}
	}
	rec.Vector, rec.CreatedAt = vecs[0], now
	if err := l.store.Records.Upsert(ctx, rec); err != nil {
		return nil, &core.WriteError{Layer: l.id, Item: "episode of run " + run.RunID, Err: fmt.Errorf("episodic: write episode: %w", err)}
	}
	// Evict against the store, not the mirror: runs of the same scope may
	// have completed since this one started.
	kept, err := l.list(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("episodic: list episodes: %w", err)
	}
	if over := len(kept) - l.max; over > 0 {
		ids := make([]string, over)
		for i := range ids {
			ids[i] = kept[i].ID
		}
		if err := l.store.Records.Delete(ctx, ids...); err != nil {
			return nil, fmt.Errorf("episodic: evict episodes: %w", err)
		}
		kept = kept[over:]
	}
	st := State{episodes: make([]Episode, len(kept)), memo: &memo{}}
	for i, r := range kept {
		st.episodes[i] = fromRecord(r, l.tk)
	}
	return &st, nil
}

// sanitize trims s, makes it valid UTF-8 without NUL bytes (a record's
// text cannot hold them) and clips it to max bytes on a rune boundary.
func sanitize(s string, max int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	s = strings.TrimSpace(s)
	if len(s) <= max {
		return s
	}
	const ell = " …"
	if max <= len(ell) {
		// No room for the ellipsis (New refuses such a max; this keeps
		// sanitize total): clip without it.
		cut := max
		if cut < 0 {
			cut = 0
		}
		for cut > 0 && !utf8RuneStart(s[cut]) {
			cut--
		}
		return strings.TrimSpace(s[:cut])
	}
	cut := max - len(ell)
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimSpace(s[:cut]) + ell
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// recall renders the episodes that fit the budget, picked by the mode.
func (l *Layer) recall(ctx context.Context, p core.RecallParams[State]) (core.Recall[State], error) {
	eps := p.State.episodes
	if len(eps) == 0 {
		return core.Recall[State]{}, nil
	}
	order := recencyOrder(len(eps))
	if l.mode == Relevance {
		if q := lastUserText(p.History); q != "" {
			ranked, err := l.relevant(ctx, p.Run, p.State, q)
			if err != nil {
				l.logger.Warn("episodic: relevance query failed; using recency", "layer", l.id, "err", err)
			} else {
				order = ranked
			}
		}
	}
	return core.Text[State](l.render(eps, order, p.Budget, p.Tokens))
}

func recencyOrder(n int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = n - 1 - i
	}
	return order
}

func lastUserText(history []core.Item) string {
	for i := len(history) - 1; i >= 0; i-- {
		it := history[i]
		if it.Type == core.TypeMessage && it.Role == core.RoleUser {
			if t := strings.TrimSpace(it.Text()); t != "" {
				return t
			}
		}
	}
	return ""
}

// relevant ranks the state's episodes by similarity to query, most similar
// first, as indices into st.episodes. Episodes deleted from the store since
// init are left out.
func (l *Layer) relevant(ctx context.Context, run core.RunInfo, st State, query string) ([]int, error) {
	m := st.memo
	if m != nil {
		m.mu.Lock()
		if m.ok && m.query == query {
			order := m.order
			m.mu.Unlock()
			return order, nil
		}
		m.mu.Unlock()
	}
	vecs, err := l.store.Embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("embed query: %w", err)
	}
	_, _, f := l.scopeOf(run)
	index := make(map[string]int, len(st.episodes))
	f.IDs = make([]string, len(st.episodes))
	for i, ep := range st.episodes {
		index[ep.ID] = i
		f.IDs[i] = ep.ID
	}
	matches, err := l.store.Records.Query(ctx, vecs[0], vectorstore.QueryOptions{K: min(len(st.episodes), vectorstore.MaxK), Filter: f})
	if err != nil {
		return nil, fmt.Errorf("query episodes: %w", err)
	}
	order := make([]int, 0, len(matches))
	for _, mt := range matches {
		if i, ok := index[mt.Record.ID]; ok {
			order = append(order, i)
		}
	}
	if m != nil {
		m.mu.Lock()
		m.query, m.order, m.ok = query, order, true
		m.mu.Unlock()
	}
	return order, nil
}

// ErrScope is wrapped when a Go API call names a scope the layer cannot
// use (an empty thread for a thread-scoped layer, ...).
var ErrScope = memory.ErrScope

// List returns the episodes stored in a scope, oldest first, read from
// the store (so it sees writes of every session).
func (l *Layer) List(ctx context.Context, scope vectorstore.Scope) ([]Episode, error) {
	st, err := layerkit.Load(ctx, l.id, l.scope, scope, l.load)
	if err != nil {
		return nil, err
	}
	return st.episodes, nil
}

// Put stores episodes in a scope through the path a completed run's
// episode takes: each Summary is clipped to MaxSummaryBytes (an empty one
// is skipped), RunID names the episode (an episode of the same run id is
// replaced; "" is refused) and the oldest episodes past MaxEpisodes are
// evicted. ThreadID, when the scope names none, is the thread recorded
// with it; ID, Timestamp and Tokens are the layer's to set. Running
// sessions of the scope see the episodes from their next run.
func (l *Layer) Put(ctx context.Context, scope vectorstore.Scope, eps ...Episode) error {
	run, err := layerkit.Run(l.id, l.scope, scope)
	if err != nil {
		return err
	}
	for i, ep := range eps {
		if ep.RunID == "" {
			return fmt.Errorf("%w: episode %d: RunID is empty", ErrInvalidEpisode, i)
		}
	}
	for _, ep := range eps {
		r := run
		r.RunID = ep.RunID
		if r.ThreadID == "" {
			r.ThreadID = ep.ThreadID
		}
		if _, err := l.write(ctx, r, ep.Summary, ep.Outcome); err != nil {
			return err
		}
	}
	return nil
}

// ErrInvalidEpisode is wrapped when an episode given to Put cannot be
// stored.
var ErrInvalidEpisode = errors.New("episodic: invalid episode")

// Delete removes the episodes with these record ids from a scope and
// returns how many it removed; an id the scope does not hold is skipped.
func (l *Layer) Delete(ctx context.Context, scope vectorstore.Scope, ids ...string) (int, error) {
	run, err := layerkit.Run(l.id, l.scope, scope)
	if err != nil {
		return 0, err
	}
	_, _, f := l.scopeOf(run)
	n, err := layerkit.Delete(ctx, l.store.Records, f, ids)
	if err != nil {
		return n, fmt.Errorf("episodic: delete: %w", err)
	}
	return n, nil
}
