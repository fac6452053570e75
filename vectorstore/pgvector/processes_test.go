package pgvector

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore"
)

// The cross-process test re-executes this test binary: the parent starts
// two children running TestRecordCASWorkerProcess, each with its own pool,
// which append tokens to the text (and terms) of the same records with
// UpsertIf, and then checks that every token is in the final record
// exactly once and that the term index agrees with the records.
const (
	recCASEnvName  = "STRATA_RECORD_CAS_COLLECTION"
	recCASEnvID    = "STRATA_RECORD_CAS_ID"
	recCASEnvStart = "STRATA_RECORD_CAS_START"

	recCASProcesses = 2
	recCASWorkers   = 3
	recCASIDs       = 2
	recCASAppends   = 25
)

// recordAppend adds token to record id by compare-and-swap, re-reading
// after each conflict, and returns how many conflicts it met.
func recordAppend(c *vectorstore.Collection, id, token string) (int, error) {
	for conflicts := 0; ; conflicts++ {
		rec, err := c.Get(ctx, id)
		switch {
		case errors.Is(err, vectorstore.ErrNotFound):
			rec = vectorstore.Record{ID: id, Layer: "procs", Scope: vectorstore.Scope{Resource: "shared"}, Vector: []float32{1, 0}}
		case err != nil:
			return conflicts, err
		}
		rec.Text += token + " "
		// A term per token: the postings and statistics follow too.
		rec.Terms = vectorstore.Terms{}
		for _, f := range strings.Fields(rec.Text) {
			rec.Terms[f] = 1
		}
		if _, err := c.UpsertIf(ctx, rec, rec.Revision); err == nil {
			return conflicts, nil
		} else if !errors.Is(err, vectorstore.ErrConflict) {
			return conflicts, err
		}
	}
}

// TestRecordCASWorkerProcess is the child's side, skipped unless the
// parent set recCASEnvName. It prints "conflicts N" for the parent.
func TestRecordCASWorkerProcess(t *testing.T) {
	name := os.Getenv(recCASEnvName)
	if name == "" {
		t.Skip("child process of TestRecordCASAcrossProcesses")
	}
	start, err := time.Parse(time.RFC3339Nano, os.Getenv(recCASEnvStart))
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenCollection(ctx, testPool(t, testDSN(t)), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(time.Until(start))
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	errs := make(chan error, recCASWorkers)
	for w := range recCASWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range recCASAppends {
				for r := range recCASIDs {
					n, err := recordAppend(c, "rec"+strconv.Itoa(r), fmt.Sprintf("p%s-w%d-i%d", os.Getenv(recCASEnvID), w, i))
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					total += n
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	fmt.Printf("conflicts %d\n", total)
}

// TestRecordCASAcrossProcesses: two OS processes with a pool each update
// the same records by UpsertIf; no update is lost, and the term index
// is exact afterwards.
func TestRecordCASAcrossProcesses(t *testing.T) {
	if os.Getenv(recCASEnvName) != "" {
		t.Skip("in a child process")
	}
	pool := testPool(t, testDSN(t))
	c, name := openTermColl(t, pool, "procs", nil)
	start := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	outs := make([]*bytes.Buffer, recCASProcesses)
	cmds := make([]*exec.Cmd, recCASProcesses)
	for p := range cmds {
		outs[p] = new(bytes.Buffer)
		cmds[p] = exec.Command(os.Args[0], "-test.run=^TestRecordCASWorkerProcess$", "-test.count=1", "-test.v")
		cmds[p].Env = append(os.Environ(), recCASEnvName+"="+name, recCASEnvID+"="+strconv.Itoa(p), recCASEnvStart+"="+start)
		cmds[p].Stdout, cmds[p].Stderr = outs[p], outs[p]
		if err := cmds[p].Start(); err != nil {
			t.Fatal(err)
		}
	}
	conflicts := 0
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", p, err, outs[p].String())
		}
		out := outs[p].String()
		i := strings.Index(out, "conflicts ")
		var n int
		if i < 0 {
			t.Fatalf("process %d printed no count:\n%s", p, out)
		}
		if _, err := fmt.Sscanf(out[i:], "conflicts %d", &n); err != nil {
			t.Fatal(err)
		}
		conflicts += n
	}
	for r := range recCASIDs {
		rec, err := c.Get(ctx, "rec"+strconv.Itoa(r))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Fields(rec.Text)
		switches := 0
		for i := 1; i < len(got); i++ {
			if got[i][:2] != got[i-1][:2] {
				switches++
			}
		}
		if switches < 2 {
			t.Fatalf("record %d: the processes' appends alternate %d times: they did not write concurrently", r, switches)
		}
		var want []string
		for p := range recCASProcesses {
			for w := range recCASWorkers {
				for i := range recCASAppends {
					want = append(want, fmt.Sprintf("p%d-w%d-i%d", p, w, i))
				}
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("record %d holds %d tokens, want %d (an update was lost or applied twice)", r, len(got), len(want))
		}
	}
	checkTermIndex(t, c)
	if conflicts == 0 {
		t.Fatal("no conflicts: the writers did not collide")
	}
	t.Logf("%d processes x %d goroutines x %d records x %d appends: every update kept, %d conflicts retried",
		recCASProcesses, recCASWorkers, recCASIDs, recCASAppends, conflicts)
}
