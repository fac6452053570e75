package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/projector"
	"github.com/stratamem/strata/storage"
)

type inspectFlags struct {
	full     bool
	resource string
}

func (a *app) inspectCmd() *cobra.Command {
	var f inspectFlags
	cmd := &cobra.Command{
		Use:   "inspect THREAD",
		Short: "Show what the agent saw on a thread's last turn",
		Long: `Show the assembled view of the last turn of THREAD, as the runtime recorded
it: the bands (system, anchor, history, live, updates, tail) with their
items and tokens, the layers served pinned for the cache epoch and those
whose drift was published as superseding context updates, and the per-layer
usage report (band, served fresh or pinned, tokens against budget, churn,
rebill estimate), the epoch and the diagnostics.

A thread of a resource is recorded under both ids: --resource R reads
R's thread THREAD. Without it, inspect reads the thread of the resource the
runtime bound THREAD to (a thread belongs to the resource of the first run
that used it), else the thread of no resource. A record written before
threads were keyed by resource is found too.

The runtime records it only with core.Config.RecordAssemblies on. It is read
from the runtime's state store: <dir>/state of an embedded directory, the
database of a postgres store, or --state DIR|postgres://...

Text the store holds is printed with controls escaped (\x1b, \u009b...);
--json prints it exactly.`,
		Args: exactArgs(1, "one THREAD"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runInspect(cmd.Context(), args[0], &f) },
	}
	cmd.Flags().BoolVar(&f.full, "full", false, "print every item's whole text")
	cmd.Flags().StringVarP(&f.resource, "resource", "r", "", "the resource the thread belongs to (default: the one it is bound to)")
	cmd.Flags().StringVar(&a.flags.state, "state", "", "the runtime's state store: a filestore directory or postgres:// URL")
	return cmd
}

func (a *app) runInspect(ctx context.Context, thread string, f *inspectFlags) error {
	if err := checkID(thread); err != nil {
		return usageErrorf("thread: %s", strings.TrimPrefix(Message(err), "malformed id"))
	}
	if f.resource != "" {
		if err := checkID(f.resource); err != nil {
			return usageErrorf("--resource: %s", strings.TrimPrefix(Message(err), "malformed id"))
		}
	}
	st, loc, err := a.openState(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	owner, bound, err := inspect.ThreadOwner(ctx, st, thread)
	if err != nil {
		return fmt.Errorf("read the owner of thread %q in %s: %w", thread, loc, err)
	}
	resource := f.resource
	if resource == "" && bound {
		resource = owner
	}
	rec, err := inspect.LastAssembly(ctx, st, resource, thread)
	if errors.Is(err, storage.ErrNotFound) {
		whose := fmt.Sprintf("thread %q", thread)
		if resource != "" {
			whose = fmt.Sprintf("thread %q of resource %q", thread, resource)
		}
		hint := ""
		switch {
		case bound && owner != resource:
			hint = fmt.Sprintf("; the thread belongs to %s", resourceName(owner))
		case !bound && resource == "":
			hint = "; give --resource if the thread belongs to one"
		}
		return notFoundf("no recorded assembly for %s in %s (the runtime records one per thread when core.Config.RecordAssemblies is on)%s", whose, loc, hint)
	}
	if err != nil {
		return err
	}
	if a.flags.json {
		return writeJSONIndent(a.io.Out, rec)
	}
	w := a.io.Out
	of := ""
	if resource != "" {
		of = " of resource " + esc(resource)
	}
	fmt.Fprintf(w, "Thread %s%s: turn %d of run %s\n", esc(thread), of, rec.Turn, esc(rec.RunID))
	fmt.Fprintf(w, "Prefix hash: %s\n", esc(rec.PrefixHash))
	if len(rec.Tools) > 0 {
		fmt.Fprintf(w, "Tools: %s\n", esc(strings.Join(rec.Tools, ", ")))
	}
	total := 0
	for _, b := range rec.Bands {
		total += b.Tokens
	}
	fmt.Fprintf(w, "\nView: %d tokens in %d bands\n", total, len(rec.Bands))
	for _, b := range rec.Bands {
		fmt.Fprintf(w, "\n[%s] %d tokens, %s\n", esc(b.Band), b.Tokens, plural(len(b.Items), "item", "items"))
		for _, it := range b.Items {
			fmt.Fprintf(w, "  %s\n", a.itemLine(it, f.full))
		}
	}
	u := rec.Usage
	if u == nil {
		return nil
	}
	fmt.Fprintln(w, "\nLayers:")
	tw := newTable(w)
	fmt.Fprintln(tw, "  LAYER\tSLOT\tPLACEMENT\tBAND\tSERVED\tTOKENS\tBUDGET\tITEMS\tTRUNC\tUPDATE\tCHURN\tREBILL")
	var pinned, superseded []string
	for _, l := range u.Layers {
		placement := string(l.Placement)
		if placement == "" {
			placement = "auto"
		}
		budget := "-"
		if l.Budget > 0 && l.Budget < core.Unlimited {
			budget = strconv.Itoa(l.Budget)
		} else if l.Budget >= core.Unlimited {
			budget = "unlimited"
		}
		served := string(l.Served)
		if l.Disabled {
			served = "disabled"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%d\t%s\t%d\t%d\t%s\t%.2f\t%d\n", cell(l.LayerID), l.Slot, cell(placement),
			projector.Band(l.Band).String(), cell(served), l.Tokens, budget, l.Items, l.Truncated, cell(string(l.Update)), l.ChurnRate, l.RebillTokens)
		if l.Served == core.ServedPinned {
			pinned = append(pinned, l.LayerID)
		}
		if l.Update != "" {
			superseded = append(superseded, l.LayerID+" ("+string(l.Update)+")")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nPinned (served the epoch's bytes): %s\n", esc(listOrNone(pinned)))
	fmt.Fprintf(w, "Superseded by context updates: %s\n", esc(listOrNone(superseded)))
	if e := u.Epoch; e != nil {
		re := ""
		if e.Reanchored {
			re = ", re-anchored this turn"
		}
		fmt.Fprintf(w, "Epoch: %s, age %d, started by %s%s; anchor %d tokens, updates %d tokens\n",
			esc(e.ID), e.Age, esc(string(e.ReanchorReason)), re, e.AnchorTokens, e.UpdateTokens)
	}
	fmt.Fprintf(w, "History: %d items shown, %d dropped; total %d tokens\n", u.HistoryItems, u.HistoryDropped, u.Total)
	for _, d := range u.Diagnostics {
		fmt.Fprintf(w, "Diagnostic: %s %s (%s): %s\n", esc(d.Layer), esc(string(d.Hook)), esc(string(d.Kind)), esc(oneLine(d.Message)))
	}
	return nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// itemLine renders one item of a recorded view on a line (with --full,
// a text item keeps its lines, indented), every value escaped.
func (a *app) itemLine(it core.Item, full bool) string {
	n := 100
	if full {
		n = 0
	}
	var s string
	switch it.Type {
	case core.TypeFunctionCall:
		s = fmt.Sprintf("call %s %s(%s)", esc(it.CallID), esc(it.Name), clip(it.Arguments, n))
	case core.TypeFunctionCallOutput:
		s = fmt.Sprintf("output %s: %s", esc(it.CallID), clip(it.Output, n))
	default:
		text := it.Text()
		if full {
			s = esc(string(it.Role)) + ": " + strings.ReplaceAll(escText(text), "\n", "\n    ")
		} else {
			s = esc(string(it.Role)) + ": " + clip(text, n)
		}
	}
	if it.ID != "" {
		s = "(" + esc(it.ID) + ") " + s
	}
	return s
}
