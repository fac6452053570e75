package pgvector

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

// pgScript runs scripts/pg.sh with the given port and returns its stdout.
func pgScript(t *testing.T, port string, args ...string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	script := ""
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "scripts", "pg.sh")); err == nil {
			script = filepath.Join(d, "scripts", "pg.sh")
			break
		}
	}
	if script == "" {
		t.Fatal("scripts/pg.sh not found above " + dir)
	}
	cmd := exec.Command(script, args...)
	cmd.Env = append(os.Environ(), "STRATA_PG_PORT="+port)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pg.sh %s (port %s): %v\n%s", strings.Join(args, " "), port, err, stderr.String())
	}
	return stdout.String()
}

// Fault injection on a server of its own (a second instance from
// scripts/pg.sh on another port): writers and a reader run while the server
// crashes (immediate shutdown: no checkpoint, WAL replay at restart) and
// comes back. Calls fail with errors within their deadline — no panic, no
// hang — the collection recovers without being reopened, and every
// acknowledged upsert is in the collection afterwards.
func TestServerCrashAndRestart(t *testing.T) {
	testDSN(t) // the same gating as every test here
	if os.Geteuid() != 0 {
		if os.Getenv("STRATA_REQUIRE_PG") == "1" {
			t.Fatal("the crash test starts its own server with scripts/pg.sh, which needs root")
		}
		t.Skip("the crash test starts its own server with scripts/pg.sh, which needs root")
	}
	port := os.Getenv("STRATA_PG_FAULT_PORT")
	if port == "" {
		port = "55439"
	}
	out := pgScript(t, port, "up")
	t.Cleanup(func() { pgScript(t, port, "down") })
	dsn := strings.TrimPrefix(strings.TrimSpace(out), "STRATA_TEST_PG_DSN=")
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("DSN %q from pg.sh: %v", dsn, err)
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.BuildContextWatcherHandler = CancelOnServer
	pool := testPoolFromConfig(t, cfg)
	c, err := OpenCollection(ctx, pool, "fault", &Options{Options: vectorstore.Options{Dimension: 8}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var (
		mu       sync.Mutex
		acked    []string
		failures atomic.Int64
		okWrites atomic.Int64
		sample   atomic.Pointer[error]
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	vec := func(i int) []float32 {
		v := make([]float32, 8)
		v[i%8] = 1
		v[(i+3)%8] = 0.5
		return v
	}
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var recs []vectorstore.Record
				for j := 0; j < 5; j++ {
					recs = append(recs, vectorstore.Record{ID: fmt.Sprintf("w%d-%05d-%d", w, i, j), Vector: vec(i + j), Text: "x"})
				}
				if err := c.Upsert(ctx, recs...); err != nil {
					if driver.CodeOf(err) != "" {
						t.Errorf("outage reported as a typed input error: %v", err)
					}
					sample.CompareAndSwap(nil, &err)
					failures.Add(1)
					time.Sleep(20 * time.Millisecond)
					continue
				}
				okWrites.Add(1)
				mu.Lock()
				for _, r := range recs {
					acked = append(acked, r.ID)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Query(ctx, vec(1), vectorstore.QueryOptions{K: 5}); err != nil {
				failures.Add(1)
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()

	time.Sleep(300 * time.Millisecond)
	pgScript(t, port, "stop", "immediate")
	before := failures.Load()
	time.Sleep(500 * time.Millisecond)
	duringOutage := failures.Load() - before
	pgScript(t, port, "start")
	restarted := okWrites.Load()
	deadline := time.Now().Add(30 * time.Second)
	for okWrites.Load() < restarted+5 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	recovered := okWrites.Load() - restarted
	close(stop)
	wg.Wait()

	if duringOutage == 0 {
		t.Fatal("no call failed while the server was down: the fault was not injected")
	}
	if recovered < 5 {
		t.Fatalf("only %d upserts succeeded in 30 s after the restart: the collection did not recover", recovered)
	}
	t.Logf("%d failed calls in all (%d during the 0.5 s outage), %d upserts acknowledged, %d after the restart",
		failures.Load(), duringOutage, okWrites.Load(), recovered)

	stored := map[string]bool{}
	for r, err := range c.All(ctx, vectorstore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		stored[r.ID] = true
	}
	lost := 0
	for _, id := range acked {
		if !stored[id] {
			lost++
			if lost < 5 {
				t.Errorf("acknowledged record %s is missing after the crash", id)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged records lost", lost, len(acked))
	}
	if _, err := c.Get(ctx, acked[0]); err != nil {
		t.Fatalf("Get after recovery: %v", err)
	}
	if e := sample.Load(); e != nil {
		t.Logf("a failure during the outage: %v", *e)
	}
}
