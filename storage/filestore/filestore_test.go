package filestore

import (
	"bufio"
	"context"
	"errors"
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

	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/storagetest"
)

var ctx = context.Background()

func openT(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, storagetest.Harness{
		New: func(t *testing.T) storage.Store { return openT(t, t.TempDir()) },
		Reopen: func(t *testing.T, old storage.Store) storage.Store {
			return openT(t, old.(*Store).Dir())
		},
	})
}

// Two Store values over one directory stand in for two processes: each
// takes its own flocks, so only flock keeps their increments apart.
func TestTwoStoresOneDir(t *testing.T) {
	dir := t.TempDir()
	a, b := openT(t, dir), openT(t, dir)
	k := storage.Key{Scope: "resource", ScopeID: "r", Layer: "counter", Name: "state"}
	errs := make(chan error, 4)
	for _, s := range []*Store{a, b, a, b} {
		go func() {
			var err error
			for i := 0; i < 25 && err == nil; i++ {
				err = storagetest.Increment(ctx, s, k)
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	e, err := a.Get(ctx, k)
	if err != nil || string(e.Value) != "100" {
		t.Fatalf("counter = %q, %v; want 100", e.Value, err)
	}
}

func TestFileNames(t *testing.T) {
	seen := map[string]storage.Key{}
	keys := []storage.Key{
		{Scope: "thread", ScopeID: "T-1_x", Layer: "memory", Name: "state"},
		{Scope: "thread", ScopeID: "t-1_x", Layer: "memory", Name: "state"},
		{Scope: "global", Layer: "a", Name: "b"},
		{Scope: "thread", ScopeID: "../..", Layer: "/etc", Name: "passwd"},
		{Scope: "resource", ScopeID: strings.Repeat("x", 300), Layer: "l", Name: "n"},
	}
	for _, k := range keys {
		n := fileName(k)
		if prev, dup := seen[strings.ToLower(n)]; dup {
			t.Fatalf("%s and %s share file name %s (ignoring case)", prev, k, n)
		}
		seen[strings.ToLower(n)] = k
		if strings.ContainsAny(n, `/\`) || n == "." || n == ".." || len(n) > maxReadableName {
			t.Fatalf("unsafe file name %q for %s", n, k)
		}
		if !strings.HasSuffix(n, dataSuffix) {
			t.Fatalf("name %q lacks %s", n, dataSuffix)
		}
	}
	if got := fileName(keys[0]); got != "thread.%54-1_x.memory.state.kv" {
		t.Fatalf("readable name = %q", got)
	}
	if got := fileName(keys[4]); !strings.HasPrefix(got, "h-") || len(got) != 2+64+len(dataSuffix) {
		t.Fatalf("long key name = %q", got)
	}
}

func TestCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	k := storage.Key{Scope: "thread", ScopeID: "t", Layer: "l", Name: "n"}
	other := storage.Key{Scope: "thread", ScopeID: "u", Layer: "l", Name: "n"}
	if _, err := s.Put(ctx, k, []byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, other, []byte("other"), 0); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "data", fileName(k))
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	otherFile, _ := os.ReadFile(filepath.Join(dir, "data", fileName(other)))
	flip := func(i int) []byte { b := append([]byte(nil), good...); b[i] ^= 0x40; return b }
	cases := map[string][]byte{
		"empty":       {},
		"truncated":   good[:len(good)-3],
		"garbage":     []byte("this is not a store file at all, just text"),
		"bad magic":   flip(0),
		"flipped rev": flip(12),
		"flipped val": flip(len(good) - 6),
		"extra bytes": append(append([]byte(nil), good...), 0),
		"wrong key":   otherFile,
	}
	for name, content := range cases {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := s.Get(ctx, k)
		var ce *CorruptError
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Path != path || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: Get err = %v; want a *CorruptError naming %s", name, err, path)
		}
		if _, err := s.Put(ctx, k, []byte("x"), 1); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Put over corrupt file err = %v, want ErrCorrupt", name, err)
		}
	}
	// Other keys are unaffected, and restoring the file restores the key.
	if e, err := s.Get(ctx, other); err != nil || string(e.Value) != "other" {
		t.Fatalf("other key: %q, %v", e.Value, err)
	}
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if e, err := s.Get(ctx, k); err != nil || string(e.Value) != "hello" {
		t.Fatalf("restored key: %q, %v", e.Value, err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open("", Options{}); err == nil {
		t.Fatal("Open(\"\") succeeded")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, formatFile), []byte("strata-filestore 9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrFormat) {
		t.Fatalf("Open of a future format: %v, want ErrFormat", err)
	}
	file := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(file, Options{}); err == nil {
		t.Fatal("Open of a regular file succeeded")
	}
}

func TestLeftoverTempFiles(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	k := storage.Key{Scope: "thread", ScopeID: "t", Layer: "l", Name: "n"}
	rev, err := s.Put(ctx, k, []byte("acked"), 0)
	if err != nil {
		t.Fatal(err)
	}
	// What a writer killed between write and rename leaves behind.
	tmp := filepath.Join(dir, "data", fileName(k)+".12345"+tmpSuffix)
	if err := os.WriteFile(tmp, []byte("half a fi"), 0o600); err != nil {
		t.Fatal(err)
	}
	if e, err := s.Get(ctx, k); err != nil || string(e.Value) != "acked" {
		t.Fatalf("Get with a temp file around: %q, %v", e.Value, err)
	}
	s.Close()
	s = openT(t, dir)
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("leftover temp file survived Open: %v", err)
	}
	if e, err := s.Get(ctx, k); err != nil || string(e.Value) != "acked" || e.Revision != rev {
		t.Fatalf("after reopen: %q@%d, %v", e.Value, e.Revision, err)
	}
}

// crashKeys is the key set of the crash test's child.
func crashKey(i int) storage.Key {
	return storage.Key{Scope: "thread", ScopeID: "crash-" + strconv.Itoa(i), Layer: "layer", Name: "state"}
}

const crashKeyCount = 16

// crashChild runs in a child process: sequential writes over a few keys,
// printing "try" before and "ack" after every write. It never stops on its
// own; the parent kills it.
func crashChild(dir string) {
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	for op := 0; op < 1_000_000; op++ {
		i := op % crashKeyCount
		k := crashKey(i)
		e, err := s.Get(ctx, k)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			fmt.Println("error", err)
			os.Exit(2)
		}
		if op%7 == 3 && err == nil {
			fmt.Printf("try del %d\n", i)
			if err := s.Delete(ctx, k, e.Revision); err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			fmt.Printf("ack del %d\n", i)
			continue
		}
		v := fmt.Sprintf("op %d %s", op, strings.Repeat("x", op%300))
		fmt.Printf("try put %d %s\n", i, v)
		rev, err := s.Put(ctx, k, []byte(v), e.Revision)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Printf("ack put %d %d %s\n", i, rev, v)
	}
}

type crashState struct {
	deleted bool
	rev     int64
	value   string
}

func TestCrash(t *testing.T) {
	if dir := os.Getenv("STRATA_FILESTORE_CRASH_DIR"); dir != "" {
		crashChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("spawns and kills child processes")
	}
	dir := t.TempDir()
	acked := map[int]crashState{}
	for round := 0; round < 6; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STRATA_FILESTORE_CRASH_DIR="+dir)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 40 + rand.IntN(120)
		var pending string // the write in flight when the child died, if any
		acks := 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			f := strings.SplitN(line, " ", 5)
			switch {
			case f[0] == "error":
				t.Fatalf("child: %s", line)
			case f[0] == "try":
				pending = line
			case f[0] == "ack" && f[1] == "del":
				i, _ := strconv.Atoi(f[2])
				acked[i] = crashState{deleted: true, rev: acked[i].rev}
				pending, acks = "", acks+1
			case f[0] == "ack" && f[1] == "put":
				i, _ := strconv.Atoi(f[2])
				rev, _ := strconv.ParseInt(f[3], 10, 64)
				acked[i] = crashState{rev: rev, value: f[4]}
				pending, acks = "", acks+1
			}
			if acks == killAfter {
				// A random delay spreads the kill over the phases of the
				// next write (temp file, fsync, rename, directory fsync).
				time.AfterFunc(time.Duration(rand.IntN(1500))*time.Microsecond, func() {
					_ = cmd.Process.Signal(syscall.SIGKILL)
				})
			}
		}
		err = cmd.Wait()
		if acks < killAfter {
			t.Fatalf("round %d: child exited after %d acks (%v)", round, acks, err)
		}

		s := openT(t, dir)
		for i := 0; i < crashKeyCount; i++ {
			e, err := s.Get(ctx, crashKey(i))
			want, ok := acked[i]
			inFlight := pending != "" && strings.Fields(pending)[2] == strconv.Itoa(i)
			switch {
			case inFlight && matchesPending(pending, e, err, want):
				// The unacknowledged write landed before the kill: fine.
				continue
			case !ok || want.deleted:
				if !errors.Is(err, storage.ErrNotFound) {
					t.Fatalf("round %d key %d: got %q@%d, %v; want not found", round, i, e.Value, e.Revision, err)
				}
			case err != nil || e.Revision != want.rev || string(e.Value) != want.value:
				t.Fatalf("round %d key %d: got %q@%d, %v; acked %q@%d", round, i, e.Value, e.Revision, err, want.value, want.rev)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: killed after %d acks, in flight: %q", round, acks, pending)
	}
	// Open removed whatever temporary files the kills left.
	tmps, _ := filepath.Glob(filepath.Join(dir, "data", "*"+tmpSuffix))
	if len(tmps) != 0 {
		t.Fatalf("temporary files left after reopen: %v", tmps)
	}
}

// matchesPending reports whether the read (e, err) is the outcome of the
// unacknowledged write described by pending, applied on top of acked.
func matchesPending(pending string, e storage.Entry, err error, acked crashState) bool {
	f := strings.SplitN(pending, " ", 4)
	if f[1] == "del" {
		return errors.Is(err, storage.ErrNotFound)
	}
	return err == nil && string(e.Value) == f[3] && e.Revision > acked.rev
}

// TestProcesses runs real child processes incrementing one counter: the
// flock, not the in-process semaphore, is what keeps them apart.
func TestProcesses(t *testing.T) {
	const procs, each = 3, 40
	k := storage.Key{Scope: "global", Layer: "counter", Name: "state"}
	if dir := os.Getenv("STRATA_FILESTORE_PROC_DIR"); dir != "" {
		s := openT(t, dir)
		for i := 0; i < each; i++ {
			if err := storagetest.Increment(ctx, s, k); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	dir := t.TempDir()
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestProcesses$", "-test.count=1")
		cmds[i].Env = append(os.Environ(), "STRATA_FILESTORE_PROC_DIR="+dir)
		cmds[i].Stderr = os.Stderr
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	e, err := openT(t, dir).Get(ctx, k)
	if err != nil || string(e.Value) != strconv.Itoa(procs*each) {
		t.Fatalf("counter = %q, %v; want %d", e.Value, err, procs*each)
	}
}

// TestKeysFiles covers what only a directory has: temporary files, stray
// files, damaged and misplaced data files, for Keys and ScopeIDs.
func TestKeysFiles(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	data := filepath.Join(dir, "data")
	short := storage.Key{Scope: "resource", ScopeID: "alice", Layer: "profile", Name: "state"}
	long := storage.Key{Scope: "resource", ScopeID: "alice", Layer: strings.Repeat("l", 300), Name: "state"}
	bob := storage.Key{Scope: "resource", ScopeID: "bob", Layer: "profile", Name: "state"}
	for _, k := range []storage.Key{short, long, bob} {
		if _, err := s.Put(ctx, k, []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(fileName(long), hashPrefix) {
		t.Fatalf("the long key's name %s is not hashed", fileName(long))
	}
	// Leftovers of crashed writers, of either kind of name, and strays.
	for _, name := range []string{fileName(short) + ".1" + tmpSuffix, fileName(long) + ".2" + tmpSuffix, "README", "resource.alice.x.y.kv.bak"} {
		if err := os.WriteFile(filepath.Join(data, name), []byte("half a fi"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(data, "resource.alice.dir.kv"), 0o700); err != nil {
		t.Fatal(err)
	}
	keys, err := s.Keys(ctx, "resource", "alice")
	if err != nil || len(keys) != 2 || keys[0] != long || keys[1] != short {
		t.Fatalf("Keys(resource, alice) = %v, %v; want [%s %s]", keys, err, long, short)
	}
	if ids, err := s.ScopeIDs(ctx, "resource", "al"); err != nil || len(ids) != 1 || ids[0] != "alice" {
		t.Fatalf("ScopeIDs(resource, al) = %q, %v; want [alice]", ids, err)
	}

	corrupt := func(name string, content []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(data, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	good, _ := os.ReadFile(filepath.Join(data, fileName(short)))
	bobFile, _ := os.ReadFile(filepath.Join(data, fileName(bob)))
	for name, c := range map[string]struct {
		file    string
		content []byte
	}{
		"truncated in scope":   {fileName(short), good[:10]},
		"bad magic in scope":   {fileName(short), append([]byte("XXXX"), good[4:]...)},
		"extra bytes in scope": {fileName(short), append(append([]byte(nil), good...), 0)},
		"other key in scope":   {fileName(short), bobFile},
		"damaged hashed file":  {fileName(long), []byte("garbage that is long enough to hold a header")},
	} {
		saved, _ := os.ReadFile(filepath.Join(data, c.file))
		corrupt(c.file, c.content)
		_, err := s.Keys(ctx, "resource", "alice")
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Path != filepath.Join(data, c.file) {
			t.Errorf("%s: Keys err = %v; want a *CorruptError naming %s", name, err, c.file)
		}
		_, err = s.ScopeIDs(ctx, "resource", "ali")
		if !errors.As(err, &ce) || ce.Path != filepath.Join(data, c.file) {
			t.Errorf("%s: ScopeIDs err = %v; want a *CorruptError naming %s", name, err, c.file)
		}
		corrupt(c.file, saved)
	}
	// A damaged file of another scope with a readable name does not stop
	// the listing: it cannot hold a key of this one.
	corrupt(fileName(bob), []byte("garbage"))
	if keys, err := s.Keys(ctx, "resource", "alice"); err != nil || len(keys) != 2 {
		t.Fatalf("Keys with bob's file damaged = %v, %v", keys, err)
	}
	if _, err := s.Keys(ctx, "resource", "bob"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Keys(resource, bob) over a damaged file: %v, want ErrCorrupt", err)
	}
	if ids, err := s.ScopeIDs(ctx, "resource", "a"); err != nil || len(ids) != 1 {
		t.Fatalf("ScopeIDs(resource, a) with bob's file damaged = %q, %v", ids, err)
	}
	for _, prefix := range []string{"", "b", "bob"} {
		if _, err := s.ScopeIDs(ctx, "resource", prefix); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("ScopeIDs(resource, %q) over a damaged file: %v, want ErrCorrupt", prefix, err)
		}
	}
}
