package instructions_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/instructions"
	"github.com/stratamem/strata/storage"
)

func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newLayer(t *testing.T, opts instructions.Options) core.Layer[instructions.State] {
	t.Helper()
	l, err := instructions.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func runtimeWith(t *testing.T, cfg core.Config) *core.Runtime {
	t.Helper()
	rt, err := core.NewRuntime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func bandJSON(t *testing.T, v *core.View, b core.Band) string {
	t.Helper()
	raw, err := json.Marshal(v.Band(b))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestRendersInOrderAnchoredAndPinned(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, dir, "b.md", "Prefer small functions.\n")
	writeFile(t, dir, "docs/a&b.md", "Cite sources.\n\n")
	l := newLayer(t, instructions.Options{Text: "Be brief.", Files: []string{"b.md", "docs/a&b.md"}, Root: dir})
	rt := runtimeWith(t, core.Config{Layers: []core.AnyLayer{l}, System: []core.Item{core.SystemMessage("sys")}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Append(ctx, core.UserMessage("hi"))
	v1, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	anchor := v1.Band(core.BandAnchor)
	want := []string{
		"<instructions>\nBe brief.\n</instructions>",
		"<instructions source=\"b.md\">\nPrefer small functions.\n</instructions>",
		"<instructions source=\"docs/a&amp;b.md\">\nCite sources.\n</instructions>",
	}
	if len(anchor) != len(want) {
		t.Fatalf("anchor band = %+v", anchor)
	}
	for i, it := range anchor {
		if it.Role != core.RoleDeveloper || it.Text() != want[i] {
			t.Fatalf("block %d = %s %q, want %q", i, it.Role, it.Text(), want[i])
		}
	}
	if u := v1.Usage.Layer(instructions.DefaultID); u.Band != core.BandAnchor || u.Slot != instructions.DefaultSlot {
		t.Fatalf("usage = %+v", u)
	}

	// Load once: editing a file mid-run changes nothing, and the second
	// assembly serves the pinned bytes without any update.
	writeFile(t, dir, "b.md", "Prefer long functions.\n")
	_ = s.Record(ctx, core.AssistantMessage("hello"))
	_ = s.Append(ctx, core.UserMessage("again"))
	v2, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if bandJSON(t, v1, core.BandAnchor) != bandJSON(t, v2, core.BandAnchor) {
		t.Fatal("anchor band changed between turns")
	}
	if len(v2.Band(core.BandUpdates)) != 0 {
		t.Fatalf("unexpected context update: %v", v2.Band(core.BandUpdates))
	}
	if u := v2.Usage.Layer(instructions.DefaultID); u.Served != core.ServedPinned {
		t.Fatalf("served = %s", u.Served)
	}

	// Deterministic: a second runtime over the same files renders the same
	// bytes.
	writeFile(t, dir, "b.md", "Prefer small functions.\n")
	rt2 := runtimeWith(t, core.Config{Layers: []core.AnyLayer{newLayer(t, instructions.Options{Text: "Be brief.", Files: []string{"b.md", "docs/a&b.md"}, Root: dir})}})
	s2, err := rt2.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v3, _ := s2.Assemble(ctx)
	if bandJSON(t, v1, core.BandAnchor) != bandJSON(t, v3, core.BandAnchor) {
		t.Fatal("same options and files rendered different bytes")
	}
}

func TestMissingFileFailsInit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, dir, "present.md", "x")
	l := newLayer(t, instructions.Options{Files: []string{"present.md", "missing.md"}, Root: dir})
	rt := runtimeWith(t, core.Config{Layers: []core.AnyLayer{l}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err == nil || s != nil {
		t.Fatal("missing file did not abort the run")
	}
	var he *core.HookError
	if !errors.As(err, &he) || he.Layer != instructions.DefaultID || he.Hook != "init" {
		t.Fatalf("err = %v, want a *core.HookError of init", err)
	}
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), `"missing.md"`) {
		t.Fatalf("err = %v: want fs.ErrNotExist naming the file", err)
	}
}

func TestDisablePolicyRunsWithoutTheLayer(t *testing.T) {
	ctx := context.Background()
	l := newLayer(t, instructions.Options{Files: []string{"missing.md"}, Root: t.TempDir(), OnInitError: core.InitErrorDisable})
	rt := runtimeWith(t, core.Config{Layers: []core.AnyLayer{l}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatalf("disable policy still aborted: %v", err)
	}
	_ = s.Append(ctx, core.UserMessage("hi"))
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Band(core.BandAnchor)) != 0 || len(v.Band(core.BandHistory)) != 1 {
		t.Fatalf("view = %+v", v.Items())
	}
	if u := v.Usage.Layer(instructions.DefaultID); !u.Disabled || u.Served != core.ServedNone {
		t.Fatalf("usage = %+v", u)
	}
	d := s.Diagnostics()
	if len(d) != 1 || d[0].Hook != "init" || !strings.Contains(d[0].Message, "missing.md") {
		t.Fatalf("diagnostics = %+v", d)
	}
}

func TestBadFilesFailWithTypedErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	writeFile(t, root, "big.md", strings.Repeat("x", 101))
	writeFile(t, root, "bin.md", "a\x00b")
	writeFile(t, dir, "secret.md", "outside")
	if err := os.Symlink(filepath.Join(dir, "secret.md"), filepath.Join(root, "link.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file string
		want error
	}{
		{"big.md", instructions.ErrFileTooLarge},
		{"bin.md", instructions.ErrNotText},
		{"link.md", instructions.ErrOutsideRoot},
		{"sub", instructions.ErrNotText},
	} {
		l := newLayer(t, instructions.Options{Files: []string{c.file}, Root: root, MaxFileBytes: 100})
		_, err := runtimeWith(t, core.Config{Layers: []core.AnyLayer{l}}).Start(ctx, core.RunOptions{})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.file, err, c.want)
		}
	}
}

func TestDurableScopeLoadsOncePerThread(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, dir, "rules.md", "version one")
	store := storage.NewMemory()
	opts := instructions.Options{Files: []string{"rules.md"}, Root: dir, Scope: core.ScopeThread}
	render := func(opts instructions.Options, thread string) string {
		t.Helper()
		rt := runtimeWith(t, core.Config{Layers: []core.AnyLayer{newLayer(t, opts)}, Store: store})
		s, err := rt.Start(ctx, core.RunOptions{ThreadID: thread})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(ctx)
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, it := range v.Band(core.BandAnchor) {
			b.WriteString(it.Text())
		}
		return b.String()
	}
	if got := render(opts, "t1"); !strings.Contains(got, "version one") {
		t.Fatalf("first run = %q", got)
	}
	writeFile(t, dir, "rules.md", "version two")
	if got := render(opts, "t1"); !strings.Contains(got, "version one") {
		t.Fatalf("thread t1 reloaded the edited file: %q", got)
	}
	if got := render(opts, "t2"); !strings.Contains(got, "version two") {
		t.Fatalf("a new thread did not load the current file: %q", got)
	}
	// Other options: the saved copy is not reused.
	changed := opts
	changed.Text = "Be brief."
	if got := render(changed, "t1"); !strings.Contains(got, "version two") || !strings.Contains(got, "Be brief.") {
		t.Fatalf("changed options reused the old copy: %q", got)
	}
	// Execution scope always loads afresh.
	writeFile(t, dir, "rules.md", "version three")
	exec := opts
	exec.Scope = ""
	if got := render(exec, ""); !strings.Contains(got, "version three") {
		t.Fatalf("execution scope = %q", got)
	}
}

func TestOptionsErrors(t *testing.T) {
	for _, c := range []struct {
		opts  instructions.Options
		field string
	}{
		{instructions.Options{}, "Text"},
		{instructions.Options{Text: "\xff"}, "Text"},
		{instructions.Options{Files: []string{""}}, "Files[0]"},
		{instructions.Options{Files: []string{"a.md", "../etc/passwd"}}, "Files[1]"},
		{instructions.Options{Files: []string{"/etc/passwd"}}, "Files[0]"},
		{instructions.Options{Files: []string{"a.md", "./a.md"}}, "Files[1]"},
		{instructions.Options{Text: "x", Scope: "session"}, "Scope"},
		{instructions.Options{Text: "x", OnInitError: "ignore"}, "OnInitError"},
		{instructions.Options{Text: "x", MaxFileBytes: -1}, "MaxFileBytes"},
		{instructions.Options{Text: "x", Budget: core.Range(10, 5)}, "Budget.Max"},
	} {
		_, err := instructions.New(c.opts)
		var ce *core.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || ce.Layer != instructions.DefaultID {
			t.Errorf("%+v: err = %v, want a ConfigError on %s", c.opts, err, c.field)
		}
	}
}

func TestConcurrentFirstRunsOfAThreadAllStart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, dir, "rules.md", "shared rules")
	rt := runtimeWith(t, core.Config{Store: storage.NewMemory(),
		Layers: []core.AnyLayer{newLayer(t, instructions.Options{Files: []string{"rules.md"}, Root: dir, Scope: core.ScopeThread})}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t1"})
			if err != nil {
				t.Errorf("concurrent first run failed: %v", err)
				return
			}
			v, err := s.Assemble(ctx)
			if err != nil || len(v.Band(core.BandAnchor)) != 1 || !strings.Contains(v.Band(core.BandAnchor)[0].Text(), "shared rules") {
				t.Errorf("view = %v, %v", v, err)
			}
		})
	}
	wg.Wait()
}
