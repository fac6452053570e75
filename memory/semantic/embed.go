package semantic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/vectorstore"
)

// EmbeddingRejected prefixes the embedding metadata of a message whose
// text the embedder (named after the colon) rejected: it stays
// lexical-only instead of failing every later pass, and is tried again
// by another model.
const EmbeddingRejected = "rejected:"

// job is one message to embed: the session's own (e set, its place in
// recent known) or a pending record found in the collection (rec set),
// left by a session that stopped before embedding it.
type job struct {
	e   *entry
	rec *vectorstore.Record
	// final is the message record to write, without its vector; ctx the
	// context record ("" Text when the message has no context yet).
	final vectorstore.Record
	ctx   vectorstore.Record
	// window are the messages whose vectors make the context's: the
	// message and its neighbours that serve as context.
	window []*entry
}

// readyLocked lists up to n of the session's pending messages whose
// context is complete: the two messages after each exist and are not
// the thread's latest (the latest is nobody's context, see isContext);
// with final, every pending message. Oldest first. It needs mu.
func (s *session) readyLocked(n int, final bool) []job {
	var out []job
	last := len(s.recent) - 1
	model := s.l.store.Embedder.Model()
	for i, e := range s.recent {
		if len(out) >= n {
			break
		}
		if !s.pending[e] || (!final && i+contextSpan >= last) {
			continue
		}
		fin := *e
		fin.terms = s.l.document(s.recent, i)
		fin.next = ""
		if i < last {
			fin.next = s.recent[i+1].id
		}
		j := job{e: e, final: fin.record(s.l.o.ID, nil, model)}
		if w := windowText(s.recent, i); w != "" {
			j.ctx = contextRecord(&fin, s.l.o.ID, w, model)
			for _, k := range [3]int{i - 1, i, i + 1} {
				if k == i || isContext(s.recent, k) {
					j.window = append(j.window, s.recent[k])
				}
			}
		}
		out = append(out, j)
	}
	return out
}

// embedPending runs one embedding pass: up to limit of the session's own
// pending messages (see readyLocked) and, with orphans, pending records
// of the scope that no session holds any more; it writes their vectors
// and returns the number of messages embedded. wait says whether to wait
// for a pass already running (else it returns 0 at once).
func (s *session) embedPending(ctx context.Context, limit int, final, orphans bool) (int, error) {
	if s.run.ParentRunID != "" {
		return 0, nil
	}
	s.embedMu.Lock()
	defer s.embedMu.Unlock()
	if err := s.dropDeleted(ctx); err != nil {
		return 0, err
	}
	s.mu.Lock()
	jobs := s.readyLocked(limit, final)
	s.mu.Unlock()
	model := s.l.store.Embedder.Model()
	if orphans && len(jobs) < limit {
		found, err := s.orphans(ctx, limit-len(jobs), jobs)
		if err != nil {
			return 0, err
		}
		jobs = append(jobs, found...)
	}
	if len(jobs) == 0 {
		return 0, nil
	}
	// Each message's text is embedded once: the jobs' messages and the
	// neighbours their contexts need, unless this session has their
	// vector already. A context's vector is computed from its messages'
	// (their normalised sum): measured on the retrieval benchmark, it
	// ranks like the embedding of the window's text (hybrid R@10 within
	// 0.003 pooled) at a third of the model's time.
	var need []*entry
	needed := map[*entry]bool{}
	want := func(e *entry) {
		if e != nil && !needed[e] && (e.vec == nil || e.vecModel != model) && !e.rejected(model) {
			needed[e] = true
			need = append(need, e)
		}
	}
	s.mu.Lock()
	for _, j := range jobs {
		want(j.e)
		for _, w := range j.window {
			want(w)
		}
	}
	s.mu.Unlock()
	var texts []string
	for _, e := range need {
		texts = append(texts, e.text)
	}
	for _, j := range jobs {
		if j.e == nil {
			texts = append(texts, j.final.Text)
		}
	}
	vecs, rejected, err := s.embedTexts(ctx, texts)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	for i, e := range need {
		if rejected[i] {
			e.vec, e.vecModel, e.rejectedBy = nil, "", model
		} else {
			e.vec, e.vecModel = vecs[i], model
		}
	}
	k := len(need)
	for i := range jobs {
		j := &jobs[i]
		var v []float32
		if j.e != nil {
			v = j.e.vec
		} else {
			if !rejected[k] {
				v = vecs[k]
			}
			k++
		}
		if v == nil {
			j.final.Vector = s.l.placeholder
			j.final.Metadata[MetaEmbedding] = EmbeddingRejected + model
			j.ctx = vectorstore.Record{}
			continue
		}
		j.final.Vector = v
		if j.ctx.Text != "" {
			var parts [][]float32
			for _, w := range j.window {
				if w.vec != nil && w.vecModel == model {
					parts = append(parts, w.vec)
				}
			}
			j.ctx.Vector = normalisedSum(parts)
			if j.ctx.Vector == nil {
				j.ctx = vectorstore.Record{}
			}
		}
	}
	s.mu.Unlock()
	if err := s.writeEmbedded(ctx, jobs); err != nil {
		return 0, err
	}
	return len(jobs), nil
}

// normalisedSum is the unit vector along the sum of vs; nil when there is
// none or the sum is zero.
func normalisedSum(vs [][]float32) []float32 {
	if len(vs) == 0 {
		return nil
	}
	sum := make([]float64, len(vs[0]))
	for _, v := range vs {
		for i, x := range v {
			sum[i] += float64(x)
		}
	}
	var n float64
	for _, x := range sum {
		n += x * x
	}
	if n == 0 {
		return nil
	}
	n = math.Sqrt(n)
	out := make([]float32, len(sum))
	for i, x := range sum {
		out[i] = float32(x / n)
	}
	return out
}

// dropDeleted looks the thread's latest messages up by id and forgets
// those deleted from the collection by someone else: the records a pass
// writes quote their neighbours (the lexical document, the context
// record), and a deleted message's words must not come back that way.
// The messages after one that is gone are linked to the one before it.
func (s *session) dropDeleted(ctx context.Context) error {
	s.mu.Lock()
	var ids []string
	for _, e := range s.recent {
		if !s.isUnstored(e) {
			ids = append(ids, e.id)
		}
	}
	s.mu.Unlock()
	present, err := s.present(ctx, ids)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < len(s.recent); {
		e := s.recent[i]
		if s.isUnstored(e) || present[e.id] {
			i++
			continue
		}
		delete(s.pending, e)
		s.recent = slices.Delete(s.recent, i, i+1)
		if i < len(s.recent) {
			s.recent[i].prev = e.prev
			if i > 0 {
				s.recent[i].prev = s.recent[i-1].id
			}
		}
	}
	return nil
}

// present reports which of the message records ids exist.
func (s *session) present(ctx context.Context, ids []string) (map[string]bool, error) {
	es, err := s.fetch(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(es))
	for id := range es {
		out[id] = true
	}
	return out, nil
}

// embedTexts embeds texts in calls of EmbedBatch. A text the model cannot
// embed (nothing it can tokenise) is marked rejected, with a nil vector,
// and the rest of its batch is retried without it.
func (s *session) embedTexts(ctx context.Context, texts []string) ([][]float32, []bool, error) {
	em := s.l.store.Embedder
	vecs := make([][]float32, len(texts))
	rejected := make([]bool, len(texts))
	idx := make([]int, 0, len(texts)) // positions still to embed
	for i := range texts {
		idx = append(idx, i)
	}
	for len(idx) > 0 {
		chunk := idx[:min(len(idx), s.l.o.EmbedBatch)]
		batch := make([]string, len(chunk))
		for i, p := range chunk {
			batch[i] = texts[p]
		}
		v, err := em.Embed(ctx, batch)
		var ie *embed.InputError
		if errors.As(err, &ie) && ie.Index >= 0 && ie.Index < len(chunk) {
			p := chunk[ie.Index]
			rejected[p] = true
			idx = slices.DeleteFunc(idx, func(q int) bool { return q == p })
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("semantic: embed %d text(s) with %s: %w", len(batch), em.Model(), err)
		}
		if len(v) != len(batch) {
			return nil, nil, fmt.Errorf("semantic: embedder %s returned %d vectors for %d texts", em.Model(), len(v), len(batch))
		}
		for i, p := range chunk {
			vecs[p] = v[i]
		}
		idx = idx[len(chunk):]
	}
	return vecs, rejected, nil
}

// orphans finds up to n pending message records of the scope that are
// not the session's own (skip): a session that stopped before embedding
// them wrote them. They are embedded as stored (their lexical document
// and links stay), without a context record.
func (s *session) orphans(ctx context.Context, n int, skip []job) ([]job, error) {
	mine := make(map[string]bool, len(skip))
	for _, j := range skip {
		mine[j.final.ID] = true
	}
	s.mu.Lock()
	for e := range s.pending {
		mine[e.id] = true
	}
	s.mu.Unlock()
	f := s.scopeFilter()
	f.Metadata = map[string]string{MetaEmbedding: EmbeddingPending}
	recs, _, err := s.l.store.Records.List(ctx, vectorstore.ListOptions{Filter: f, Limit: min(vectorstore.MaxListLimit, n+len(mine))})
	if err != nil {
		return nil, fmt.Errorf("semantic: list messages pending their embedding: %w", err)
	}
	model := s.l.store.Embedder.Model()
	var out []job
	for i := range recs {
		r := recs[i]
		if mine[r.ID] || s.foreign(&r) || !IsMessage(r) || len(out) >= n {
			continue
		}
		r.Metadata[MetaEmbedding] = model
		out = append(out, job{rec: &recs[i], final: r})
	}
	return out, nil
}

// writeEmbedded writes the embedded messages (replacing their pending
// records) and their contexts, then marks the session's messages done.
//
// A message deleted from the collection by someone else meanwhile
// (memctl rm, a host erasing a user) must not come back: the upsert would
// re-create it. So the messages are first looked up by id; those that
// are gone are not written and leave the session.
func (s *session) writeEmbedded(ctx context.Context, jobs []job) error {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.final.ID
	}
	present, err := s.present(ctx, ids)
	if err != nil {
		return err
	}
	recs := make([]vectorstore.Record, 0, 2*len(jobs))
	var gone []*entry
	for _, j := range jobs {
		if !present[j.final.ID] {
			if j.e != nil {
				gone = append(gone, j.e)
			}
			continue
		}
		recs = append(recs, j.final)
		if j.ctx.Text != "" {
			recs = append(recs, j.ctx)
		}
	}
	if len(recs) > 0 {
		if err := s.l.store.Records.Upsert(ctx, recs...); err != nil {
			return fmt.Errorf("semantic: store embedded messages: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range jobs {
		if j.e == nil {
			continue
		}
		delete(s.pending, j.e)
		if present[j.final.ID] {
			j.e.terms, j.e.next = j.final.Terms, j.final.Metadata[MetaNext]
			j.e.embedded = j.final.Metadata[MetaEmbedding]
		}
	}
	for _, e := range gone {
		if i := slices.Index(s.recent, e); i >= 0 {
			s.recent = slices.Delete(s.recent, i, i+1)
		}
	}
	s.trimLocked()
	return nil
}

// Reembed gives a vector from the current embedder to every message (and
// context record) of the session's scope embedded by another model, and
// returns how many records it rewrote. Until then those messages are
// ranked by words only. It reads the whole scope: call it once after
// changing the embedding model, not per turn.
func (s State) Reembed(ctx context.Context) (int, error) {
	if s.s == nil {
		return 0, ErrNotInitialised
	}
	ss := s.s
	ss.embedMu.Lock()
	defer ss.embedMu.Unlock()
	model := ss.l.store.Embedder.Model()
	f := ss.scopeFilter()
	f.Kind = ""
	var todo []vectorstore.Record
	for r, err := range ss.l.store.Records.All(ctx, vectorstore.ListOptions{Filter: f, Limit: vectorstore.MaxListLimit}) {
		if err != nil {
			return 0, fmt.Errorf("semantic: reembed: %w", err)
		}
		switch md := r.Metadata[MetaEmbedding]; {
		case ss.foreign(&r), md == model, md == EmbeddingPending, md == EmbeddingRejected+model:
		case r.Kind == KindMessage || r.Kind == KindContext:
			todo = append(todo, r)
		}
	}
	n := 0
	for lo := 0; lo < len(todo); lo += ss.l.o.EmbedBatch {
		batch := todo[lo:min(len(todo), lo+ss.l.o.EmbedBatch)]
		texts := make([]string, len(batch))
		for i, r := range batch {
			texts[i] = r.Text
		}
		vecs, rejected, err := ss.embedTexts(ctx, texts)
		if err != nil {
			return n, err
		}
		out := make([]vectorstore.Record, 0, len(batch))
		for i, r := range batch {
			r.Vector, r.Metadata[MetaEmbedding] = vecs[i], model
			if rejected[i] {
				r.Vector, r.Metadata[MetaEmbedding] = ss.l.placeholder, EmbeddingRejected+model
			}
			out = append(out, r)
		}
		if err := ss.l.store.Records.Upsert(ctx, out...); err != nil {
			return n, fmt.Errorf("semantic: reembed: %w", err)
		}
		n += len(out)
	}
	return n, nil
}

// flush embeds every pending message of the session, and those the
// scope's stopped sessions left, in batches.
func (s *session) flush(ctx context.Context) error {
	for {
		n, err := s.embedPending(ctx, s.l.o.EmbedBatch, true, true)
		if err != nil || n == 0 {
			return err
		}
	}
}

// queryVector embeds the query; the last query's vector is reused.
func (s *session) queryVector(ctx context.Context, query string) ([]float32, error) {
	em := s.l.store.Embedder
	model := em.Model()
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if s.qvec != nil && s.qtext == query && s.qmodel == model {
		return s.qvec, nil
	}
	vs, err := em.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("semantic: embed the query with %s: %w", model, err)
	}
	if len(vs) != 1 {
		return nil, fmt.Errorf("semantic: embedder %s returned %d vectors for 1 text", model, len(vs))
	}
	s.qtext, s.qvec, s.qmodel = query, vs[0], model
	return vs[0], nil
}

// isContext reports whether t[j] exists and may serve as context of its
// neighbours. The thread's latest message may not: it is usually the
// question being recalled for, and as its neighbours' context it would
// lift them by matching itself. It becomes context when the next message
// arrives.
func isContext(t []*entry, j int) bool { return j >= 0 && j < len(t)-1 }

// windowText is the text of t[i]'s context record: the message between
// its neighbours (those that may serve as context), each neighbour cut
// at contextChars; "" when it has none.
func windowText(t []*entry, i int) string {
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

// contextChars caps each neighbour in a context record's text, so the
// message itself stays inside what the embedding model reads.
const contextChars = 300

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

// contextRecord is e's context record for the window text win.
func contextRecord(e *entry, layer, win, model string) vectorstore.Record {
	return vectorstore.Record{
		ID: ContextID(e.id), Layer: layer, Kind: KindContext,
		Scope:     vectorstore.Scope{Thread: e.thread, Resource: e.res},
		Text:      win,
		Metadata:  map[string]string{MetaMessage: e.id, MetaEmbedding: model, MetaRole: string(e.role)},
		CreatedAt: e.created,
	}
}
