package episodic

import (
	"cmp"
	"context"
	"fmt"
	"io"
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
	// DefaultMaxEpisodes is the spec's default cap.
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

// Options configure the layer. The zero value is useful.
type Options struct {
	// ID names the layer: "episodic" by default.
	ID string
	// Slot defaults to core.SlotEpisodic.
	Slot core.Slot
	// Scope defaults to core.ScopeResource (the spec's): episodes are
	// shared by a resource's threads. core.ScopeThread keeps them per
	// thread, core.ScopeGlobal shares them across resources.
	// ScopeExecution is refused: episodes exist to outlive the run.
	Scope core.Scope
	// Budget defaults to core.Range(300, 2000), the spec's.
	Budget core.Budget
	// Tokenizer counts tokens; nil means tokens.Estimate(). Give it the
	// runtime's tokenizer for exact fits.
	Tokenizer tokens.Tokenizer
	// MaxEpisodes caps the episodes of a scope; the oldest are deleted
	// past it. 0 means DefaultMaxEpisodes.
	MaxEpisodes int
	// Summarizer summarises a completed run; nil means
	// ExtractiveSummarizer{}.
	Summarizer Summarizer
	// Mode picks episodes by recency (the default) or by relevance to the
	// latest user message. It also sets the placement: anchor for
	// Recency, auto for Relevance (see the package doc).
	Mode Mode
	// MaxSummaryBytes clips a summary before it is stored; 0 means
	// DefaultMaxSummaryBytes. Values below MinSummaryBytes are refused.
	MaxSummaryBytes int
	// Logger receives relevance queries that failed and fell back to
	// recency. Nil discards.
	Logger *slog.Logger
}

type layer struct {
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
// error wrapping memory.ErrInvalidStore. Adjust the returned layer's fields
// before handing it to core.NewRuntime if the defaults do not suit.
func New(store *memory.Store, opts Options) (core.Layer[State], error) {
	if err := store.Validate(); err != nil {
		return core.Layer[State]{}, fmt.Errorf("episodic: %w", err)
	}
	// Episodes exist to outlive the run, and are shared by a resource's
	// threads by default (the spec's scope).
	common, err := layerkit.Common{ID: opts.ID, Slot: opts.Slot, Scope: opts.Scope, Budget: opts.Budget}.Resolve(layerkit.Defaults{
		ID: DefaultID, Slot: core.SlotEpisodic, Budget: core.Range(300, 2000),
		Scopes: []core.Scope{core.ScopeResource, core.ScopeThread, core.ScopeGlobal},
	})
	if err != nil {
		return core.Layer[State]{}, err
	}
	opts.ID, opts.Slot, opts.Scope, opts.Budget = common.ID, common.Slot, common.Scope, common.Budget
	bad := func(field, reason string) error { return layerkit.ConfigError(opts.ID, field, reason) }
	switch {
	case opts.MaxEpisodes < 0:
		return core.Layer[State]{}, bad("MaxEpisodes", "negative")
	case opts.MaxEpisodes == 0:
		opts.MaxEpisodes = DefaultMaxEpisodes
	case opts.MaxEpisodes > vectorstore.MaxK:
		return core.Layer[State]{}, bad("MaxEpisodes", fmt.Sprintf("%d is above %d", opts.MaxEpisodes, vectorstore.MaxK))
	}
	switch {
	case opts.MaxSummaryBytes < 0:
		return core.Layer[State]{}, bad("MaxSummaryBytes", "negative")
	case opts.MaxSummaryBytes == 0:
		opts.MaxSummaryBytes = DefaultMaxSummaryBytes
	case opts.MaxSummaryBytes < MinSummaryBytes:
		return core.Layer[State]{}, bad("MaxSummaryBytes", fmt.Sprintf("%d is below %d, too short for a summary clipped with \" …\"", opts.MaxSummaryBytes, MinSummaryBytes))
	case opts.MaxSummaryBytes > vectorstore.MaxTextBytes:
		return core.Layer[State]{}, bad("MaxSummaryBytes", fmt.Sprintf("%d is above a record's %d", opts.MaxSummaryBytes, vectorstore.MaxTextBytes))
	}
	placement := core.PlacementAnchor
	switch opts.Mode {
	case Recency:
	case Relevance:
		placement = core.PlacementAuto
	default:
		return core.Layer[State]{}, bad("Mode", fmt.Sprintf("unknown mode %d", opts.Mode))
	}
	l := &layer{id: opts.ID, scope: opts.Scope, store: store, tk: opts.Tokenizer, max: opts.MaxEpisodes,
		maxSummary: opts.MaxSummaryBytes, summarizer: opts.Summarizer, mode: opts.Mode, logger: opts.Logger}
	if l.tk == nil {
		l.tk = tokens.Estimate()
	}
	if l.summarizer == nil {
		l.summarizer = ExtractiveSummarizer{}
	}
	if l.logger == nil {
		l.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return core.Layer[State]{
		ID: opts.ID, Name: "Episodic memory", Slot: opts.Slot, Scope: opts.Scope, Budget: opts.Budget,
		Placement: placement,
		// The episode is written in OnComplete: a timeout there leaves it
		// unconfirmed, and Complete says so.
		WritesRecords: true,
		Hooks: core.Hooks[State]{
			Init: func(ctx context.Context, p core.InitParams) (State, error) {
				if p.ClaimedThread {
					if _, err := layerkit.AdoptThreadRecords(ctx, l.store.Records, l.id, p.Run); err != nil {
						return State{}, fmt.Errorf("episodic: %w", err)
					}
				}
				return l.load(ctx, p.Run)
			},
			Recall:     l.recall,
			OnComplete: l.complete,
			RenderDelta: func(_ context.Context, p core.RenderDeltaParams[State]) (string, bool, error) {
				d := renderDelta(p.Prev, p.Next)
				return d, d != "", nil
			},
		},
		// The scoped state is empty (the records are the memory), so a
		// concurrent run's write never carries anything to merge.
		Merge: func(_, mine State) State { return mine },
	}, nil
}

// scopeOf returns the record scope, the scope key used in record ids, and
// the filter selecting this scope's episodes.
func (l *layer) scopeOf(run core.RunInfo) (vectorstore.Scope, string, vectorstore.Filter) {
	return layerkit.Scoped(l.id, KindEpisode, l.scope, run)
}

func (l *layer) recordID(scopeKey, runID string) string {
	return layerkit.RecordID(KindEpisode, l.id, scopeKey, runID)
}

// load reads the scope's episodes, oldest first.
func (l *layer) load(ctx context.Context, run core.RunInfo) (State, error) {
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
func (l *layer) list(ctx context.Context, f vectorstore.Filter) ([]vectorstore.Record, error) {
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
	ep := Episode{ID: rec.ID, Summary: rec.Text, Timestamp: rec.CreatedAt.UTC(), Outcome: md["outcome"],
		RunID: md["run"], ThreadID: md["thread"]}
	if n, err := strconv.Atoi(md["tokens"]); err == nil && n >= 0 {
		ep.Tokens = n
	} else {
		ep.Tokens = tk.Count(rec.Text)
	}
	return ep
}

// complete summarises the run into an episode, stores it and evicts the
// oldest episodes past the cap.
func (l *layer) complete(ctx context.Context, p core.CompleteParams[State]) (*State, error) {
	if p.Run.ParentRunID != "" {
		return nil, nil // a child's work is part of its parent's episode
	}
	summary, err := l.summarizer.Summarize(ctx, p.Log)
	if err != nil {
		return nil, &core.WriteError{Layer: l.id, Item: "episode of run " + p.Run.RunID, Err: fmt.Errorf("episodic: summarize run %s: %w", p.Run.RunID, err)}
	}
	summary = sanitize(summary, l.maxSummary)
	if summary == "" {
		return nil, nil
	}
	recScope, scopeKey, f := l.scopeOf(p.Run)
	stored, err := l.list(ctx, f)
	if err != nil {
		return nil, &core.WriteError{Layer: l.id, Item: "episode of run " + p.Run.RunID, Err: fmt.Errorf("episodic: list episodes: %w", err)}
	}
	var seq int64
	for _, r := range stored {
		seq = max(seq, seqOf(r))
	}
	now := l.store.Time().Truncate(time.Microsecond)
	ntok := l.tk.Count(summary)
	md := map[string]string{"tokens": strconv.Itoa(ntok), "run": p.Run.RunID, "scope": string(l.scope),
		metaSeq: strconv.FormatInt(seq+1, 10)}
	if o := sanitize(p.Outcome, maxOutcomeBytes); o != "" {
		md["outcome"] = o
	}
	if p.Run.ThreadID != "" {
		md["thread"] = p.Run.ThreadID
	}
	vecs, err := l.store.Embedder.Embed(ctx, []string{summary})
	if err != nil {
		return nil, &core.WriteError{Layer: l.id, Item: "episode of run " + p.Run.RunID, Err: fmt.Errorf("episodic: embed summary: %w", err)}
	}
	rec := vectorstore.Record{ID: l.recordID(scopeKey, p.Run.RunID), Layer: l.id, Kind: KindEpisode, Scope: recScope,
		Text: summary, Vector: vecs[0], Metadata: md, CreatedAt: now}
	if err := l.store.Records.Upsert(ctx, rec); err != nil {
		return nil, &core.WriteError{Layer: l.id, Item: "episode of run " + p.Run.RunID, Err: fmt.Errorf("episodic: write episode: %w", err)}
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
func (l *layer) recall(ctx context.Context, p core.RecallParams[State]) (core.Recall[State], error) {
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
	return core.Text[State](l.render(eps, order, p.Budget))
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
func (l *layer) relevant(ctx context.Context, run core.RunInfo, st State, query string) ([]int, error) {
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
