// Command cachebench runs strata's cache-stability benchmark: every
// workload of package cachebench under every strategy on the simulated
// Anthropic and OpenAI prompt caches. It writes the report
// (cache-stability.md) and the plot of cumulative billed input
// (cache-stability.svg) into the output directory, and prints the target
// checks. The long-session workload (compaction against a 200k window) is
// run too, unless -workloads leaves out "long-session"; -calls shortens it. `make bench-cache` runs it as
//
//	go run ./benchmarks/cmd/cachebench -out benchmarks/results
//
// It exits 0 whether or not the targets are met: the report says which
// are; -strict makes a missed target exit 1.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratamem/strata/benchmarks/internal/cachebench"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cachebench:", err)
		var missed errMissed
		if errors.As(err, &missed) {
			os.Exit(1)
		}
		os.Exit(2)
	}
}

type errMissed int

func (e errMissed) Error() string { return fmt.Sprintf("%d target(s) missed", int(e)) }

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cachebench", flag.ContinueOnError)
	out := fs.String("out", "benchmarks/results", "directory for cache-stability.md and cache-stability.svg")
	turns := fs.Int("turns", 0, "user turns per workload (0: each workload's full script)")
	only := fs.String("workloads", "", "comma-separated workload names (default: all)")
	strict := fs.Bool("strict", false, "exit 1 when a target is missed")
	calls := fs.Int("calls", 0, "model calls of the long-session workload (0: its full 1,000)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var workloads []cachebench.Workload
	long := *only == ""
	if *only == "" {
		workloads = cachebench.Workloads()
	} else {
		for _, name := range strings.Split(*only, ",") {
			if strings.TrimSpace(name) == cachebench.LongSessionName {
				long = true
				continue
			}
			w, err := cachebench.WorkloadByName(strings.TrimSpace(name))
			if err != nil {
				return err
			}
			workloads = append(workloads, w)
		}
	}
	var results []*cachebench.Result
	for _, w := range workloads {
		fmt.Fprintf(os.Stderr, "running %s...\n", w.Name)
		r, err := cachebench.Run(ctx, w, cachebench.Options{Turns: *turns})
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	var longRes *cachebench.LongResult
	if long {
		fmt.Fprintf(os.Stderr, "running %s...\n", cachebench.LongSessionName)
		var err error
		if longRes, err = cachebench.RunLongSession(ctx, cachebench.LongOptions{Calls: *calls}); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	var svg, md bytes.Buffer
	if err := cachebench.WriteSVG(&svg, results); err != nil {
		return err
	}
	cmd := "make bench-cache"
	if *turns != 0 || *only != "" || *calls != 0 {
		cmd = "go run ./benchmarks/cmd/cachebench " + strings.Join(args, " ")
	}
	if err := cachebench.WriteMarkdown(&md, results, cachebench.ReportOptions{Command: cmd, Plot: "cache-stability.svg", LongSession: longRes}); err != nil {
		return err
	}
	for name, data := range map[string][]byte{"cache-stability.svg": svg.Bytes(), "cache-stability.md": md.Bytes()} {
		if err := os.WriteFile(filepath.Join(*out, name), data, 0o644); err != nil {
			return err
		}
	}
	missed := 0
	for _, t := range cachebench.Targets(results) {
		status := "met"
		if !t.Met {
			status = "MISSED"
			missed++
		}
		fmt.Printf("%-7s %-17s %-10s %-21s %-27s want >= %.2f, got %.3f\n", status, t.Workload, t.Provider, t.Strategy, t.What, t.Want, t.Got)
	}
	fmt.Printf("wrote %s\n", filepath.Join(*out, "cache-stability.md"))
	if missed > 0 && *strict {
		return errMissed(missed)
	}
	return nil
}
