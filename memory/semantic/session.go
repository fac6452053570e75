package semantic

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/vectorstore"
)

// session is one session's handle on its scope's records. It holds no
// copy of the scope: every ranking reads the collection (its term index
// and its vector index), so a session costs the same whatever the size
// of the history behind it. What it keeps is what its next writes need:
// the thread's latest messages (the context of the next message's lexical
// document, and its prev link), the messages whose write the collection
// has not confirmed, and its own messages still waiting for their
// embedding, with the messages around them.
type session struct {
	l   *Layer
	run core.RunInfo

	mu sync.Mutex
	// recent is the thread's latest messages in thread order: the
	// session's messages waiting for their embedding (pending) with the
	// two messages before the oldest of them, or the last two messages
	// when none waits. Unstored messages are in it too (they will be
	// stored in that place).
	recent  []*entry
	pending map[*entry]bool
	nextSeq int64
	// unstored are appended messages whose record the collection has not
	// confirmed, in append order. They are written again at every write
	// hook until the collection takes them; nothing ranks or renders
	// them before.
	unstored []*entry

	// embedMu serialises embedding passes, so that two hooks (a store
	// hook that outlived its timeout and the next one) never embed the
	// same messages twice.
	embedMu sync.Mutex

	// The last query's vector: a tool loop assembles several times per
	// user message.
	qmu    sync.Mutex
	qtext  string
	qvec   []float32
	qmodel string
}

// contextSpan is how many messages on each side of a message enter its
// lexical document (see Ranking.ContextWeight).
const contextSpan = 2

func (l *Layer) newSession(run core.RunInfo) *session {
	return &session{l: l, run: run, pending: map[*entry]bool{}}
}

// scopeFilter selects the scope's message records. A thread of a
// resource is selected by both keys: another resource's thread of the
// same name is never read.
func (s *session) scopeFilter() vectorstore.Filter {
	f := vectorstore.Filter{Layer: s.l.o.ID, Kind: KindMessage, Resource: s.run.ResourceID}
	if s.l.o.Scope != core.ScopeResource {
		f.Thread = s.run.ThreadID
	}
	return f
}

// threadFilter selects the session's thread's message records.
func (s *session) threadFilter() vectorstore.Filter {
	return vectorstore.Filter{Layer: s.l.o.ID, Kind: KindMessage, Resource: s.run.ResourceID, Thread: s.run.ThreadID}
}

// foreign reports a record of a thread of some resource found by a run
// of no resource: an empty filter field matches any value, so the filter
// alone cannot exclude it.
func (s *session) foreign(r *vectorstore.Record) bool {
	return s.run.ResourceID == "" && r.Scope.Resource != ""
}

// tailPage is how many of the thread's latest records loadTail reads.
const tailPage = 8

// loadTail reads the thread's latest messages: the context of the next
// one. It reads a few records whatever the thread's length (and all the
// records of the latest microsecond, which only a stopped clock makes
// many).
func (s *session) loadTail(ctx context.Context) error {
	f := s.threadFilter()
	// With vectors: the contexts of the next messages are computed from
	// them.
	page, _, err := s.l.store.Records.List(ctx, vectorstore.ListOptions{Filter: f, Limit: tailPage, Order: vectorstore.Descending, WithVectors: true})
	if err != nil {
		return fmt.Errorf("semantic: read the thread's latest messages: %w", err)
	}
	if len(page) == tailPage && page[len(page)-1].CreatedAt.Equal(page[0].CreatedAt) {
		// Records of one instant come back by id, not in thread order:
		// read that instant whole.
		at := f
		at.CreatedFrom, at.CreatedBefore = page[0].CreatedAt, page[0].CreatedAt.Add(time.Microsecond)
		page = page[:0]
		for r, err := range s.l.store.Records.All(ctx, vectorstore.ListOptions{Filter: at, Limit: vectorstore.MaxListLimit, WithVectors: true}) {
			if err != nil {
				return fmt.Errorf("semantic: read the thread's latest messages: %w", err)
			}
			page = append(page, r)
		}
	}
	var es []*entry
	for _, r := range page {
		if s.foreign(&r) {
			continue
		}
		if e, ok := entryOf(r); ok {
			es = append(es, e)
		}
	}
	slices.SortFunc(es, func(a, b *entry) int { return a.compare(b) })
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range es {
		s.nextSeq = max(s.nextSeq, e.seq+1)
	}
	s.recent = es[max(0, len(es)-contextSpan):]
	return nil
}

// append adds e, a new message of the thread, after the latest ones and
// gives it its place, prev link and lexical document. It needs mu.
func (s *session) appendLocked(e *entry) {
	e.seq = s.nextSeq
	s.nextSeq++
	if n := len(s.recent); n > 0 {
		e.prev = s.recent[n-1].id
	}
	s.recent = append(s.recent, e)
	e.terms = s.l.document(s.recent, len(s.recent)-1)
	s.trimLocked()
}

// trimLocked drops from recent what no later document or pending message
// needs: everything before the two messages ahead of the oldest pending
// one (or of the next message, when none is pending).
func (s *session) trimLocked() {
	keep := len(s.recent)
	for i, e := range s.recent {
		if s.pending[e] || s.isUnstored(e) {
			keep = i
			break
		}
	}
	if cut := keep - contextSpan; cut > 0 {
		s.recent = slices.Delete(s.recent, 0, cut)
	}
}

func (s *session) isUnstored(e *entry) bool { return slices.Contains(s.unstored, e) }

// storeUnstoredLocked writes the unstored messages and, once the
// collection confirms them, counts them as pending their embedding. The
// error, a *core.WriteError naming the messages, is what the hook
// returns: the session method that called it does not acknowledge them.
//
// Each message is created only if its id is new: a message appended
// again (a host that seeds a later run with the same items) keeps its
// stored record, place and vector.
func (s *session) storeUnstoredLocked(ctx context.Context) error {
	for len(s.unstored) > 0 {
		e := s.unstored[0]
		rec := e.record(s.l.o.ID, s.l.placeholder, EmbeddingPending)
		_, err := s.l.store.Records.UpsertIf(ctx, rec, 0)
		if vectorstore.CodeOf(err) == vectorstore.CodeConflict {
			err = s.storedAlready(ctx, e, rec)
		} else if err == nil {
			s.pending[e] = true
		}
		if err != nil {
			ids := make([]string, len(s.unstored))
			for i, u := range s.unstored {
				ids[i] = u.id
			}
			item := fmt.Sprintf("message %s", ids[0])
			if len(ids) > 1 {
				item = fmt.Sprintf("%d messages (%s)", len(ids), strings.Join(ids, ", "))
			}
			return &core.WriteError{Layer: s.l.o.ID, Item: item, Err: err}
		}
		s.unstored = s.unstored[1:]
	}
	s.trimLocked()
	return nil
}

// storedAlready handles a message whose id is taken: the same message
// appended again is left as stored (it leaves the thread's latest
// messages: it is not a new one), the record of an earlier attempt of
// this very write (its outcome was unknown) counts as written, and a
// message whose text changed under the same item id replaces the stored
// one.
func (s *session) storedAlready(ctx context.Context, e *entry, rec vectorstore.Record) error {
	old, err := s.l.store.Records.Get(ctx, e.id)
	if errors.Is(err, vectorstore.ErrNotFound) {
		// Deleted between the two calls: write it.
		if _, err := s.l.store.Records.UpsertIf(ctx, rec, 0); err != nil {
			return err
		}
		s.pending[e] = true
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case old.Metadata[MetaRun] == e.run && recordSeq(old) == e.seq && old.Text == e.text:
		// This write, made by an earlier attempt.
		if old.Metadata[MetaEmbedding] == EmbeddingPending {
			s.pending[e] = true
		}
		return nil
	case old.Text == e.text && old.Metadata[MetaRole] == string(e.role):
		if i := slices.Index(s.recent, e); i >= 0 {
			s.recent = slices.Delete(s.recent, i, i+1)
			if i < len(s.recent) {
				// A message appended after it follows what came before.
				nx := s.recent[i]
				nx.prev = ""
				if i > 0 {
					nx.prev = s.recent[i-1].id
				}
				nx.terms = s.l.document(s.recent, i)
			}
		}
		return nil
	}
	if err := s.l.store.Records.Upsert(ctx, rec); err != nil {
		return err
	}
	s.pending[e] = true
	return nil
}

// storeUnstored is storeUnstoredLocked for the hooks that do not hold mu.
func (s *session) storeUnstored(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.storeUnstoredLocked(ctx)
}

// count counts the scope's messages, all or those whose embedding
// metadata is embedding.
func (s *session) count(ctx context.Context, embedding string) (int, error) {
	f := s.scopeFilter()
	if embedding != "" {
		f.Metadata = map[string]string{MetaEmbedding: embedding}
	}
	n, err := s.l.store.Records.Count(ctx, f)
	if err != nil {
		return 0, fmt.Errorf("semantic: count messages: %w", err)
	}
	return n, nil
}
