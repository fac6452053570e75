package semantic

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/lexical"
	"github.com/stratamem/strata/vectorstore"
)

// mirror is one session's in-memory copy of its scope's message records:
// the entries in thread order and the BM25 index over them. It is loaded
// from the collection at init and kept in step by every write the layer
// makes, so the lexical ranking always covers exactly what is stored.
type mirror struct {
	l   *Layer
	run core.RunInfo

	mu      sync.RWMutex
	byID    map[string]*entry
	threads map[string][]*entry // each in (created, seq, id) order
	nextSeq map[string]int64
	lex     *lexical.Index
	// unstored are appended messages whose record the collection has not
	// confirmed, in append order. They are not in byID (nothing ranks or
	// renders a message that is not stored, and no embedding pass can
	// take one for a message deleted elsewhere) and are written again at
	// every write hook until the collection takes them.
	unstored []*entry
	// dirty holds the entries that may have embedding work: a vector
	// missing or from another model, or a context window that changed.
	// Every change marks the entries it affects, so finding the work is
	// proportional to what changed, not to the scope's history.
	dirty map[*entry]bool

	// embedMu serialises embedding passes so two hooks (a store that
	// outlived its timeout and the next recall) never embed the same
	// records twice.
	embedMu sync.Mutex

	// qcache remembers the last query's vector: a tool loop assembles
	// several times per user message.
	qmu    sync.Mutex
	qtext  string
	qvec   []float32
	qmodel string
}

func (l *Layer) newMirror(run core.RunInfo) *mirror {
	ix, _ := lexical.New(lexical.Options{K1: l.o.Ranking.K1, B: l.o.Ranking.B, Analyzer: l.an})
	return &mirror{l: l, run: run, byID: map[string]*entry{}, threads: map[string][]*entry{},
		nextSeq: map[string]int64{}, lex: ix, dirty: map[*entry]bool{}}
}

// scopeFilter selects this session's records, of both kinds. A thread of
// a resource is selected by both keys: another resource's thread of the
// same name is never read.
func (m *mirror) scopeFilter() vectorstore.Filter {
	f := vectorstore.Filter{Layer: m.l.o.ID, Resource: m.run.ResourceID}
	if m.l.o.Scope != core.ScopeResource {
		f.Thread = m.run.ThreadID
	}
	return f
}

// foreign reports a record of a thread of some resource loaded by a run of
// no resource: an empty filter field matches any value, so the filter
// alone cannot exclude it.
func (m *mirror) foreign(r *vectorstore.Record) bool {
	return m.run.ResourceID == "" && r.Scope.Resource != ""
}

// storeUnstoredLocked writes the unstored messages in one batch and, once
// the collection confirms them, adds them to the mirror. The error, a
// *core.WriteError naming the messages, is what the hook returns: the
// session method that called it does not acknowledge them.
func (m *mirror) storeUnstoredLocked(ctx context.Context) error {
	if len(m.unstored) == 0 {
		return nil
	}
	recs := make([]vectorstore.Record, len(m.unstored))
	for i, e := range m.unstored {
		recs[i] = e.record(m.l.o.ID, m.l.placeholder, EmbeddingPending)
	}
	if err := m.l.store.Records.Upsert(ctx, recs...); err != nil {
		ids := make([]string, len(m.unstored))
		for i, e := range m.unstored {
			ids[i] = e.id
		}
		item := fmt.Sprintf("message %s", ids[0])
		if len(ids) > 1 {
			item = fmt.Sprintf("%d messages (%s)", len(ids), strings.Join(ids, ", "))
		}
		return &core.WriteError{Layer: m.l.o.ID, Item: item, Err: err}
	}
	for _, e := range m.unstored {
		m.addLocked(e)
	}
	m.unstored = nil
	return nil
}

// storeUnstored is storeUnstoredLocked for the hooks that do not hold mu.
func (m *mirror) storeUnstored(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.storeUnstoredLocked(ctx)
}

// load reads every record of the scope and builds the index.
func (m *mirror) load(ctx context.Context) error {
	opts := vectorstore.ListOptions{Filter: m.scopeFilter(), Limit: vectorstore.MaxListLimit}
	var es []*entry
	var ctxs []vectorstore.Record
	for r, err := range m.l.store.Records.All(ctx, opts) {
		if err != nil {
			return fmt.Errorf("semantic: load records: %w", err)
		}
		if m.foreign(&r) {
			continue
		}
		if r.Kind == KindContext {
			ctxs = append(ctxs, r)
		} else if e, ok := entryOf(r); ok {
			es = append(es, e)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range es {
		m.byID[e.id] = e
		m.threads[e.thread] = append(m.threads[e.thread], e)
		if e.seq >= m.nextSeq[e.thread] {
			m.nextSeq[e.thread] = e.seq + 1
		}
	}
	for _, r := range ctxs {
		// A context whose message is gone (deleted from outside) is
		// ignored: it never ranks without its message.
		if e := m.byID[r.Metadata[MetaMessage]]; e != nil && r.ID == ContextID(e.id) {
			e.ctxText = r.Text
			if md := r.Metadata[MetaEmbedding]; md != EmbeddingPending {
				e.ctxEmbedded = md
			}
		}
	}
	for _, t := range m.threads {
		slices.SortFunc(t, func(a, b *entry) int {
			if a.before(b) {
				return -1
			}
			if b.before(a) {
				return 1
			}
			return 0
		})
	}
	for _, t := range m.threads {
		for i := range t {
			m.indexLocked(t, i)
			m.dirty[t[i]] = true
		}
	}
	return nil
}

// posLocked is e's position in its thread, or -1.
func (m *mirror) posLocked(e *entry) int {
	t := m.threads[e.thread]
	i := sort.Search(len(t), func(i int) bool { return !t[i].before(e) })
	if i < len(t) && t[i] == e {
		return i
	}
	return -1
}

// addLocked inserts e (a new record) in order and indexes it and the
// neighbours whose context it changes.
func (m *mirror) addLocked(e *entry) {
	if old, ok := m.byID[e.id]; ok {
		m.removeLocked(old)
	}
	m.byID[e.id] = e
	t := m.threads[e.thread]
	i := sort.Search(len(t), func(i int) bool { return !t[i].before(e) })
	t = slices.Insert(t, i, e)
	m.threads[e.thread] = t
	if e.seq >= m.nextSeq[e.thread] {
		m.nextSeq[e.thread] = e.seq + 1
	}
	m.reindexLocked(t, i)
}

// reindexLocked re-indexes the messages whose lexical context changes when
// t[i] arrives or leaves: those within two positions, and those within
// two of the previous last message, which now counts as context (see
// lexFields).
func (m *mirror) reindexLocked(t []*entry, i int) {
	for j := max(0, i-3); j <= min(len(t)-1, i+3); j++ {
		m.indexLocked(t, j)
		// Their context windows (two positions a side) may have changed.
		m.dirty[t[j]] = true
	}
}

func (m *mirror) removeLocked(e *entry) {
	t := m.threads[e.thread]
	i := m.posLocked(e)
	delete(m.byID, e.id)
	delete(m.dirty, e)
	m.lex.Delete(e.id)
	if i < 0 {
		return
	}
	t = slices.Delete(t, i, i+1)
	m.threads[e.thread] = t
	m.reindexLocked(t, i)
}

// indexLocked (re)indexes t[i] with its neighbours as context.
func (m *mirror) indexLocked(t []*entry, i int) {
	m.lex.Put(t[i].id, m.l.lexFields(t, i)...)
}

// adjacentLocked returns the messages just before and after e in its
// thread that serve as its context: the thread's latest message is
// nobody's context (see isContext).
func (m *mirror) adjacentLocked(e *entry) []*entry {
	t := m.threads[e.thread]
	i := m.posLocked(e)
	if i < 0 {
		return nil
	}
	var out []*entry
	for _, j := range [2]int{i - 1, i + 1} {
		if isContext(t, j) {
			out = append(out, t[j])
		}
	}
	return out
}

// isContext reports whether t[j] exists and may serve as context of its
// neighbours. The thread's latest message may not: it is usually the
// question being recalled for, and as its neighbours' context it would
// lift them by matching itself. It becomes context when the next message
// arrives.
func isContext(t []*entry, j int) bool { return j >= 0 && j < len(t)-1 }

// windowLocked is the text of t[i]'s context record: the message between
// its neighbours (those that may serve as context), each neighbour cut at
// contextChars; "" when it has none.
func windowLocked(t []*entry, i int) string {
	prev, next := isContext(t, i-1), isContext(t, i+1)
	if !prev && !next {
		return ""
	}
	var b strings.Builder
	if prev {
		b.WriteString(clip(t[i-1].text, contextChars))
		b.WriteByte('\n')
	}
	b.WriteString(t[i].text)
	if next {
		b.WriteByte('\n')
		b.WriteString(clip(t[i+1].text, contextChars))
	}
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// job is one text to embed: a message, or a message's context.
type job struct {
	e    *entry
	ctx  bool
	text string
}

// jobsLocked lists up to n texts to embed with model: the messages whose
// vector is missing or from another model, and the contexts that are
// missing or out of date. A context waits until it is complete (two
// messages after its own, see isContext) unless final (the end of a
// run): the latest messages are in the visible window anyway. Oldest
// first within each thread, threads by name.
//
// Only the dirty entries are looked at (and the last two of each thread
// when final), so a Record's embedding pass costs what changed since the
// last one. An entry with nothing to do leaves the dirty set; one whose
// context waits for a later message leaves it too, since that message
// marks it again. It needs mu held for writing.
func (m *mirror) jobsLocked(model string, n int, final bool) []job {
	cands := make([]*entry, 0, len(m.dirty))
	for e := range m.dirty {
		cands = append(cands, e)
	}
	if final {
		for _, t := range m.threads {
			for j := max(0, len(t)-2); j < len(t); j++ {
				if !m.dirty[t[j]] {
					cands = append(cands, t[j])
				}
			}
		}
	}
	slices.SortFunc(cands, func(a, b *entry) int {
		if c := strings.Compare(a.thread, b.thread); c != 0 {
			return c
		}
		switch {
		case a.before(b):
			return -1
		case b.before(a):
			return 1
		}
		return 0
	})
	var out []job
	for _, e := range cands {
		if len(out) >= n {
			break
		}
		t := m.threads[e.thread]
		i := m.posLocked(e)
		if i < 0 {
			delete(m.dirty, e)
			continue
		}
		needMsg := e.embedded != model && !e.skip
		// The context of the last two messages is not complete yet:
		// the latest message becomes context when the next arrives.
		waiting := i >= len(t)-2 && !final
		w := ""
		if !waiting {
			w = windowLocked(t, i)
		}
		needCtx := w != "" && w != e.ctxSkip && (w != e.ctxText || e.ctxEmbedded != model)
		if !needMsg && !needCtx {
			delete(m.dirty, e)
			continue
		}
		if needMsg {
			out = append(out, job{e: e, text: e.text})
		}
		if len(out) < n && needCtx {
			out = append(out, job{e: e, ctx: true, text: w})
		}
	}
	return out
}

// countPending counts messages whose vector is not from model.
func (m *mirror) countPending(model string) int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := 0
	for _, e := range m.byID {
		if e.embedded != model && !e.skip {
			n++
		}
	}
	return n
}
