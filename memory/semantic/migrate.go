package semantic

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/lexical"
	"github.com/stratamem/strata/vectorstore"
)

// upgrade gives the scope's messages written before the layer stored
// lexical documents (versions that kept a BM25 index in memory) their
// documents and neighbour links, once: a scope whose term index holds
// fewer documents than it has messages is rewritten thread by thread,
// vectors and context records kept. A scope that is up to date costs two
// counts, made once per scope and process.
func (l *Layer) upgrade(ctx context.Context, s *session) error {
	f := s.scopeFilter()
	key := f.Layer + "\x1f" + f.Resource + "\x1f" + f.Thread
	if _, ok := l.upgraded.Load(key); ok {
		return nil
	}
	n, err := l.store.Records.Count(ctx, f)
	if err != nil {
		return fmt.Errorf("semantic: count messages: %w", err)
	}
	if n > 0 {
		// A term no analysis yields: the answer is the corpus' statistics.
		res, err := l.store.Records.SearchTerms(ctx, vectorstore.TermOptions{Terms: map[string]float64{"\x01": 1}, K: 1, Filter: f})
		if err != nil {
			return fmt.Errorf("semantic: read the scope's lexical index: %w", err)
		}
		if res.Docs < n {
			if err := l.reindex(ctx, f); err != nil {
				return err
			}
		}
	}
	l.upgraded.Store(key, true)
	return nil
}

// Reindex rewrites the lexical documents, neighbour links and context
// records of the messages that filter selects (with the layer's id as
// Layer), thread by thread, keeping their vectors (a context's vector is
// computed from its messages', no model is called): what a tool that deleted or edited
// messages calls for the threads it touched, since a message's document
// holds its neighbours' words. Select whole threads (Thread and
// Resource): the documents are built from the selected messages only.
func (l *Layer) Reindex(ctx context.Context, filter vectorstore.Filter) error {
	filter.Layer, filter.Kind = l.o.ID, KindMessage
	return l.reindex(ctx, filter)
}

// ReindexThread is Reindex for a tool that holds the collection but no
// layer (memctl): the messages of one thread of the semantic layer
// layerID, with the default Ranking's context weight (a layer configured
// with another ContextWeight calls its own Reindex).
func ReindexThread(ctx context.Context, col *vectorstore.Collection, layerID, resource, thread string) error {
	o, err := Options{Common: memory.Common{ID: layerID}}.resolve()
	if err != nil {
		return err
	}
	l := &Layer{o: o, store: &memory.Store{Records: col}, an: lexical.DefaultAnalyzer()}
	return l.Reindex(ctx, vectorstore.Filter{Resource: resource, Thread: thread})
}

func (l *Layer) reindex(ctx context.Context, f vectorstore.Filter) error {
	threads := map[string][]vectorstore.Record{}
	for r, err := range l.store.Records.All(ctx, vectorstore.ListOptions{Filter: f, Limit: vectorstore.MaxListLimit, WithVectors: true}) {
		if err != nil {
			return fmt.Errorf("semantic: reindex: %w", err)
		}
		if IsMessage(r) {
			k := r.Scope.Resource + "\x1f" + r.Scope.Thread
			threads[k] = append(threads[k], r)
		}
	}
	keys := make([]string, 0, len(threads))
	for k := range threads {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		recs := threads[k]
		slices.SortFunc(recs, CompareMessages)
		es := make([]*entry, len(recs))
		for i, r := range recs {
			es[i], _ = entryOf(r)
		}
		out := make([]vectorstore.Record, 0, 2*len(recs))
		for i, r := range recs {
			// The context record, from the window's message vectors.
			if md := r.Metadata[MetaEmbedding]; md != EmbeddingPending && !strings.HasPrefix(md, EmbeddingRejected) {
				if w := windowText(es, i); w != "" {
					var parts [][]float32
					for _, k := range [3]int{i - 1, i, i + 1} {
						if (k == i || isContext(es, k)) && recs[k].Metadata[MetaEmbedding] == md {
							parts = append(parts, recs[k].Vector)
						}
					}
					if v := normalisedSum(parts); v != nil {
						c := contextRecord(es[i], l.o.ID, w, md)
						c.Vector = v
						out = append(out, c)
					}
				}
			}
			r.Terms = l.document(es, i)
			// A thread's latest message is nobody's context: it is the
			// document of the others that leaves it out, not its own.
			delete(r.Metadata, MetaPrev)
			delete(r.Metadata, MetaNext)
			if i > 0 {
				r.Metadata[MetaPrev] = recs[i-1].ID
			}
			if i+1 < len(recs) {
				r.Metadata[MetaNext] = recs[i+1].ID
			}
			out = append(out, r)
		}
		for lo := 0; lo < len(out); lo += 500 {
			if err := l.store.Records.Upsert(ctx, out[lo:min(len(out), lo+500)]...); err != nil {
				return fmt.Errorf("semantic: reindex: %w", err)
			}
		}
	}
	return nil
}
