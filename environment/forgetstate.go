package environment

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

// threadPlan is one thread of a resource (or Legacy) deletion.
type threadPlan struct {
	thread string
	// others are the other resources whose records are on the thread.
	others []string
	// legacy are the thread's records without a resource that match the
	// filters: deleted when owned, reported when not.
	legacy []vectorstore.Record
	// owner is the resource the runtime bound the thread to, when bound.
	owner string
	bound bool
	// owned says the thread's legacy data is the deletion's: its legacy
	// records and its state under the thread id alone go. why and reason
	// say why not.
	owned       bool
	why, reason string
	// dropBinding says the binding key goes too (whole deletions of an
	// owned thread; Legacy only for a thread bound to no resource).
	dropBinding bool
	// stateOnly says no record links the thread to the resource: it was
	// found through its state (see statePlan.stateThreads).
	stateOnly bool
}

// statePlan is what a deletion deletes from the state store: for a
// resource, every key of resource/R, of the threads' scopes
// thread/ThreadScopeID(R, T) and of the legacy scopes thread/T of the
// threads whose legacy data is R's, or, when other filters narrow it, only
// the threads' recorded assemblies; for Legacy, the thread's legacy scope.
type statePlan struct {
	resource string
	threads  []*threadPlan
	whole    bool // every key of the scopes, not only the assemblies
	// resourceScope says resource/R goes (a whole deletion of R, not
	// narrowed to a thread).
	resourceScope bool
	legacy        bool

	st   storage.Store
	name string
	what string
	// stateScopes are the thread scopes of the resource found in the state
	// store whose thread no record links to it. Their keys go last, after
	// the bindings: they are what links those threads to the resource.
	stateScopes []string
	// keys are listed for the dry run; bindings are the threads' binding
	// keys, then the keys of stateScopes, deleted after the legacy records.
	keys, bindings []storage.Key
	// left counts, by thread, the legacy keys of threads not owned.
	left map[string]int
	err  *ForgetStateError
}

func (sp *statePlan) refuse(err error) { sp.err = &ForgetStateError{What: sp.what, Err: err} }

func (sp *statePlan) threadNames() []string {
	out := make([]string, len(sp.threads))
	for i, tp := range sp.threads {
		out[i] = tp.thread
	}
	return out
}

// planState opens the state store the deletion deletes from, when it
// touches state and RecordsOnly does not leave it.
func (p *ForgetPlan) planState(ctx context.Context, threads []*threadPlan) *statePlan {
	flt, opts := p.opts.Filter, p.opts
	sp := &statePlan{threads: threads, legacy: opts.Legacy}
	if !opts.Legacy {
		sp.resource = flt.Resource
	}
	if len(opts.IDs) > 0 || flt.Resource == "" && !opts.Legacy {
		return sp
	}
	rest := flt
	rest.Resource, rest.Thread = "", ""
	sp.whole = rest.IsZero() && opts.Match == ""
	sp.resourceScope = sp.whole && flt.Thread == "" && flt.Resource != ""
	if !sp.whole && len(threads) == 0 {
		return sp
	}
	switch {
	case opts.Legacy:
		sp.what = fmt.Sprintf("the runtime's state of thread %q under its id alone", flt.Thread)
		if !sp.whole {
			sp.what = fmt.Sprintf("the recorded assemblies of thread %q under its id alone", flt.Thread)
		}
	case !sp.whole:
		sp.what = "the recorded assemblies of " + plural(len(threads), "thread", "threads")
	case flt.Thread != "":
		sp.what = fmt.Sprintf("the runtime's layer state of thread %q of resource %q", flt.Thread, flt.Resource)
	default:
		sp.what = resourceStateWhat(flt.Resource, len(threads))
	}
	if opts.RecordsOnly {
		p.StateLeft = sp.what
		return sp
	}
	switch {
	case opts.OpenState != nil:
		st, name, err := opts.OpenState(ctx)
		if err != nil {
			sp.refuse(err)
			return sp
		}
		sp.st, sp.name = st, name
	case opts.State != nil:
		sp.st, sp.name = opts.State, opts.StateName
	case p.env.State != nil:
		sp.st, sp.name = p.env.State, p.env.Target
		if p.env.Dir != "" {
			sp.name = filepath.Join(p.env.Dir, "state")
		}
	}
	if sp.st == nil {
		sp.refuse(ErrNoStateStore)
	}
	return sp
}

// resourceStateWhat names the state of a whole deletion of resource.
func resourceStateWhat(resource string, threads int) string {
	what := fmt.Sprintf("the runtime's layer state of resource %q", resource)
	if threads > 0 {
		what += " and of " + plural(threads, "thread", "threads")
	}
	return what
}

// stateThreads finds, for a whole deletion of a resource, the threads the
// resource has state of but no record on, when the state store can list
// scope ids (storage.ScopeLister): the scope ids that start with
// ThreadScopeID(resource, "") are the resource's by construction. It adds
// them to the threads, marked stateOnly, with their records (legacy ones,
// other resources'). A state store that fails refuses the deletion; the
// error returned is the record store's.
func (sp *statePlan) stateThreads(ctx context.Context, p *ForgetPlan) error {
	if !sp.resourceScope || sp.st == nil || sp.err != nil {
		return nil
	}
	sl, ok := sp.st.(storage.ScopeLister)
	if !ok {
		return nil // only the records find the threads
	}
	prefix := storage.ThreadScopeID(sp.resource, "")
	ids, err := sl.ScopeIDs(ctx, "thread", prefix)
	if err != nil {
		sp.refuse(fmt.Errorf("listing the state in %s: %w", sp.name, err))
		return nil
	}
	known := make(map[string]bool, len(sp.threads))
	for _, tp := range sp.threads {
		known[tp.thread] = true
	}
	for _, id := range ids {
		// Not SplitThreadScopeID: the resource is known, whatever it holds.
		th := strings.TrimPrefix(id, prefix)
		if known[th] {
			continue // found through its records: planned already
		}
		sp.stateScopes = append(sp.stateScopes, id)
		if th == "" {
			continue // no thread: no records, no legacy scope, no binding
		}
		tp, err := p.planThread(ctx, th)
		if err != nil {
			return err
		}
		tp.stateOnly = true
		sp.threads = append(sp.threads, tp)
	}
	sp.what = resourceStateWhat(sp.resource, len(sp.threads))
	return nil
}

// ownership decides, thread by thread, whether the legacy data is the
// deletion's, from the thread's binding when the state store is open,
// else from its records, and adds the legacy records it owns to the plan,
// before the records that carry the resource.
func (sp *statePlan) ownership(ctx context.Context, p *ForgetPlan) {
	var legacy []vectorstore.Record
	for _, tp := range sp.threads {
		if sp.st != nil && sp.err == nil {
			owner, bound, err := inspect.ThreadOwner(ctx, sp.st, tp.thread)
			if err != nil {
				sp.refuse(fmt.Errorf("reading the owner of thread %q in %s: %w", tp.thread, sp.name, err))
			}
			tp.owner, tp.bound = owner, bound && err == nil
		}
		switch {
		case sp.legacy:
			tp.owned = true
			tp.dropBinding = sp.whole && tp.bound && tp.owner == ""
		case p.opts.NoLinkedThreads:
			tp.why, tp.reason = LeftByOption, "NoLinkedThreads leaves them"
		case tp.bound && tp.owner == sp.resource:
			tp.owned, tp.dropBinding = true, sp.whole
		case tp.bound:
			tp.why, tp.reason = LeftOwned, fmt.Sprintf("the thread belongs to %s", resourceName(tp.owner))
		case tp.stateOnly:
			// Only the resource's state under the thread's new key names
			// it: not enough to call what carries no resource its own.
			tp.why, tp.reason = LeftUnbound, fmt.Sprintf("no run bound the thread to %s and none of its records carries it", resourceName(sp.resource))
		case len(tp.others) > 0:
			tp.why, tp.reason = LeftShared, fmt.Sprintf("the thread is also used by %s, so they may be another user's", resourceList(tp.others))
		default:
			tp.owned, tp.dropBinding = true, sp.whole
		}
		if tp.owned && !sp.legacy {
			legacy = append(legacy, tp.legacy...)
		}
	}
	if len(legacy) > 0 {
		carrying := p.ids
		p.ids = nil
		for _, r := range legacy {
			p.add(r)
		}
		p.split = len(p.ids)
		p.ids = append(p.ids, carrying...)
	}
}

// list returns the keys the deletion deletes, as the state store holds
// them now: the keys, then the threads' bindings apart (deleted later). It
// counts in sp.left the legacy keys of the threads not owned.
func (sp *statePlan) list(ctx context.Context) (keys, bindings []storage.Key, err error) {
	keys, bindings = []storage.Key{}, []storage.Key{}
	sp.left = map[string]int{}
	if sp.st == nil {
		return keys, bindings, nil
	}
	l, canList := sp.st.(storage.Lister)
	if sp.whole && !canList {
		return nil, nil, fmt.Errorf("the state store (%T) cannot list keys", sp.st)
	}
	// scope returns the keys of a thread scope: all of them for a whole
	// deletion, else its recorded assemblies (the last view, the plan
	// index, every plan record and recorded log chunk): a narrowed
	// deletion still takes every copy of the text the agent saw.
	scope := func(scopeID string) ([]storage.Key, error) {
		if sp.whole {
			return l.Keys(ctx, "thread", scopeID)
		}
		if canList {
			ks, err := l.Keys(ctx, "thread", scopeID)
			if err != nil {
				return nil, err
			}
			return slices.DeleteFunc(ks, func(k storage.Key) bool { return !inspect.IsAssemblyKey(k) }), nil
		}
		// A store that cannot list keys: only the last view has a key
		// that can be named without listing.
		r, t := storage.SplitThreadScopeID(scopeID)
		k := inspect.LastAssemblyKey(r, t)
		_, err := sp.st.Get(ctx, k)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			return nil, nil
		case err != nil:
			return nil, err
		}
		return []storage.Key{k}, nil
	}
	if sp.resourceScope {
		ks, err := l.Keys(ctx, "resource", sp.resource)
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, ks...)
	}
	for _, tp := range sp.threads {
		if sp.resource != "" && !tp.stateOnly {
			ks, err := scope(storage.ThreadScopeID(sp.resource, tp.thread))
			if err != nil {
				return nil, nil, err
			}
			keys = append(keys, ks...)
		}
		// The legacy scope: the thread id alone.
		ks, err := scope(tp.thread)
		if err != nil {
			return nil, nil, err
		}
		for _, k := range ks {
			switch {
			case k == inspect.ThreadBindingKey(tp.thread):
				if tp.dropBinding {
					bindings = append(bindings, k)
				}
			case tp.owned:
				keys = append(keys, k)
			default:
				sp.left[tp.thread]++
			}
		}
	}
	// The scopes of the threads found through their state only, after
	// the bindings: a run that fails part-way finds them again.
	for _, id := range sp.stateScopes {
		ks, err := scope(id)
		if err != nil {
			return nil, nil, err
		}
		bindings = append(bindings, ks...)
	}
	return keys, bindings, nil
}

// deleteKeys deletes keys and returns those it deleted. A key a running
// session rewrites meanwhile is read again and deleted at its new
// revision.
func deleteKeys(ctx context.Context, st storage.Store, keys []storage.Key) ([]storage.Key, error) {
	deleted := []storage.Key{}
	for _, k := range keys {
		for attempt := 1; ; attempt++ {
			e, err := st.Get(ctx, k)
			if errors.Is(err, storage.ErrNotFound) {
				break
			}
			if err != nil {
				return deleted, err
			}
			err = st.Delete(ctx, k, e.Revision)
			if err == nil {
				deleted = append(deleted, k)
				break
			}
			if !errors.Is(err, storage.ErrConflict) || attempt == 10 {
				return deleted, err
			}
		}
	}
	return deleted, nil
}

// notErased lists the threads whose legacy data the plan leaves.
func (sp *statePlan) notErased() []ForgetLeft {
	var out []ForgetLeft
	for _, tp := range sp.threads {
		if tp.owned {
			continue
		}
		n := ForgetLeft{Thread: tp.thread, Records: len(tp.legacy), StateKeys: sp.left[tp.thread], Why: tp.why, Reason: tp.reason}
		if n.Records == 0 && n.StateKeys == 0 {
			continue
		}
		out = append(out, n)
	}
	return out
}
