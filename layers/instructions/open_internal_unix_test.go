//go:build unix

package instructions

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
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
