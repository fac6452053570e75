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
	// The files were just written (their ctime is now): move the clock
	// past the settle time so they are cached.
	l.now = func() time.Time { return time.Now().Add(time.Hour) }
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
	id := fileID{size: 1, mod: time.Unix(1, 0), ctime: time.Unix(2, 0), dev: 3, ino: 4}
	c.put("a", id, "A", 1)
	c.put("b", id, "B", 1)
	if _, _, ok := c.get("a", id); !ok {
		t.Fatal("a missing")
	}
	c.put("c", id, "C", 1) // evicts b, the least recently used
	if _, _, ok := c.get("b", id); ok {
		t.Fatal("b survived")
	}
	if _, _, ok := c.get("a", id); !ok {
		t.Fatal("a evicted")
	}
	for name, change := range map[string]func(*fileID){
		"size":  func(f *fileID) { f.size++ },
		"mtime": func(f *fileID) { f.mod = f.mod.Add(time.Nanosecond) },
		"ctime": func(f *fileID) { f.ctime = f.ctime.Add(time.Nanosecond) },
		"inode": func(f *fileID) { f.ino++ },
		"dev":   func(f *fileID) { f.dev++ },
	} {
		other := id
		change(&other)
		if _, _, ok := c.get("a", other); ok {
			t.Errorf("%s change not detected", name)
		}
	}
}

// newTestLayer builds the layer with its clock at now() and a session on
// it.
func newTestLayer(t *testing.T, dir string, now func() time.Time) (*layer, *core.Session) {
	t.Helper()
	opts := Options{ID: DefaultID, Root: dir}
	l, err := newLayer(opts)
	if err != nil {
		t.Fatal(err)
	}
	l.now = now
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l.coreLayer(opts)}, Cache: core.CacheConfig{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(context.Background(), core.RunOptions{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return l, s
}

func viewText(t *testing.T, s *core.Session) string {
	t.Helper()
	v, err := s.Assemble(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, it := range v.Items() {
		b.WriteString(it.Text())
	}
	return b.String()
}

// The cache used to be keyed on (size, mtime) only: a same-size rewrite
// that restores the mtime (cp -p, rsync -t, tar x) served the old bytes.
func TestSameSizeRewriteKeepingMtimeIsReread(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cfg.txt")
	if err := os.WriteFile(p, []byte("mode=SAFE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	// A clock past the settle time, so the first read is cached.
	l, s := newTestLayer(t, dir, func() time.Time { return time.Now().Add(time.Hour) })
	_ = s.Append(context.Background(), core.UserMessage("look at #cfg.txt"))
	if got := viewText(t, s); !strings.Contains(got, "SAFE") {
		t.Fatalf("first view %q", got)
	}
	if got := viewText(t, s); !strings.Contains(got, "SAFE") || l.fileReads.Load() != 1 {
		t.Fatalf("not served from the cache: %d reads", l.fileReads.Load())
	}
	if err := os.WriteFile(p, []byte("mode=EVIL\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	if got := viewText(t, s); !strings.Contains(got, "EVIL") {
		t.Fatalf("stale content served after a same-size, same-mtime rewrite: %q", got)
	}
	// Replaced by rename (a new inode), same size and mtime.
	tmp := filepath.Join(dir, "cfg.new")
	if err := os.WriteFile(tmp, []byte("mode=NEXT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	if got := viewText(t, s); !strings.Contains(got, "NEXT") {
		t.Fatalf("stale content served after a rename over the file: %q", got)
	}
}

// A file changed within the settle time is read again on every recall: a
// second write in the same timestamp tick would change no time at all.
func TestRecentlyChangedFileIsNotCached(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Now() // the file changed just now, by this clock
	l, s := newTestLayer(t, dir, func() time.Time { return now })
	_ = s.Append(context.Background(), core.UserMessage("#a.txt"))
	for range 3 {
		viewText(t, s)
	}
	if n := l.fileReads.Load(); n != 3 {
		t.Fatalf("%d reads of a file changed just now over 3 recalls, want 3", n)
	}
	now = now.Add(settleTime + time.Second)
	for range 3 {
		viewText(t, s)
	}
	if n := l.fileReads.Load(); n != 4 {
		t.Fatalf("%d reads once settled, want 4", n)
	}
}
