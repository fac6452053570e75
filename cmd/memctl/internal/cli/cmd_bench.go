package cli

import (
	"context"
	"errors"
	"fmt"
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
)

type benchFlags struct {
	sizes, textSizes, backends, pg, qdrant string
	queries, k                             int
	duration                               time.Duration
	markdown                               bool
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
are not touched. Prints a table of the results per backend and dataset:
ingest rate, query latency (p50 and p99 of one client), queries per second
of one client and recall@k; --markdown prints the full report (machine,
settings, datasets), --json one object per backend and dataset with
snake_case keys and the unit in each name (ingest_per_sec, p50_ms, ...).

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
	fs.BoolVar(&f.markdown, "markdown", false, "print the full report as markdown")
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
			cfg.PGDSN = connectionURL(ref.URL)
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
	switch {
	case a.flags.json:
		for _, r := range rep.Results {
			if err := writeJSON(a.io.Out, benchJSON(&r)); err != nil {
				return err
			}
		}
	case f.markdown:
		if err := rep.WriteMarkdown(a.io.Out); err != nil {
			return err
		}
	default:
		if err := a.printBench(rep.Results); err != nil {
			return err
		}
	}
	return runErr
}

// benchRow is one backend on one dataset in bench --json: snake_case keys,
// the unit in the name of every measure.
type benchRow struct {
	Backend      string        `json:"backend"`
	Dataset      string        `json:"dataset"`
	Size         int           `json:"size"`
	IngestPerSec float64       `json:"ingest_per_sec"`
	P50Ms        float64       `json:"p50_ms"`
	P99Ms        float64       `json:"p99_ms"`
	Throughput   []benchClient `json:"throughput"`
	Recall       float64       `json:"recall"`
	MinRecall    float64       `json:"min_recall"`
	Error        string        `json:"error,omitempty"`
}

// benchClient is one concurrency level of a throughput phase.
type benchClient struct {
	Clients int     `json:"clients"`
	QPS     float64 `json:"qps"`
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func benchJSON(r *recallbench.Result) benchRow {
	x := benchRow{Backend: r.Backend, Dataset: r.Dataset, Size: r.Size, IngestPerSec: r.IngestRate(), Recall: r.Recall,
		MinRecall: r.MinRecall, Throughput: []benchClient{}}
	if len(r.Throughput) > 0 {
		x.P50Ms, x.P99Ms = millis(r.Throughput[0].P50), millis(r.Throughput[0].P99)
	}
	for _, t := range r.Throughput {
		x.Throughput = append(x.Throughput, benchClient{Clients: t.Clients, QPS: t.QPS, P50Ms: millis(t.P50), P99Ms: millis(t.P99)})
	}
	if r.Err != nil {
		x.Error = oneLine(r.Err.Error())
	}
	return x
}

// printBench prints the results as a table within 80 columns.
func (a *app) printBench(results []recallbench.Result) error {
	rows := make([][]string, 0, len(results))
	for _, r := range results {
		p50, p99, qps := "-", "-", "-"
		if len(r.Throughput) > 0 {
			t := r.Throughput[0]
			p50, p99, qps = fmtLatency(t.P50), fmtLatency(t.P99), strconv.FormatFloat(t.QPS, 'f', 0, 64)
		}
		recall := strconv.FormatFloat(r.Recall, 'f', 3, 64)
		if r.Err != nil {
			recall = "error: " + oneLine(r.Err.Error())
		}
		rows = append(rows, []string{cell(r.Backend), cell(r.Dataset), strconv.Itoa(r.Size), strconv.FormatFloat(r.IngestRate(), 'f', 0, 64),
			p50, p99, qps, cell(recall)})
	}
	return fitTable(a.io.Out, a.width(), []column{{name: "BACKEND"}, {name: "DATASET", min: 12}, {name: "SIZE", right: true},
		{name: "INGEST/S", right: true}, {name: "P50", right: true}, {name: "P99", right: true}, {name: "QPS", right: true},
		{name: "RECALL", min: 6}}, rows)
}

// fmtLatency prints a latency in the unit that keeps it between 1 and
// 1000, with up to three significant digits and never in exponent form
// (999.7 µs is "1.00 ms", not "1e+03 µs").
func fmtLatency(d time.Duration) string {
	v, unit := float64(d)/float64(time.Microsecond), "µs"
	for _, u := range []string{"ms", "s"} {
		if v < 999.5 {
			break
		}
		v, unit = v/1000, u
	}
	switch {
	case v >= 99.95:
		return strconv.FormatFloat(v, 'f', 0, 64) + " " + unit
	case v >= 9.995:
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + unit
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + " " + unit
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
