//go:build unix

package fsutil_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratamem/strata/internal/fsutil"
	"github.com/stratamem/strata/internal/fsutil/fsutiltest"
)

const lockPathEnv = "STRATA_FSUTIL_LOCK_PATH"

func openLock(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestLockChild is the holder process of TestLockOtherProcess; it does
// nothing unless started by it.
func TestLockChild(t *testing.T) {
	path := os.Getenv(lockPathEnv)
	if path == "" {
		t.Skip("helper process of TestLockOtherProcess")
	}
	f := openLock(t, path)
	if ok, err := fsutil.TryLock(f); !ok || err != nil {
		fsutiltest.Fail(errors.Join(errors.New("lock not taken"), err))
	}
	fsutil.WriteHolder(f)
	fsutiltest.Hold()
}

// TestLockOtherProcess: a lock another process holds is refused, names
// that process, and is free once it exits.
func TestLockOtherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	child := fsutiltest.Start(t, "TestLockChild", lockPathEnv, path)
	f := openLock(t, path)
	if ok, err := fsutil.TryLock(f); ok || err != nil {
		t.Fatalf("lock held by another process: ok %v, %v", ok, err)
	}
	if got := fsutil.Holder(f); got != child.Pid {
		t.Fatalf("holder %d, want the child's pid %d", got, child.Pid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := fsutil.LockWait(ctx, f, time.Millisecond, 5*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait for a held lock: %v", err)
	}
	// LockWait takes the lock once the child lets it go.
	done := make(chan error, 1)
	go func() { done <- fsutil.LockWait(context.Background(), f, time.Millisecond, 5*time.Millisecond) }()
	child.Release(t)
	if err := <-done; err != nil {
		t.Fatalf("wait for the lock: %v", err)
	}
	fsutil.WriteHolder(f)
	if got := fsutil.Holder(f); got != os.Getpid() {
		t.Fatalf("holder %d, want this process %d", got, os.Getpid())
	}
}

// TestLockOneProcess: two opens of one file in one process exclude each
// other; closing the holder releases the lock.
func TestLockOneProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	a, b := openLock(t, path), openLock(t, path)
	if ok, err := fsutil.TryLock(a); !ok || err != nil {
		t.Fatalf("first lock: %v, %v", ok, err)
	}
	if ok, err := fsutil.TryLock(a); !ok || err != nil {
		t.Fatalf("the holder locking again: %v, %v", ok, err)
	}
	if ok, err := fsutil.TryLock(b); ok || err != nil {
		t.Fatalf("second open: %v, %v", ok, err)
	}
	a.Close()
	if ok, err := fsutil.TryLock(b); !ok || err != nil {
		t.Fatalf("after the holder closed: %v, %v", ok, err)
	}
	// An already ended context still gets one try.
	c := openLock(t, filepath.Join(t.TempDir(), "LOCK"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := fsutil.LockWait(ctx, c, time.Millisecond, time.Millisecond); err != nil {
		t.Fatalf("free lock, ended context: %v", err)
	}
}

func TestHolder(t *testing.T) {
	f := openLock(t, filepath.Join(t.TempDir(), "LOCK"))
	if got := fsutil.Holder(f); got != 0 {
		t.Fatalf("empty file: holder %d", got)
	}
	if _, err := f.WriteString("123456789012\n"); err != nil {
		t.Fatal(err)
	}
	fsutil.WriteHolder(f)
	if got := fsutil.Holder(f); got != os.Getpid() {
		t.Fatalf("holder %d, want %d", got, os.Getpid())
	}
	if err := os.WriteFile(f.Name(), []byte("not a pid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := fsutil.Holder(f); got != 0 {
		t.Fatalf("garbage: holder %d", got)
	}
}
