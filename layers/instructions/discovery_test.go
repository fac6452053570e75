package instructions_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/instructions"
	"github.com/stratamem/strata/storage"
)

var readFile = []instructions.ReadTool{{Name: "read_file", Arg: "path"}}

func newDiscovery(t *testing.T, opts instructions.DiscoveryOptions) core.Layer[instructions.DiscoveryState] {
	t.Helper()
	if opts.ReadTools == nil {
		opts.ReadTools = readFile
	}
	l, err := instructions.NewDiscovery(opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// monorepo writes a tree with instructions files at several depths.
func monorepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"AGENTS.md":        "Root rules.\n",
		"main.go":          "package main\n",
		"a/AGENTS.md":      "Rules of a.\n",
		"a/CLAUDE.md":      "Not chosen: AGENTS.md comes first.\n",
		"a/b/CLAUDE.md":    "Rules of a/b.\n",
		"a/b/NOETA.md":     "Not chosen: CLAUDE.md comes first.\n",
		"a/b/c/file.go":    "package c\n",
		"a/b/c/other.go":   "package c\n",
		"a/b/sibling.go":   "package b\n",
		"a/x/NOETA.md":     "Rules of a/x.\n",
		"a/x/y.go":         "package x\n",
		"z/no_instruct.go": "package z\n",
	} {
		writeFile(t, dir, name, text)
	}
	return dir
}

// driver plays a host's tool round trips on a session.
type driver struct {
	t    *testing.T
	ctx  context.Context
	s    *core.Session
	n    int // calls made
	turn int
}

func (d *driver) must(err error) {
	d.t.Helper()
	if err != nil {
		d.t.Fatal(err)
	}
}

// call builds a function call with a fresh id.
func (d *driver) call(name string, args string) core.Item {
	d.n++
	return core.FunctionCall(fmt.Sprintf("c%d", d.n), name, args)
}

// read builds a read_file call of path.
func (d *driver) read(path string) core.Item {
	return d.call("read_file", fmt.Sprintf(`{"path":%q}`, path))
}

// round records calls as one model call, asks the layers about each
// and appends every output in one batch, as a host does; output gives
// each allowed call's output.
func (d *driver) round(output func(core.Item) string, calls ...core.Item) {
	d.t.Helper()
	d.must(d.s.Append(d.ctx, core.UserMessage(fmt.Sprintf("turn %d", d.turn))))
	d.turn++
	_, err := d.s.Assemble(d.ctx)
	d.must(err)
	d.must(d.s.Record(d.ctx, calls...))
	var outs []core.Item
	for _, c := range calls {
		res, err := d.s.BeforeToolCall(d.ctx, c)
		d.must(err)
		if !res.Allowed {
			outs = append(outs, res.Output)
			continue
		}
		outs = append(outs, core.FunctionCallOutput(c.CallID, output(c)))
	}
	d.must(d.s.Append(d.ctx, outs...))
	d.must(d.s.Record(d.ctx, core.AssistantMessage("ok")))
}

func ok(core.Item) string { return "file contents" }

// activations are the keys of the resident-content events in the log, in
// log order.
func activations(s *core.Session) []string {
	var out []string
	for _, it := range s.Items() {
		if it.Type == core.TypeContent {
			out = append(out, it.Resident.Kind+":"+it.Resident.Key)
		}
	}
	return out
}

func equal(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

// Reading a/b/c/file.go activates a/AGENTS.md then a/b/CLAUDE.md: one
// file per directory, shallowest first, the root's left to the load-once
// layer; they land in history after the turn's tool outputs; each
// activates once.
func TestDiscoveryActivatesShallowestFirstAfterOutputs(t *testing.T) {
	ctx := context.Background()
	dir := monorepo(t)
	rt := runtimeWith(t, core.Config{System: []core.Item{core.SystemMessage("sys")}, Layers: []core.AnyLayer{
		newLayer(t, instructions.Options{Files: []string{"AGENTS.md"}, Root: dir}),
		newDiscovery(t, instructions.DiscoveryOptions{Workspace: dir}),
	}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, ctx: ctx, s: s}
	// Two calls in one model call: the activations wait for both outputs.
	d.round(ok, d.read("a/b/c/file.go"), d.call("grep", `{"pattern":"x"}`))
	want := []string{"instructions:a/AGENTS.md", "instructions:a/b/CLAUDE.md"}
	if got := activations(s); !equal(got, want) {
		t.Fatalf("activations %q, want %q", got, want)
	}
	d.must(s.Append(ctx, core.UserMessage("next")))
	v, err := s.Assemble(ctx)
	d.must(err)
	h := texts(v.Band(core.BandHistory))
	wantH := []string{"turn 0", "call:c1", "call:c2", "output:c1", "output:c2",
		"<instructions key=\"a/AGENTS.md\">\nRules of a.\n</instructions>",
		"<instructions key=\"a/b/CLAUDE.md\">\nRules of a/b.\n</instructions>",
		"ok", "next"}
	if !equal(h, wantH) {
		t.Fatalf("history\n%q\nwant\n%q", h, wantH)
	}
	anchor := strings.Join(texts(v.Band(core.BandAnchor)), "\n")
	if !strings.Contains(anchor, "Root rules.") || strings.Contains(anchor, "Rules of a") {
		t.Fatalf("anchor band %q: want the root's file only", anchor)
	}
	if strings.Count(strings.Join(texts(v.Items()), "\n"), "Root rules.") != 1 {
		t.Fatal("the root's file is shown twice")
	}

	// Reads under directories that contributed activate nothing more; a
	// new directory contributes its own file only.
	d.round(ok, d.read("a/b/c/other.go"), d.read("a/b/sibling.go"), d.read("main.go"), d.read("z/no_instruct.go"))
	if got := activations(s); !equal(got, want) {
		t.Fatalf("activations after rereads %q, want %q", got, want)
	}
	d.round(ok, d.read("a/x/y.go"))
	want = append(want, "instructions:a/x/NOETA.md")
	if got := activations(s); !equal(got, want) {
		t.Fatalf("activations %q, want %q", got, want)
	}
}

// Names sets the order of preference; a list of paths is read in order.
func TestDiscoveryNamesAndPathLists(t *testing.T) {
	ctx := context.Background()
	dir := monorepo(t)
	rt := runtimeWith(t, core.Config{Layers: []core.AnyLayer{newDiscovery(t, instructions.DiscoveryOptions{
		Workspace: dir, Names: []string{"NOETA.md", "CLAUDE.md"},
		ReadTools: []instructions.ReadTool{{Name: "read_many", Arg: "paths"}},
	})}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, ctx: ctx, s: s}
	d.round(ok, d.call("read_many", `{"paths":["a/x/y.go","a/b/c/file.go"]}`))
	// a has no NOETA.md: its CLAUDE.md, shallowest, comes first.
	want := []string{"instructions:a/CLAUDE.md", "instructions:a/x/NOETA.md", "instructions:a/b/NOETA.md"}
	if got := activations(s); !equal(got, want) {
		t.Fatalf("activations %q, want %q", got, want)
	}
}

// Discovery is fenced to the workspace even where the read tool is not:
// ".." paths, absolute paths outside, a directory linked out and an
// instructions file linked out activate nothing.
func TestDiscoveryFencedToWorkspace(t *testing.T) {
	ctx := context.Background()
	dir := monorepo(t)
	outside := t.TempDir()
	writeFile(t, outside, "AGENTS.md", "Outside rules.\n")
	writeFile(t, outside, "f.go", "package outside\n")
	writeFile(t, outside, "deep/AGENTS.md", "Outside deep rules.\n")
	writeFile(t, outside, "deep/f.go", "package deep\n")
	if err := os.Symlink(outside, filepath.Join(dir, "a", "out")); err != nil {
		t.Fatal(err)
	}
	// a/l/AGENTS.md leads out; a/l/CLAUDE.md is there but the first
	// name present decides.
	writeFile(t, dir, "a/l/CLAUDE.md", "Not a fallback.\n")
	writeFile(t, dir, "a/l/f.go", "package l\n")
	if err := os.Symlink(filepath.Join(outside, "AGENTS.md"), filepath.Join(dir, "a", "l", "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	rt := runtimeWith(t, core.Config{Layers: []core.AnyLayer{newDiscovery(t, instructions.DiscoveryOptions{
		Workspace: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, ctx: ctx, s: s}
	rel, err := filepath.Rel(dir, filepath.Join(outside, "f.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"a/out/f.go",                             // a directory linked out
		"a/out/deep/f.go",                        // deeper under it
		filepath.ToSlash(rel),                    // "../..." to the same file
		"../" + filepath.Base(dir) + "/a/x/y.go", // ".." that comes back in
		"a/b/../x/y.go",                          // ".." inside
		filepath.Join(outside, "deep", "f.go"),   // absolute, outside
		"a/b/c/missing.go",                       // no such file
		"a/b/c",                                  // a directory, not a file
	} {
		d.round(ok, d.read(p))
		if got := activations(s); len(got) != 0 {
			t.Fatalf("reading %q activated %q", p, got)
		}
	}
	// The link-out instructions file is refused without falling back;
	// a/AGENTS.md (inside) still contributes.
	d.round(ok, d.read("a/l/f.go"))
	if got, want := activations(s), []string{"instructions:a/AGENTS.md"}; !equal(got, want) {
		t.Fatalf("activations %q, want %q", got, want)
	}
	if !strings.Contains(logs.String(), "a/l/AGENTS.md") {
		t.Fatalf("refused file not logged: %s", logs.String())
	}
	for _, it := range s.Items() {
		if it.Type == core.TypeContent && (strings.Contains(it.Text(), "Outside") || strings.Contains(it.Text(), "Not a fallback")) {
			t.Fatalf("content from outside or a fallback: %+v", it)
		}
	}
	// An absolute path inside the workspace is a path like any other.
	d.round(ok, d.read(filepath.Join(dir, "a", "b", "c", "file.go")))
	if got, want := activations(s), []string{"instructions:a/AGENTS.md", "instructions:a/b/CLAUDE.md"}; !equal(got, want) {
		t.Fatalf("activations %q, want %q", got, want)
	}
}

// A denied call, an output the session never let run, and a failed read
// activate nothing; the next good read does.
func TestDiscoveryNeedsAnAllowedSuccessfulRead(t *testing.T) {
	ctx := context.Background()
	dir := monorepo(t)
	deny := core.Layer[struct{}]{ID: "deny", Slot: 5, Scope: core.ScopeExecution, Hooks: core.Hooks[struct{}]{
		BeforeToolCall: func(_ context.Context, p core.CallParams[struct{}]) (core.ToolDecision[struct{}], error) {
			if strings.Contains(p.Call.Arguments, "file.go") {
				return core.ToolDecision[struct{}]{Deny: true, Reason: "not that file"}, nil
			}
			return core.ToolDecision[struct{}]{}, nil
		}}}
	rt := runtimeWith(t, core.Config{Layers: []core.AnyLayer{deny, newDiscovery(t, instructions.DiscoveryOptions{Workspace: dir})}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, ctx: ctx, s: s}
	none := func(what string) {
		t.Helper()
		if got := activations(s); len(got) != 0 {
			t.Fatalf("%s activated %q", what, got)
		}
	}
	d.round(ok, d.read("a/b/c/file.go"))
	none("a denied read")

	// An output appended without asking the layers: CallAllowed is false.
	c := d.read("a/b/c/other.go")
	d.must(s.Record(ctx, c))
	d.must(s.Append(ctx, core.FunctionCallOutput(c.CallID, "package c")))
	none("an output of a call never allowed")

	for _, out := range []string{"error: no such file", "  Error reading a/b/c/other.go: permission denied", "ERROR"} {
		d.round(func(core.Item) string { return out }, d.read("a/b/c/other.go"))
		none(fmt.Sprintf("a failed read (%q)", out))
	}
	// A tool whose output says nothing of failure is not a read tool.
	d.round(ok, d.call("list_dir", `{"path":"a/b/c/other.go"}`))
	none("a call of another tool")

	d.round(ok, d.read("a/b/c/other.go"))
	if got := activations(s); len(got) != 2 {
		t.Fatalf("the good read activated %q", got)
	}
}

// A host's ReadFailed replaces the default.
func TestDiscoveryHostReadFailed(t *testing.T) {
	ctx := context.Background()
	dir := monorepo(t)
	rt := runtimeWith(t, core.Config{Layers: []core.AnyLayer{newDiscovery(t, instructions.DiscoveryOptions{
		Workspace: dir,
		ReadFailed: func(_, out core.Item) bool {
			return strings.HasPrefix(out.Output, `{"ok":false`)
		},
	})}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, ctx: ctx, s: s}
	d.round(func(core.Item) string { return `{"ok":false,"reason":"busy"}` }, d.read("a/x/y.go"))
	if got := activations(s); len(got) != 0 {
		t.Fatalf("a failed read activated %q", got)
	}
	// Under the host's rule an output starting "error" is a success.
	d.round(func(core.Item) string { return "errors.go:1: package x" }, d.read("a/x/y.go"))
	if got, want := activations(s), []string{"instructions:a/AGENTS.md", "instructions:a/x/NOETA.md"}; !equal(got, want) {
		t.Fatalf("activations %q, want %q", got, want)
	}
}

// Without the discovery layer nothing is discovered: the load-once layer
// reads only its configured files.
func TestDiscoveryOffByDefault(t *testing.T) {
	ctx := context.Background()
	dir := monorepo(t)
	rt := runtimeWith(t, core.Config{Layers: []core.AnyLayer{newLayer(t, instructions.Options{Files: []string{"AGENTS.md"}, Root: dir})}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, ctx: ctx, s: s}
	d.round(ok, d.read("a/b/c/file.go"))
	if got := activations(s); len(got) != 0 {
		t.Fatalf("activations %q without discovery", got)
	}
}

// The directories that contributed are the layer's state: with a thread
// scope a later run of the thread does not activate them again, even
// without the log (core's own per-run dedup would not know); resumed
// from its log under the default execution scope, a run does not log a
// second activation either.
func TestDiscoveryStatePerScope(t *testing.T) {
	ctx := context.Background()
	dir := monorepo(t)
	store := storage.NewMemory()
	rt := runtimeWith(t, core.Config{Store: store, Layers: []core.AnyLayer{newDiscovery(t, instructions.DiscoveryOptions{
		Workspace: dir, Scope: core.ScopeThread})}})
	run := func(history []core.Item, paths ...string) *core.Session {
		t.Helper()
		s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t1", History: history})
		if err != nil {
			t.Fatal(err)
		}
		d := &driver{t: t, ctx: ctx, s: s, n: len(history)}
		for _, p := range paths {
			d.round(ok, d.read(p))
		}
		if err := s.Complete(ctx, "done"); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s1 := run(nil, "a/b/c/file.go")
	if got := activations(s1); len(got) != 2 {
		t.Fatalf("first run activated %q", got)
	}
	s2 := run(s1.Items(), "a/b/c/file.go", "a/x/y.go")
	want := []string{"instructions:a/AGENTS.md", "instructions:a/b/CLAUDE.md", "instructions:a/x/NOETA.md"}
	if got := activations(s2); !equal(got, want) {
		t.Fatalf("resumed run: activations %q, want %q", got, want)
	}
	s3 := run(nil, "a/b/c/file.go", "a/x/y.go")
	if got := activations(s3); len(got) != 0 {
		t.Fatalf("a later run of the thread activated again: %q", got)
	}

	// Execution scope (the default): the state starts empty, the log the
	// run resumes already holds the activations, and none is logged twice.
	rt2 := runtimeWith(t, core.Config{Layers: []core.AnyLayer{newDiscovery(t, instructions.DiscoveryOptions{Workspace: dir})}})
	s4, err := rt2.Start(ctx, core.RunOptions{History: s1.Items()})
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, ctx: ctx, s: s4, n: len(s1.Items())}
	d.round(ok, d.read("a/b/c/file.go"))
	if got := activations(s4); len(got) != 2 {
		t.Fatalf("resumed run logged %q", got)
	}
}

// Instructions files are held to the load-once layer's rules: too large
// or not text is refused (and logged), an empty file contributes nothing.
func TestDiscoveryRefusesBadFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, dir, "big/AGENTS.md", strings.Repeat("x", 65))
	writeFile(t, dir, "big/f.go", "package big\n")
	writeFile(t, dir, "bin/AGENTS.md", "a\x00b")
	writeFile(t, dir, "bin/f.go", "package bin\n")
	writeFile(t, dir, "empty/AGENTS.md", "\n\n")
	writeFile(t, dir, "empty/f.go", "package empty\n")
	writeFile(t, dir, "dir/AGENTS.md/keep", "a directory named AGENTS.md\n")
	writeFile(t, dir, "dir/f.go", "package dir\n")
	writeFile(t, dir, "fine/AGENTS.md", strings.Repeat("y", 64))
	writeFile(t, dir, "fine/f.go", "package fine\n")
	var logs bytes.Buffer
	rt := runtimeWith(t, core.Config{Layers: []core.AnyLayer{newDiscovery(t, instructions.DiscoveryOptions{
		Workspace: dir, MaxFileBytes: 64, Logger: slog.New(slog.NewTextHandler(&logs, nil))})}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, ctx: ctx, s: s}
	d.round(ok, d.read("big/f.go"), d.read("bin/f.go"), d.read("empty/f.go"), d.read("dir/f.go"), d.read("fine/f.go"))
	if got, want := activations(s), []string{"instructions:fine/AGENTS.md"}; !equal(got, want) {
		t.Fatalf("activations %q, want %q", got, want)
	}
	for _, p := range []string{"big/AGENTS.md", "bin/AGENTS.md", "dir/AGENTS.md"} {
		if !strings.Contains(logs.String(), p) {
			t.Errorf("refusal of %s not logged: %s", p, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "too large") || !strings.Contains(logs.String(), "not a text file") {
		t.Errorf("reasons not logged: %s", logs.String())
	}
	if len(s.Diagnostics()) != 0 {
		t.Fatalf("diagnostics %+v", s.Diagnostics())
	}
}

func TestNewDiscoveryValidates(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		opts  instructions.DiscoveryOptions
		field string
	}{
		{instructions.DiscoveryOptions{ReadTools: readFile}, "Workspace"},
		{instructions.DiscoveryOptions{Workspace: dir}, "ReadTools"},
		{instructions.DiscoveryOptions{Workspace: dir, ReadTools: []instructions.ReadTool{{Name: "r"}}}, "ReadTools[0].Arg"},
		{instructions.DiscoveryOptions{Workspace: dir, ReadTools: []instructions.ReadTool{{Name: "r", Arg: "p"}, {Name: "r", Arg: "q"}}}, "ReadTools[1].Name"},
		{instructions.DiscoveryOptions{Workspace: dir, ReadTools: readFile, Names: []string{"AGENTS.md", "docs/AGENTS.md"}}, "Names[1]"},
		{instructions.DiscoveryOptions{Workspace: dir, ReadTools: readFile, Names: []string{".."}}, "Names[0]"},
		{instructions.DiscoveryOptions{Workspace: dir, ReadTools: readFile, Names: []string{"A.md", "A.md"}}, "Names[1]"},
		{instructions.DiscoveryOptions{Workspace: dir, ReadTools: readFile, MaxFileBytes: -1}, "MaxFileBytes"},
		{instructions.DiscoveryOptions{Workspace: dir, ReadTools: readFile, Scope: "galaxy"}, "Scope"},
	} {
		_, err := instructions.NewDiscovery(c.opts)
		var ce *core.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || ce.Layer != instructions.DefaultDiscoveryID {
			t.Errorf("%+v: err = %v, want a *core.ConfigError on %s", c.opts, err, c.field)
		}
	}
	// A workspace that is not a directory fails Start.
	file := filepath.Join(dir, "f")
	writeFile(t, dir, "f", "x")
	l := newDiscovery(t, instructions.DiscoveryOptions{Workspace: file})
	if _, err := runtimeWith(t, core.Config{Layers: []core.AnyLayer{l}}).Start(context.Background(), core.RunOptions{}); err == nil {
		t.Fatal("a file as workspace did not fail Start")
	}
}

func TestDefaultReadFailed(t *testing.T) {
	for out, want := range map[string]bool{
		"error: no such file": true, "\n Error": true, "ERRORS": true, "err": false,
		"package main": false, "": false, "the error is here": false,
	} {
		if got := instructions.DefaultReadFailed(core.Item{}, core.FunctionCallOutput("c", out)); got != want {
			t.Errorf("DefaultReadFailed(%q) = %v, want %v", out, got, want)
		}
	}
}

// texts shows a view's items as the tests compare them: calls and outputs
// by id, everything else by its text.
func texts(items []core.Item) []string {
	var out []string
	for _, it := range items {
		switch it.Type {
		case core.TypeFunctionCall:
			out = append(out, "call:"+it.CallID)
		case core.TypeFunctionCallOutput:
			out = append(out, "output:"+it.CallID)
		default:
			out = append(out, it.Text())
		}
	}
	return out
}
