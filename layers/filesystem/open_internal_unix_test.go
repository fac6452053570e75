//go:build unix

package filesystem

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
)

// The open itself must not block on a FIFO swapped in after the stat.
func TestOpenFlagsDoNotBlockOnAFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	f, err := os.OpenFile(p, openFlags, 0) // blocks forever without O_NONBLOCK
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// A tracked file replaced by a FIFO renders nothing, at once.
func TestTrackedFileReplacedByAFIFORendersNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, s := newTestLayer(t, dir, timeNowPlusHour)
	_ = s.Append(t.Context(), core.UserMessage("#a.txt"))
	if got := viewText(t, s); !strings.Contains(got, "hello") {
		t.Fatalf("view %q", got)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if got := viewText(t, s); strings.Contains(got, "## a.txt") {
		t.Fatalf("FIFO rendered: %q", got)
	}
}

func timeNowPlusHour() time.Time { return time.Now().Add(time.Hour) }
