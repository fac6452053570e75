//go:build linux

package memory_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
)

// A real full disk: the embedded store on a 1 MiB tmpfs. Every Append
// that returned nil must be in the store after a reopen, and once the disk
// is full the calls say ErrNotStored. It needs root (mount); elsewhere it
// is skipped.
func TestDiskFullLosesNoAcknowledgedMessage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })

	ctx := context.Background()
	open := func() (*memory.Store, *semantic.Layer) {
		st := memtest.NewStore(t, dir, nil)
		l, err := semantic.New(st, semantic.Options{Common: memory.Common{Scope: core.ScopeResource}, Mode: semantic.ModeLexical})
		if err != nil {
			t.Fatal(err)
		}
		return st, l
	}
	st, l := open()
	rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{l}})
	s := memtest.Start(t, rt, core.RunOptions{ThreadID: "t1", ResourceID: "alice"})
	var acked []string
	refused := 0
	for i := 0; i < 3000 && refused < 20; i++ {
		text := fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum ", 60))
		err := s.Append(ctx, core.UserMessage(text))
		switch {
		case err == nil:
			acked = append(acked, text)
		case errors.Is(err, core.ErrNotStored):
			refused++
		default:
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if refused == 0 {
		t.Fatalf("the disk never filled (%d acknowledged)", len(acked))
	}
	_ = s.Close(ctx)
	_ = st.Records.Close()
	// More room, then reopen as the next process would.
	if out, err := exec.Command("mount", "-o", "remount,size=64m", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v %s", err, out)
	}
	st, _ = open()
	stored := map[string]bool{}
	for r, err := range st.Records.All(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Layer: "semantic", Kind: semantic.KindMessage}, Limit: 1000}) {
		if err != nil {
			t.Fatal(err)
		}
		stored[r.Text] = true
	}
	lost := 0
	for _, a := range acked {
		if !stored[a] {
			lost++
		}
	}
	t.Logf("disk full: %d acknowledged, %d refused, %d stored after reopen, %d acknowledged lost", len(acked), refused, len(stored), lost)
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged messages lost", lost, len(acked))
	}
}
