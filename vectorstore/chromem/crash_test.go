package chromem

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore"
)

const (
	crashDirEnv  = "STRATA_CHROMEM_CRASH_DIR"
	crashSeedEnv = "STRATA_CHROMEM_CRASH_SEED"
	crashDim     = 64
)

// crashRecord is the deterministic content of record id, so the parent can
// verify what the child wrote without sharing memory with it.
func crashRecord(id int) vectorstore.Record {
	r := rand.New(rand.NewPCG(uint64(id), 42))
	v := make([]float32, crashDim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return vectorstore.Record{
		ID: "rec-" + strconv.Itoa(id), Layer: "semantic", Scope: vectorstore.Scope{Thread: "t" + strconv.Itoa(id%3)},
		// Large texts make each append take long enough for the kill to land
		// mid-write regularly.
		Text:      strings.Repeat(fmt.Sprintf("memory %d ", id), 2000+id%500),
		Vector:    v,
		Metadata:  map[string]string{"n": strconv.Itoa(id)},
		CreatedAt: time.Unix(1700000000, 0).Add(time.Duration(id) * time.Millisecond),
	}
}

// TestCrashChild is the writer process of TestCrashSIGKILL; it does nothing
// unless started by it. Before each write it prints the intent ("pu <id>"
// per record to upsert, "pd <id>" for a delete), after the write returns
// nil it prints the acknowledgement ("u <id>", "d <id>").
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("helper process of TestCrashSIGKILL")
	}
	seed, _ := strconv.Atoi(os.Getenv(crashSeedEnv))
	ctx := context.Background()
	c, err := OpenCollection(ctx, dir, "crash", &vectorstore.Options{Dimension: crashDim})
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	w := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		fmt.Fprintf(w, format, args...)
		w.Flush() // a line on the pipe is a fact the parent may rely on
	}
	fail := func(err error) {
		say("error: %v\n", err)
		os.Exit(4)
	}
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	first := seed * 1_000_000
	next := first
	for {
		switch n := r.IntN(10); {
		case n < 9: // upsert of 1 or 3 records: all or nothing
			size := 1
			if n >= 7 {
				size = 3
			}
			var batch []vectorstore.Record
			for i := 0; i < size; i++ {
				batch = append(batch, crashRecord(next+i))
				say("pu %d\n", next+i)
			}
			if err := c.Upsert(ctx, batch...); err != nil {
				fail(err)
			}
			var ack strings.Builder
			for i := 0; i < size; i++ {
				fmt.Fprintf(&ack, "u %d\n", next+i)
			}
			say("%s", ack.String())
			next += size
		default: // delete an earlier record of this run
			if next > first {
				id := first + r.IntN(next-first)
				say("pd %d\n", id)
				if err := c.Delete(ctx, "rec-"+strconv.Itoa(id)); err != nil {
					fail(err)
				}
				say("d %d\n", id)
			}
		}
	}
}

// TestCrashSIGKILL kills a writing child process with SIGKILL at random
// moments, several times over the same directory, and checks after each
// kill that reopening succeeds, every acknowledged write is there, every
// acknowledged delete is not, and anything else differs only by the one
// write in flight at the kill.
func TestCrashSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	acked := map[int]bool{} // id -> present, for acknowledged writes
	r := rand.New(rand.NewPCG(1, 1))
	for round := 1; round <= 4; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashSeedEnv+"="+strconv.Itoa(round))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		pending := map[int]string{} // in flight: intent printed, no acknowledgement
		killAt := 40 + r.IntN(80)
		acks, killed := 0, false
		for sc.Scan() {
			kind, arg, _ := strings.Cut(sc.Text(), " ")
			id, err := strconv.Atoi(arg)
			if err != nil {
				t.Fatalf("child: %s", sc.Text())
			}
			switch kind {
			case "pu", "pd":
				pending[id] = kind
				continue
			case "u":
				acked[id] = true
			case "d":
				acked[id] = false
			default:
				t.Fatalf("child: %s", sc.Text())
			}
			delete(pending, id)
			acks++
			if acks == killAt && !killed {
				// Let the child run into its next write, then kill it there.
				time.Sleep(time.Duration(r.IntN(3000)) * time.Microsecond)
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		}
		// Lines still in the pipe after the kill were read above: they are
		// acknowledgements too.
		_ = cmd.Wait()
		if !killed {
			t.Fatalf("round %d: child exited before the kill after %d acknowledgements", round, acks)
		}
		logPath := dir + "/crash/" + logFile
		torn := tornBytes(t, logPath)
		if torn > 0 {
			t.Logf("round %d: the kill left a torn tail of %d bytes", round, torn)
		}
		keptBefore, _ := filepath.Glob(logPath + ".torn-*")

		c, err := OpenCollection(context.Background(), dir, "crash", nil)
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		if keptAfter, _ := filepath.Glob(logPath + ".torn-*"); torn > 0 && len(keptAfter) != len(keptBefore)+1 {
			t.Fatalf("round %d: the torn tail of %d bytes was cut without being kept (%v)", round, torn, keptAfter)
		}
		onDisk := map[int]bool{}
		for rec, err := range c.All(context.Background(), vectorstore.ListOptions{Limit: 1000, WithVectors: true}) {
			if err != nil {
				t.Fatal(err)
			}
			id, _ := strconv.Atoi(strings.TrimPrefix(rec.ID, "rec-"))
			exp := crashRecord(id)
			if rec.Text != exp.Text || rec.Metadata["n"] != exp.Metadata["n"] || len(rec.Vector) != crashDim || !rec.CreatedAt.Equal(exp.CreatedAt) {
				t.Fatalf("round %d: rec-%d content differs from what was written", round, id)
			}
			onDisk[id] = true
		}
		for id, want := range acked {
			if onDisk[id] != want && pending[id] == "" {
				t.Fatalf("round %d: rec-%d acknowledged as present=%v, on disk present=%v", round, id, want, onDisk[id])
			}
		}
		for id := range onDisk {
			if _, ok := acked[id]; !ok && pending[id] != "pu" {
				t.Fatalf("round %d: rec-%d on disk but never written", round, id)
			}
		}
		// The in-flight write landed or not, as a whole: adopt what the disk says.
		landed := -1
		for id, kind := range pending {
			acked[id] = onDisk[id]
			l := 0
			if onDisk[id] == (kind == "pu") {
				l = 1
			}
			if landed >= 0 && l != landed {
				t.Fatalf("round %d: the in-flight batch was applied partially", round)
			}
			landed = l
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: %d acknowledgements, %d records intact, in-flight write landed: %v", round, acks, len(onDisk), landed == 1)
	}
}

// tornBytes reports how many bytes past the last good frame the log holds.
func tornBytes(t *testing.T, path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	good, err := replay(f, func(entry, int) error { return nil })
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	st, _ := f.Stat()
	return st.Size() - good
}
