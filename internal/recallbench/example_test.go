package recallbench_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/stratamem/strata/internal/recallbench"
)

// Example runs a small benchmark on the embedded backend and writes its
// report. The full run is `make bench-recall`.
func Example() {
	scratch, err := os.MkdirTemp("", "recallbench-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(scratch)
	rep, err := recallbench.Run(context.Background(), recallbench.Config{
		Backends:   []string{recallbench.Chromem},
		Sizes:      []int{500},
		TextSizes:  []int{}, // no real text: it needs the model
		Queries:    20,
		Duration:   50 * time.Millisecond,
		ScratchDir: scratch,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := rep.Results[0]
	fmt.Printf("%s on %s: recall@%d %.2f\n", r.Backend, r.Dataset, rep.Config.K, r.Recall)
	for _, c := range rep.Checks() {
		fmt.Printf("%s: measured %v\n", c.Target, c.Measured)
	}
	// rep.WriteMarkdown(os.Stdout) prints the whole report.

	// Output:
	// chromem on clustered-500: recall@10 1.00
	// recall@10 >= 0.95 on every backend at its default settings: measured true
	// embedded default (chromem) top-10 p50 under 5ms at 10k records: measured false
	// ingest of 10k precomputed vectors under 2s on every backend: measured false
}

// ExampleGenerateClustered makes a small clustered dataset and its exact
// neighbours.
func ExampleGenerateClustered() {
	ds, err := recallbench.GenerateClustered(1000, 3, 64, recallbench.DefaultClusterParams, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	truth, err := recallbench.ExactTopK(context.Background(), ds.Vectors, ds.Queries, 5, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ds.Name(), len(ds.Queries), "queries,", len(truth[0]), "exact neighbours each")
	// Output: clustered-1k 3 queries, 5 exact neighbours each
}
