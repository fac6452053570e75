//go:build unix

package chromem

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratamem/strata/internal/fsutil/fsutiltest"
	"github.com/stratamem/strata/vectorstore"
)

const lockDirEnv = "STRATA_CHROMEM_LOCK_DIR"

// TestLockChild is the holder process of TestLockNamesHolder; it does
// nothing unless started by it. It opens the collection and keeps it open
// until the parent releases it.
func TestLockChild(t *testing.T) {
	dir := os.Getenv(lockDirEnv)
	if dir == "" {
		t.Skip("helper process of TestLockNamesHolder")
	}
	c, err := OpenCollection(bg, dir, "c", &vectorstore.Options{Dimension: 2})
	if err != nil {
		fsutiltest.Fail(err)
	}
	fsutiltest.Hold()
	c.Close()
}

// TestLockNamesHolder opens a collection held by another process: the
// error is a *LockedError (ErrLocked) naming the holder's pid and what to
// do, not an invalid argument; once the holder exits, the open succeeds.
func TestLockNamesHolder(t *testing.T) {
	dir := t.TempDir()
	child := fsutiltest.Start(t, "TestLockChild", lockDirEnv, dir)
	_, err := OpenCollection(bg, dir, "c", nil)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("open while another process holds it: %v, want a *LockedError", err)
	}
	if errors.Is(err, vectorstore.ErrInvalidArgument) {
		t.Fatalf("the lock is reported as an invalid argument: %v", err)
	}
	if vectorstore.CodeOf(err) != vectorstore.CodeBusy || !errors.Is(err, vectorstore.ErrBusy) {
		t.Fatalf("the lock's code is %q, want BUSY: %v", vectorstore.CodeOf(err), err)
	}
	want := fmt.Sprintf("collection %s is open in another process (pid %d): stop it, or use a server backend (postgres)", filepath.Join(dir, "c"), child.Pid)
	if le.PID != child.Pid || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q (pid %d), want it to contain %q", err, le.PID, want)
	}
	if _, err := Salvage(bg, dir, "c", SalvageOptions{}); !errors.As(err, &le) || le.PID != child.Pid {
		t.Fatalf("salvage while another process holds the collection: %v", err)
	}

	child.Release(t)
	c, err := OpenCollection(bg, dir, "c", nil)
	if err != nil {
		t.Fatalf("open after the holder exited: %v", err)
	}
	c.Close()
	b, _ := os.ReadFile(filepath.Join(dir, "c", lockName))
	if strings.TrimSpace(string(b)) != fmt.Sprint(os.Getpid()) {
		t.Fatalf("LOCK holds %q, want this process's pid %d", b, os.Getpid())
	}
}

// TestLockedErrorMessages covers the holder being this process and an
// unknown holder (a LOCK file without a pid, as older versions leave it).
func TestLockedErrorMessages(t *testing.T) {
	dir := t.TempDir()
	c, err := OpenCollection(bg, dir, "c", &vectorstore.Options{Dimension: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = OpenCollection(bg, dir, "c", nil)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("already open in this process (pid %d)", os.Getpid())) {
		t.Fatalf("second open in this process: %v", err)
	}
	if err := os.Truncate(filepath.Join(dir, "c", lockName), 0); err != nil {
		t.Fatal(err)
	}
	_, err = OpenCollection(bg, dir, "c", nil)
	var le *LockedError
	if !errors.As(err, &le) || le.PID != 0 || !strings.Contains(err.Error(), "is open in another process: stop it") {
		t.Fatalf("holder unknown: %v", err)
	}
}
