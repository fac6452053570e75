package filesystem

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
)

// Unchanged files are served from the stat-validated cache: one read per
// file for the whole run, one more per edit.
func TestUnchangedFilesAreNotReread(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mod := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	var mentions []string
	for i := range 12 {
		name := fmt.Sprintf("f%02d.txt", i)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("content "+name), 0o644); err != nil {
			t.Fatal(err)
		}
		_ = os.Chtimes(p, mod, mod)
		mentions = append(mentions, "#"+name)
	}
	opts := Options{ID: DefaultID, Root: dir}
	l, err := newLayer(opts)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l.coreLayer(opts)}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Append(ctx, core.UserMessage(strings.Join(mentions, " ")))
	for range 5 {
		if _, err := s.Assemble(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.fileReads.Load(); n != 12 {
		t.Fatalf("%d reads over 5 turns, want 12", n)
	}
	p := filepath.Join(dir, "f03.txt")
	_ = os.WriteFile(p, []byte("edited content"), 0o644)
	_ = os.Chtimes(p, mod.Add(time.Second), mod.Add(time.Second))
	for range 3 {
		if _, err := s.Assemble(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.fileReads.Load(); n != 13 {
		t.Fatalf("%d reads after one edit, want 13", n)
	}

	// Sessions of one runtime share the cache, concurrently.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
			if err != nil {
				t.Error(err)
				return
			}
			v, err := s.Assemble(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			if n := len(v.Band(core.BandAnchor)); n != 12 {
				t.Errorf("another session rendered %d files, want 12", n)
			}
		})
	}
	wg.Wait()
	if n := l.fileReads.Load(); n != 13 {
		t.Fatalf("%d reads after other sessions, want 13", n)
	}
}

func TestContentCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newContentCache(2)
	mod := time.Unix(1, 0)
	c.put("a", 1, mod, "A", 1)
	c.put("b", 1, mod, "B", 1)
	if _, _, ok := c.get("a", 1, mod); !ok {
		t.Fatal("a missing")
	}
	c.put("c", 1, mod, "C", 1) // evicts b, the least recently used
	if _, _, ok := c.get("b", 1, mod); ok {
		t.Fatal("b survived")
	}
	if _, _, ok := c.get("a", 1, mod); !ok {
		t.Fatal("a evicted")
	}
	if _, _, ok := c.get("a", 2, mod); ok {
		t.Fatal("size change not detected")
	}
	if _, _, ok := c.get("a", 1, mod.Add(time.Nanosecond)); ok {
		t.Fatal("mtime change not detected")
	}
}
