package semantic

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/vectorstore"
)

// embedPending embeds up to limit pending texts (messages and contexts,
// see jobsLocked) and the extra texts in one batched pass (split into
// calls of EmbedBatch texts), writes the vectors to the collection and
// returns the extra texts' vectors. wait says whether to wait for an
// embedding pass already running; when it does not, only the extra texts
// are embedded. final also embeds the context of each thread's latest
// message.
func (m *mirror) embedPending(ctx context.Context, limit int, wait, final bool, extra ...string) ([][]float32, error) {
	em := m.l.store.Embedder
	model := em.Model()
	var locked bool
	if wait {
		m.embedMu.Lock()
		locked = true
	} else {
		locked = m.embedMu.TryLock()
	}
	if locked {
		defer m.embedMu.Unlock()
	}
	var jobs []job
	if locked && limit > 0 && m.run.ParentRunID == "" {
		m.mu.Lock()
		jobs = m.jobsLocked(model, limit, final)
		m.mu.Unlock()
	}
	texts := make([]string, 0, len(jobs)+len(extra))
	for _, j := range jobs {
		texts = append(texts, j.text)
	}
	texts = append(texts, extra...)
	if len(texts) == 0 {
		return nil, nil
	}
	vecs := make([][]float32, 0, len(texts))
	for lo := 0; lo < len(texts); {
		hi := min(len(texts), lo+m.l.o.EmbedBatch)
		v, err := em.Embed(ctx, texts[lo:hi])
		var ie *embed.InputError
		if errors.As(err, &ie) && ie.Index >= 0 && lo+ie.Index < len(jobs) {
			// A text the model cannot embed (nothing it can tokenise):
			// it stays lexical-only instead of failing every later
			// pass; the rest of the batch is retried without it.
			k := lo + ie.Index
			m.mu.Lock()
			if jobs[k].ctx {
				jobs[k].e.ctxSkip = jobs[k].text
			} else {
				jobs[k].e.skip = true
			}
			m.mu.Unlock()
			jobs = slices.Delete(jobs, k, k+1)
			texts = slices.Delete(texts, k, k+1)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("semantic: embed %d text(s) with %s: %w", hi-lo, model, err)
		}
		if len(v) != hi-lo {
			return nil, fmt.Errorf("semantic: embedder %s returned %d vectors for %d texts", model, len(v), hi-lo)
		}
		vecs = append(vecs, v...)
		lo = hi
	}
	if len(jobs) > 0 {
		if err := m.writeEmbedded(ctx, model, jobs, vecs[:len(jobs)]); err != nil {
			return nil, err
		}
	}
	return vecs[len(jobs):], nil
}

// writeEmbedded writes the embedded messages (replacing their pending
// records) and contexts, then marks the entries done.
//
// A message deleted from the collection by someone else since this
// session loaded it (memctl rm, another session's host erasing a user) must
// not come back: the upsert would re-create it, or a neighbour's context
// would quote it. So the messages of the jobs, and those their contexts
// quote, are first looked up by id; those that are gone leave the mirror and
// the lexical index, their own context record is deleted, and a context
// whose text no longer matches its window (it quoted a message that is
// gone, or a neighbour arrived meanwhile) is not written: the next pass
// embeds the current window. A message appended by this session is
// unaffected: onItemAppend stored it before it became a job.
func (m *mirror) writeEmbedded(ctx context.Context, model string, jobs []job, vecs [][]float32) error {
	// The messages the texts quote: each job's message and, for a
	// context, the neighbours in its window.
	quoted := map[string]*entry{}
	m.mu.RLock()
	for _, j := range jobs {
		quoted[j.e.id] = j.e
		if j.ctx {
			for _, nb := range m.adjacentLocked(j.e) {
				quoted[nb.id] = nb
			}
		}
	}
	m.mu.RUnlock()
	gone, err := m.deletedEntries(ctx, quoted)
	if err != nil {
		return err
	}
	layer := m.l.o.ID
	recs := make([]vectorstore.Record, 0, len(jobs))
	done := make([]bool, len(jobs))
	var orphans []string
	m.mu.Lock()
	for _, e := range gone {
		if m.byID[e.id] == e {
			m.removeLocked(e)
			orphans = append(orphans, ContextID(e.id))
		}
	}
	for i, j := range jobs {
		if m.byID[j.e.id] != j.e {
			continue // replaced or removed meanwhile
		}
		if j.ctx {
			t := m.threads[j.e.thread]
			if p := m.posLocked(j.e); p < 0 || windowLocked(t, p) != j.text {
				continue // its neighbours changed: embedded again next pass
			}
		}
		done[i] = true
		if j.ctx {
			recs = append(recs, j.e.contextRecord(layer, j.text, vecs[i], model))
		} else {
			recs = append(recs, j.e.record(layer, vecs[i], model))
		}
	}
	m.mu.Unlock()
	if len(orphans) > 0 {
		// The context quotes the deleted message: it goes too.
		if err := m.l.store.Records.Delete(ctx, orphans...); err != nil {
			return fmt.Errorf("semantic: delete contexts of deleted messages: %w", err)
		}
	}
	if len(recs) > 0 {
		if err := m.l.store.Records.Upsert(ctx, recs...); err != nil {
			return fmt.Errorf("semantic: store embedded messages: %w", err)
		}
	}
	m.mu.Lock()
	for i, j := range jobs {
		switch {
		case !done[i]:
		case j.ctx:
			j.e.ctxText, j.e.ctxEmbedded = j.text, model
		default:
			j.e.embedded = model
		}
	}
	m.mu.Unlock()
	return nil
}

// deletedEntries returns the entries whose message record is no longer in
// the collection. It is called without mu held: the lookup is I/O.
func (m *mirror) deletedEntries(ctx context.Context, es map[string]*entry) ([]*entry, error) {
	ids := make([]string, 0, len(es))
	for id := range es {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	found := make(map[string]bool, len(ids))
	for lo := 0; lo < len(ids); lo += vectorstore.MaxListLimit {
		chunk := ids[lo:min(len(ids), lo+vectorstore.MaxListLimit)]
		recs, _, err := m.l.store.Records.List(ctx, vectorstore.ListOptions{
			Filter: vectorstore.Filter{Layer: m.l.o.ID, Kind: KindMessage, IDs: chunk}, Limit: len(chunk)})
		if err != nil {
			return nil, fmt.Errorf("semantic: look up messages before storing their vectors: %w", err)
		}
		for _, r := range recs {
			found[r.ID] = true
		}
	}
	var gone []*entry
	for _, id := range ids {
		if !found[id] {
			gone = append(gone, es[id])
		}
	}
	return gone, nil
}

// flush embeds everything pending, contexts of the latest messages
// included, in batches.
func (m *mirror) flush(ctx context.Context) error {
	model := m.l.store.Embedder.Model()
	for {
		m.mu.Lock()
		n := len(m.jobsLocked(model, 1, true))
		m.mu.Unlock()
		if n == 0 || m.run.ParentRunID != "" {
			return nil
		}
		if _, err := m.embedPending(ctx, m.l.o.EmbedBatch, true, true); err != nil {
			return err
		}
	}
}

// queryVector embeds the query, with up to EmbedBatch pending texts in
// the same pass. The last query's vector is reused.
func (m *mirror) queryVector(ctx context.Context, query string) ([]float32, error) {
	model := m.l.store.Embedder.Model()
	m.qmu.Lock()
	if m.qvec != nil && m.qtext == query && m.qmodel == model {
		v := m.qvec
		m.qmu.Unlock()
		// Still give pending messages their vectors before ranking.
		if _, err := m.embedPending(ctx, m.l.o.EmbedBatch, false, false); err != nil {
			return nil, err
		}
		return v, nil
	}
	m.qmu.Unlock()
	vs, err := m.embedPending(ctx, m.l.o.EmbedBatch, false, false, query)
	if err != nil {
		return nil, err
	}
	m.qmu.Lock()
	m.qtext, m.qvec, m.qmodel = query, vs[0], model
	m.qmu.Unlock()
	return vs[0], nil
}
