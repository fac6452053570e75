// Command recallbench measures strata's vector backends: ingest rate, top-10
// latency, queries per second at 1 and 4 clients and recall@10 against
// exact search, on clustered vectors at 1k, 10k and 100k records and on the
// default model's vectors of real text at 10k. It writes
// <out>/recall-backends.md and <out>/recall-backends.svg.
//
//	go run ./benchmarks/cmd/recallbench -out benchmarks/results
//
// Backends: chromem always; pgvector when STRATA_TEST_PG_DSN is set (make
// bench-recall runs the command under `scripts/pg.sh with`, which starts a
// PostgreSQL with pgvector and sets it); qdrant when STRATA_QDRANT_ADDR
// (host:port of the gRPC API) is set. -backends names them explicitly.
//
// The text dataset needs the default model (make model); its vectors are
// cached in .strata/recallbench, keyed by the texts and the model.
//
// Each latency and throughput figure is the median of -rounds rounds
// (default 3) of -duration (default 2s). -ef-sweep sets the further HNSW
// ef_search values measured on pgvector (default 80,160,320).
//
// -quick runs a small version (1k clustered, 300 sentences of text, short
// phases) and writes recall-backends-quick.md, so it never overwrites the
// full report.
package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/stratamem/strata/internal/recallbench"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("recallbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "benchmarks/results", "directory of the report")
	quick := fs.Bool("quick", false, "small run: 1k clustered, 300 sentences, short phases; writes recall-backends-quick.md")
	backends := fs.String("backends", "", "comma-separated backends (chromem, pgvector, qdrant); default: chromem, plus pgvector with $STRATA_TEST_PG_DSN and qdrant with $STRATA_QDRANT_ADDR")
	sizes := fs.String("sizes", "", "clustered dataset sizes, e.g. 1k,10k,100k (default 1k,10k,100k; quick 1k; \"none\" for none)")
	textSizes := fs.String("text-sizes", "", "real-text dataset sizes (default 10k; quick 300; \"none\" for none)")
	queries := fs.Int("queries", 0, "queries per dataset (default 200; quick 100)")
	duration := fs.Duration("duration", 0, "duration of each throughput phase (default 2s; quick 300ms)")
	rounds := fs.Int("rounds", 0, "rounds of the latency and throughput phases; figures are medians over them (default 3; quick 1)")
	k := fs.Int("k", 10, "neighbours per query")
	efSweep := fs.String("ef-sweep", "", "further HNSW ef_search values to measure recall and latency at, e.g. 80,160,320 (the default; \"none\" for none)")
	noVariants := fs.Bool("no-variants", false, "skip the backends' variants (chromem: dot-product collection scanned by the driver)")
	batch := fs.Int("batch", 0, "records per Upsert call; 0 loads each dataset in one call")
	seed := fs.Uint64("seed", 1, "generator seed")
	cache := fs.String("cache", ".strata/recallbench", "cache directory of embedded vectors (\"\" for none)")
	noPlot := fs.Bool("no-plot", false, "do not write the SVG plot")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "recallbench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg := recallbench.Config{
		PGDSN:      os.Getenv("STRATA_TEST_PG_DSN"),
		QdrantAddr: os.Getenv("STRATA_QDRANT_ADDR"),
		Queries:    *queries,
		Duration:   *duration,
		Rounds:     *rounds,
		K:          *k,
		Batch:      *batch,
		Seed:       *seed,
		CacheDir:   *cache,
		NoVariants: *noVariants,
		Log:        slog.New(slog.NewTextHandler(stderr, nil)),
	}
	name := "recall-backends"
	if *quick {
		name = "recall-backends-quick"
		cfg.Sizes, cfg.TextSizes = []int{1000}, []int{300}
		cfg.Queries = cmp.Or(cfg.Queries, 100)
		cfg.Duration = cmp.Or(cfg.Duration, 300*time.Millisecond)
		cfg.Rounds = cmp.Or(cfg.Rounds, 1)
	}
	var err error
	if *backends != "" {
		cfg.Backends = strings.Split(*backends, ",")
	}
	if *sizes != "" {
		if cfg.Sizes, err = recallbench.ParseSizes(*sizes); err != nil {
			fmt.Fprintf(stderr, "recallbench: -sizes: %v\n", err)
			return 2
		}
	}
	if *efSweep != "" {
		if cfg.EfSearchSweep, err = recallbench.ParseSizes(*efSweep); err != nil {
			fmt.Fprintf(stderr, "recallbench: -ef-sweep: %v\n", err)
			return 2
		}
	}
	if *textSizes != "" {
		if cfg.TextSizes, err = recallbench.ParseSizes(*textSizes); err != nil {
			fmt.Fprintf(stderr, "recallbench: -text-sizes: %v\n", err)
			return 2
		}
	}
	if cfg.TextSizes == nil || len(cfg.TextSizes) > 0 {
		if cfg.GoRoot, err = goRoot(); err != nil {
			fmt.Fprintf(stderr, "recallbench: the text dataset reads the Go distribution's documents: %v\n", err)
			return 1
		}
	}
	cfg.Command = "go run ./benchmarks/cmd/recallbench " + strings.Join(args, " ")
	if cfg.PGDSN != "" {
		cfg.Command = "bash scripts/pg.sh with " + cfg.Command
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "recallbench: %v\n", err)
		return 1
	}

	// Ctrl-C cancels the run; Run still drops the collections it made.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, runErr := recallbench.Run(ctx, cfg)
	if rep == nil {
		fmt.Fprintf(stderr, "recallbench: %v\n", runErr)
		if errors.Is(runErr, recallbench.ErrInvalidConfig) {
			return 2
		}
		return 1
	}
	// Each file is rendered in full before it is written, the report first.
	type output struct {
		ext, what string // what prefixes a rendering error
		write     func(io.Writer) error
	}
	outputs := []output{{".md", "", rep.WriteMarkdown}}
	if !*noPlot {
		outputs = append(outputs, output{".svg", "plot: ", rep.WriteSVG})
	}
	for _, o := range outputs {
		var buf bytes.Buffer
		if err := o.write(&buf); err != nil {
			fmt.Fprintf(stderr, "recallbench: %s%v\n", o.what, err)
			return 1
		}
		path := filepath.Join(*out, name+o.ext)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			fmt.Fprintf(stderr, "recallbench: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "recallbench: wrote %s\n", path)
	}
	for _, ch := range rep.Checks() {
		state := "met"
		switch {
		case !ch.Measured:
			state = "not measured"
		case !ch.Met:
			state = "NOT MET"
		}
		fmt.Fprintf(stderr, "target: %s: %s (%s)\n", ch.Target, state, ch.Detail)
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "recallbench: %v\n", runErr)
		return 1
	}
	return 0
}

// goRoot asks the go command, the authority on where the distribution is.
func goRoot() (string, error) {
	if r := os.Getenv("GOROOT"); r != "" {
		return r, nil
	}
	b, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
