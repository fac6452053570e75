package postgres_test

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

	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/postgres"
)

// The cross-process test re-executes this test binary: the parent starts
// casProcesses children running TestCASWorkerProcess, each with its own
// pool, which append tokens to the same keys by compare-and-swap, and then
// checks that every token of every child is in the final value exactly
// once (no lost update, no duplicate) and that the children did collide.
const (
	casEnvTable = "STRATA_CAS_WORKER_TABLE"
	casEnvID    = "STRATA_CAS_WORKER_ID"
	casEnvStart = "STRATA_CAS_WORKER_START"

	casProcesses = 2
	casWorkers   = 4 // goroutines per process
	casKeys      = 3
	casAppends   = 40 // per goroutine and key
)

func casKey(i int) storage.Key {
	return storage.Key{Scope: "resource", ScopeID: "shared", Layer: "procs", Name: "k" + strconv.Itoa(i)}
}

// casAppend adds token to the value at k by compare-and-swap, re-reading
// after each conflict, and returns how many conflicts it met.
func casAppend(s storage.Store, k storage.Key, token string) (int, error) {
	for conflicts := 0; ; conflicts++ {
		var old []byte
		var rev int64
		e, err := s.Get(ctx, k)
		switch {
		case errors.Is(err, storage.ErrNotFound):
		case err != nil:
			return conflicts, err
		default:
			old, rev = e.Value, e.Revision
		}
		v := append(slices.Clip(old), token+"\n"...)
		if _, err := s.Put(ctx, k, v, rev); err == nil {
			return conflicts, nil
		} else if !errors.Is(err, storage.ErrConflict) {
			return conflicts, err
		}
	}
}

// TestCASWorkerProcess is the child's side; it is skipped unless the
// parent set casEnvTable. It prints "conflicts N" for the parent.
func TestCASWorkerProcess(t *testing.T) {
	table := os.Getenv(casEnvTable)
	if table == "" {
		t.Skip("child process of TestCASAcrossProcesses")
	}
	id := os.Getenv(casEnvID)
	start, err := time.Parse(time.RFC3339Nano, os.Getenv(casEnvStart))
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, table, postgres.Options{MaxConns: casWorkers})
	defer s.Close()
	time.Sleep(time.Until(start)) // both processes write at once
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	errs := make(chan error, casWorkers)
	for w := range casWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range casAppends {
				for k := range casKeys {
					n, err := casAppend(s, casKey(k), fmt.Sprintf("p%s-w%d-i%d", id, w, i))
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

// TestCASAcrossProcesses: two OS processes, each with its own connection
// pool and several goroutines, update the same keys of one table by
// compare-and-swap; no update is lost.
func TestCASAcrossProcesses(t *testing.T) {
	if os.Getenv(casEnvTable) != "" {
		t.Skip("in a child process")
	}
	admin := adminPool(t)
	table := freshTable(t, admin)
	// Create the table before the children race to migrate it (they may
	// race too; that is TestMigrations' concern, not this test's).
	open(t, table, postgres.Options{}).Close()
	start := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	type child struct {
		cmd *exec.Cmd
		out bytes.Buffer
	}
	children := make([]*child, casProcesses)
	for p := range children {
		c := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestCASWorkerProcess$", "-test.count=1", "-test.v")}
		c.cmd.Env = append(os.Environ(), casEnvTable+"="+table, casEnvID+"="+strconv.Itoa(p), casEnvStart+"="+start)
		c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[p] = c
	}
	conflicts := 0
	for p, c := range children {
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", p, err, c.out.String())
		}
		i := strings.Index(c.out.String(), "conflicts ")
		if i < 0 {
			t.Fatalf("process %d printed no count:\n%s", p, c.out.String())
		}
		var n int
		if _, err := fmt.Sscanf(c.out.String()[i:], "conflicts %d", &n); err != nil {
			t.Fatal(err)
		}
		conflicts += n
	}
	s := open(t, table, postgres.Options{})
	defer s.Close()
	for k := range casKeys {
		e, err := s.Get(ctx, casKey(k))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Fields(string(e.Value))
		// Appends of the two processes alternate in the value: they
		// really wrote the key at the same time.
		switches := 0
		for i := 1; i < len(got); i++ {
			if got[i][:2] != got[i-1][:2] {
				switches++
			}
		}
		if switches < 2 {
			t.Fatalf("key %d: the processes' appends alternate %d times: they did not write concurrently", k, switches)
		}
		var want []string
		for p := range casProcesses {
			for w := range casWorkers {
				for i := range casAppends {
					want = append(want, fmt.Sprintf("p%d-w%d-i%d", p, w, i))
				}
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("key %d holds %d tokens, want %d (an update was lost or applied twice)", k, len(got), len(want))
		}
	}
	if conflicts == 0 {
		t.Fatal("no conflicts: the writers did not collide")
	}
	t.Logf("%d processes x %d goroutines x %d keys x %d appends: every update kept, %d conflicts retried",
		casProcesses, casWorkers, casKeys, casAppends, conflicts)
}
