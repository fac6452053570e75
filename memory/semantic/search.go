package semantic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/lexical"
	"github.com/stratamem/strata/vectorstore"
)

// Hit is one recalled message.
type Hit struct {
	// ID is the record's id.
	ID     string
	Thread string
	Role   core.Role
	Text   string
	// ItemID is the id the item had when it was recorded, if any.
	ItemID    string
	CreatedAt time.Time
	// Score is the ranking score, higher is better: the fused score in
	// hybrid mode (with Ranking.SpeakerPrior and DatePrior added for the
	// speaker and the period the question is about), BM25 in lexical
	// mode, the (context-smoothed) cosine similarity in dense mode.
	// Lexical is BM25 over the query's ideal score and Dense the
	// similarity's z-score over 3, floored at 0 (see Ranking), in hybrid
	// mode; 0 for a side that did not rank the message.
	Score, Dense, Lexical float64
}

// SearchOptions configure State.Search.
type SearchOptions struct {
	// K is the number of hits; 0 means the layer's TopK. At most MaxTopK.
	K int
	// Mode overrides the layer's mode; "" keeps it.
	Mode Mode
	// Exclude, when not nil, drops the messages for which it returns
	// true before ranking (recall uses it to skip the visible history).
	// It is called with the layer's lock held: it must not call the
	// State.
	Exclude func(Hit) bool
}

// ErrNotInitialised is returned by State methods on a State that did not
// come from the layer's init (e.g. the zero State).
var ErrNotInitialised = errors.New("semantic: state not initialised by the layer")

// ErrInvalidQuery is wrapped by Search errors for an empty or oversized
// query or a K out of range.
var ErrInvalidQuery = errors.New("semantic: invalid query")

// Search ranks the scope's messages for query and returns the k best.
// It embeds pending messages first (in the same model call as the query),
// so nothing recorded is missing from the vector ranking.
func (s State) Search(ctx context.Context, query string, opts SearchOptions) ([]Hit, error) {
	if s.m == nil {
		return nil, ErrNotInitialised
	}
	k := opts.K
	if k == 0 {
		k = s.m.l.o.TopK
	}
	if k < 0 || k > MaxTopK {
		return nil, fmt.Errorf("%w: k must be in 1..%d, got %d", ErrInvalidQuery, MaxTopK, opts.K)
	}
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("%w: empty query", ErrInvalidQuery)
	}
	mode := opts.Mode
	if mode == "" {
		mode = s.m.l.o.Mode
	}
	if !mode.valid() {
		return nil, fmt.Errorf("%w: unknown mode %q", ErrInvalidQuery, mode)
	}
	return s.m.search(ctx, query, k, mode, opts.Exclude)
}

// cand is one candidate of the fusion.
type cand struct {
	e   *entry
	lex float64 // BM25; 0 when no query term matched
	cos float64 // cosine similarity, when cosOK
	// d is cos smoothed with the best adjacent message's similarity.
	d     float64
	cosOK bool
	// lexRank is the 1-based rank in the lexical top C; 0 when not in it.
	lexRank int
	// Normalised components and the fused score.
	nl, nd, score float64
}

func (m *mirror) search(ctx context.Context, query string, k int, mode Mode, exclude func(Hit) bool) ([]Hit, error) {
	query, _ = cleanText(query)
	if rs := []rune(query); len(rs) > MaxQueryChars {
		// Embedders read the beginning; BM25 over a whole pasted page
		// matches everything a little.
		query = string(rs[:MaxQueryChars])
	}
	l := m.l
	C := max(l.o.Candidates, k)
	cands := map[string]*cand{}
	get := func(e *entry) *cand {
		c := cands[e.id]
		if c == nil {
			c = &cand{e: e}
			cands[e.id] = c
		}
		return c
	}
	skip := func(e *entry) bool { return e == nil || (exclude != nil && exclude(hitOf(e))) }

	// Lexical: the top C, and the score of every match, so that a vector
	// candidate below the lexical cut still gets its true BM25 score.
	var ideal float64
	var lexAll map[string]float64
	if mode != ModeDense {
		q := l.query(query)
		m.mu.RLock()
		for _, t := range q.Terms() {
			ideal += q[t] * m.lex.IDF(t)
		}
		lh := m.lex.Search(q, 0, func(id string) bool { return !skip(m.byID[id]) })
		lexAll = make(map[string]float64, len(lh))
		for i, h := range lh {
			lexAll[h.ID] = h.Score
			if i < C {
				get(m.byID[h.ID]).lexRank = i + 1
			}
		}
		m.mu.RUnlock()
	}
	if mode != ModeLexical {
		if err := m.denseCandidates(ctx, query, C, skip, get, cands); err != nil {
			if mode == ModeDense || ctx.Err() != nil {
				return nil, err
			}
			l.o.Logger.LogAttrs(ctx, slog.LevelWarn, "semantic: vector ranking failed, serving lexical results",
				slog.String("layer", l.o.ID), slog.String("error", err.Error()))
			mode = ModeLexical
		}
	}
	list := make([]*cand, 0, len(cands))
	for _, c := range cands {
		c.lex = lexAll[c.e.id]
		list = append(list, c)
	}
	var subj subject
	if mode == ModeHybrid && l.o.Ranking.Fusion == FusionScore {
		subj = m.subject(query)
	}
	l.fuse(list, mode, ideal, C, subj)
	slices.SortFunc(list, func(a, b *cand) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return strings.Compare(a.e.id, b.e.id)
	})
	if mode == ModeLexical {
		// Only messages that match a query term.
		n := 0
		for n < len(list) && list[n].lex > 0 {
			n++
		}
		list = list[:n]
	}
	if len(list) > k {
		list = list[:k]
	}
	hits := make([]Hit, 0, len(list))
	for _, c := range list {
		h := hitOf(c.e)
		h.Score, h.Dense, h.Lexical = c.score, c.nd, c.nl
		hits = append(hits, h)
	}
	return hits, nil
}

// denseCandidates embeds the query (with pending texts), adds the C
// messages nearest by their own or their context's vector to the
// candidates, and sets every candidate's similarity: the mean of its
// message's and its context's, mixed with its best neighbour's (see
// Ranking.DenseContext).
func (m *mirror) denseCandidates(ctx context.Context, query string, C int, skip func(*entry) bool, get func(*entry) *cand, cands map[string]*cand) error {
	vec, err := m.queryVector(ctx, query)
	if err != nil {
		return err
	}
	model := m.l.store.Embedder.Model()
	f := m.scopeFilter()
	f.Metadata = map[string]string{MetaEmbedding: model}
	// Skipped records (the visible window) may take places in the top C:
	// ask for enough to fill C after skipping them, two records (message
	// and context) per message.
	m.mu.RLock()
	nskip := 0
	for _, e := range m.byID {
		if skip(e) {
			nskip++
		}
	}
	m.mu.RUnlock()
	ms, err := m.l.store.Records.Query(ctx, vec, vectorstore.QueryOptions{K: min(vectorstore.MaxK, 2*(C+nskip)), Filter: f})
	if err != nil {
		return fmt.Errorf("semantic: vector query: %w", err)
	}
	sims := map[*entry]*[2]float64{} // message, context; NaN when unknown
	sim := func(e *entry) *[2]float64 {
		s := sims[e]
		if s == nil {
			s = &[2]float64{math.NaN(), math.NaN()}
			sims[e] = s
		}
		return s
	}
	m.mu.Lock()
	n := 0
	for _, mt := range ms {
		e, isCtx := m.entryOfMatchLocked(mt.Record, model)
		if e == nil {
			continue
		}
		if isCtx {
			sim(e)[1] = mt.Score
		} else {
			sim(e)[0] = mt.Score
		}
		if _, ok := cands[e.id]; !ok && !skip(e) && n < C {
			n++
			get(e)
		}
	}
	// The similarities not in the answer: of the lexical candidates, of
	// the other half of each vector candidate and of every candidate's
	// adjacent messages.
	var missing []string
	asked := map[string]bool{}
	want := func(e *entry) {
		s := sim(e)
		if math.IsNaN(s[0]) && e.embedded == model && !asked[e.id] {
			asked[e.id] = true
			missing = append(missing, e.id)
		}
		if id := ContextID(e.id); math.IsNaN(s[1]) && e.ctxEmbedded == model && !asked[id] {
			asked[id] = true
			missing = append(missing, id)
		}
	}
	for _, c := range cands {
		want(c.e)
		for _, nb := range m.adjacentLocked(c.e) {
			want(nb)
		}
	}
	m.mu.Unlock()
	if len(missing) > 0 {
		slices.Sort(missing)
		f.IDs = missing
		ms, err = m.l.store.Records.Query(ctx, vec, vectorstore.QueryOptions{K: min(vectorstore.MaxK, len(missing)), Filter: f})
		if err != nil {
			return fmt.Errorf("semantic: vector query: %w", err)
		}
		m.mu.Lock()
		for _, mt := range ms {
			if e, isCtx := m.entryOfMatchLocked(mt.Record, model); e != nil {
				if isCtx {
					sim(e)[1] = mt.Score
				} else {
					sim(e)[0] = mt.Score
				}
			}
		}
		m.mu.Unlock()
	}
	own := func(e *entry) (float64, bool) {
		s, ok := sims[e]
		if !ok {
			return 0, false
		}
		switch a, b := s[0], s[1]; {
		case !math.IsNaN(a) && !math.IsNaN(b):
			return (a + b) / 2, true
		case !math.IsNaN(a):
			return a, true
		case !math.IsNaN(b):
			return b, true
		}
		return 0, false
	}
	g := m.l.o.Ranking.DenseContext
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, c := range cands {
		v, ok := own(c.e)
		if !ok {
			continue
		}
		c.cos, c.cosOK, c.d = v, true, v
		if g <= 0 {
			continue
		}
		best, found := math.Inf(-1), false
		for _, nb := range m.adjacentLocked(c.e) {
			if s, ok := own(nb); ok {
				best, found = max(best, s), true
			}
		}
		if found {
			c.d = (v + g*best) / (1 + g)
		}
	}
	return nil
}

// entryOfMatchLocked maps a vector match to its message: the record's own
// entry, or the message of a context record. A message written by another
// session of the same scope since this one loaded is adopted, so it can
// be shown with its neighbours.
func (m *mirror) entryOfMatchLocked(r vectorstore.Record, model string) (e *entry, isCtx bool) {
	if r.Kind == KindContext {
		return m.byID[r.Metadata[MetaMessage]], true
	}
	if e := m.byID[r.ID]; e != nil {
		return e, false
	}
	ne, ok := entryOf(r)
	if !ok {
		return nil, false
	}
	ne.embedded = model
	m.addLocked(ne)
	return ne, false
}

func hitOf(e *entry) Hit {
	return Hit{ID: e.id, Thread: e.thread, Role: e.role, Text: e.text, ItemID: e.itemID, CreatedAt: e.created}
}

// queryStopwords are words of questions about the conversation itself
// ("do you remember when I told you ..."): they say that the user asks
// about the past, not what about, and as rare words in the messages they
// would otherwise weigh heavily.
var queryStopwords = []string{
	"remember", "recall", "remind", "mention", "mentioned", "tell", "told",
	"say", "said", "talk", "talked", "discuss", "discussed", "ask", "asked",
	"earlier", "ago", "previously", "conversation", "chat", "again",
}

// query analyzes a query text for the lexical ranking.
func (l *Layer) query(text string) lexical.Query {
	q := l.an.Query(text)
	for _, t := range l.qstop {
		delete(q, t)
	}
	return q
}
