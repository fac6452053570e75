//go:build unix

package instructions_test

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/instructions"
)

// Opening a FIFO blocks until a writer comes: init used to hang until its
// timeout (and leave its goroutine stuck) instead of refusing the file.
func TestFIFOIsRefusedNotOpened(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "AGENTS.md"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	l, err := instructions.New(instructions.Options{Root: dir, Files: []string{"AGENTS.md"},
		Timeouts: core.Timeouts{core.HookInit: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rt.Start(context.Background(), core.RunOptions{})
	if !errors.Is(err, instructions.ErrNotText) {
		t.Fatalf("Start: %v, want ErrNotText (not an init timeout)", err)
	}
}
