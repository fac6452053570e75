package environment

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
)

// The semantic layer (memory/semantic) keeps, next to each message record,
// a derived context record (id "<message id>/context", Kind "context",
// metadata message = the message's id) whose text is the message between
// the messages just before and after it in its thread, and gives each
// message a lexical document (Record.Terms) holding its neighbours' words.
// A message's text is therefore also in its own context record and in its
// two neighbours', and its words in the documents of the messages around
// it: deleting or rewriting the message takes the context records along
// and rebuilds the thread's documents (semantic.ReindexThread), or a text
// search goes on finding the old text. Forget does both; a host that
// rewrites a message calls QuotingContexts and ReindexThreads itself.

// ReindexThreads rebuilds the lexical documents of the threads of the
// semantic messages among msgs (semantic.ReindexThread), once per thread.
func ReindexThreads(ctx context.Context, c *vectorstore.Collection, msgs []vectorstore.Record) error {
	type key struct{ layer, resource, thread string }
	seen := map[key]bool{}
	var keys []key
	for i := range msgs {
		r := &msgs[i]
		k := key{r.Layer, r.Scope.Resource, r.Scope.Thread}
		if IsSemanticMessage(r) && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		return strings.Compare(a.layer+"\x1f"+a.resource+"\x1f"+a.thread, b.layer+"\x1f"+b.resource+"\x1f"+b.thread)
	})
	for _, k := range keys {
		if err := semantic.ReindexThread(ctx, c, k.layer, k.resource, k.thread); err != nil {
			return fmt.Errorf("rebuild the lexical documents of thread %q of layer %q: %w", k.thread, k.layer, err)
		}
	}
	return nil
}

// IsSemanticMessage reports whether r is a message record of a semantic
// layer, whatever its layer id: a message the layer can read, in a thread.
func IsSemanticMessage(r *vectorstore.Record) bool {
	return semantic.IsMessage(*r) && r.Scope.Thread != ""
}

// QuotingContexts returns the stored context records that quote the
// semantic messages among msgs: each message's own and those of the
// messages just before and after it in its thread, except the ids in skip
// (deleted anyway). Other records of msgs are ignored.
func QuotingContexts(ctx context.Context, c *vectorstore.Collection, msgs []vectorstore.Record, skip map[string]bool) ([]vectorstore.Record, error) {
	type threadKey struct{ layer, thread string }
	threads := map[threadKey][]vectorstore.Record{}
	owner := map[string]string{} // context id -> its message's id
	var order []string
	want := func(msgID string) {
		id := semantic.ContextID(msgID)
		if _, ok := owner[id]; !ok && !skip[id] {
			owner[id] = msgID
			order = append(order, id)
		}
	}
	for i := range msgs {
		r := &msgs[i]
		if !IsSemanticMessage(r) {
			continue
		}
		want(r.ID)
		k := threadKey{r.Layer, r.Scope.Thread}
		t, ok := threads[k]
		if !ok {
			var err error
			if t, err = threadMessages(ctx, c, k.layer, k.thread); err != nil {
				return nil, err
			}
			threads[k] = t
		}
		j := slices.IndexFunc(t, func(m vectorstore.Record) bool { return m.ID == r.ID })
		if j < 0 {
			continue
		}
		if j > 0 {
			want(t[j-1].ID)
		}
		if j+1 < len(t) {
			want(t[j+1].ID)
		}
	}
	var out []vectorstore.Record
	for lo := 0; lo < len(order); lo += 1000 {
		chunk := order[lo:min(lo+1000, len(order))]
		byID, err := RecordsByID(ctx, c, chunk, false)
		if err != nil {
			return nil, err
		}
		for _, id := range chunk {
			// Only the layer's own derived record: same id scheme, kind
			// and back link.
			if r, ok := byID[id]; ok && r.Kind == semantic.KindContext && r.Metadata[semantic.MetaMessage] == owner[id] {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// threadMessages lists the semantic messages of one layer's thread in the
// layer's own order (semantic.CompareMessages).
func threadMessages(ctx context.Context, c *vectorstore.Collection, layer, thread string) ([]vectorstore.Record, error) {
	var t []vectorstore.Record
	f := vectorstore.Filter{Layer: layer, Thread: thread, Kind: semantic.KindMessage}
	for r, err := range c.All(ctx, vectorstore.ListOptions{Filter: f, Limit: 1000}) {
		if err != nil {
			return nil, err
		}
		if IsSemanticMessage(&r) {
			t = append(t, r)
		}
	}
	slices.SortFunc(t, semantic.CompareMessages)
	return t, nil
}

// RecordsByID reads the records of c with these ids (at most
// vectorstore.MaxListLimit), by id.
func RecordsByID(ctx context.Context, c *vectorstore.Collection, ids []string, vectors bool) (map[string]vectorstore.Record, error) {
	recs, _, err := c.List(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{IDs: ids}, Limit: len(ids), WithVectors: vectors})
	if err != nil {
		return nil, err
	}
	out := make(map[string]vectorstore.Record, len(recs))
	for _, r := range recs {
		out[r.ID] = r
	}
	return out, nil
}
