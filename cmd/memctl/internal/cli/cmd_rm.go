package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

type rmFlags struct {
	filterFlags
	dryRun, yes, noLinked, recordsOnly bool
}

func (a *app) rmCmd() *cobra.Command {
	var f rmFlags
	cmd := &cobra.Command{
		Use:   "rm [ID...]",
		Short: "Delete memories by id or by filter",
		Long: `Delete memories by id, or every memory matching the filters.

  memctl rm ID                          one memory
  memctl rm --layer scratchpad -t t1    every scratchpad note of thread t1
  memctl rm --resource alice --yes      everything remembered of alice

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

--resource R deletes every memory of the resource: the records keyed by R,
and the thread-only records (observations, temporal facts of thread-scoped
layers) of the threads that belong to R, i.e. threads that records link to R
and to no other resource (--no-linked-threads turns that off). Other
resources are untouched.

It also deletes what the runtime keeps of R in its state store: every key
of scope resource/R (the state of resource-scoped layers) and of scope
thread/T for each of those threads (thread-scoped layers' state, the
recorded last assembly that memctl inspect shows). The state of
global-scoped layers (scope global) is left alone, even when it holds R's
data, e.g. a layer that gathers what every user said: memctl cannot tell
R's part of it, so the application must erase that. The state store is the
one inspect reads: --state DIR|postgres://..., else the config file's
"state", else <dir>/state of an embedded directory, else the database of a
postgres store. Threads are found through the records, so a thread with no
record linked to R keeps its state. Run it while no agent serves R: a
running session may write its state back. With other filters besides
--resource only the recorded assemblies of the threads go, not the layers'
state.

The state goes first, the records after: the records are what links the
threads to R, so a run that fails part-way can be run again to finish. For
the same reason rm deletes nothing at all when it cannot reach the state:
  - no state store known (a qdrant or bare chromem store without --state
    or a config "state"): exit status 2, asking for --state;
  - the state store fails (unreachable database, a --state directory that
    does not exist, a damaged state file): exit status 1, naming the store
    and the error.
--records-only deletes the records anyway and leaves the layer state where
it is (memctl says which on stderr); once the records are gone, memctl can
no longer find the threads' state.

--dry-run lists the state keys after the memories (with --json, one
{"state_key": {"scope", "scope_id", "layer", "name"}} line each), and
fails with the real run's message and exit status when the real run would
refuse. The --json result of a deletion is {"deleted", "ids",
"contexts_deleted", "state_deleted", "state_keys"} ("deleted" and "ids"
include the semantic context records), with "state_error" when deleting
the state failed part-way (no memory is deleted then).`,
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runRm(cmd.Context(), cmd, args, &f)
		},
	}
	f.register(cmd)
	fs := cmd.Flags()
	fs.BoolVar(&f.dryRun, "dry-run", false, "list what would be deleted, delete nothing")
	fs.BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation")
	fs.BoolVar(&f.noLinked, "no-linked-threads", false, "with --resource, delete only records that carry the resource")
	fs.BoolVar(&f.recordsOnly, "records-only", false, "with --resource, delete the records only and leave the runtime's layer state")
	fs.StringVar(&a.flags.state, "state", "", "the runtime's state store: a filestore directory or postgres:// URL")
	return cmd
}

// rmPlan is what rm will delete.
type rmPlan struct {
	// ids are deleted by id, in this order, so that nothing rm did not
	// list (a record written since) is deleted.
	ids   []string
	shown []vectorstore.Record
	total int
	// msgs are the semantic messages among the records, whose context
	// records (which quote them) go too; derived counts those added.
	msgs    []vectorstore.Record
	derived int
	threads []string // threads whose state (or recorded assembly) goes too
}

// what names the plan's records for messages.
func (p *rmPlan) what() string {
	s := plural(p.total-p.derived, "memory", "memories")
	if p.derived > 0 {
		s += " (and " + plural(p.derived, "context record", "context records") + " of the semantic layer quoting the messages)"
	}
	return s
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
			r.Vector = nil
			plan.ids = append(plan.ids, id)
			plan.shown = append(plan.shown, r)
			if isSemanticMessage(&r) {
				plan.msgs = append(plan.msgs, r)
			}
		}
		plan.total = len(plan.ids)
		if len(missing) > 0 {
			if len(plan.ids) == 0 {
				return notFoundf("no memory with id %s in %s", strings.Join(quoteAll(missing), ", "), s.ref)
			}
			fmt.Fprintf(a.io.Err, "memctl: not found, skipped: %s\n", strings.Join(quoteAll(missing), ", "))
		}
	} else if err := a.planFilter(ctx, s, flt, match, f, &plan); err != nil {
		return err
	}
	if err := addQuotingContexts(ctx, s, &plan); err != nil {
		return err
	}

	sp := a.planState(ctx, s, &plan, flt, match, len(args) > 0, f.recordsOnly)
	defer sp.close()

	if f.dryRun {
		if err := a.printRecords(plan.shown, false, nil); err != nil {
			return err
		}
		if err := a.printStateKeys(sp); err != nil {
			return err
		}
		if sp.err != nil {
			fmt.Fprintf(a.io.Err, "would delete nothing (dry run): rm refuses to delete %s from %s\n",
				plan.what(), s.ref)
			return fmt.Errorf("dry run: %w", sp.err)
		}
		what := fmt.Sprintf("%s from %s", plan.what(), s.ref)
		if len(sp.keys) > 0 {
			what += fmt.Sprintf(" and %s from %s", plural(len(sp.keys), "state key", "state keys"), sp.loc)
		}
		fmt.Fprintf(a.io.Err, "would delete %s (dry run)\n", what)
		return nil
	}
	// Refuse before deleting anything: the records are the only way to
	// the threads' state, so deleting them first would strand it.
	if sp.err != nil {
		return sp.err
	}
	if plan.total == 0 && len(sp.keys) == 0 {
		fmt.Fprintln(a.io.Err, "no memories match: nothing deleted")
		return a.printDeleted(0, nil, 0, nil, "")
	}
	// The context records are the messages' own derived data: deleting
	// one message asks for no confirmation because of them.
	if n := plan.total - plan.derived + len(sp.keys); n > 1 && !f.yes {
		what := plan.what()
		question := fmt.Sprintf("Delete %s from %s?", what, s.ref)
		if len(sp.keys) > 0 {
			keys := plural(len(sp.keys), "state key", "state keys")
			question = fmt.Sprintf("Delete %s from %s and %s from %s?", what, s.ref, keys, sp.loc)
			what += " and " + keys
		}
		if err := a.confirm(question, what); err != nil {
			return err
		}
	}
	// The state first: while the records stay, a failed run can be
	// repeated and finds the same threads.
	keys, err := a.deleteState(ctx, sp)
	if err != nil {
		err = fmt.Errorf("deleted %s from %s, then: %w: %w; no memory is deleted yet, run rm again to finish",
			plural(len(keys), "state key", "state keys"), sp.loc, ErrStateStore, err)
		if perr := a.printDeleted(0, nil, 0, keys, Message(err)); perr != nil {
			return perr
		}
		return err
	}
	// The ids hold the context records first, then the thread-only
	// records, then those carrying the resource (planFilter's order):
	// whatever links the threads to the resource goes last, so a run that
	// fails part-way finds the rest again.
	for lo := 0; lo < len(plan.ids); lo += 1000 {
		hi := min(lo+1000, len(plan.ids))
		if err := s.coll.Delete(ctx, plan.ids[lo:hi]...); err != nil {
			return fmt.Errorf("deleted %s and %d of %s, then: %w",
				plural(len(keys), "state key", "state keys"), lo, plural(plan.total, "memory", "memories"), err)
		}
	}
	return a.printDeleted(len(plan.ids), plan.ids, plan.derived, keys, "")
}

// printDeleted reports a deletion: n records (derived of them context
// records of the semantic layer). stateErr says why the state was not all
// deleted; it is also on stderr, and goes into the JSON.
func (a *app) printDeleted(n int, ids []string, derived int, keys []storage.Key, stateErr string) error {
	if a.flags.json {
		if ids == nil {
			ids = []string{}
		}
		out := map[string]any{"deleted": n, "ids": ids, "contexts_deleted": derived, "state_deleted": len(keys), "state_keys": stateKeysJSON(keys)}
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
	return nil
}

// planFilter lists what a filter deletes, with the linked threads of a
// --resource deletion.
func (a *app) planFilter(ctx context.Context, s *store, flt vectorstore.Filter, match string, f *rmFlags, plan *rmPlan) error {
	for r, err := range s.coll.All(ctx, vectorstore.ListOptions{Filter: flt, Limit: 1000}) {
		if err != nil {
			return err
		}
		if !matchText(&r, match) {
			continue
		}
		plan.total++
		if len(plan.shown) < 100000 {
			plan.shown = append(plan.shown, r)
		}
		plan.ids = append(plan.ids, r.ID)
		if isSemanticMessage(&r) {
			plan.msgs = append(plan.msgs, r)
		}
	}
	if flt.Resource == "" || flt.Thread != "" || f.noLinked {
		return nil
	}
	threads, err := linkedThreads(ctx, s.coll, flt.Resource)
	if err != nil {
		return err
	}
	plan.threads = threads
	if len(flt.IDs) > 0 {
		return nil
	}
	// Thread-only records of the resource's threads, under the other
	// filters. They go before the records carrying the resource, which
	// link the threads to it: a deletion that fails part-way leaves the
	// links for the next run.
	var threadOnly []string
	for _, th := range threads {
		tf := flt
		tf.Resource, tf.Thread = "", th
		for r, err := range s.coll.All(ctx, vectorstore.ListOptions{Filter: tf, Limit: 1000}) {
			if err != nil {
				return err
			}
			if r.Scope.Resource != "" || !matchText(&r, match) {
				continue
			}
			plan.total++
			plan.shown = append(plan.shown, r)
			threadOnly = append(threadOnly, r.ID)
			if isSemanticMessage(&r) {
				plan.msgs = append(plan.msgs, r)
			}
		}
	}
	plan.ids = append(threadOnly, plan.ids...)
	return nil
}

// linkedThreads returns the threads records link to resource and to no
// other resource.
func linkedThreads(ctx context.Context, c *vectorstore.Collection, resource string) ([]string, error) {
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
	out := threads[:0]
	for _, th := range threads {
		shared := false
		for r, err := range c.All(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Thread: th}, Limit: 1000}) {
			if err != nil {
				return nil, err
			}
			if r.Scope.Resource != "" && r.Scope.Resource != resource {
				shared = true
				break
			}
		}
		if !shared {
			out = append(out, th)
		}
	}
	return out, nil
}

// statePlan is what rm deletes from the runtime's state store: every key
// of resource/R and of thread/T for the resource's threads, or, when other
// filters narrow a --resource deletion, only the threads' recorded
// assemblies.
type statePlan struct {
	resource string
	threads  []string
	whole    bool // every key of the scopes, not only the assemblies

	st    storage.Store
	loc   string
	close func()
	keys  []storage.Key // listed for the dry run and the confirmation
	// err is why rm refuses to delete anything: no state store is known
	// (ErrUsage), or it cannot be opened or listed (ErrStateStore).
	err error
}

// planState opens the state store and lists what rm deletes there. It
// returns a plan with no keys when rm touches no state, or when
// recordsOnly leaves it (a warning on stderr says what stays).
func (a *app) planState(ctx context.Context, s *store, plan *rmPlan, flt vectorstore.Filter, match string, byID, recordsOnly bool) *statePlan {
	sp := &statePlan{close: func() {}}
	if byID || flt.Resource == "" {
		return sp
	}
	rest := flt
	rest.Resource = ""
	whole := rest.IsZero() && match == ""
	if !whole && len(plan.threads) == 0 {
		return sp
	}
	what := fmt.Sprintf("the runtime's layer state of resource %q", flt.Resource)
	if len(plan.threads) > 0 {
		what += " and of " + plural(len(plan.threads), "thread", "threads")
	}
	if !whole {
		what = "the recorded assemblies of " + plural(len(plan.threads), "thread", "threads")
	}
	if recordsOnly {
		fmt.Fprintf(a.io.Err, "memctl: warning: --records-only: %s is left in the state store%s\n", what, threadList(plan.threads))
		return sp
	}
	sp.resource, sp.threads, sp.whole = flt.Resource, plan.threads, whole
	sp.loc = a.stateLoc(s.ref)
	if sp.loc == "" {
		sp.err = usageErrorf("nothing deleted: memctl does not know the state store of %s, which holds %s: "+
			"pass --state DIR|postgres://... to delete it too, or --records-only to delete only the records", s.ref, what)
		return sp
	}
	refuse := func(err error) {
		sp.err = fmt.Errorf("nothing deleted: %s cannot be deleted (%w: %w); fix the state store or --state, or pass --records-only to delete only the records",
			what, ErrStateStore, err)
	}
	if s.env != nil && sp.loc == filepath.Join(s.ref.Dir, "state") {
		sp.st = s.env.State // the embedded store has it open
	} else {
		st, loc, err := a.openStateAt(ctx, sp.loc)
		if err != nil {
			refuse(err)
			return sp
		}
		sp.st, sp.loc, sp.close = st, loc, func() { _ = st.Close() }
	}
	var err error
	if sp.keys, err = sp.list(ctx); err != nil {
		refuse(fmt.Errorf("listing the state in %s: %w", sp.loc, err))
	}
	return sp
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

// list returns the keys rm deletes, as the state store holds them now.
func (sp *statePlan) list(ctx context.Context) ([]storage.Key, error) {
	keys := []storage.Key{}
	if sp.st == nil {
		return keys, nil
	}
	if !sp.whole {
		for _, th := range sp.threads {
			_, err := sp.st.Get(ctx, assemblyKey(th))
			if errors.Is(err, storage.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			keys = append(keys, assemblyKey(th))
		}
		return keys, nil
	}
	l, ok := sp.st.(storage.Lister)
	if !ok {
		return nil, fmt.Errorf("the state store (%T) cannot list keys", sp.st)
	}
	scopes := [][2]string{{"resource", sp.resource}}
	for _, th := range sp.threads {
		scopes = append(scopes, [2]string{"thread", th})
	}
	for _, sc := range scopes {
		ks, err := l.Keys(ctx, sc[0], sc[1])
		if err != nil {
			return nil, err
		}
		keys = append(keys, ks...)
	}
	return keys, nil
}

// deleteState deletes the plan's keys, listed again (the confirmation may
// have taken a while), and returns those it deleted. A key a running
// session rewrites meanwhile is read again and deleted at its new
// revision.
func (a *app) deleteState(ctx context.Context, sp *statePlan) ([]storage.Key, error) {
	keys, err := sp.list(ctx)
	if err != nil {
		return nil, err
	}
	deleted := []storage.Key{}
	for _, k := range keys {
		for attempt := 1; ; attempt++ {
			e, err := sp.st.Get(ctx, k)
			if errors.Is(err, storage.ErrNotFound) {
				break
			}
			if err != nil {
				return deleted, err
			}
			err = sp.st.Delete(ctx, k, e.Revision)
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
	if a.flags.json {
		for _, k := range stateKeysJSON(sp.keys) {
			if err := writeJSON(a.io.Out, map[string]any{"state_key": k}); err != nil {
				return err
			}
		}
		return nil
	}
	if len(sp.keys) == 0 {
		return nil
	}
	fmt.Fprintf(a.io.Out, "\nState keys in %s:\n", sp.loc)
	tw := newTable(a.io.Out)
	fmt.Fprintln(tw, "SCOPE\tSCOPE ID\tLAYER\tNAME")
	for _, k := range sp.keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Scope, cell(clip(k.ScopeID, 40)), cell(clip(k.Layer, 40)), cell(clip(k.Name, 40)))
	}
	return tw.Flush()
}

// assemblyKey is where core keeps a thread's last assembly (core/record.go).
func assemblyKey(thread string) storage.Key {
	return storage.Key{Scope: "thread", ScopeID: thread, Layer: "_strata", Name: "last_assembly"}
}

// confirm asks on a terminal; elsewhere it refuses.
func (a *app) confirm(question, what string) error {
	in, ok := a.io.In.(*os.File)
	if !ok || !isTerminalFile(in) {
		return usageErrorf("refusing to delete %s without --yes (stdin is not a terminal to confirm on)", what)
	}
	fmt.Fprintf(a.io.Err, "%s [y/N] ", question)
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
