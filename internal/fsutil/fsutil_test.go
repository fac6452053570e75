package fsutil_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratamem/strata/internal/fsutil"
)

func TestWriteFile(t *testing.T) {
	for _, opts := range []fsutil.Options{{}, {NoSync: true}, {Temp: "x.*.part"}, {Temp: "x.tmp"}} {
		dir := t.TempDir()
		path := filepath.Join(dir, "x")
		for _, content := range []string{"one\n", "two, longer\n", ""} {
			if err := fsutil.WriteFile(path, []byte(content), opts); err != nil {
				t.Fatalf("%+v: %v", opts, err)
			}
			if b, err := os.ReadFile(path); err != nil || string(b) != content {
				t.Fatalf("%+v: read %q, %v; want %q", opts, b, err, content)
			}
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Fatalf("%+v: %d files left, want only x", opts, len(entries))
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
			t.Fatalf("%+v: mode %v, want 0600", opts, fi.Mode())
		}
	}
}

// TestWriteTempNames: a pattern gives each write a file of its own; a
// fixed name is reused (truncated).
func TestWriteTempNames(t *testing.T) {
	dir := t.TempDir()
	fill := func(s string) func(*os.File) error {
		return func(f *os.File) error { _, err := f.WriteString(s); return err }
	}
	a, err := fsutil.WriteTemp(dir, "meta.json", fill("a"), fsutil.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := fsutil.WriteTemp(dir, "meta.json", fill("b"), fsutil.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a == b || !strings.HasPrefix(filepath.Base(a), ".meta.json.") || !strings.HasSuffix(a, ".tmp") {
		t.Fatalf("default temporary names %q and %q", a, b)
	}
	c, err := fsutil.WriteTemp(dir, "meta.json", fill("long content"), fsutil.Options{Temp: "meta.json.tmp"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := fsutil.WriteTemp(dir, "meta.json", fill("short"), fsutil.Options{Temp: "meta.json.tmp"})
	if err != nil {
		t.Fatal(err)
	}
	if c != d || c != filepath.Join(dir, "meta.json.tmp") {
		t.Fatalf("fixed temporary names %q and %q", c, d)
	}
	if got, _ := os.ReadFile(d); string(got) != "short" {
		t.Fatalf("fixed temporary file holds %q, want it truncated to %q", got, "short")
	}
}

// TestWriteFailures: a failed fill or rename leaves no temporary file
// and the old content in place.
func TestWriteFailures(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x")
	if err := fsutil.WriteFile(path, []byte("old"), fsutil.Options{}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	for _, temp := range []string{"", "x.tmp"} {
		_, err := fsutil.WriteTemp(dir, "x", func(f *os.File) error {
			_, _ = f.WriteString("partial")
			return boom
		}, fsutil.Options{Temp: temp})
		if !errors.Is(err, boom) {
			t.Fatalf("fill error: %v", err)
		}
	}
	tmp, err := fsutil.WriteTemp(dir, "x", func(*os.File) error { return nil }, fsutil.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A directory in the way: the rename fails.
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if renamed, err := fsutil.Commit(tmp, filepath.Join(dir, "sub"), fsutil.Options{}); renamed || err == nil {
		t.Fatalf("rename over a directory: renamed %v, %v", renamed, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("files left: %v, want x and sub", entries)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("x holds %q after failed writes", b)
	}
	if err := fsutil.WriteFile(filepath.Join(dir, "missing", "x"), nil, fsutil.Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("write into a missing directory: %v", err)
	}
}

func TestSyncDir(t *testing.T) {
	if err := fsutil.SyncDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := fsutil.SyncDir(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing directory: %v", err)
	}
}

func TestEscapes(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{"a/b", "link-target"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"out":      outside,
		"outfile":  filepath.Join(outside, "secret"),
		"in":       filepath.Join(root, "link-target"),
		"a/up":     "..",
		"a/upup":   "../..",
		"dangling": filepath.Join(root, "nothing"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Skipf("symlinks: %v", err)
		}
	}
	for _, c := range []struct {
		name string
		want bool
	}{
		{"a/b", false},
		{".", false},
		{"in", false},
		{"a/up", false},
		{"a/up/a/b", false},
		{"out", true},
		{"out/secret", true},
		{"outfile", true},
		{"a/upup", true},
		{"..", true},
		{"missing", false},  // cannot be resolved: not classified
		{"dangling", false}, // likewise
	} {
		if got := fsutil.Escapes(root, c.name); got != c.want {
			t.Errorf("Escapes(root, %q) = %v, want %v", c.name, got, c.want)
		}
	}
	// A root reached through a link is resolved too.
	linkRoot := filepath.Join(outside, "root-link")
	if err := os.Symlink(root, linkRoot); err != nil {
		t.Fatal(err)
	}
	if fsutil.Escapes(linkRoot, "a/b") || !fsutil.Escapes(linkRoot, "out") {
		t.Errorf("through a linked root: a/b %v, out %v", fsutil.Escapes(linkRoot, "a/b"), fsutil.Escapes(linkRoot, "out"))
	}
	if fsutil.Escapes(filepath.Join(root, "missing"), "x") {
		t.Error("missing root: escapes")
	}
}
