package semantic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stratamem/strata/core"
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

// SearchOptions configure Layer.Search and State.Search.
type SearchOptions struct {
	// K is the number of hits; 0 means the layer's TopK. At most MaxTopK.
	K int
	// Mode overrides the layer's mode; "" keeps it.
	Mode Mode
	// Exclude, when not nil, drops the messages for which it returns
	// true before ranking (recall uses it to skip the visible history).
	// At most maxExcluded of the messages that would rank are dropped
	// this way without taking a place from another.
	Exclude func(Hit) bool
}

// ErrNotInitialised is returned by State methods on a State that did not
// come from the layer's init (e.g. the zero State).
var ErrNotInitialised = errors.New("semantic: state not initialised by the layer")

// ErrInvalidQuery is wrapped by Search errors for an empty or oversized
// query or a K out of range.
var ErrInvalidQuery = errors.New("semantic: invalid query")

// Search ranks the session's scope's messages for query and returns the
// k best. It embeds pending messages first (in the same model call as the
// query), so nothing recorded is missing from the vector ranking.
func (s State) Search(ctx context.Context, query string, opts SearchOptions) ([]Hit, error) {
	if s.s == nil {
		return nil, ErrNotInitialised
	}
	return s.s.searchWith(ctx, query, opts)
}

// searchWith is Search's checks and ranking, shared by State.Search and
// Layer.Search.
func (s *session) searchWith(ctx context.Context, query string, opts SearchOptions) ([]Hit, error) {
	k := opts.K
	if k == 0 {
		k = s.l.o.TopK
	}
	if k < 0 || k > MaxTopK {
		return nil, fmt.Errorf("%w: k must be in 1..%d, got %d", ErrInvalidQuery, MaxTopK, opts.K)
	}
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("%w: empty query", ErrInvalidQuery)
	}
	mode := opts.Mode
	if mode == "" {
		mode = s.l.o.Mode
	}
	if !mode.valid() {
		return nil, fmt.Errorf("%w: unknown mode %q", ErrInvalidQuery, mode)
	}
	extra := 0
	if opts.Exclude != nil {
		extra = maxExcluded
	}
	hits, _, err := s.search(ctx, query, k, mode, opts.Exclude, extra)
	return hits, err
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

// byDesc orders candidates by key, highest first, then by message id.
func byDesc(key func(*cand) float64) func(a, b *cand) int {
	return func(a, b *cand) int {
		switch ka, kb := key(a), key(b); {
		case ka > kb:
			return -1
		case ka < kb:
			return 1
		}
		return strings.Compare(a.e.id, b.e.id)
	}
}

// ranking is one search's working set: the candidates by id, and the
// similarities known of the candidates and their neighbours.
type ranking struct {
	s     *session
	cands map[string]*cand
	// sims holds the similarity of messages (ids) and of their context
	// records (ContextID of the message's id) to the query.
	sims map[string]float64
	skip func(*entry) bool
	// lexLate are the BM25 scores of the vector candidates below the
	// lexical cut.
	lexLate []vectorstore.Match
}

func (rk *ranking) add(e *entry) *cand {
	c := rk.cands[e.id]
	if c == nil {
		c = &cand{e: e}
		rk.cands[e.id] = c
	}
	return c
}

// search ranks the scope's messages for query and returns the k best
// with every candidate the ranking looked at (for the renderer, which
// shows neighbours and needs their records).
//
// Every side reads the collection: the lexical side its term index
// (Collection.SearchTerms, BM25 over the scope's messages), the vector
// side its vector index; each asks for its top C plus the messages
// excluded (the visible window, which may take places in the top C). A
// search therefore costs what the collection's indexes cost for the scope
// and the C candidates, not the scope's size.
//
// extra is how many messages exclude may drop from each side's top C.
func (s *session) search(ctx context.Context, query string, k int, mode Mode, exclude func(Hit) bool, extra int) ([]Hit, []*entry, error) {
	query, _ = cleanText(query)
	if rs := []rune(query); len(rs) > MaxQueryChars {
		// Embedders read the beginning; BM25 over a whole pasted page
		// matches everything a little.
		query = string(rs[:MaxQueryChars])
	}
	l := s.l
	C := max(l.o.Candidates, k)
	rk := &ranking{s: s, cands: map[string]*cand{}, sims: map[string]float64{},
		skip: func(e *entry) bool { return exclude != nil && exclude(hitOf(e)) }}
	var ideal float64
	lexAll := map[string]float64{}
	q := l.queryTerms(query)
	useLex := mode != ModeDense && len(q) > 0
	// The two sides' first reads are independent: they run at once.
	var lexMatches []vectorstore.Match
	var dense *vectorPhase
	var denseErr error
	err := both(func() error {
		if !useLex {
			return nil
		}
		res, err := l.store.Records.SearchTerms(ctx, vectorstore.TermOptions{
			Terms: q, K: min(vectorstore.MaxK, C+extra), Filter: s.scopeFilter(), K1: l.o.Ranking.K1, B: l.o.Ranking.B})
		if err != nil {
			return fmt.Errorf("semantic: lexical ranking: %w", err)
		}
		for t, w := range q {
			ideal += w * res.IDF(t)
		}
		lexMatches = res.Matches
		return nil
	}, func() error {
		if mode != ModeLexical {
			dense, denseErr = s.vectorNearest(ctx, query, C+extra)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	n := 0
	for _, m := range lexMatches {
		e, ok := s.entryOfMatch(m.Record)
		if !ok || rk.skip(e) {
			continue
		}
		lexAll[e.id] = m.Score
		if n < C {
			n++
			rk.add(e).lexRank = n
		}
	}
	if mode != ModeLexical {
		if denseErr == nil {
			rk.addNearest(dense, C)
		}
		if denseErr != nil {
			if mode == ModeDense || ctx.Err() != nil {
				return nil, nil, denseErr
			}
			l.o.Logger.LogAttrs(ctx, slog.LevelWarn, "semantic: vector ranking failed, serving lexical results",
				slog.String("layer", l.o.ID), slog.String("error", denseErr.Error()))
			mode = ModeLexical
		}
	}
	// Second reads, again at once: the true BM25 score of the vector
	// candidates below the lexical cut, and the similarities the vector
	// answer did not hold.
	err = both(func() error {
		if mode != ModeHybrid || len(q) == 0 {
			return nil
		}
		var missing []string
		for id := range rk.cands {
			if _, ok := lexAll[id]; !ok {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		slices.Sort(missing)
		f := s.scopeFilter()
		f.IDs = missing
		res, err := l.store.Records.SearchTerms(ctx, vectorstore.TermOptions{
			Terms: q, K: len(missing), Filter: f, K1: l.o.Ranking.K1, B: l.o.Ranking.B})
		if err != nil {
			return fmt.Errorf("semantic: lexical ranking: %w", err)
		}
		for _, m := range res.Matches {
			if _, ok := rk.cands[m.Record.ID]; ok {
				rk.lexLate = append(rk.lexLate, m)
			}
		}
		return nil
	}, func() error {
		if mode == ModeLexical {
			return nil
		}
		return rk.similarities(ctx, dense)
	})
	if err != nil {
		return nil, nil, err
	}
	for _, m := range rk.lexLate {
		lexAll[m.Record.ID] = m.Score
	}
	list := make([]*cand, 0, len(rk.cands))
	seen := make([]*entry, 0, len(rk.cands))
	for _, c := range rk.cands {
		c.lex = lexAll[c.e.id]
		list = append(list, c)
		seen = append(seen, c.e)
	}
	slices.SortFunc(seen, func(a, b *entry) int { return strings.Compare(a.id, b.id) })
	var subj subject
	if mode == ModeHybrid && l.o.Ranking.Fusion == FusionScore {
		subj = l.subject(query, append(seen[:len(seen):len(seen)], s.latest()...))
	}
	l.fuse(list, mode, ideal, C, subj)
	slices.SortFunc(list, byDesc(func(c *cand) float64 { return c.score }))
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
	return hits, seen, nil
}

// maxExcluded is how many places of each side's top C the messages a
// SearchOptions.Exclude drops may take; recall passes the size of the
// visible window instead.
const maxExcluded = 200

// latest is a copy of the thread's latest messages (copies of the
// entries, which the session's writes change).
func (s *session) latest() []*entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*entry, len(s.recent))
	for i, e := range s.recent {
		c := *e
		out[i] = &c
	}
	return out
}

// entryOfMatch reads a matched message record; ok is false for a record
// this session does not rank (another resource's thread seen by a run of
// no resource, a record it cannot read).
func (s *session) entryOfMatch(r vectorstore.Record) (*entry, bool) {
	if s.foreign(&r) {
		return nil, false
	}
	return entryOf(r)
}

// both runs f and g at once and returns the first error. Neither
// outlives the call.
func both(f, g func() error) error {
	var wg sync.WaitGroup
	var ef error
	wg.Add(1)
	go func() {
		defer wg.Done()
		ef = f()
	}()
	eg := g()
	wg.Wait()
	if ef != nil {
		return ef
	}
	return eg
}

// vectorPhase is the vector side's first answer: the query's vector and
// the nearest records, with the messages of the contexts among them.
type vectorPhase struct {
	vec     []float32
	filter  vectorstore.Filter
	matches []vectorstore.Match
	// ctxMsgs are the messages of the matched context records, by id.
	ctxMsgs map[string]*entry
}

// vectorNearest embeds the query and reads the records (messages and
// contexts, two per message) nearest to it, and the messages of the
// contexts among them that are not there themselves.
func (s *session) vectorNearest(ctx context.Context, query string, n int) (*vectorPhase, error) {
	vec, err := s.queryVector(ctx, query)
	if err != nil {
		return nil, err
	}
	f := s.scopeFilter()
	f.Kind = "" // messages and their contexts
	f.Metadata = map[string]string{MetaEmbedding: s.l.store.Embedder.Model()}
	ms, err := s.l.store.Records.Query(ctx, vec, vectorstore.QueryOptions{K: min(vectorstore.MaxK, 2*n), Filter: f})
	if err != nil {
		return nil, fmt.Errorf("semantic: vector query: %w", err)
	}
	ph := &vectorPhase{vec: vec, filter: f, matches: ms}
	msgs := map[string]bool{}
	for _, mt := range ms {
		if mt.Record.Kind == KindMessage {
			msgs[mt.Record.ID] = true
		}
	}
	var ids []string
	for _, mt := range ms {
		if id := mt.Record.Metadata[MetaMessage]; mt.Record.Kind == KindContext && id != "" && !msgs[id] {
			msgs[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		if ph.ctxMsgs, err = s.fetch(ctx, ids); err != nil {
			return nil, err
		}
	}
	return ph, nil
}

// addNearest adds the C messages nearest by their own or their
// context's vector to the candidates (after the lexical ones), and
// records the similarities the answer holds.
func (rk *ranking) addNearest(ph *vectorPhase, C int) {
	s := rk.s
	var ctxOnly []string // messages found by their context only
	n := 0
	for _, mt := range ph.matches {
		r := mt.Record
		if s.foreign(&r) {
			continue
		}
		switch r.Kind {
		case KindContext:
			id := r.Metadata[MetaMessage]
			if id == "" || r.ID != ContextID(id) {
				continue
			}
			rk.sims[r.ID] = mt.Score
			if _, ok := rk.cands[id]; !ok && n < C {
				ctxOnly = append(ctxOnly, id)
			}
		case KindMessage:
			e, ok := entryOf(r)
			if !ok {
				continue
			}
			rk.sims[e.id] = mt.Score
			if _, ok := rk.cands[e.id]; !ok && !rk.skip(e) && n < C {
				n++
				rk.add(e)
			}
		}
	}
	for _, id := range ctxOnly {
		if e := ph.ctxMsgs[id]; e != nil && !rk.skip(e) && n < C {
			if _, ok := rk.cands[id]; !ok {
				n++
				rk.add(e)
			}
		}
	}
}

// similarities reads the similarities the vector answer did not hold (of
// the other half of each candidate and of every candidate's adjacent
// messages and their contexts, by id) and sets every candidate's: the
// mean of its message's and its context's, mixed with its best
// neighbour's (see Ranking.DenseContext).
func (rk *ranking) similarities(ctx context.Context, ph *vectorPhase) error {
	s := rk.s
	var missing []string
	asked := map[string]bool{}
	want := func(id string) {
		if id == "" {
			return
		}
		for _, x := range [2]string{id, ContextID(id)} {
			if _, ok := rk.sims[x]; !ok && !asked[x] {
				asked[x] = true
				missing = append(missing, x)
			}
		}
	}
	ids := make([]string, 0, len(rk.cands))
	for id := range rk.cands {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		c := rk.cands[id]
		want(c.e.id)
		if s.l.o.Ranking.DenseContext > 0 {
			want(c.e.prev)
			want(c.e.next)
		}
	}
	got := map[string]float64{}
	for lo := 0; lo < len(missing); lo += vectorstore.MaxK {
		chunk := missing[lo:min(len(missing), lo+vectorstore.MaxK)]
		slices.Sort(chunk)
		g := ph.filter
		g.IDs = chunk
		ms, err := s.l.store.Records.Query(ctx, ph.vec, vectorstore.QueryOptions{K: len(chunk), Filter: g})
		if err != nil {
			return fmt.Errorf("semantic: vector query: %w", err)
		}
		for _, mt := range ms {
			got[mt.Record.ID] = mt.Score
		}
	}
	for id, v := range got {
		rk.sims[id] = v
	}
	own := func(id string) (float64, bool) {
		a, okA := rk.sims[id]
		b, okB := rk.sims[ContextID(id)]
		switch {
		case okA && okB:
			return (a + b) / 2, true
		case okA:
			return a, true
		case okB:
			return b, true
		}
		return 0, false
	}
	g := s.l.o.Ranking.DenseContext
	for _, c := range rk.cands {
		v, ok := own(c.e.id)
		if !ok {
			continue
		}
		c.cos, c.cosOK, c.d = v, true, v
		if g <= 0 {
			continue
		}
		best, found := math.Inf(-1), false
		for _, nb := range [2]string{c.e.prev, c.e.next} {
			if nb == "" {
				continue
			}
			if sv, ok := own(nb); ok {
				best, found = max(best, sv), true
			}
		}
		if found {
			c.d = (v + g*best) / (1 + g)
		}
	}
	return nil
}

// fetch reads the message records ids of the scope.
func (s *session) fetch(ctx context.Context, ids []string) (map[string]*entry, error) {
	out := make(map[string]*entry, len(ids))
	ids = slices.Clone(ids)
	slices.Sort(ids)
	for lo := 0; lo < len(ids); lo += vectorstore.MaxListLimit {
		chunk := ids[lo:min(len(ids), lo+vectorstore.MaxListLimit)]
		f := s.scopeFilter()
		f.IDs = chunk
		recs, _, err := s.l.store.Records.List(ctx, vectorstore.ListOptions{Filter: f, Limit: len(chunk)})
		if err != nil {
			return nil, fmt.Errorf("semantic: read messages: %w", err)
		}
		for _, r := range recs {
			if e, ok := s.entryOfMatch(r); ok {
				out[e.id] = e
			}
		}
	}
	return out, nil
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

// queryTerms analyzes a query text for the lexical ranking, capped like
// a document (see capTerms).
func (l *Layer) queryTerms(text string) map[string]float64 {
	q := l.an.Query(text)
	for _, t := range l.qstop {
		delete(q, t)
	}
	out := make(map[string]float64, len(q))
	for t, w := range capTerms(q) {
		out[t] = float64(w)
	}
	return out
}
