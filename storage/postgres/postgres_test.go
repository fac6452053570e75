package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/postgres"
	"github.com/stratamem/strata/storage/storagetest"
)

var ctx = context.Background()

func open(t testing.TB, table string, opts postgres.Options) *postgres.Store {
	t.Helper()
	opts.Table = table
	s, err := postgres.Open(ctx, testDSN(t), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	admin := adminPool(t)
	var mu sync.Mutex
	tables := map[storage.Store]string{}
	storagetest.Run(t, storagetest.Harness{
		New: func(t *testing.T) storage.Store {
			table := freshTable(t, admin)
			s := open(t, table, postgres.Options{})
			mu.Lock()
			tables[s] = table
			mu.Unlock()
			return s
		},
		Reopen: func(t *testing.T, old storage.Store) storage.Store {
			mu.Lock()
			defer mu.Unlock()
			return open(t, tables[old], postgres.Options{})
		},
	})
}

// The same suite over a pool the caller owns: Close must leave it usable.
func TestConformanceCallerPool(t *testing.T) {
	admin := adminPool(t)
	cfg, err := pgxpool.ParseConfig(testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.BuildContextWatcherHandler = postgres.CancelOnServer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tables := map[storage.Store]string{}
	var mu sync.Mutex
	newStore := func(t *testing.T, table string) storage.Store {
		s, err := postgres.New(ctx, pool, postgres.Options{Table: table})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		tables[s] = table
		mu.Unlock()
		return s
	}
	storagetest.Run(t, storagetest.Harness{
		New: func(t *testing.T) storage.Store { return newStore(t, freshTable(t, admin)) },
		Reopen: func(t *testing.T, old storage.Store) storage.Store {
			mu.Lock()
			table := tables[old]
			mu.Unlock()
			return newStore(t, table)
		},
	})
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("caller's pool unusable after the stores closed: %v", err)
	}
}

// Key parts are bytes: NUL and invalid UTF-8 round-trip and stay distinct,
// which text columns could not do.
func TestBinaryKeyParts(t *testing.T) {
	admin := adminPool(t)
	s := open(t, freshTable(t, admin), postgres.Options{})
	defer s.Close()
	keys := []storage.Key{
		{Scope: "thread", ScopeID: "a\x00b", Layer: "l", Name: "n"},
		{Scope: "thread", ScopeID: "a", Layer: "\x00bl", Name: "n"},
		{Scope: "thread", ScopeID: "\xff\xfe", Layer: "l", Name: "n"},
		{Scope: "thread", ScopeID: "\xff", Layer: "\xfel", Name: "n"},
		{Scope: "resource", ScopeID: strings.Repeat("long", 5000), Layer: "l", Name: "n"}, // 20 kB: beyond a btree entry
	}
	revs := map[storage.Key]int64{}
	for i, k := range keys {
		rev, err := s.Put(ctx, k, []byte(strconv.Itoa(i)), 0)
		if err != nil {
			t.Fatalf("Put %q: %v", k.String(), err)
		}
		revs[k] = rev
	}
	for i, k := range keys {
		e, err := s.Get(ctx, k)
		if err != nil || string(e.Value) != strconv.Itoa(i) || e.Revision != revs[k] {
			t.Fatalf("Get %q = %q@%d, %v; want %d@%d", k.String(), e.Value, e.Revision, err, i, revs[k])
		}
	}
	// The parts are stored verbatim for inspection.
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM "+s.Table()+" WHERE scope_id = $1", []byte("a\x00b")).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows with scope_id a\\x00b: %d, %v", n, err)
	}
}

func TestMigrations(t *testing.T) {
	admin := adminPool(t)
	table := freshTable(t, admin)
	// Concurrent first starts on an empty schema all succeed and migrate once.
	const starters = 4
	var wg sync.WaitGroup
	errs := make(chan error, starters)
	for i := 0; i < starters; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := postgres.Open(ctx, testDSN(t), postgres.Options{Table: table})
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Open: %v", err)
		}
	}
	var rows, version int
	err := admin.QueryRow(ctx, "SELECT count(*), max(version) FROM strata_schema_migrations WHERE component = $1",
		"storage/postgres:"+table).Scan(&rows, &version)
	if err != nil || rows != postgres.SchemaVersion || version != postgres.SchemaVersion {
		t.Fatalf("migration rows %d, max version %d, %v; want %d rows up to %d", rows, version, err, postgres.SchemaVersion, postgres.SchemaVersion)
	}
	// Reopening is a no-op that keeps data.
	s := open(t, table, postgres.Options{})
	rev, err := s.Put(ctx, storage.Key{Scope: "global", Layer: "l", Name: "n"}, []byte("v"), 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, table, postgres.Options{})
	defer s.Close()
	if e, err := s.Get(ctx, storage.Key{Scope: "global", Layer: "l", Name: "n"}); err != nil || e.Revision != rev {
		t.Fatalf("after reopen: %v@%d, %v", e.Value, e.Revision, err)
	}
}

func TestSchemaFromTheFuture(t *testing.T) {
	admin := adminPool(t)
	table := freshTable(t, admin)
	open(t, table, postgres.Options{}).Close()
	if _, err := admin.Exec(ctx, "INSERT INTO strata_schema_migrations (component, version, name) VALUES ($1, 999, 'future')",
		"storage/postgres:"+table); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Open(ctx, testDSN(t), postgres.Options{Table: table})
	var sv *postgres.SchemaVersionError
	if !errors.Is(err, postgres.ErrSchemaVersion) || !errors.As(err, &sv) || sv.Found != 999 || sv.Known != postgres.SchemaVersion {
		t.Fatalf("Open over a newer schema: %v; want *SchemaVersionError{Found: 999}", err)
	}
}

func TestInvalidOptions(t *testing.T) {
	dsn := testDSN(t)
	for _, table := range []string{"bad-name", "a.b.c", "1abc", `x"y`, "s.", ".t", strings.Repeat("t", 50), "a b"} {
		if _, err := postgres.Open(ctx, dsn, postgres.Options{Table: table}); !errors.Is(err, postgres.ErrInvalidOptions) {
			t.Errorf("table %q: %v, want ErrInvalidOptions", table, err)
		}
	}
	_, err := postgres.Open(ctx, "postgres://user:secret@[::1:bad/db", postgres.Options{})
	if !errors.Is(err, postgres.ErrInvalidOptions) || strings.Contains(err.Error(), "secret") {
		t.Errorf("bad DSN: %v; want ErrInvalidOptions without the password", err)
	}
	if _, err := postgres.New(ctx, nil, postgres.Options{}); !errors.Is(err, postgres.ErrInvalidOptions) {
		t.Errorf("nil pool: %v", err)
	}
	if _, err := postgres.Open(ctx, dsn, postgres.Options{MaxConns: -1}); !errors.Is(err, postgres.ErrInvalidOptions) {
		t.Errorf("negative MaxConns: %v", err)
	}
}

// An unreachable server fails within the timeout instead of hanging.
func TestUnreachableServer(t *testing.T) {
	testDSN(t) // same gating as the other tests
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	// Port 1 on loopback: nothing listens there.
	_, err := postgres.Open(cctx, "postgres://postgres@127.0.0.1:1/strata_test?sslmode=disable&connect_timeout=1", postgres.Options{})
	if err == nil {
		t.Fatal("Open on a closed port succeeded")
	}
}

// Two stores with their own pools share one table like two processes:
// concurrent read-modify-write loops lose no update.
func TestTwoPoolsOneTable(t *testing.T) {
	admin := adminPool(t)
	table := freshTable(t, admin)
	a := open(t, table, postgres.Options{MaxConns: 4})
	defer a.Close()
	b := open(t, table, postgres.Options{MaxConns: 4})
	defer b.Close()
	k := storage.Key{Scope: "resource", ScopeID: "shared", Layer: "counter", Name: "state"}
	const writers, each = 6, 30
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		s := a
		if w%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := storagetest.Increment(ctx, s, k); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	e, err := b.Get(ctx, k)
	if err != nil || string(e.Value) != strconv.Itoa(writers*each) {
		t.Fatalf("counter %q, %v; want %d", e.Value, err, writers*each)
	}
}

// A write blocked on a row lock returns the deadline error, both from the
// caller's context and from Options.Timeout, and the store works after.
func TestDeadlines(t *testing.T) {
	admin := adminPool(t)
	table := freshTable(t, admin)
	s := open(t, table, postgres.Options{Timeout: 300 * time.Millisecond})
	defer s.Close()
	k := storage.Key{Scope: "thread", ScopeID: "t", Layer: "l", Name: "n"}
	rev, err := s.Put(ctx, k, []byte("v1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM "+s.Table()+" FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	// Options.Timeout applies to a context without deadline.
	if _, err := s.Put(ctx, k, []byte("v2"), rev); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Put on a locked row: %v, want context.DeadlineExceeded", err)
	}
	// The caller's deadline wins when it is set.
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = s.Delete(cctx, k, rev)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Delete on a locked row: %v, want context.DeadlineExceeded", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// Nothing was written by the timed-out calls, and the store works.
	if e, err := s.Get(ctx, k); err != nil || string(e.Value) != "v1" || e.Revision != rev {
		t.Fatalf("after timeouts: %q@%d, %v", e.Value, e.Revision, err)
	}
	if _, err := s.Put(ctx, k, []byte("v2"), rev); err != nil {
		t.Fatalf("Put after the lock is gone: %v", err)
	}
}

// Fault injection: while writers run, every backend of the store's pool is
// terminated again and again (what a server restart or a failover does to
// open connections). Calls fail with errors, not panics or hangs; the store
// recovers by itself; and no acknowledged write is lost.
func TestTerminatedConnections(t *testing.T) {
	admin := adminPool(t)
	table := freshTable(t, admin)
	u, err := url.Parse(testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	app := "strata_fault_" + table
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	s, err := postgres.Open(ctx, u.String(), postgres.Options{Table: table, MaxConns: 4, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	type ack struct {
		rev   int64
		value string
	}
	const writers = 4
	acked := make([]ack, writers)
	var failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := storage.Key{Scope: "thread", ScopeID: strconv.Itoa(w), Layer: "fault", Name: "state"}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var cur int64
				e, err := s.Get(ctx, k)
				switch {
				case err == nil:
					cur = e.Revision
				case errors.Is(err, storage.ErrNotFound):
				default:
					failures.Add(1)
					continue
				}
				v := fmt.Sprintf("w%d-%d", w, i)
				rev, err := s.Put(ctx, k, []byte(v), cur)
				if err != nil {
					if !errors.Is(err, storage.ErrConflict) {
						failures.Add(1)
					}
					continue
				}
				acked[w] = ack{rev, v}
			}
		}()
	}
	var terminated int
	for round := 0; round < 15; round++ {
		time.Sleep(40 * time.Millisecond)
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		terminated += n
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	if terminated == 0 {
		t.Fatal("no backend was terminated: the fault was not injected")
	}
	t.Logf("terminated %d backends; %d calls failed with errors", terminated, failures.Load())
	for w := 0; w < writers; w++ {
		k := storage.Key{Scope: "thread", ScopeID: strconv.Itoa(w), Layer: "fault", Name: "state"}
		e, err := s.Get(ctx, k)
		if err != nil {
			t.Fatalf("writer %d: Get after the faults: %v", w, err)
		}
		a := acked[w]
		if a.rev == 0 {
			t.Fatalf("writer %d had no acknowledged write", w)
		}
		// A later write whose reply was lost may have landed (revision
		// higher), but the acknowledged one can never be missing.
		if e.Revision < a.rev || e.Revision == a.rev && string(e.Value) != a.value {
			t.Fatalf("writer %d: stored %q@%d, acknowledged %q@%d: write lost", w, e.Value, e.Revision, a.value, a.rev)
		}
		if _, err := s.Put(ctx, k, []byte("after"), e.Revision); err != nil {
			t.Fatalf("writer %d: Put after the faults: %v", w, err)
		}
	}
}

// TestExample runs Example against the real server and checks its output.
func TestExample(t *testing.T) {
	testDSN(t)
	got := captureStdout(t, Example)
	want := "true true\nv2 from run A + B\n"
	if got != want {
		t.Fatalf("Example printed %q, want %q", got, want)
	}
}
