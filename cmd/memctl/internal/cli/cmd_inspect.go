package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
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
	list     bool
	turn     int
	items    string
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

--list lists the thread's recorded turns (the runtime keeps every
assembly of a thread, by the thread's turn number, up to
core.Config.AssemblyRetention of them); --turn N shows turn N's record:
its view band by band, its segment hashes, the history items it kept
against the run's log, the tool outputs it showed cleared (with
core.Config.TailTrim: call id, tokens and the log reference of the full
body), its compaction boundary and the log reference of the compaction
event, the layers' usage and the cache report of its call.

--items A-B (or N, or log:N) prints log items A to B of the run a turn
recorded (--turn N, else the newest turn) in full, as the run logged them:
a cleared output's whole body, a compaction event's summary. The items are
read from the run's log as the runtime stored it with the records; a range
past the log the turn saw is an error. Through --server the log is read
with the server's state API (GET /v1/state/_strata/...), so the key needs
the thread's resource.

When the host reports the provider's cache figures (Session.ReportCache),
each turn also shows what became of its model call: a cache miss with its
cause (changed, ttl_expired, below_minimum, lookback, evicted), the band
and the layer whose bytes changed, the provider's own reason and the tokens
it missed, and the input's cost by band (core.CacheConfig.Prices). The
runtime learns of them after the call and records them with the thread's
next turn, so the newest turn's call has none yet: the last-turn view shows
the previous call's instead. --list has a MISS and a COST column for them;
--json has them under "call" ("previous_call" in the last-turn view).

Text the store holds is printed with controls escaped (\x1b, \u009b...);
--json prints it exactly.`,
		Args: exactArgs(1, "one THREAD"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runInspect(cmd.Context(), args[0], &f) },
	}
	cmd.Flags().BoolVar(&f.full, "full", false, "print every item's whole text")
	cmd.Flags().StringVarP(&f.resource, "resource", "r", "", "the resource the thread belongs to (default: the one it is bound to)")
	cmd.Flags().BoolVar(&f.list, "list", false, "list the thread's recorded turns")
	cmd.Flags().IntVar(&f.turn, "turn", -1, "show the record of the thread's turn `N`")
	cmd.Flags().StringVar(&f.items, "items", "", "print log items `A-B` (or N, or log:N) of the turn's run in full")
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
	if f.items != "" {
		if f.list {
			return usageErrorf("--list and --items exclude each other")
		}
		if _, _, err := parseItems(f.items); err != nil {
			return err
		}
	}
	if f.turn < -1 {
		return usageErrorf("--turn: negative turn %d", f.turn)
	}
	if rc, err := a.remoteClient(); err != nil || rc != nil {
		if err != nil {
			return err
		}
		return a.remoteInspect(ctx, rc, thread, f)
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
	whose := fmt.Sprintf("thread %q", thread)
	if resource != "" {
		whose = fmt.Sprintf("thread %q of resource %q", thread, resource)
	}
	switch {
	case f.list && f.turn >= 0:
		return usageErrorf("--list and --turn exclude each other")
	case f.items != "":
		return a.showLogItems(ctx, st, loc, resource, thread, whose, f)
	case f.list:
		return a.listAssemblies(ctx, st, loc, resource, thread, whose)
	case f.turn >= 0:
		return a.showTurn(ctx, st, loc, resource, thread, whose, f)
	}
	rec, err := inspect.LastAssembly(ctx, st, resource, thread)
	if errors.Is(err, storage.ErrNotFound) {
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
	// The newest turn's call is not reported yet: what its usage report
	// holds is the previous call's (see inspect_call.go), whose cache
	// report the newest plan keeps (PrevCache).
	prev := newCallReport(rec.Usage, nil)
	if prev != nil && prev.Miss != nil {
		if p, err := inspect.LatestAssembly(ctx, st, resource, thread); err == nil && p.RunID == rec.RunID {
			prev = newCallReport(p.Usage, p.PrevCache)
		} else if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
	}
	if a.flags.json {
		return writeJSONIndent(a.io.Out, struct {
			*inspect.AssemblyRecord
			PreviousCall *callReport `json:"previous_call,omitempty"`
		}{rec, prev})
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
	if err := a.printCall(w, fmt.Sprintf("Previous call (run turn %d)", rec.Turn-1), prev, true); err != nil {
		return err
	}
	return a.printView(rec.Bands, rec.Usage, f.full)
}

// printView prints a recorded view's bands and usage report.
func (a *app) printView(bands []inspect.RecordedBand, u *core.Usage, full bool) error {
	w := a.io.Out
	rec := struct{ Bands []inspect.RecordedBand }{bands}
	total := 0
	for _, b := range rec.Bands {
		total += b.Tokens
	}
	fmt.Fprintf(w, "\nView: %d tokens in %d bands\n", total, len(rec.Bands))
	for _, b := range rec.Bands {
		fmt.Fprintf(w, "\n[%s] %d tokens, %s\n", esc(b.Band), b.Tokens, plural(len(b.Items), "item", "items"))
		for _, it := range b.Items {
			fmt.Fprintf(w, "  %s\n", a.itemLine(it, full))
		}
	}
	if u == nil {
		return nil
	}
	fmt.Fprintln(w, "\nLayers:")
	var rows [][]string
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
		rows = append(rows, []string{cell(l.LayerID), strconv.Itoa(l.Slot), cell(placement), projector.Band(l.Band).String(), cell(served),
			strconv.Itoa(l.Tokens), budget, strconv.Itoa(l.Items), strconv.Itoa(l.Truncated), cell(string(l.Update)),
			strconv.FormatFloat(l.ChurnRate, 'f', 2, 64), strconv.Itoa(l.RebillTokens)})
		if l.Served == core.ServedPinned {
			pinned = append(pinned, l.LayerID)
		}
		if l.Update != "" {
			superseded = append(superseded, l.LayerID+" ("+string(l.Update)+")")
		}
	}
	// 80 columns: the slot, placement, truncation and item counts go
	// first, then the update kind; --wide shows them all.
	if err := fitTableIndent(w, a.width(), "  ", []column{{name: "LAYER", min: 10}, {name: "SLOT", right: true, drop: 5},
		{name: "PLACEMENT", drop: 6}, {name: "BAND"}, {name: "SERVED", min: 6}, {name: "TOKENS", right: true}, {name: "BUDGET", right: true},
		{name: "ITEMS", right: true, drop: 3}, {name: "TRUNC", right: true, drop: 4}, {name: "UPDATE", min: 6, drop: 2},
		{name: "CHURN", right: true}, {name: "REBILL", right: true, drop: 1}}, rows); err != nil {
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

// listAssemblies prints the thread's recorded turns, oldest first.
func (a *app) listAssemblies(ctx context.Context, st storage.Store, loc, resource, thread, whose string) error {
	list, err := inspect.ListAssemblies(ctx, st, resource, thread)
	if errors.Is(err, storage.ErrNotFound) {
		return notFoundf("no recorded turns for %s in %s (the runtime records them when core.Config.RecordAssemblies is on)", whose, loc)
	}
	if err != nil {
		return err
	}
	calls, err := listCalls(ctx, st, resource, thread, list)
	if err != nil {
		return err
	}
	if a.flags.json {
		type turn struct {
			inspect.AssemblySummary
			Call *callReport `json:"call,omitempty"`
		}
		out := make([]turn, len(list))
		for i := range list {
			out[i] = turn{list[i], calls[i]}
		}
		return writeJSONIndent(a.io.Out, out)
	}
	reported := slices.ContainsFunc(calls, func(c *callReport) bool { return c != nil })
	var rows [][]string
	for i, l := range list {
		epoch := l.Epoch
		if l.Reanchored {
			epoch += " (re-anchored)"
		}
		row := []string{strconv.Itoa(l.Turn), cell(l.RunID), strconv.Itoa(l.RunTurn), strconv.Itoa(l.Tokens), strconv.Itoa(l.Items),
			strconv.Itoa(l.HistoryDropped), cell(listOrNone(nonEmpty(epoch))), cell(short(l.PrefixHash)), cell(short(l.AnchorHash))}
		if reported {
			miss, cost := "-", "-"
			if c := calls[i]; c != nil {
				if c.Miss != nil {
					miss = c.Miss.short()
				} else {
					miss = "none"
				}
				if c.Cost != nil {
					cost = money(c.Cost.Total)
				}
			}
			row = append(row, cell(miss), cost)
		}
		rows = append(rows, row)
	}
	// 80 columns: the items, the run's turn, the dropped count and the
	// anchor hash go before the call's miss and cost.
	cols := []column{{name: "TURN"}, {name: "RUN", min: 10}, {name: "RUN TURN", right: true, drop: 5},
		{name: "TOKENS", right: true}, {name: "ITEMS", right: true, drop: 6}, {name: "DROPPED", right: true, drop: 4}, {name: "EPOCH", min: 10},
		{name: "PREFIX", min: 8}, {name: "ANCHOR", drop: 3}}
	if reported {
		cols = append(cols, column{name: "MISS", min: 15}, column{name: "COST", right: true, drop: 2})
	}
	return fitTable(a.io.Out, a.width(), cols, rows)
}

// listCalls reads the report of each listed turn's call (see
// inspect_call.go): nil for a turn without one.
func listCalls(ctx context.Context, st storage.Store, resource, thread string, list []inspect.AssemblySummary) ([]*callReport, error) {
	recs := make(map[int]*inspect.Plan, len(list))
	for _, l := range list {
		rec, err := inspect.ReadAssembly(ctx, st, resource, thread, l.Turn)
		if errors.Is(err, storage.ErrNotFound) {
			continue // dropped by retention meanwhile
		}
		if err != nil {
			return nil, err
		}
		recs[l.Turn] = rec
	}
	calls := make([]*callReport, len(list))
	for i, l := range list {
		if rec, next := recs[l.Turn], recs[l.Turn+1]; rec != nil && next != nil && next.RunID == rec.RunID {
			calls[i] = newCallReport(next.Usage, rec.Cache)
		}
	}
	return calls, nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// short is the head of a hash, "-" for none.
func short(h string) string {
	if h == "" {
		return "-"
	}
	return h[:min(12, len(h))]
}

// showTurn prints the record of one turn of the thread.
func (a *app) showTurn(ctx context.Context, st storage.Store, loc, resource, thread, whose string, f *inspectFlags) error {
	rec, err := inspect.ReadAssembly(ctx, st, resource, thread, f.turn)
	if errors.Is(err, storage.ErrNotFound) {
		return notFoundf("no record of turn %d for %s in %s (memctl inspect --list shows the turns kept)", f.turn, whose, loc)
	}
	if err != nil {
		return err
	}
	call, err := turnCall(ctx, st, resource, thread, rec)
	if err != nil {
		return err
	}
	return a.printPlan(rec, resource, thread, f, call)
}

// remoteInspect shows a recorded assembly read through the server: the
// newest, or --turn N's.
func (a *app) remoteInspect(ctx context.Context, rc *remote, thread string, f *inspectFlags) error {
	switch {
	case f.list:
		return usageErrorf("through --server, inspect shows one turn (the newest, or --turn N from 1); --list needs --store")
	case f.turn == 0:
		return usageErrorf("through --server, --turn counts from 1 (turn 0 is the server's newest)")
	}
	q := url.Values{"thread": {thread}}
	if f.resource != "" {
		q.Set("resource", f.resource)
	}
	if f.turn > 0 {
		q.Set("turn", strconv.Itoa(f.turn))
	}
	var rec inspect.Plan
	if err := rc.call(ctx, http.MethodGet, "/v1/assembly", q, nil, &rec); err != nil {
		return err
	}
	if f.items != "" {
		// The server serves the record, not its run's log: the log's
		// chunks are read as the thread's state, under the resource the
		// server read the record for.
		res := f.resource
		if res == "" {
			res = rec.ResourceID
		}
		return a.printLogItems(ctx, &remoteLog{rc: rc, resource: res, thread: thread}, &rec, res, thread, f)
	}
	// The call's miss and cost are in the next turn's record (see
	// inspect_call.go); the newest turn (no --turn) has none yet.
	var call *callReport
	if f.turn > 0 {
		q.Set("turn", strconv.Itoa(f.turn+1))
		var next inspect.Plan
		switch err := rc.call(ctx, http.MethodGet, "/v1/assembly", q, nil, &next); {
		case err == nil && next.RunID == rec.RunID:
			call = newCallReport(next.Usage, rec.Cache)
		case err != nil && !errors.Is(err, ErrNotFound):
			return err
		}
	}
	return a.printPlan(&rec, f.resource, thread, f, call)
}

// printPlan prints the record of one turn of the thread, with what the
// host reported of the call made with it (call, nil when nothing).
func (a *app) printPlan(rec *inspect.Plan, resource, thread string, f *inspectFlags, call *callReport) error {
	if a.flags.json {
		return writeJSONIndent(a.io.Out, struct {
			*inspect.Plan
			Call *callReport `json:"call,omitempty"`
		}{rec, call})
	}
	w := a.io.Out
	of := ""
	if resource != "" {
		of = " of resource " + esc(resource)
	}
	fmt.Fprintf(w, "Thread %s%s: turn %d (turn %d of run %s)\n", esc(thread), of, rec.Turn, rec.RunTurn, esc(rec.RunID))
	fmt.Fprintf(w, "Prefix hash: %s\nAnchor hash: %s\nDynamic hash: %s\n", esc(rec.Hashes.Prefix), esc(short(rec.Hashes.Anchor)), esc(rec.Hashes.Dynamic))
	if len(rec.Tools) > 0 {
		names := make([]string, len(rec.Tools))
		for i, t := range rec.Tools {
			names[i] = t.Name
		}
		fmt.Fprintf(w, "Tools: %s\n", esc(strings.Join(names, ", ")))
	}
	h := rec.History
	spans := make([]string, len(h.Spans))
	for i, s := range h.Spans {
		spans[i] = fmt.Sprintf("%d-%d", s.From, s.To-1)
	}
	fmt.Fprintf(w, "History plan: log items %s of %d shown, %d inline, %d dropped", listOrNone(spans), h.LogLen, len(h.Inline), h.Dropped)
	if h.Summarized {
		fmt.Fprint(w, ", summarised")
	}
	if h.Cut != nil {
		fmt.Fprintf(w, ", user message cut from %d to %d tokens", h.Cut.Tokens, h.Cut.Shown)
	}
	fmt.Fprintln(w)
	if c := rec.Compaction; c != nil {
		fmt.Fprintf(w, "Compaction: boundary at log item %d", c.Boundary)
		if c.Event != "" {
			fmt.Fprintf(w, ", event %s", esc(c.Event))
		}
		fmt.Fprintln(w)
	}
	if len(rec.ClearedOutputs) > 0 {
		tokens := 0
		rows := make([][]string, len(rec.ClearedOutputs))
		for i, c := range rec.ClearedOutputs {
			tokens += c.Tokens
			rows[i] = []string{cell(c.CallID), strconv.Itoa(c.Tokens), cell(c.Ref)}
		}
		fmt.Fprintf(w, "Cleared outputs: %s, %d tokens (--items log:N prints a body)\n", plural(len(rows), "output", "outputs"), tokens)
		if err := fitTableIndent(w, a.width(), "  ", []column{{name: "CALL ID", min: 8}, {name: "TOKENS", right: true}, {name: "REF", min: 6}}, rows); err != nil {
			return err
		}
	}
	if c := rec.Cache; c != nil {
		fmt.Fprintf(w, "Cache report: read %d, written %d, uncached %d tokens\n", c.ReadTokens, c.WriteTokens, c.UncachedTokens)
	} else {
		fmt.Fprintln(w, "Cache report: none")
	}
	if err := a.printCall(w, "This turn's call", call, rec.Cache != nil && rec.Cache.Reported); err != nil {
		return err
	}
	bands := make([]inspect.RecordedBand, len(rec.Bands))
	for i, b := range rec.Bands {
		bands[i] = inspect.RecordedBand{Band: b.Band, Tokens: b.Tokens, Items: b.Items}
	}
	return a.printView(bands, rec.Usage, f.full)
}
