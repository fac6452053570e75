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
