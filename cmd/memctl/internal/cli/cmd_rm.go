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
	dryRun, yes, noLinked bool
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
for confirmation on a terminal; elsewhere it needs --yes.

--resource R deletes every memory of the resource: the records keyed by R,
and the thread-only records (observations, temporal facts of thread-scoped
layers) of the threads that belong to R, i.e. threads that records link to R
and to no other resource (--no-linked-threads turns that off). With an
embedded directory store it also deletes the recorded last assemblies of
those threads (memctl inspect). Other resources are untouched.`,
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
	return cmd
}

// rmPlan is what rm will delete.
type rmPlan struct {
	byFilter *vectorstore.Filter // deleted with DeleteWhere when set
	ids      []string            // deleted by id
	shown    []vectorstore.Record
	total    int
	threads  []string // threads whose recorded assembly goes too
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

	if f.dryRun {
		if err := a.printRecords(plan.shown, false, nil); err != nil {
			return err
		}
		fmt.Fprintf(a.io.Err, "would delete %s from %s (dry run)\n", plural(plan.total, "memory", "memories"), s.ref)
		return nil
	}
	if plan.total == 0 && len(plan.threads) == 0 {
		fmt.Fprintln(a.io.Err, "no memories match: nothing deleted")
		return a.printDeleted(0, nil)
	}
	if plan.total > 1 && !f.yes {
		if err := a.confirm(fmt.Sprintf("Delete %s from %s?", plural(plan.total, "memory", "memories"), s.ref), plan.total); err != nil {
			return err
		}
	}
	n := 0
	if plan.byFilter != nil {
		if n, err = s.coll.DeleteWhere(ctx, *plan.byFilter); err != nil {
			return err
		}
	}
	if len(plan.ids) > 0 {
		for lo := 0; lo < len(plan.ids); lo += 1000 {
			hi := min(lo+1000, len(plan.ids))
			if err := s.coll.Delete(ctx, plan.ids[lo:hi]...); err != nil {
				return fmt.Errorf("deleted %d, then: %w", n+lo, err)
			}
		}
		n += len(plan.ids)
	}
	cleared, err := a.clearAssemblies(ctx, s, plan.threads)
	if err != nil {
		return fmt.Errorf("deleted %s, then clearing recorded assemblies: %w", plural(n, "memory", "memories"), err)
	}
	if cleared > 0 {
		fmt.Fprintf(a.io.Err, "cleared the recorded assemblies of %s\n", plural(cleared, "thread", "threads"))
	}
	deleted := plan.ids
	if plan.byFilter != nil {
		deleted = nil
		for _, r := range plan.shown {
			deleted = append(deleted, r.ID)
		}
	}
	return a.printDeleted(n, deleted)
}

func (a *app) printDeleted(n int, ids []string) error {
	if a.flags.json {
		if ids == nil {
			ids = []string{}
		}
		return writeJSON(a.io.Out, map[string]any{"deleted": n, "ids": ids})
	}
	fmt.Fprintf(a.io.Out, "deleted %s\n", plural(n, "memory", "memories"))
	return nil
}

// planFilter lists what a filter deletes, with the linked threads of a
// --resource deletion.
func (a *app) planFilter(ctx context.Context, s *store, flt vectorstore.Filter, match string, f *rmFlags, plan *rmPlan) error {
	byIDs := match != ""
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
		if byIDs {
			plan.ids = append(plan.ids, r.ID)
		}
	}
	if !byIDs && plan.total > 0 {
		plan.byFilter = &flt
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
	// filters.
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
			plan.ids = append(plan.ids, r.ID)
		}
	}
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

// clearAssemblies deletes the recorded last assembly of threads, for an
// embedded directory store (whose state store memctl can open).
func (a *app) clearAssemblies(ctx context.Context, s *store, threads []string) (int, error) {
	if s.env == nil || len(threads) == 0 {
		return 0, nil
	}
	n := 0
	for _, th := range threads {
		key := assemblyKey(th)
		e, err := s.env.State.Get(ctx, key)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return n, err
		}
		if err := s.env.State.Delete(ctx, key, e.Revision); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// assemblyKey is where core keeps a thread's last assembly (core/record.go).
func assemblyKey(thread string) storage.Key {
	return storage.Key{Scope: "thread", ScopeID: thread, Layer: "_strata", Name: "last_assembly"}
}

// confirm asks on a terminal; elsewhere it refuses.
func (a *app) confirm(question string, n int) error {
	in, ok := a.io.In.(*os.File)
	if !ok || !isTerminalFile(in) {
		return usageErrorf("refusing to delete %s without --yes (stdin is not a terminal to confirm on)", plural(n, "memory", "memories"))
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

// stateRef says where inspect reads the runtime's layer state: --state,
// else the config file's state, else <dir>/state of an embedded directory,
// else the postgres store's database.
func (a *app) stateRef(ref storeRef) (string, error) {
	switch {
	case a.flags.state != "":
		return a.flags.state, nil
	case a.cfg.State != "":
		return a.cfg.State, nil
	case ref.Dir != "":
		return filepath.Join(ref.Dir, "state"), nil
	case ref.Scheme == "postgres":
		return ref.URL, nil
	}
	return "", usageErrorf("inspect reads the runtime's state store: %s is not an embedded directory or postgres URL, so pass --state DIR|postgres://...", ref)
}
