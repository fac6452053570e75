package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

type rmFlags struct {
	filterFlags
	dryRun, yes, noLinked, recordsOnly, legacy bool
}

const rmLong = `Delete memories by id, or every memory matching the filters.

  memctl rm ID                          one memory
  memctl rm --layer scratchpad -t t1    every scratchpad note of thread t1
  memctl rm --resource alice --yes      everything remembered of alice
  memctl rm -r alice -t main --yes      alice's thread main, and only hers
  memctl rm -t main --legacy --yes      what thread main kept before tenancy

--dry-run lists what would be deleted. Deleting more than one memory asks
for confirmation on a terminal; elsewhere it needs --yes. rm deletes the
records it listed, by id: one written meanwhile is left.

A message of the semantic layer is quoted by derived "context" records: its
own (ID/context) and those of the messages just before and after it in its
thread. rm deletes them with the message (--dry-run lists them; they need
no confirmation of their own); the layer writes its neighbours' contexts
again from the messages that are left. A session still running that loaded
the message does not write it back (it looks its messages up before
storing their vectors), though it may go on recalling it until it ends:
records written by a session still running can come back only if written
after the rm.

Tenancy. A thread belongs to one resource: the runtime binds a thread id to
the resource of the first run that used it, keys the thread's state by both
(two users who both call their thread "main" never share a key) and writes
both on the thread's records. What was written before that (records of a
thread with no resource, thread state keyed by the thread id alone) is
"legacy": it may be any user's of that thread id.

--resource R deletes every memory of the resource: the records keyed by R
(thread-scoped ones included), and the legacy records of R's threads that
are R's: those of a thread bound to R, or, for a thread no run has bound
yet, of a thread whose records all belong to R. --thread T with it narrows
to R's thread T. Other resources are untouched, and so are legacy records
rm cannot attribute to R: a thread bound to another resource, or used by
other resources too. rm reports each such thread on stderr (and in the
--json result's "not_erased") with what it left and why, e.g.

  memctl: not erased: thread "main": 3 memories without a resource and 1
  state key under the thread id alone (written before tenancy): the thread
  is also used by resource "dave", so they may be another user's; check
  them (memctl ls -t main), then erase them with: memctl rm --thread main --legacy

The threads are found through R's records and, when the state store can
list scope ids (filestore and postgres can), through R's state: a scope
thread/R+T (see below) makes T one of R's threads even when no record of R
is on it. Either way the run that deletes them is the one that reports (a
dry run reports the same). The legacy data of a thread found through its
state only is R's when the thread is bound to R; unbound, it is reported,
not erased. --no-linked-threads leaves every legacy record and state key
(reported the same way).

It also deletes what the runtime keeps of R in its state store: every key
of scope resource/R (the state of resource-scoped layers), of the scope
thread/R+T of each of R's threads T (thread-scoped layers' state and the
recorded last assembly memctl inspect shows; the scope id is R and T joined
by \x1f), and, for the threads whose legacy data is R's, of the legacy
scope thread/T, including the binding of T to R. The state of
global-scoped layers (scope global) is left alone, even when it holds R's
data, e.g. a layer that gathers what every user said: memctl cannot tell
R's part of it, so the application must erase that. The state store is the
one inspect reads: --state DIR|postgres://..., else the config file's
"state", else <dir>/state of an embedded directory, else the database of a
postgres store. A state store that cannot list scope ids finds the threads
through the records only, so there a thread with no record linked to R
keeps its state. Run it while no agent serves R: a running session may
write its state back. With other filters besides --resource and --thread
only the recorded assemblies of the threads go, not the layers' state, and
the threads are found through the records only.

--legacy, with --thread T and no --resource, selects only the legacy data
of T: its records that carry no resource and its state keyed by the thread
id alone (also all the state of a thread run without a resource). The
binding of T to a resource is kept.

The state goes first, the records after, the bindings of the threads
between the legacy records and the records carrying R: the records are
what links the threads to R, so a run that fails part-way can be run again
to finish (a thread found through its state only is linked by its scope
thread/R+T, which goes with the bindings, after its own). For the same
reason rm deletes nothing at all when it cannot reach the state:
  - no state store known (a qdrant or bare chromem store without --state
    or a config "state"): exit status 2, asking for --state;
  - the state store fails (unreachable database, a --state directory that
    does not exist, a damaged state file): exit status 1, naming the store
    and the error.
--records-only deletes the records anyway and leaves the layer state where
it is (memctl says which on stderr); once the records are gone, memctl can
no longer find the threads' state. Without the state store, which threads
are bound to R is unknown: legacy records are R's only when their thread's
records all belong to R.

--dry-run lists the state keys after the memories (with --json, one
{"state_key": {"scope", "scope_id", "layer", "name"}} line each, then one
{"not_erased": {"thread", "records", "state_keys", "reason", "hint"}} line
per thread with legacy data left), and fails with the real run's message
and exit status when the real run would refuse. The --json result of a
deletion is {"deleted", "ids", "contexts_deleted", "state_deleted",
"state_keys", "not_erased"} ("deleted" and "ids" include the semantic
context records), with "state_error" when deleting the state failed
part-way.

Text the store holds is printed with controls escaped (\x1b, \u009b...);
--json prints it exactly.`

func (a *app) rmCmd() *cobra.Command {
	var f rmFlags
	cmd := &cobra.Command{
		Use:               "rm [ID...]",
		Short:             "Delete memories by id or by filter",
		Long:              rmLong,
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runRm(cmd.Context(), cmd, args, &f)
		},
	}
	f.register(cmd)
	fs := cmd.Flags()
	fs.BoolVar(&f.dryRun, "dry-run", false, "list what would be deleted, delete nothing")
	fs.BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation")
	fs.BoolVar(&f.noLinked, "no-linked-threads", false, "with --resource, leave the legacy records and state of the resource's threads (those without a resource)")
	fs.BoolVar(&f.recordsOnly, "records-only", false, "with --resource or --legacy, delete the records only and leave the runtime's layer state")
	fs.BoolVar(&f.legacy, "legacy", false, "with --thread and no --resource: only the thread's records without a resource and its state keyed by the thread id alone")
	fs.StringVar(&a.flags.state, "state", "", "the runtime's state store: a filestore directory or postgres:// URL")
	return cmd
}

// rmPlan is what rm will delete.
type rmPlan struct {
	// ids are deleted by id, in this order, so that nothing rm did not
	// list (a record written since) is deleted. ids[:split] go before the
	// threads' bindings, ids[split:] (the records that carry the
	// resource, which link its threads to it) after.
	ids   []string
	split int
	shown []vectorstore.Record
	total int
	// msgs are the semantic messages among the records, whose context
	// records (which quote them) go too; derived counts those added.
	msgs    []vectorstore.Record
	derived int
	// resource is the --resource of the deletion ("" by id, or --legacy).
	resource string
	// threads are those whose state (or recorded assembly) goes too.
	threads []*threadPlan
}

// threadPlan is one thread of a --resource (or --legacy) deletion.
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
	// records and its state under the thread id alone go. reason says why
	// not.
	owned  bool
	reason string
	// dropBinding says the binding key goes too (whole deletions of an
	// owned thread; --legacy only for a thread bound to no resource).
	dropBinding bool
	// stateOnly says no record links the thread to the resource: it was
	// found through its state, under ThreadScopeID(resource, thread) (see
	// statePlan.stateThreads).
	stateOnly bool
}

// notErased is what rm leaves of a thread's legacy data, and why.
type notErased struct {
	Thread    string `json:"thread"`
	Records   int    `json:"records"`
	StateKeys int    `json:"state_keys"`
	Reason    string `json:"reason"`
	Hint      string `json:"hint"`
}

// what names the plan's records for messages.
func (p *rmPlan) what() string {
	s := plural(p.total-p.derived, "memory", "memories")
	if p.derived > 0 {
		s += " (and " + plural(p.derived, "context record", "context records") + " of the semantic layer quoting the messages)"
	}
	return s
}

func (p *rmPlan) add(r vectorstore.Record) {
	p.total++
	if len(p.shown) < 100000 {
		p.shown = append(p.shown, r)
	}
	p.ids = append(p.ids, r.ID)
	if isSemanticMessage(&r) {
		p.msgs = append(p.msgs, r)
	}
}

func (p *rmPlan) threadNames() []string {
	out := make([]string, len(p.threads))
	for i, tp := range p.threads {
		out[i] = tp.thread
	}
	return out
}

func (a *app) runRm(ctx context.Context, cmd *cobra.Command, args []string, f *rmFlags) error {
	flt, match, err := f.build(a.now())
	if err != nil {
		return err
	}
	hasFilter := !flt.IsZero() || match != ""
	if len(args) > 0 && hasFilter {
		return usageErrorf("give ids or filters, not both")
	}
	if len(args) == 0 && !hasFilter {
		return usageErrorf("nothing to delete: give ids or at least one filter (--layer, --thread, --resource, ...)")
	}
	if f.legacy {
		switch {
		case flt.Thread == "":
			return usageErrorf("--legacy needs --thread: it selects the thread's records without a resource and its state keyed by the thread id alone")
		case flt.Resource != "":
			return usageErrorf("--legacy selects what carries no resource: give --thread without --resource")
		case f.noLinked:
			return usageErrorf("--no-linked-threads applies to --resource, not --legacy")
		}
	}
	for _, id := range args {
		if err := checkID(id); err != nil {
			return err
		}
	}
	s, err := a.openStore(ctx, openRead, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	var plan rmPlan
	if len(args) > 0 {
		var missing []string
		seen := map[string]bool{}
		for _, id := range args {
			if seen[id] {
				continue
			}
			seen[id] = true
			r, err := s.coll.Get(ctx, id)
			if errors.Is(err, vectorstore.ErrNotFound) {
				missing = append(missing, id)
				continue
			}
			if err != nil {
				return err
			}
			plan.add(r)
		}
		if len(missing) > 0 {
			if len(plan.ids) == 0 {
				return notFoundf("no memory with id %s in %s", strings.Join(quoteAll(missing), ", "), s.ref)
			}
			fmt.Fprintf(a.io.Err, "memctl: not found, skipped: %s\n", strings.Join(quoteAll(missing), ", "))
		}
	} else if err := a.planFilter(ctx, s, flt, match, f, &plan); err != nil {
		return err
	}

	sp := a.planState(ctx, s, &plan, flt, match, len(args) > 0, f)
	defer sp.close()
	if err := sp.stateThreads(ctx, s, &plan, flt, match); err != nil {
		return err
	}
	if err := sp.ownership(ctx, &plan, f); err != nil && sp.err == nil {
		sp.err = err
	}
	if err := addQuotingContexts(ctx, s, &plan); err != nil {
		return err
	}
	if sp.st != nil && sp.err == nil {
		var err error
		if sp.keys, sp.bindings, err = sp.list(ctx); err != nil {
			sp.refuse(fmt.Errorf("listing the state in %s: %w", sp.loc, err))
		}
	}
	left := sp.notErased(&plan)

	if f.dryRun {
		if err := a.printRecords(plan.shown, false, nil); err != nil {
			return err
		}
		if err := a.printStateKeys(sp); err != nil {
			return err
		}
		if err := a.printNotErased(left, true); err != nil {
			return err
		}
		if sp.err != nil {
			fmt.Fprintf(a.io.Err, "would delete nothing (dry run): rm refuses to delete %s from %s\n",
				plan.what(), esc(s.ref.String()))
			return fmt.Errorf("dry run: %w", sp.err)
		}
		what := fmt.Sprintf("%s from %s", plan.what(), s.ref)
		if n := sp.count(); n > 0 {
			what += fmt.Sprintf(" and %s from %s", plural(n, "state key", "state keys"), sp.loc)
		}
		fmt.Fprintf(a.io.Err, "would delete %s (dry run)\n", esc(what))
		return nil
	}
	// Refuse before deleting anything: the records are the only way to
	// the threads' state, so deleting them first would strand it.
	if sp.err != nil {
		return sp.err
	}
	if err := a.printNotErased(left, false); err != nil {
		return err
	}
	if plan.total == 0 && sp.count() == 0 {
		fmt.Fprintln(a.io.Err, "no memories match: nothing deleted")
		return a.printDeleted(0, nil, 0, nil, "", left)
	}
	// The context records are the messages' own derived data: deleting
	// one message asks for no confirmation because of them.
	if n := plan.total - plan.derived + sp.count(); n > 1 && !f.yes {
		what := plan.what()
		question := fmt.Sprintf("Delete %s from %s?", what, s.ref)
		if sp.count() > 0 {
			keys := plural(sp.count(), "state key", "state keys")
			question = fmt.Sprintf("Delete %s from %s and %s from %s?", what, s.ref, keys, sp.loc)
			what += " and " + keys
		}
		if err := a.confirm(question, what); err != nil {
			return err
		}
	}
	// The state first: while the records stay, a failed run can be
	// repeated and finds the same threads.
	keys, bindings, err := a.deleteState(ctx, sp)
	if err != nil {
		err = fmt.Errorf("deleted %s from %s, then: %w: %w; no memory is deleted yet, run rm again to finish",
			plural(len(keys), "state key", "state keys"), sp.loc, ErrStateStore, err)
		if perr := a.printDeleted(0, nil, 0, keys, Message(err), left); perr != nil {
			return perr
		}
		return err
	}
	// The ids hold the context records first, then the legacy records of
	// the threads, then those carrying the resource (planFilter's order);
	// the threads' bindings go in between: whatever links the threads to
	// the resource goes last, so a run that fails part-way finds the rest
	// again.
	deleteIDs := func(lo, hi int) error {
		for ; lo < hi; lo += 1000 {
			if err := s.coll.Delete(ctx, plan.ids[lo:min(lo+1000, hi)]...); err != nil {
				return fmt.Errorf("deleted %s and %d of %s, then: %w",
					plural(len(keys), "state key", "state keys"), lo, plural(plan.total, "memory", "memories"), err)
			}
		}
		return nil
	}
	if err := deleteIDs(0, plan.split); err != nil {
		return err
	}
	done, err := deleteKeys(ctx, sp.st, bindings)
	keys = append(keys, done...)
	if err != nil {
		return fmt.Errorf("deleted %s and %d of %s, then: %w: the threads' bindings (or the state of threads without records): %w; run rm again to finish",
			plural(len(keys), "state key", "state keys"), plan.split, plural(plan.total, "memory", "memories"), ErrStateStore, err)
	}
	if err := deleteIDs(plan.split, len(plan.ids)); err != nil {
		return err
	}
	if err := reindexThreads(ctx, s.coll, plan.msgs); err != nil {
		return err
	}
	return a.printDeleted(len(plan.ids), plan.ids, plan.derived, keys, "", left)
}

// printDeleted reports a deletion: n records (derived of them context
// records of the semantic layer). stateErr says why the state was not all
// deleted; it is also on stderr, and goes into the JSON, as does what was
// left (left, also on stderr).
func (a *app) printDeleted(n int, ids []string, derived int, keys []storage.Key, stateErr string, left []notErased) error {
	if a.flags.json {
		if ids == nil {
			ids = []string{}
		}
		if left == nil {
			left = []notErased{}
		}
		out := map[string]any{"deleted": n, "ids": ids, "contexts_deleted": derived, "state_deleted": len(keys),
			"state_keys": stateKeysJSON(keys), "not_erased": left}
		if stateErr != "" {
			out["state_error"] = stateErr
		}
		return writeJSON(a.io.Out, out)
	}
	what := (&rmPlan{total: n, derived: derived}).what()
	if len(keys) > 0 {
		fmt.Fprintf(a.io.Out, "deleted %s and %s\n", what, plural(len(keys), "state key", "state keys"))
		return nil
	}
	fmt.Fprintf(a.io.Out, "deleted %s\n", what)
	return nil
}

// printNotErased says on stderr what rm leaves of the threads' legacy data
// and why; a dry run with --json also lists it on stdout.
func (a *app) printNotErased(left []notErased, dryRun bool) error {
	for _, l := range left {
		if dryRun && a.flags.json {
			if err := writeJSON(a.io.Out, map[string]any{"not_erased": l}); err != nil {
				return err
			}
		}
		var parts []string
		if l.Records > 0 {
			parts = append(parts, plural(l.Records, "memory", "memories")+" without a resource")
		}
		if l.StateKeys > 0 {
			parts = append(parts, plural(l.StateKeys, "state key", "state keys")+" under the thread id alone")
		}
		fmt.Fprintf(a.io.Err, "memctl: not erased: thread %s: %s (written before tenancy): %s; %s\n",
			esc(strconv.Quote(l.Thread)), strings.Join(parts, " and "), esc(l.Reason), esc(l.Hint))
	}
	return nil
}

// addQuotingContexts adds to the plan the context records of the semantic
// layer that quote the messages it deletes (see quotingContexts), first:
// they are derived from the messages, so a run that fails part-way finds
// them again through the messages.
func addQuotingContexts(ctx context.Context, s *store, plan *rmPlan) error {
	if len(plan.msgs) == 0 {
		return nil
	}
	planned := make(map[string]bool, len(plan.ids))
	for _, id := range plan.ids {
		planned[id] = true
	}
	ctxs, err := quotingContexts(ctx, s.coll, plan.msgs, planned)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(ctxs)+len(plan.ids))
	for _, r := range ctxs {
		ids = append(ids, r.ID)
	}
	plan.ids = append(ids, plan.ids...)
	plan.shown = append(plan.shown, ctxs...)
	plan.total += len(ctxs)
	plan.derived = len(ctxs)
	plan.split += len(ctxs)
	return nil
}

// planFilter lists what a filter deletes: the matching records, and, for
// a --resource deletion, the resource's threads with their legacy records
// (added to the plan once ownership is known, see statePlan.ownership).
// With --legacy, the thread's matching records that carry no resource.
func (a *app) planFilter(ctx context.Context, s *store, flt vectorstore.Filter, match string, f *rmFlags, plan *rmPlan) error {
	for r, err := range s.coll.All(ctx, vectorstore.ListOptions{Filter: flt, Limit: 1000}) {
		if err != nil {
			return err
		}
		if !matchText(&r, match) || f.legacy && r.Scope.Resource != "" {
			continue
		}
		plan.add(r)
	}
	if f.legacy {
		plan.split = len(plan.ids)
		plan.threads = []*threadPlan{{thread: flt.Thread}}
		return nil
	}
	if flt.Resource == "" {
		return nil
	}
	plan.resource = flt.Resource
	threads := []string{flt.Thread}
	if flt.Thread == "" {
		var err error
		if threads, err = resourceThreads(ctx, s.coll, flt.Resource); err != nil {
			return err
		}
	}
	for _, th := range threads {
		tp, err := planThread(ctx, s, flt, match, th)
		if err != nil {
			return err
		}
		plan.threads = append(plan.threads, tp)
	}
	return nil
}

// planThread looks up, for a --resource deletion, the records on thread
// th (not empty): the other resources that have some, and the legacy
// records that match the filters.
func planThread(ctx context.Context, s *store, flt vectorstore.Filter, match, th string) (*threadPlan, error) {
	tp := &threadPlan{thread: th}
	others := map[string]bool{}
	for r, err := range s.coll.All(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Thread: th}, Limit: 1000}) {
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
	// The legacy records of the thread, under the other filters.
	tf := flt
	tf.Resource, tf.Thread = "", th
	for r, err := range s.coll.All(ctx, vectorstore.ListOptions{Filter: tf, Limit: 1000}) {
		if err != nil {
			return nil, err
		}
		if r.Scope.Resource == "" && matchText(&r, match) {
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

// statePlan is what rm deletes from the runtime's state store: for a
// --resource deletion every key of resource/R, of the threads' scopes
// thread/ThreadScopeID(R, T) and of the legacy scopes thread/T of the
// threads whose legacy data is R's, or, when other filters narrow it, only
// the threads' recorded assemblies; for --legacy, the thread's legacy
// scope.
type statePlan struct {
	resource string
	threads  []*threadPlan
	whole    bool // every key of the scopes, not only the assemblies
	// resourceScope says resource/R goes (a whole deletion of R, not
	// narrowed to a thread).
	resourceScope bool

	st    storage.Store
	loc   string
	what  string
	close func()
	// stateScopes are the thread scopes of the resource found in the state
	// store (ScopeLister) whose thread no record links to it: the scope ids
	// ThreadScopeID(resource, T) of its threads in plan.threads marked
	// stateOnly, and of the odd empty thread. Their keys go last, after the
	// bindings: they are what links those threads to the resource.
	stateScopes []string
	// keys are listed for the dry run and the confirmation; bindings are
	// the threads' binding keys, then the keys of stateScopes, deleted
	// after the legacy records.
	keys, bindings []storage.Key
	// left counts, by thread, the legacy keys of threads not owned.
	left map[string]int
	// err is why rm refuses to delete anything: no state store is known
	// (ErrUsage), or it cannot be opened or listed (ErrStateStore).
	err error
}

func (sp *statePlan) count() int { return len(sp.keys) + len(sp.bindings) }

func (sp *statePlan) refuse(err error) {
	sp.err = fmt.Errorf("nothing deleted: %s cannot be deleted (%w: %w); fix the state store or --state, or pass --records-only to delete only the records",
		sp.what, ErrStateStore, err)
}

// planState opens the state store rm deletes from. It returns a plan with
// no store when rm touches no state, or when --records-only leaves it (a
// warning on stderr says what stays).
func (a *app) planState(ctx context.Context, s *store, plan *rmPlan, flt vectorstore.Filter, match string, byID bool, f *rmFlags) *statePlan {
	sp := &statePlan{close: func() {}, threads: plan.threads, resource: plan.resource}
	if byID || flt.Resource == "" && !f.legacy {
		return sp
	}
	rest := flt
	rest.Resource, rest.Thread = "", ""
	sp.whole = rest.IsZero() && match == ""
	sp.resourceScope = sp.whole && flt.Thread == "" && flt.Resource != ""
	if !sp.whole && len(plan.threads) == 0 {
		return sp
	}
	switch {
	case f.legacy:
		sp.what = fmt.Sprintf("the runtime's state of thread %q under its id alone", flt.Thread)
		if !sp.whole {
			sp.what = fmt.Sprintf("the recorded assembly of thread %q under its id alone", flt.Thread)
		}
	case !sp.whole:
		sp.what = "the recorded assemblies of " + plural(len(plan.threads), "thread", "threads")
	case flt.Thread != "":
		sp.what = fmt.Sprintf("the runtime's layer state of thread %q of resource %q", flt.Thread, flt.Resource)
	default:
		sp.what = resourceStateWhat(flt.Resource, len(plan.threads))
	}
	if f.recordsOnly {
		fmt.Fprintf(a.io.Err, "memctl: warning: --records-only: %s is left in the state store%s\n", esc(sp.what), threadList(plan.threadNames()))
		return sp
	}
	sp.loc = a.stateLoc(s.ref)
	if sp.loc == "" {
		sp.err = usageErrorf("nothing deleted: memctl does not know the state store of %s, which holds %s: "+
			"pass --state DIR|postgres://... to delete it too, or --records-only to delete only the records", s.ref, sp.what)
		return sp
	}
	if s.env != nil && sp.loc == filepath.Join(s.ref.Dir, "state") {
		sp.st = s.env.State // the embedded store has it open
		return sp
	}
	st, loc, err := a.openStateAt(ctx, sp.loc)
	if err != nil {
		sp.refuse(err)
		return sp
	}
	sp.st, sp.loc, sp.close = st, loc, func() { _ = st.Close() }
	return sp
}

// resourceStateWhat names the state of a whole deletion of resource for
// messages.
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
// them to the plan's threads, marked stateOnly, after those found through
// the records, with their records (legacy ones, other resources'). A state
// store that fails refuses the deletion (sp.err); the error returned is
// the record store's.
func (sp *statePlan) stateThreads(ctx context.Context, s *store, plan *rmPlan, flt vectorstore.Filter, match string) error {
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
		sp.refuse(fmt.Errorf("listing the state in %s: %w", sp.loc, err))
		return nil
	}
	known := make(map[string]bool, len(plan.threads))
	for _, tp := range plan.threads {
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
		tp, err := planThread(ctx, s, flt, match, th)
		if err != nil {
			return err
		}
		tp.stateOnly = true
		plan.threads = append(plan.threads, tp)
	}
	sp.threads = plan.threads
	sp.what = resourceStateWhat(sp.resource, len(plan.threads))
	return nil
}

// ownership decides, thread by thread, whether the legacy data is the
// deletion's, from the thread's binding when the state store is open,
// else from its records, and adds the legacy records it owns to the plan,
// before the records that carry the resource.
func (sp *statePlan) ownership(ctx context.Context, plan *rmPlan, f *rmFlags) error {
	var legacy []vectorstore.Record
	var ferr error
	for _, tp := range plan.threads {
		if sp.st != nil && sp.err == nil {
			owner, bound, err := core.ThreadOwner(ctx, sp.st, tp.thread)
			if err != nil && ferr == nil {
				sp.refuse(fmt.Errorf("reading the owner of thread %q in %s: %w", tp.thread, sp.loc, err))
				ferr = sp.err
			}
			tp.owner, tp.bound = owner, bound && err == nil
		}
		switch {
		case f.legacy:
			tp.owned = true
			tp.dropBinding = sp.whole && tp.bound && tp.owner == ""
		case f.noLinked:
			tp.reason = "--no-linked-threads leaves them"
		case tp.bound && tp.owner == plan.resource:
			tp.owned, tp.dropBinding = true, sp.whole
		case tp.bound:
			tp.reason = fmt.Sprintf("the thread belongs to %s", resourceName(tp.owner))
		case tp.stateOnly:
			// Only the resource's state under the thread's new key names
			// it: not enough to call what carries no resource its own.
			tp.reason = fmt.Sprintf("no run bound the thread to %s and none of its records carries it", resourceName(plan.resource))
		case len(tp.others) > 0:
			tp.reason = fmt.Sprintf("the thread is also used by %s, so they may be another user's", resourceList(tp.others))
		default:
			tp.owned, tp.dropBinding = true, sp.whole
		}
		if tp.owned && !f.legacy {
			legacy = append(legacy, tp.legacy...)
		}
	}
	if len(legacy) > 0 {
		carrying := plan.ids
		plan.ids = nil
		for _, r := range legacy {
			plan.add(r)
		}
		plan.split = len(plan.ids)
		plan.ids = append(plan.ids, carrying...)
	}
	return ferr
}

// resourceList names a few resources for a message.
func resourceList(rs []string) string {
	const most = 3
	q := quoteAll(rs[:min(len(rs), most)])
	if len(rs) > most {
		q = append(q, fmt.Sprintf("and %d more", len(rs)-most))
	}
	if len(rs) == 1 {
		return "resource " + q[0]
	}
	return "resources " + strings.Join(q, ", ")
}

// notErased lists the threads whose legacy data the plan leaves.
func (sp *statePlan) notErased(plan *rmPlan) []notErased {
	var out []notErased
	for _, tp := range plan.threads {
		if tp.owned {
			continue
		}
		n := notErased{Thread: tp.thread, Records: len(tp.legacy), StateKeys: sp.left[tp.thread], Reason: tp.reason}
		if n.Records == 0 && n.StateKeys == 0 {
			continue
		}
		n.Hint = fmt.Sprintf("check them (memctl ls -t %s), then erase them with: memctl rm --thread %s --legacy", shellQuote(tp.thread), shellQuote(tp.thread))
		out = append(out, n)
	}
	return out
}

// shellQuote quotes s for a command line an operator copies.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@+=,%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// threadList names the threads for a message, the first few of them.
func threadList(threads []string) string {
	if len(threads) == 0 {
		return ""
	}
	const most = 5
	q := quoteAll(threads[:min(len(threads), most)])
	if len(threads) > most {
		q = append(q, fmt.Sprintf("and %d more", len(threads)-most))
	}
	return " (threads " + strings.Join(q, ", ") + ")"
}

// list returns the keys rm deletes, as the state store holds them now:
// the keys, then the threads' bindings apart (deleted later). It counts
// in sp.left the legacy keys of the threads not owned.
func (sp *statePlan) list(ctx context.Context) (keys, bindings []storage.Key, err error) {
	keys, bindings = []storage.Key{}, []storage.Key{}
	sp.left = map[string]int{}
	if sp.st == nil {
		return keys, bindings, nil
	}
	var l storage.Lister
	if sp.whole {
		var ok bool
		if l, ok = sp.st.(storage.Lister); !ok {
			return nil, nil, fmt.Errorf("the state store (%T) cannot list keys", sp.st)
		}
	}
	// scope returns the keys of a thread scope: all of them for a whole
	// deletion, else its recorded assembly if there is one.
	scope := func(scopeID string) ([]storage.Key, error) {
		if sp.whole {
			return l.Keys(ctx, "thread", scopeID)
		}
		r, t := storage.SplitThreadScopeID(scopeID)
		k := core.LastAssemblyKey(r, t)
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
			case k == bindingKey(tp.thread):
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

// deleteState deletes the plan's keys, listed again (the confirmation may
// have taken a while), and returns those it deleted, and the bindings to
// delete after the legacy records.
func (a *app) deleteState(ctx context.Context, sp *statePlan) (deleted, bindings []storage.Key, err error) {
	keys, bindings, err := sp.list(ctx)
	if err != nil {
		return nil, nil, err
	}
	deleted, err = deleteKeys(ctx, sp.st, keys)
	return deleted, bindings, err
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

// stateKeyJSON is a state key in memctl's JSON output.
type stateKeyJSON struct {
	Scope   string `json:"scope"`
	ScopeID string `json:"scope_id"`
	Layer   string `json:"layer"`
	Name    string `json:"name"`
}

func stateKeysJSON(keys []storage.Key) []stateKeyJSON {
	out := make([]stateKeyJSON, len(keys))
	for i, k := range keys {
		out[i] = stateKeyJSON{Scope: k.Scope, ScopeID: k.ScopeID, Layer: k.Layer, Name: k.Name}
	}
	return out
}

// printStateKeys lists the dry run's state keys after its records.
func (a *app) printStateKeys(sp *statePlan) error {
	keys := append(slices.Clone(sp.keys), sp.bindings...)
	if a.flags.json {
		for _, k := range stateKeysJSON(keys) {
			if err := writeJSON(a.io.Out, map[string]any{"state_key": k}); err != nil {
				return err
			}
		}
		return nil
	}
	if len(keys) == 0 {
		return nil
	}
	fmt.Fprintf(a.io.Out, "\nState keys in %s:\n", esc(sp.loc))
	tw := newTable(a.io.Out)
	fmt.Fprintln(tw, "SCOPE\tSCOPE ID\tLAYER\tNAME")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cell(k.Scope), cell(clip(k.ScopeID, 40)), cell(clip(k.Layer, 40)), cell(clip(k.Name, 40)))
	}
	return tw.Flush()
}

// assemblyKey is where core keeps the last assembly of a thread of
// resource ("" for none).
func assemblyKey(resource, thread string) storage.Key { return core.LastAssemblyKey(resource, thread) }

// bindingKey is where core keeps the resource a thread belongs to
// (core.ThreadOwner reads it).
func bindingKey(thread string) storage.Key { return core.ThreadBindingKey(thread) }

// confirm asks on a terminal; elsewhere it refuses.
func (a *app) confirm(question, what string) error {
	in, ok := a.io.In.(*os.File)
	if !ok || !isTerminalFile(in) {
		return usageErrorf("refusing to delete %s without --yes (stdin is not a terminal to confirm on)", what)
	}
	fmt.Fprintf(a.io.Err, "%s [y/N] ", esc(question))
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("%w: nothing deleted", ErrAborted)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// stateLoc says where the runtime keeps its layer state, for inspect and
// rm: --state, else the config file's state, else <dir>/state of an
// embedded directory, else the postgres store's database; "" when none of
// these applies.
func (a *app) stateLoc(ref storeRef) string {
	switch {
	case a.flags.state != "":
		return a.flags.state
	case a.cfg.State != "":
		return a.cfg.State
	case ref.Dir != "":
		return filepath.Join(ref.Dir, "state")
	case ref.Scheme == "postgres":
		return ref.URL
	}
	return ""
}

// stateRef is stateLoc, with a usage error when it is unknown.
func (a *app) stateRef(ref storeRef) (string, error) {
	if loc := a.stateLoc(ref); loc != "" {
		return loc, nil
	}
	return "", usageErrorf("memctl reads the runtime's state store: %s is not an embedded directory or postgres URL, so pass --state DIR|postgres://...", ref)
}
