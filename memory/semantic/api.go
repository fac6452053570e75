package semantic

import (
	"context"
	"fmt"
	"slices"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"github.com/stratamem/strata/vectorstore"
)

// ErrScope is wrapped when a Go API call names a scope the layer cannot
// use (an empty thread for a thread-scoped layer, ...).
var ErrScope = memory.ErrScope

// scoped returns a session on the scope a Go API call names: what a run
// of that thread (or resource) would search and write. The session is
// the scope's thread's even when the layer is resource-scoped (its
// records are the resource's all the same, see scopeFilter): every
// message a write makes belongs to a thread, and the latest messages a
// search counts are the thread's. A read of a scope that names no thread
// has none: no conversation is going on in it. A run id says the session
// writes.
func (l *Layer) scoped(ctx context.Context, scope vectorstore.Scope, run string) (*session, error) {
	r, err := layerkit.Run(l.o.ID, l.o.Scope, scope)
	if err != nil {
		return nil, err
	}
	r.RunID = run
	r.ThreadID = scope.Thread
	s := l.newSession(r)
	if r.ThreadID == "" && run == "" {
		return s, nil
	}
	if err := s.loadTail(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Search ranks the messages of a scope (a thread, with its resource, or a
// resource, as the layer is scoped) for query and returns the k best: the
// ranking recall uses, with the same checks as State.Search. It reads the
// store, so it sees the messages of every session; a message a running
// session has not embedded yet ranks by its words only.
//
// The conversation a search is part of is the scope's thread: the
// speaker and date priors read who and when the question is about from
// the candidates and the thread's latest messages. A scope with a thread
// ranks as State.Search of a new session of that thread does, with the
// latest messages stored in it; a scope with no thread (a resource, for
// a resource-scoped layer) ranks with none, as State.Search of a session
// of a new thread of the resource does. The latest messages of the
// resource's other threads never count.
func (l *Layer) Search(ctx context.Context, scope vectorstore.Scope, query string, opts SearchOptions) ([]Hit, error) {
	s, err := l.scoped(ctx, scope, "")
	if err != nil {
		return nil, err
	}
	return s.searchWith(ctx, query, opts)
}

// List returns the messages stored in a scope, in thread order (threads
// by id), with a zero Score.
func (l *Layer) List(ctx context.Context, scope vectorstore.Scope) ([]Hit, error) {
	s, err := l.scoped(ctx, scope, "")
	if err != nil {
		return nil, err
	}
	var es []*entry
	for r, err := range l.store.Records.All(ctx, vectorstore.ListOptions{Filter: s.scopeFilter(), Limit: vectorstore.MaxListLimit}) {
		if err != nil {
			return nil, fmt.Errorf("semantic: list: %w", err)
		}
		if s.foreign(&r) {
			continue
		}
		if e, ok := entryOf(r); ok {
			es = append(es, e)
		}
	}
	slices.SortFunc(es, func(a, b *entry) int {
		if a.thread != b.thread {
			if a.thread < b.thread {
				return -1
			}
			return 1
		}
		return a.compare(b)
	})
	out := make([]Hit, len(es))
	for i, e := range es {
		out[i] = hitOf(e)
	}
	return out, nil
}

// Put records messages in a scope (for a resource-scoped layer, in the
// scope's thread) through the path of the messages a session appends:
// the same roles (Options.Roles; other items are skipped), text cleaning
// and ids. A message with an item id is the record of that id, so putting
// it again keeps its record; one without is keyed by its position in the
// call, role and text. The messages are embedded before Put returns.
func (l *Layer) Put(ctx context.Context, scope vectorstore.Scope, msgs ...core.Item) error {
	s, err := l.scoped(ctx, scope, "put")
	if err != nil {
		return err
	}
	for i, it := range msgs {
		if err := s.add(ctx, s.run, it, i); err != nil {
			return err
		}
	}
	return s.flush(ctx)
}

// Delete removes the messages with these record ids (Hit.ID) from a
// scope, with their context records, and returns how many messages it
// removed; an id the scope does not hold is skipped. A running session
// forgets a deleted message before its next embedding pass, so its words
// do not come back through a neighbour's document.
func (l *Layer) Delete(ctx context.Context, scope vectorstore.Scope, ids ...string) (int, error) {
	s, err := l.scoped(ctx, scope, "")
	if err != nil {
		return 0, err
	}
	n, err := layerkit.Delete(ctx, l.store.Records, s.scopeFilter(), ids)
	if err != nil {
		return n, fmt.Errorf("semantic: delete: %w", err)
	}
	ctxIDs := make([]string, len(ids))
	for i, id := range ids {
		ctxIDs[i] = ContextID(id)
	}
	f := s.scopeFilter()
	f.Kind = KindContext
	if _, err := layerkit.Delete(ctx, l.store.Records, f, ctxIDs); err != nil {
		return n, fmt.Errorf("semantic: delete: %w", err)
	}
	return n, nil
}
