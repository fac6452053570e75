//go:build unix

package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/internal/fsutil"
	"github.com/stratamem/strata/internal/fsutil/fsutiltest"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
)

const holderDirEnv = "STRATA_EMBEDDED_LOCK_DIR"

// TestHolderChild is the holder process of TestStoreOpenInAnotherProcess;
// it does nothing unless started by it. It opens the store and keeps it
// open until the parent releases it.
func TestHolderChild(t *testing.T) {
	dir := os.Getenv(holderDirEnv)
	if dir == "" {
		t.Skip("helper process of TestStoreOpenInAnotherProcess")
	}
	env, err := embedded.Open(context.Background(), dir, embedded.Options{Embedder: hashing.New(64)})
	if err != nil {
		fsutiltest.Fail(err)
	}
	fsutiltest.Hold()
	env.Close()
}

// TestStoreOpenInAnotherProcess opens a store another process has open:
// the error names the store, the holder's pid and what to do; it is
// ErrLocked, not an invalid argument.
func TestStoreOpenInAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	child := fsutiltest.Start(t, "TestHolderChild", holderDirEnv, dir)
	_, err := embedded.Open(context.Background(), dir, embedded.Options{Embedder: hashing.New(64)})
	var le *chromem.LockedError
	if !errors.As(err, &le) || !errors.Is(err, chromem.ErrLocked) || errors.Is(err, vectorstore.ErrInvalidArgument) {
		t.Fatalf("open of a store open in another process: %v, want a *chromem.LockedError", err)
	}
	want := fmt.Sprintf("store %s is open in another process (pid %d): stop it, or use a server backend (postgres) for several processes", dir, child.Pid)
	if le.PID != child.Pid || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q, want it to contain %q", err, want)
	}
	child.Release(t)
	env, err := embedded.Open(context.Background(), dir, embedded.Options{Embedder: hashing.New(64)})
	if err != nil {
		t.Fatalf("open after the holder exited: %v", err)
	}
	env.Close()
}

// TestStoreOpenTwiceInOneProcess: the second Open, through its own file
// descriptors, is refused with this process named.
func TestStoreOpenTwiceInOneProcess(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	env, err := embedded.Open(ctx, dir, embedded.Options{Embedder: hashing.New(64)})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	_, err = embedded.Open(ctx, dir, embedded.Options{Embedder: hashing.New(64)})
	var le *chromem.LockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() || le.Path != dir ||
		!strings.Contains(err.Error(), fmt.Sprintf("store %s is already open in this process (pid %d)", dir, os.Getpid())) {
		t.Fatalf("second open: %v", err)
	}
}

// TestDirectoryLockNamesHolder holds strata.lock, the lock Open takes while
// it reads strata.json and opens the records, as another Open would (with
// its pid in the file): an Open whose context ends while it waits reports
// the holder, and the context's error.
func TestDirectoryLockNamesHolder(t *testing.T) {
	dir := t.TempDir()
	f, err := os.OpenFile(filepath.Join(dir, "strata.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ok, err := fsutil.TryLock(f); !ok || err != nil {
		t.Fatalf("lock strata.lock: %v, %v", ok, err)
	}
	if _, err := f.WriteString("4242\n"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = embedded.Open(ctx, dir, embedded.Options{Embedder: hashing.New(64)})
	var le *chromem.LockedError
	if !errors.As(err, &le) || le.PID != 4242 || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, chromem.ErrLocked) ||
		!strings.Contains(err.Error(), fmt.Sprintf("store %s is open in another process (pid 4242)", dir)) {
		t.Fatalf("open while strata.lock is held: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	env, err := embedded.Open(context.Background(), dir, embedded.Options{Embedder: hashing.New(64)})
	if err != nil {
		t.Fatalf("open once the lock is free: %v", err)
	}
	env.Close()
	b, _ := os.ReadFile(filepath.Join(dir, "strata.lock"))
	if strings.TrimSpace(string(b)) != fmt.Sprint(os.Getpid()) {
		t.Fatalf("strata.lock holds %q, want this process's pid", b)
	}
}
