package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/internal/recallbench"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/projector"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/filestore"
	"github.com/stratamem/strata/storage/postgres"
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

// vectorstoreParams are URL parameters of the vector store drivers, not
// connection settings: they are dropped before the URL opens the state
// store.
var vectorstoreParams = []string{"collection", "dimension", "distance", "metadata_keys", "schema", "index", "m",
	"ef_construction", "ef_search", "exact", "copy_threshold", "timeout"}

func stripParams(raw string, params []string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	for _, p := range params {
		q.Del(p)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func (a *app) openState(ctx context.Context) (storage.Store, string, error) {
	ref, err := resolveStore(a.flags.store, a.cfg, a.cfgPath)
	if err != nil {
		return nil, "", err
	}
	loc, err := a.stateRef(ref)
	if err != nil {
		return nil, "", err
	}
	return a.openStateAt(ctx, loc)
}

// openStateAt opens the state store at loc, a filestore directory that
// must exist or a postgres URL, and returns it with a name for messages.
func (a *app) openStateAt(ctx context.Context, loc string) (storage.Store, string, error) {
	octx, cancel := context.WithTimeout(ctx, a.flags.timeout)
	defer cancel()
	if strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://") {
		st, err := postgres.Open(octx, stripParams(loc, vectorstoreParams), postgres.Options{})
		if err != nil {
			return nil, "", fmt.Errorf("open state store %s: %w", redactURL(loc), err)
		}
		return st, redactURL(loc), nil
	}
	if _, err := os.Stat(loc); errors.Is(err, fs.ErrNotExist) {
		return nil, "", notFoundf("no state store at %s (the runtime keeps recorded assemblies there)", loc)
	}
	st, err := filestore.Open(loc, filestore.Options{})
	if err != nil {
		return nil, "", fmt.Errorf("open state store %s: %w", loc, err)
	}
	return st, loc, nil
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
	owner, bound, err := core.ThreadOwner(ctx, st, thread)
	if err != nil {
		return fmt.Errorf("read the owner of thread %q in %s: %w", thread, loc, err)
	}
	resource := f.resource
	if resource == "" && bound {
		resource = owner
	}
	rec, err := core.LastAssembly(ctx, st, resource, thread)
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
			projector.Band(l.Band).String(), cell(served), l.Tokens, budget, l.Items, l.Truncated, cell(l.Update), l.ChurnRate, l.RebillTokens)
		if l.Served == core.ServedPinned {
			pinned = append(pinned, l.LayerID)
		}
		if l.Update != "" {
			superseded = append(superseded, l.LayerID+" ("+l.Update+")")
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
		fmt.Fprintf(w, "Diagnostic: %s %s (%s): %s\n", esc(d.Layer), esc(d.Hook), esc(string(d.Kind)), esc(oneLine(d.Message)))
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

// resourceName names a thread's owner in a message.
func resourceName(r string) string {
	if r == "" {
		return "no resource"
	}
	return fmt.Sprintf("resource %q", r)
}

type benchFlags struct {
	sizes, textSizes, backends, pg, qdrant string
	queries, k                             int
	duration                               time.Duration
}

func (a *app) benchCmd() *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the recall benchmark against the configured backends",
		Long: `Run the recall benchmark (internal/recallbench) against the embedded
backend and the server backends configured: the --store if it is a postgres
or qdrant URL, --pg and --qdrant, $STRATA_TEST_PG_DSN and $STRATA_QDRANT_ADDR.
Each backend gets fresh collections, dropped afterwards; the stored memories
are not touched. Prints the report's table (markdown).

The default run is small (1k clustered vectors, 300 sentences of real text
when the default model is installed); --sizes 1k,10k,100k runs the full one.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runBench(cmd.Context(), &f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.sizes, "sizes", "1k", "clustered dataset sizes, e.g. 1k,10k (none for none)")
	fs.StringVar(&f.textSizes, "text-sizes", "300", "real-text dataset sizes (none for none; needs the default model)")
	fs.StringVar(&f.backends, "backends", "", "comma-separated: chromem, pgvector, qdrant (default: every configured one)")
	fs.StringVar(&f.pg, "pg", "", "PostgreSQL URL for the pgvector backend")
	fs.StringVar(&f.qdrant, "qdrant", "", "Qdrant gRPC address host:port")
	fs.IntVar(&f.queries, "queries", 100, "queries per dataset")
	fs.IntVar(&f.k, "k", 10, "neighbours per query")
	fs.DurationVar(&f.duration, "duration", 300*time.Millisecond, "duration of each throughput phase")
	return cmd
}

func parseSizes(flag, s string) ([]int, error) {
	if s == "none" {
		return []int{}, nil
	}
	var out []int
	for _, p := range strings.Split(s, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		mult := 1
		if t, ok := strings.CutSuffix(p, "k"); ok {
			p, mult = t, 1000
		}
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			return nil, usageErrorf("%s: bad size %q (want e.g. 1k, 10k or 2500)", flag, p)
		}
		out = append(out, n*mult)
	}
	return out, nil
}

func (a *app) runBench(ctx context.Context, f *benchFlags) error {
	cfg := recallbench.Config{Queries: f.queries, K: f.k, Duration: f.duration, PGDSN: f.pg, QdrantAddr: f.qdrant,
		CacheDir: filepath.Join(".strata", "recallbench")}
	var err error
	if cfg.Sizes, err = parseSizes("--sizes", f.sizes); err != nil {
		return err
	}
	if cfg.TextSizes, err = parseSizes("--text-sizes", f.textSizes); err != nil {
		return err
	}
	ref, err := resolveStore(a.flags.store, a.cfg, a.cfgPath)
	if err != nil {
		return err
	}
	switch ref.Scheme {
	case "postgres":
		if cfg.PGDSN == "" {
			cfg.PGDSN = stripParams(ref.URL, vectorstoreParams)
		}
	case "qdrant":
		if u, err := url.Parse(ref.URL); err == nil && cfg.QdrantAddr == "" {
			cfg.QdrantAddr = u.Host
		}
	}
	if cfg.PGDSN == "" {
		cfg.PGDSN = os.Getenv("STRATA_TEST_PG_DSN")
	}
	if cfg.QdrantAddr == "" {
		cfg.QdrantAddr = os.Getenv("STRATA_QDRANT_ADDR")
	}
	if f.backends != "" {
		cfg.Backends = strings.Split(f.backends, ",")
	}
	if len(cfg.TextSizes) > 0 {
		if _, err := (&store{}).defaultModel(); err != nil {
			fmt.Fprintf(a.io.Err, "memctl: bench: no real-text dataset: %s\n", Message(err))
			cfg.TextSizes = []int{}
		} else if cfg.GoRoot = goRoot(); cfg.GoRoot == "" {
			fmt.Fprintln(a.io.Err, "memctl: bench: no real-text dataset: cannot find the Go distribution's documents")
			cfg.TextSizes = []int{}
		}
	}
	if len(cfg.Sizes)+len(cfg.TextSizes) == 0 {
		return usageErrorf("no dataset to run (--sizes and --text-sizes are none)")
	}
	if a.progressOn() {
		cfg.Log = slog.New(slog.NewTextHandler(a.io.Err, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	rep, runErr := recallbench.Run(ctx, cfg)
	if rep == nil {
		if errors.Is(runErr, recallbench.ErrInvalidConfig) {
			return usageErrorf("%v", runErr)
		}
		return runErr
	}
	if a.flags.json {
		type row struct {
			Backend, Dataset string
			Size             int
			IngestPerSec     float64 `json:"ingest_per_sec"`
			P50ms, P99ms     float64
			QPS              []float64
			Recall           float64
			Error            string `json:",omitempty"`
		}
		for _, r := range rep.Results {
			x := row{Backend: r.Backend, Dataset: r.Dataset, Size: r.Size, IngestPerSec: r.IngestRate(), Recall: r.Recall}
			if len(r.Throughput) > 0 {
				x.P50ms = float64(r.Throughput[0].P50) / 1e6
				x.P99ms = float64(r.Throughput[0].P99) / 1e6
			}
			for _, t := range r.Throughput {
				x.QPS = append(x.QPS, t.QPS)
			}
			if r.Err != nil {
				x.Error = oneLine(r.Err.Error())
			}
			if err := writeJSON(a.io.Out, x); err != nil {
				return err
			}
		}
	} else {
		if err := rep.WriteMarkdown(a.io.Out); err != nil {
			return err
		}
	}
	return runErr
}

func goRoot() string {
	if r := os.Getenv("GOROOT"); r != "" {
		return r
	}
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	if r := runtime.GOROOT(); r != "" { //nolint:staticcheck // the fallback when no go command is on PATH
		return r
	}
	return ""
}
