package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/storage"
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
	return cmd
}

// recordsWhat names total records, derived of them context records of the
// semantic layer, for messages.
func recordsWhat(total, derived int) string {
	s := plural(total-derived, "memory", "memories")
	if derived > 0 {
		s += " (and " + plural(derived, "context record", "context records") + " of the semantic layer quoting the messages)"
	}
	return s
}

// runRm parses and checks the flags, plans the deletion with
// environment's PlanForget, prints or confirms it, and executes it.
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
	if rc, err := a.remoteClient(); err != nil || rc != nil {
		if err != nil {
			return err
		}
		if len(args) == 0 {
			return usageErrorf("through --server, rm takes ids (a resource is forgotten with the server's /v1/forget or its forget_memories tool)")
		}
		return a.remoteRm(ctx, rc, args, f.dryRun)
	}
	s, err := a.openStore(ctx, openRead, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	var opened storage.Store
	defer func() {
		if opened != nil {
			_ = opened.Close()
		}
	}()
	plan, err := s.envx.PlanForget(ctx, environment.ForgetOptions{IDs: args, Filter: flt, Match: match,
		Legacy: f.legacy, NoLinkedThreads: f.noLinked, RecordsOnly: f.recordsOnly,
		OpenState: func(ctx context.Context) (storage.Store, string, error) {
			loc := a.stateLoc(s.ref)
			switch {
			case loc == "":
				return nil, "", environment.ErrNoStateStore
			case s.env != nil && loc == filepath.Join(s.ref.Dir, "state"):
				return s.env.State, loc, nil // the embedded store has it open
			}
			st, name, err := a.openStateAt(ctx, loc)
			opened = st
			return st, name, err
		}})
	if err != nil {
		return err
	}
	if len(plan.Missing) > 0 {
		if plan.Total == 0 {
			return notFoundf("no memory with id %s in %s", strings.Join(quoteAll(plan.Missing), ", "), s.ref)
		}
		fmt.Fprintf(a.io.Err, "memctl: not found, skipped: %s\n", strings.Join(quoteAll(plan.Missing), ", "))
	}
	if plan.StateLeft != "" {
		fmt.Fprintf(a.io.Err, "memctl: warning: --records-only: %s is left in the state store%s\n", esc(plan.StateLeft), threadList(plan.Threads))
	}
	var refusal error
	if se := plan.StateErr; se != nil && errors.Is(se.Err, environment.ErrNoStateStore) {
		refusal = usageErrorf("nothing deleted: memctl does not know the state store of %s, which holds %s: "+
			"pass --state DIR|postgres://... to delete it too, or --records-only to delete only the records", s.ref, se.What)
	} else if se != nil {
		refusal = fmt.Errorf("nothing deleted: %s cannot be deleted (%w: %w); fix the state store or --state, or pass --records-only to delete only the records",
			se.What, ErrStateStore, se.Err)
	}
	left := notErasedOf(plan.NotErased)
	what, nkeys := recordsWhat(plan.Total, plan.Contexts), len(plan.Keys)

	if f.dryRun {
		if err := a.printRecords(plan.Records, nil); err != nil {
			return err
		}
		if err := a.printStateKeys(plan.Keys, plan.StateName); err != nil {
			return err
		}
		if err := a.printNotErased(left, true); err != nil {
			return err
		}
		if refusal != nil {
			fmt.Fprintf(a.io.Err, "would delete nothing (dry run): rm refuses to delete %s from %s\n", what, esc(s.ref.String()))
			return fmt.Errorf("dry run: %w", refusal)
		}
		w := fmt.Sprintf("%s from %s", what, s.ref)
		if nkeys > 0 {
			w += fmt.Sprintf(" and %s from %s", plural(nkeys, "state key", "state keys"), plan.StateName)
		}
		fmt.Fprintf(a.io.Err, "would delete %s (dry run)\n", esc(w))
		return nil
	}
	// Refuse before deleting anything: the records are the only way to
	// the threads' state, so deleting them first would strand it.
	if refusal != nil {
		return refusal
	}
	if err := a.printNotErased(left, false); err != nil {
		return err
	}
	if plan.Total == 0 && nkeys == 0 {
		fmt.Fprintln(a.io.Err, "no memories match: nothing deleted")
		return a.printDeleted(0, nil, 0, nil, "", left)
	}
	// The context records are the messages' own derived data: deleting
	// one message asks for no confirmation because of them.
	if n := plan.Total - plan.Contexts + nkeys; n > 1 && !f.yes {
		w := what
		question := fmt.Sprintf("Delete %s from %s?", w, s.ref)
		if nkeys > 0 {
			keys := plural(nkeys, "state key", "state keys")
			question = fmt.Sprintf("Delete %s from %s and %s from %s?", w, s.ref, keys, plan.StateName)
			w += " and " + keys
		}
		if err := a.confirm(esc(question), usageErrorf("refusing to delete %s without --yes (stdin is not a terminal to confirm on)", w), "nothing deleted"); err != nil {
			return err
		}
	}
	rep, err := plan.Execute(ctx)
	var fe *environment.ForgetError
	if !errors.As(err, &fe) {
		if err != nil {
			return err
		}
		return a.printDeleted(len(rep.IDs), rep.IDs, rep.Contexts, rep.StateKeys, "", left)
	}
	keys := plural(len(fe.Keys), "state key", "state keys")
	switch fe.Stage {
	case environment.ForgetStageState:
		err = fmt.Errorf("deleted %s from %s, then: %w: %w; no memory is deleted yet, run rm again to finish", keys, plan.StateName, ErrStateStore, fe.Err)
		if perr := a.printDeleted(0, nil, 0, fe.Keys, Message(err), left); perr != nil {
			return perr
		}
		return err
	case environment.ForgetStageRecords:
		return fmt.Errorf("deleted %s and %d of %s, then: %w", keys, fe.Records, plural(plan.Total, "memory", "memories"), fe.Err)
	case environment.ForgetStageBindings:
		return fmt.Errorf("deleted %s and %d of %s, then: %w: the threads' bindings (or the state of threads without records): %w; run rm again to finish",
			keys, fe.Records, plural(plan.Total, "memory", "memories"), ErrStateStore, fe.Err)
	}
	return fe.Err
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
	what := recordsWhat(n, derived)
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

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
