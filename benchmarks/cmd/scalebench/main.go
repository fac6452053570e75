// Command scalebench measures how the semantic memory layer's costs grow
// with one user's history: session start, Append+Record, Assemble and
// Search latency, RSS, at 1k, 10k, 50k and 200k messages in one resource
// and the same totals spread over 1,000 resources, on the embedded store
// and on pgvector, plus the ingest rate with the default model. It writes
// <out>/scale.md, scale.json and scale.svg (scale-quick.* with -quick).
//
//	go run ./benchmarks/cmd/scalebench -out benchmarks/results
//	make bench-scale   # the same under scripts/pg.sh with (PostgreSQL)
//
// pgvector runs when STRATA_TEST_PG_DSN is set (or is named by -backends,
// and is then reported as not run without it).
//
// The loaded stores are cached under -cache (default
// $XDG_CACHE_HOME/strata/scalebench), one directory per layout and size,
// built once (resumably) on tmpfs (-scratch, default /dev/shm) and reused
// by later runs; a store whose load is estimated to take longer than
// -load-cap is skipped and reported as not run. Each build, pgvector copy,
// case and ingest runs in a child process of its own (this binary with
// -child), so RSS is the case's alone, an init left running by a timeout
// dies with its case, and -case-timeout bounds each.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stratamem/strata/benchmarks/internal/scalebench"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// spec is what a child process is asked to do.
type spec struct {
	Kind string `json:"kind"` // build, pg, case, ingest

	// build and pg
	Root    string                   `json:"root,omitempty"`
	Scratch string                   `json:"scratch,omitempty"`
	Layout  scalebench.Layout        `json:"layout,omitempty"`
	Size    int                      `json:"size,omitempty"`
	Workers int                      `json:"workers,omitempty"`
	PGDSN   string                   `json:"pg_dsn,omitempty"`
	Case    *scalebench.Config       `json:"case,omitempty"`
	Ingest  *scalebench.IngestConfig `json:"ingest,omitempty"`
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("scalebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizesF := fs.String("sizes", "", "history sizes in messages, comma-separated, k suffix allowed (default 1000,10000,50000,200000; quick 1000,10000)")
	backendsF := fs.String("backends", "", "embedded,pgvector (default: embedded, plus pgvector with $STRATA_TEST_PG_DSN)")
	spread := fs.Bool("spread", true, "also run each total spread over 1,000 resources")
	out := fs.String("out", "benchmarks/results", "directory of the report")
	quick := fs.Bool("quick", false, "small run: 1k and 10k, fewer samples, ingest of 500; writes scale-quick.*")
	embedder := fs.String("embedder", scalebench.EmbedUseLite, "embedder of the ingest-rate row: uselite (the default model) or hash")
	ingestN := fs.Int("ingest", 0, "messages of the ingest-rate row (default 2000; quick 500; -1 for none)")
	cacheDir := fs.String("cache", "", "cache of loaded stores (default $XDG_CACHE_HOME/strata/scalebench)")
	scratch := fs.String("scratch", "", "where stores are built before being copied to the cache (default /dev/shm when writable; \"-\" to build in place)")
	loadCap := fs.Duration("load-cap", 15*time.Minute, "skip a store whose load is estimated to take longer (0: no cap)")
	caseTimeout := fs.Duration("case-timeout", 15*time.Minute, "kill a case (or a pgvector copy) running longer")
	starts := fs.Int("starts", 0, "session starts per case (default 20; quick 10)")
	turns := fs.Int("turns", 0, "exchanges per case (default 20; quick 10)")
	queries := fs.Int("queries", 0, "searches per case (default 50; quick 20)")
	phaseCap := fs.Duration("phase-cap", 0, "stop a phase after this long once it has a few samples (default 60s; quick 20s)")
	workers := fs.Int("workers", 3, "loading sessions at once")
	cpuprofile := fs.String("cpuprofile", "", "directory: write CPU profiles of one session start and of the searches of each one-resource case at -profile-size")
	profileSize := fs.Int("profile-size", 50000, "size of the cases -cpuprofile profiles")
	child := fs.String("child", "", "internal: run one step (build, pg, case, ingest) from -spec and write -result")
	specF := fs.String("spec", "", "internal")
	resultF := fs.String("result", "", "internal")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "scalebench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	if *child != "" {
		return runChild(ctx, *child, *specF, *resultF, logf)
	}

	sizes := []int{1000, 10000, 50000, 200000}
	nStarts, nTurns, nQueries, phase := 20, 20, 50, 60*time.Second
	ingest := 2000
	name := "scale"
	if *quick {
		sizes = []int{1000, 10000}
		nStarts, nTurns, nQueries, phase = 10, 10, 20, 20*time.Second
		ingest = 500
		name = "scale-quick"
	}
	if *sizesF != "" {
		var err error
		if sizes, err = parseSizes(*sizesF); err != nil {
			fmt.Fprintf(stderr, "scalebench: -sizes: %v\n", err)
			return 2
		}
	}
	setInt := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	setInt(&nStarts, *starts)
	setInt(&nTurns, *turns)
	setInt(&nQueries, *queries)
	setInt(&ingest, *ingestN)
	if *phaseCap > 0 {
		phase = *phaseCap
	}
	dsn := os.Getenv("STRATA_TEST_PG_DSN")
	backends := []string{scalebench.Embedded}
	if dsn != "" {
		backends = append(backends, scalebench.PGVector)
	}
	if *backendsF != "" {
		backends = nil
		for _, b := range strings.Split(*backendsF, ",") {
			b = strings.TrimSpace(b)
			if b != scalebench.Embedded && b != scalebench.PGVector {
				fmt.Fprintf(stderr, "scalebench: -backends: unknown backend %q (embedded, pgvector)\n", b)
				return 2
			}
			backends = append(backends, b)
		}
	}
	if *embedder != scalebench.EmbedUseLite && *embedder != scalebench.EmbedHash {
		fmt.Fprintf(stderr, "scalebench: -embedder must be uselite or hash, got %q\n", *embedder)
		return 2
	}
	layouts := []scalebench.Layout{scalebench.One}
	if *spread {
		layouts = append(layouts, scalebench.Spread)
	}
	root := *cacheDir
	if root == "" {
		uc, err := os.UserCacheDir()
		if err != nil {
			uc = os.TempDir()
		}
		root = filepath.Join(uc, "strata", "scalebench")
	}
	scr := *scratch
	switch scr {
	case "":
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && writable("/dev/shm") {
			scr = "/dev/shm/strata-scalebench"
		}
	case "-":
		scr = ""
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "scalebench: %v\n", err)
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "scalebench: %v\n", err)
		return 1
	}
	work, err := os.MkdirTemp("", "scalebench-run-")
	if err != nil {
		fmt.Fprintf(stderr, "scalebench: %v\n", err)
		return 1
	}
	defer os.RemoveAll(work)

	rep := &scalebench.Report{
		Command: "go run ./benchmarks/cmd/scalebench " + strings.Join(args, " "),
		Date:    time.Now().UTC(), Machine: scalebench.ReadMachine(),
		Sizes: sizes, Backends: backends, Layouts: layouts,
		Starts: nStarts, Turns: nTurns, Queries: nQueries, PhaseCap: phase.String(),
	}
	rep.Commit = commit()
	if os.Getenv("MAKELEVEL") != "" && len(args) <= 2 {
		rep.Command = "make bench-scale (" + strings.TrimSpace(rep.Command) + ", under scripts/pg.sh with)"
	}
	begin := time.Now()
	write := func() {
		rep.Seconds = time.Since(begin).Seconds()
		rep.Machine.LoadEnd = scalebench.ReadLoad()
		rep.SortCases()
		if err := writeOutputs(*out, name, rep); err != nil {
			logf("scalebench: %v", err)
		}
	}
	step := 0
	runStep := func(sp spec, timeout time.Duration, result any) error {
		step++
		sf := filepath.Join(work, fmt.Sprintf("spec-%d.json", step))
		rf := filepath.Join(work, fmt.Sprintf("result-%d.json", step))
		raw, err := json.Marshal(sp)
		if err != nil {
			return err
		}
		if err := os.WriteFile(sf, raw, 0o600); err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		cmd := exec.CommandContext(cctx, self, "-child", sp.Kind, "-spec", sf, "-result", rf)
		cmd.Stdout, cmd.Stderr = stderr, stderr
		cmd.WaitDelay = 5 * time.Second
		err = cmd.Run()
		if cctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("killed after %s", timeout)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rraw, rerr := os.ReadFile(rf)
		if rerr != nil {
			if err != nil {
				return fmt.Errorf("child: %w", err)
			}
			return rerr
		}
		var env struct {
			Err    string          `json:"error"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(rraw, &env); err != nil {
			return err
		}
		if len(env.Result) > 0 && result != nil {
			if err := json.Unmarshal(env.Result, result); err != nil {
				return err
			}
		}
		if env.Err != "" {
			return errors.New(env.Err)
		}
		return err
	}

	// Estimated load time from the last store built of the layout: the
	// rate falls as the store grows (every session start scans the
	// collection), about as the square root of the size.
	type lastBuild struct {
		size int
		rate float64
	}
	last := map[scalebench.Layout]lastBuild{}
	loaded := map[string]bool{}
	key := func(l scalebench.Layout, n int) string { return fmt.Sprintf("%s/%d", l, n) }
	for _, size := range sizes {
		if ctx.Err() != nil {
			break
		}
		for _, l := range layouts {
			dir := scalebench.CacheDir(root, l, size, 0)
			if st, ok := scalebench.ReadStats(dir); ok {
				loaded[key(l, size)] = true
				rep.Builds = append(rep.Builds, st)
				last[l] = lastBuild{size, st.Rate}
				continue
			}
			if lb, ok := last[l]; ok && *loadCap > 0 {
				rate := lb.rate * math.Sqrt(float64(lb.size)/float64(size))
				est := time.Duration(float64(size) / rate * float64(time.Second))
				if est > *loadCap {
					reason := fmt.Sprintf("load estimated at %s > -load-cap %s (rerun with -load-cap 0 to build it; the load resumes)", est.Round(time.Minute), *loadCap)
					logf("scalebench: %s %s: %s", l, scalebench.SizeLabel(size), reason)
					rep.Notes = append(rep.Notes, fmt.Sprintf("%s %s: not loaded: %s", l, scalebench.SizeLabel(size), reason))
					continue
				}
			}
			logf("scalebench: loading %s messages, layout %s, into %s", scalebench.SizeLabel(size), l, dir)
			var st scalebench.LoadStats
			timeout := 2*(*loadCap) + time.Minute
			if *loadCap == 0 {
				timeout = 24 * time.Hour
			}
			err := runStep(spec{Kind: "build", Root: root, Scratch: scr, Layout: l, Size: size, Workers: *workers}, timeout, &st)
			if err != nil {
				logf("scalebench: load %s %s: %v", l, scalebench.SizeLabel(size), err)
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s %s: load failed (it resumes on the next run): %v", l, scalebench.SizeLabel(size), err))
				continue
			}
			logf("scalebench: loaded %s %s in %.0f s (%.0f msg/s)", l, scalebench.SizeLabel(size), st.Seconds, st.Rate)
			loaded[key(l, size)] = true
			rep.Builds = append(rep.Builds, st)
			last[l] = lastBuild{size, st.Rate}
		}
		for _, l := range layouts {
			for _, be := range backends {
				if ctx.Err() != nil {
					break
				}
				r := scalebench.Result{Backend: be, Layout: l, Size: size, Resources: scalebench.Resources(l)}
				switch {
				case !loaded[key(l, size)]:
					r.Skipped = "store not loaded (see the notes)"
				case be == scalebench.PGVector && dsn == "":
					r.Skipped = "no PostgreSQL (STRATA_TEST_PG_DSN unset)"
				}
				if r.Skipped != "" {
					rep.Cases = append(rep.Cases, r)
					write()
					continue
				}
				var ps scalebench.PGStats
				if be == scalebench.PGVector {
					logf("scalebench: pgvector collection for %s %s", l, scalebench.SizeLabel(size))
					if err := runStep(spec{Kind: "pg", Root: root, Layout: l, Size: size, PGDSN: dsn}, *caseTimeout, &ps); err != nil {
						r.Err = "filling the pgvector collection: " + err.Error()
						rep.Cases = append(rep.Cases, r)
						write()
						continue
					}
				}
				cfg := scalebench.Config{Backend: be, Layout: l, Size: size, CacheRoot: root, PGDSN: dsn,
					Starts: nStarts, Turns: nTurns, Queries: nQueries, PhaseCap: phase}
				if *cpuprofile != "" && l == scalebench.One && size == *profileSize {
					_ = os.MkdirAll(*cpuprofile, 0o755)
					cfg.ProfileDir, _ = filepath.Abs(*cpuprofile)
				}
				logf("scalebench: case %s %s %s", be, l, scalebench.SizeLabel(size))
				var res scalebench.Result
				if err := runStep(spec{Kind: "case", Case: &cfg}, *caseTimeout, &res); err != nil {
					if res.Backend == "" {
						res = r
					}
					res.Err = err.Error()
				}
				if ps.Copied {
					res.PG = &ps
				}
				rep.Cases = append(rep.Cases, res)
				write()
			}
		}
	}
	if ingest > 0 {
		for _, be := range backends {
			if ctx.Err() != nil {
				break
			}
			ic := scalebench.IngestConfig{Backend: be, Embedder: *embedder, Messages: ingest, PGDSN: dsn}
			g := scalebench.IngestResult{Backend: be, Embedder: *embedder, Messages: ingest}
			if be == scalebench.PGVector && dsn == "" {
				g.Skipped = "no PostgreSQL"
				rep.Ingest = append(rep.Ingest, g)
				continue
			}
			logf("scalebench: ingest %d messages, %s, %s", ingest, be, *embedder)
			if err := runStep(spec{Kind: "ingest", Ingest: &ic}, *caseTimeout, &g); err != nil {
				g.Err = err.Error()
			}
			logf("scalebench: ingest %s %s: %.0f msg/s", be, *embedder, g.Rate)
			rep.Ingest = append(rep.Ingest, g)
			write()
		}
	}
	write()
	logf("scalebench: wrote %s in %s", filepath.Join(*out, name+".md"), time.Since(begin).Round(time.Second))
	if ctx.Err() != nil {
		return 1
	}
	return 0
}

func runChild(ctx context.Context, kind, specFile, resultFile string, logf func(string, ...any)) int {
	raw, err := os.ReadFile(specFile)
	if err != nil {
		logf("scalebench: %v", err)
		return 1
	}
	var sp spec
	if err := json.Unmarshal(raw, &sp); err != nil {
		logf("scalebench: %v", err)
		return 1
	}
	var res any
	switch kind {
	case "build":
		res, err = scalebench.BuildCached(ctx, sp.Root, sp.Scratch, sp.Layout, sp.Size, 0, sp.Workers, logf)
	case "pg":
		res, err = scalebench.PreparePG(ctx, sp.Root, sp.PGDSN, sp.Layout, sp.Size, 0, logf)
	case "case":
		c := *sp.Case
		c.Logf = logf
		res, err = scalebench.Run(ctx, c)
	case "ingest":
		c := *sp.Ingest
		c.Logf = logf
		res, err = scalebench.Ingest(ctx, c)
	default:
		err = fmt.Errorf("unknown step %q", kind)
	}
	out := map[string]any{"result": res}
	if err != nil {
		out["error"] = err.Error()
		logf("scalebench: %s: %v", kind, err)
	}
	b, merr := json.Marshal(out)
	if merr != nil {
		logf("scalebench: %v", merr)
		return 1
	}
	if werr := os.WriteFile(resultFile, b, 0o600); werr != nil {
		logf("scalebench: %v", werr)
		return 1
	}
	if err != nil {
		return 1
	}
	return 0
}

func writeOutputs(dir, name string, rep *scalebench.Report) error {
	write := func(file string, f func(io.Writer) error) error {
		tmp := filepath.Join(dir, "."+file+".tmp")
		fh, err := os.Create(tmp)
		if err != nil {
			return err
		}
		if err := f(fh); err != nil {
			fh.Close()
			return err
		}
		if err := fh.Close(); err != nil {
			return err
		}
		return os.Rename(tmp, filepath.Join(dir, file))
	}
	return errors.Join(
		write(name+".json", rep.WriteJSON),
		write(name+".md", rep.WriteMarkdown),
		write(name+".svg", rep.WriteSVG),
	)
}

// commit describes the code measured: HEAD and how many paths of the
// working tree differ from it ("" outside a git checkout).
func commit() string {
	head, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	s := "commit " + strings.TrimSpace(string(head))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
		if t := strings.TrimSpace(string(st)); t != "" {
			n := strings.Count(t, "\n") + 1
			s += fmt.Sprintf(", with %d modified files in the working tree", n)
		}
	}
	return s
}

func writable(dir string) bool {
	f, err := os.CreateTemp(dir, ".scalebench-probe-")
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(f.Name())
	return true
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(strings.ToLower(f))
		mult := 1
		switch {
		case strings.HasSuffix(f, "k"):
			mult, f = 1000, strings.TrimSuffix(f, "k")
		case strings.HasSuffix(f, "m"):
			mult, f = 1000000, strings.TrimSuffix(f, "m")
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q", f)
		}
		out = append(out, n*mult)
	}
	return out, nil
}
