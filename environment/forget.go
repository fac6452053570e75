package environment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

// ForgetOptions select what Forget deletes: records by id (IDs), or every
// record matching Filter and Match. With Filter.Resource (optionally
// Filter.Thread) and no other filter, the resource's layer state goes too;
// with other filters, only its threads' recorded assemblies.
type ForgetOptions struct {
	// IDs deletes these records, and touches no state. Not with Filter.
	IDs []string
	// Filter selects the records (Resource narrows to a resource, Thread
	// to one of its threads).
	Filter vectorstore.Filter
	// Match, when set, keeps only records whose text contains it, ignoring
	// case.
	Match string
	// Legacy, with Filter.Thread and no Filter.Resource, selects only the
	// thread's legacy data: its records that carry no resource and its
	// state keyed by the thread id alone. The thread's binding is kept.
	Legacy bool
	// NoLinkedThreads leaves every legacy record and state key of the
	// resource's threads (reported in ForgetReport.NotErased).
	NoLinkedThreads bool
	// RecordsOnly deletes the records and leaves the layer state.
	RecordsOnly bool
	// State is the layer-state store; nil means Env.State. StateName
	// names it in messages.
	State     storage.Store
	StateName string
	// OpenState, when set, is called instead, only when the deletion
	// touches state; it returns the store and its name. Forget does not
	// close it.
	OpenState func(ctx context.Context) (storage.Store, string, error)
	// DryRun plans and deletes nothing: the report says what would go.
	DryRun bool
}

// ErrNoStateStore is ForgetPlan.StateErr's Err when the deletion touches
// state and neither the options nor the environment name a state store.
var ErrNoStateStore = errors.New("environment: no state store")

// ForgetStateError is why a deletion that touches state deletes nothing:
// the state store cannot be opened, listed or read.
type ForgetStateError struct {
	// What names the state to be deleted ("the runtime's layer state of
	// resource \"alice\" and of 2 threads").
	What string
	Err  error
}

func (e *ForgetStateError) Error() string {
	return "nothing deleted: " + e.What + " cannot be deleted: " + e.Err.Error()
}

func (e *ForgetStateError) Unwrap() error { return e.Err }

// Why a thread's legacy data is not erased (ForgetLeft.Why).
const (
	LeftByOption = "option"  // ForgetOptions.NoLinkedThreads
	LeftOwned    = "owned"   // the thread is bound to another resource
	LeftUnbound  = "unbound" // found through its state only, bound to none
	LeftShared   = "shared"  // other resources' records are on the thread
)

// ForgetLeft is a thread whose legacy data a deletion leaves, and why.
type ForgetLeft struct {
	Thread    string
	Records   int // legacy records left
	StateKeys int // legacy state keys left
	Why       string
	// Reason says why in words.
	Reason string
}

// ForgetReport says what a deletion deleted (or, dry, would delete).
type ForgetReport struct {
	// IDs are the records deleted, context records included.
	IDs []string
	// Contexts counts the semantic layer's context records among them.
	Contexts int
	// StateKeys are the state keys deleted.
	StateKeys []storage.Key
	// NotErased are the threads whose legacy data is left.
	NotErased []ForgetLeft
}

// ForgetPlan is what a deletion will delete, from PlanForget.
type ForgetPlan struct {
	// Records are the records to delete, context records included (the
	// first 100000).
	Records []vectorstore.Record
	// Total counts the records, Contexts the context records among them.
	Total, Contexts int
	// Missing are the IDs not found.
	Missing []string
	// Threads are the threads whose state goes too.
	Threads []string
	// State is the state store ("" StateName: none touched); Keys the keys
	// to delete, listed as the store holds them now.
	State     storage.Store
	StateName string
	Keys      []storage.Key
	// StateLeft names the state RecordsOnly leaves ("" none).
	StateLeft string
	// StateErr, when set, is why nothing may be deleted.
	StateErr *ForgetStateError
	// NotErased are the threads whose legacy data the deletion leaves.
	NotErased []ForgetLeft

	env  *Env
	opts ForgetOptions
	// ids are deleted by id, in this order, so that nothing unlisted (a
	// record written since) goes. ids[:split] go before the threads'
	// bindings, ids[split:] (the records that carry the resource, which
	// link its threads to it) after.
	ids   []string
	split int
	msgs  []vectorstore.Record
	state *statePlan
}

// Forget deletes what a tenant left: records, layer state and recorded
// assemblies (GDPR-style erasure; a host's "forget" tool). It plans the
// deletion (PlanForget) and, unless opts.DryRun, executes it; a plan with
// StateErr deletes nothing and returns it.
//
// A thread belongs to one resource: the runtime binds a thread
// id to the resource of the first run that used it, keys the thread's
// state by both (storage.ThreadScopeID) and writes both on the thread's
// records. What was written before that, records of a thread with no
// resource and thread state keyed by the thread id alone, is "legacy": it
// may be any user's of that thread id.
//
// Forgetting a resource deletes its records (thread-scoped ones included),
// the legacy records of its threads that are its own (a thread bound to
// it, or, unbound, one whose records all carry it), every state key of
// scope resource/R, of the scopes thread/R+T of its threads and of the
// legacy scopes thread/T of the threads it owns, bindings included. The
// threads are found through the records and, when the state store lists
// scope ids (storage.ScopeLister), through the state. Global-scoped state
// is left alone: what of it is R's only the application knows. The
// semantic layer's context records quoting a deleted message go with it
// (QuotingContexts) and its threads' lexical documents are rebuilt
// (ReindexThreads).
//
// The state goes first, the records after, the threads' bindings between
// the legacy records and the records carrying R: the records are what
// links the threads to R, so a run that fails part-way can be run again
// to finish. For the same reason nothing is deleted when the state cannot
// be reached (ForgetPlan.StateErr), unless ForgetOptions.RecordsOnly.
func (e *Env) Forget(ctx context.Context, opts ForgetOptions) (ForgetReport, error) {
	p, err := e.PlanForget(ctx, opts)
	if err != nil {
		return ForgetReport{}, err
	}
	if p.StateErr != nil {
		return ForgetReport{NotErased: p.NotErased}, p.StateErr
	}
	if opts.DryRun {
		return ForgetReport{IDs: p.ids, Contexts: p.Contexts, StateKeys: p.Keys, NotErased: p.NotErased}, nil
	}
	return p.Execute(ctx)
}

// PlanForget lists what a deletion deletes, deleting nothing.
func (e *Env) PlanForget(ctx context.Context, opts ForgetOptions) (*ForgetPlan, error) {
	flt := opts.Filter
	hasFilter := !flt.IsZero() || opts.Match != ""
	switch {
	case len(opts.IDs) > 0 && hasFilter:
		return nil, fmt.Errorf("%w: forget: give ids or filters, not both", vectorstore.ErrInvalidArgument)
	case len(opts.IDs) == 0 && !hasFilter:
		return nil, fmt.Errorf("%w: forget: nothing selected", vectorstore.ErrInvalidArgument)
	case opts.Legacy && (flt.Thread == "" || flt.Resource != "" || opts.NoLinkedThreads):
		return nil, fmt.Errorf("%w: forget: Legacy takes a thread, no resource, no NoLinkedThreads", vectorstore.ErrInvalidArgument)
	}
	opts.Match = strings.ToLower(opts.Match)
	p := &ForgetPlan{env: e, opts: opts}
	c := e.Records()
	var threads []*threadPlan
	if len(opts.IDs) > 0 {
		seen := map[string]bool{}
		for _, id := range opts.IDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			r, err := c.Get(ctx, id)
			if errors.Is(err, vectorstore.ErrNotFound) {
				p.Missing = append(p.Missing, id)
				continue
			}
			if err != nil {
				return nil, err
			}
			p.add(r)
		}
	} else {
		var err error
		if threads, err = p.planFilter(ctx); err != nil {
			return nil, err
		}
	}
	sp := p.planState(ctx, threads)
	p.state = sp
	if err := sp.stateThreads(ctx, p); err != nil {
		return nil, err
	}
	sp.ownership(ctx, p)
	if err := p.addQuotingContexts(ctx); err != nil {
		return nil, err
	}
	if sp.st != nil && sp.err == nil {
		var err error
		if sp.keys, sp.bindings, err = sp.list(ctx); err != nil {
			sp.refuse(fmt.Errorf("listing the state in %s: %w", sp.name, err))
		}
	}
	p.NotErased = sp.notErased()
	p.Threads = sp.threadNames()
	p.State, p.StateName, p.StateErr = sp.st, sp.name, sp.err
	p.Keys = append(slices.Clone(sp.keys), sp.bindings...)
	return p, nil
}

func (p *ForgetPlan) add(r vectorstore.Record) {
	p.Total++
	if len(p.Records) < 100000 {
		p.Records = append(p.Records, r)
	}
	p.ids = append(p.ids, r.ID)
	if IsSemanticMessage(&r) {
		p.msgs = append(p.msgs, r)
	}
}

func matchText(r *vectorstore.Record, lowered string) bool {
	return lowered == "" || strings.Contains(strings.ToLower(r.Text), lowered)
}

// ForgetError is a deletion that failed part-way: Stage says where, Keys
// and Records what was deleted before. Run the deletion again to finish.
type ForgetError struct {
	Stage   string // ForgetStageState, ForgetStageRecords, ForgetStageBindings or ForgetStageReindex
	Keys    []storage.Key
	Records int
	Err     error
}

// Stages of a deletion (ForgetError.Stage), in order.
const (
	ForgetStageState    = "state"    // deleting the state keys; no record deleted yet
	ForgetStageRecords  = "records"  // deleting the records
	ForgetStageBindings = "bindings" // the threads' bindings, between the legacy records and the others
	ForgetStageReindex  = "reindex"  // rebuilding the semantic threads' lexical documents
)

func (e *ForgetError) Error() string {
	return fmt.Sprintf("forget: %d state keys and %d records deleted, then (%s): %v", len(e.Keys), e.Records, e.Stage, e.Err)
}

func (e *ForgetError) Unwrap() error { return e.Err }

// Execute deletes what the plan lists: the state keys, listed again (a
// confirmation may have taken a while), then the records by id, the
// threads' bindings in between (see the package's notes on forgetting). A
// plan with StateErr deletes nothing. A failure is a *ForgetError.
func (p *ForgetPlan) Execute(ctx context.Context) (ForgetReport, error) {
	sp := p.state
	rep := ForgetReport{NotErased: p.NotErased}
	if p.StateErr != nil {
		return rep, p.StateErr
	}
	keys, bindings, err := sp.list(ctx)
	if err == nil {
		keys, err = deleteKeys(ctx, sp.st, keys)
	}
	rep.StateKeys = keys
	if err != nil {
		return rep, &ForgetError{Stage: ForgetStageState, Keys: keys, Err: err}
	}
	c := p.env.Records()
	deleteIDs := func(lo, hi int) error {
		for ; lo < hi; lo += 1000 {
			if err := c.Delete(ctx, p.ids[lo:min(lo+1000, hi)]...); err != nil {
				return &ForgetError{Stage: ForgetStageRecords, Keys: rep.StateKeys, Records: lo, Err: err}
			}
		}
		return nil
	}
	if err := deleteIDs(0, p.split); err != nil {
		return rep, err
	}
	done, err := deleteKeys(ctx, sp.st, bindings)
	rep.StateKeys = append(rep.StateKeys, done...)
	if err != nil {
		return rep, &ForgetError{Stage: ForgetStageBindings, Keys: rep.StateKeys, Records: p.split, Err: err}
	}
	if err := deleteIDs(p.split, len(p.ids)); err != nil {
		return rep, err
	}
	if err := ReindexThreads(ctx, c, p.msgs); err != nil {
		return rep, &ForgetError{Stage: ForgetStageReindex, Keys: rep.StateKeys, Records: len(p.ids), Err: err}
	}
	rep.IDs, rep.Contexts = p.ids, p.Contexts
	return rep, nil
}

// addQuotingContexts adds the context records of the semantic layer that
// quote the messages deleted (QuotingContexts), first: they are derived
// from the messages, so a run that fails part-way finds them again.
func (p *ForgetPlan) addQuotingContexts(ctx context.Context) error {
	if len(p.msgs) == 0 {
		return nil
	}
	planned := make(map[string]bool, len(p.ids))
	for _, id := range p.ids {
		planned[id] = true
	}
	ctxs, err := QuotingContexts(ctx, p.env.Records(), p.msgs, planned)
	if err != nil {
		return err
	}
	ids := make([]string, len(ctxs))
	for i, r := range ctxs {
		ids[i] = r.ID
	}
	p.ids = append(ids, p.ids...)
	p.Records = append(p.Records, ctxs...)
	p.Total += len(ctxs)
	p.Contexts = len(ctxs)
	p.split += len(ctxs)
	return nil
}

// planFilter lists the matching records and, for a resource, its threads
// with their legacy records (added once ownership is known). With Legacy,
// the thread's matching records that carry no resource.
func (p *ForgetPlan) planFilter(ctx context.Context) ([]*threadPlan, error) {
	flt, c := p.opts.Filter, p.env.Records()
	for r, err := range c.All(ctx, vectorstore.ListOptions{Filter: flt, Limit: 1000}) {
		if err != nil {
			return nil, err
		}
		if !matchText(&r, p.opts.Match) || p.opts.Legacy && r.Scope.Resource != "" {
			continue
		}
		p.add(r)
	}
	if p.opts.Legacy {
		p.split = len(p.ids)
		return []*threadPlan{{thread: flt.Thread}}, nil
	}
	if flt.Resource == "" {
		return nil, nil
	}
	threads := []string{flt.Thread}
	if flt.Thread == "" {
		var err error
		if threads, err = resourceThreads(ctx, c, flt.Resource); err != nil {
			return nil, err
		}
	}
	var out []*threadPlan
	for _, th := range threads {
		tp, err := p.planThread(ctx, th)
		if err != nil {
			return nil, err
		}
		out = append(out, tp)
	}
	return out, nil
}

// planThread looks up, for a resource, the records on thread th: the other
// resources that have some, and the legacy records that match.
func (p *ForgetPlan) planThread(ctx context.Context, th string) (*threadPlan, error) {
	flt, c := p.opts.Filter, p.env.Records()
	tp := &threadPlan{thread: th}
	others := map[string]bool{}
	for r, err := range c.All(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Thread: th}, Limit: 1000}) {
		if err != nil {
			return nil, err
		}
		if res := r.Scope.Resource; res != "" && res != flt.Resource && !others[res] {
			others[res] = true
			tp.others = append(tp.others, res)
		}
	}
	slices.Sort(tp.others)
	if len(flt.IDs) > 0 {
		return tp, nil // the ids named carry the resource
	}
	tf := flt
	tf.Resource, tf.Thread = "", th
	for r, err := range c.All(ctx, vectorstore.ListOptions{Filter: tf, Limit: 1000}) {
		if err != nil {
			return nil, err
		}
		if r.Scope.Resource == "" && matchText(&r, p.opts.Match) {
			tp.legacy = append(tp.legacy, r)
		}
	}
	return tp, nil
}

// resourceThreads returns the threads that records link to resource.
func resourceThreads(ctx context.Context, c *vectorstore.Collection, resource string) ([]string, error) {
	var threads []string
	seen := map[string]bool{}
	for r, err := range c.All(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Resource: resource}, Limit: 1000}) {
		if err != nil {
			return nil, err
		}
		if th := r.Scope.Thread; th != "" && !seen[th] {
			seen[th] = true
			threads = append(threads, th)
		}
	}
	return threads, nil
}

// plural is "1 thread", "2 threads".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// resourceName names a thread's owner in a message.
func resourceName(r string) string {
	if r == "" {
		return "no resource"
	}
	return fmt.Sprintf("resource %q", r)
}

// resourceList names a few resources for a message.
func resourceList(rs []string) string {
	const most = 3
	q := make([]string, 0, most+1)
	for _, r := range rs[:min(len(rs), most)] {
		q = append(q, strconv.Quote(r))
	}
	if len(rs) > most {
		q = append(q, fmt.Sprintf("and %d more", len(rs)-most))
	}
	if len(rs) == 1 {
		return "resource " + q[0]
	}
	return "resources " + strings.Join(q, ", ")
}
