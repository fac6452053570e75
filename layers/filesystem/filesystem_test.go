package filesystem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/filesystem"
	"github.com/stratamem/strata/layers/steering"
	"github.com/stratamem/strata/tokens"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// write creates or replaces a file and sets its modification time, so
// edits are visible to the stat-based cache however coarse the clock.
func write(t testing.TB, dir, name, text string, mod time.Time) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mod, mod); err != nil {
		t.Fatal(err)
	}
}

func start(t *testing.T, opts filesystem.Options) *core.Session {
	t.Helper()
	l, err := filesystem.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}, System: []core.Item{core.SystemMessage("You edit code.")}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(context.Background(), core.RunOptions{ThreadID: "thread-1"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// turn appends a user message, assembles and records an answer.
func turn(t *testing.T, s *core.Session, user string) *core.View {
	t.Helper()
	ctx := context.Background()
	if err := s.Append(ctx, core.UserMessage(user)); err != nil {
		t.Fatal(err)
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, core.AssistantMessage("ok")); err != nil {
		t.Fatal(err)
	}
	return v
}

func bandJSON(t *testing.T, v *core.View, b core.Band) string {
	t.Helper()
	raw, err := json.Marshal(v.Band(b))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func headings(items []core.Item) []string {
	var out []string
	for _, it := range items {
		for _, line := range strings.Split(it.Text(), "\n") {
			if p, ok := strings.CutPrefix(line, "## "); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

func tracked(s *core.Session) []string {
	st, _ := core.State[filesystem.State](s, filesystem.DefaultID)
	return st.Paths()
}

// filler gives each file a realistic size, so a delta is measurably
// smaller than a full republish.
var filler = strings.Repeat("// Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n", 6)

func twelveFiles(t *testing.T) (dir, mentions string) {
	dir = t.TempDir()
	var m []string
	for i := 1; i <= 12; i++ {
		name := fmt.Sprintf("pkg/f%02d.go", i)
		write(t, dir, name, fmt.Sprintf("package pkg\n\n// F%d is file number %d.\nfunc F%d() int { return %d }\n%s", i, i, i, i, filler), t0)
		m = append(m, "#"+name)
	}
	return dir, strings.Join(m, " ")
}

func TestEditRepublishesOnlyTheChangedFile(t *testing.T) {
	dir, mentions := twelveFiles(t)
	s := start(t, filesystem.Options{Root: dir})
	v1 := turn(t, s, "Please review "+mentions+".")
	anchor := v1.Band(core.BandAnchor)
	if len(anchor) != 12 {
		t.Fatalf("anchor band has %d items, want 12", len(anchor))
	}
	if h := headings(anchor); !slices.IsSorted(h) || h[6] != "pkg/f07.go" {
		t.Fatalf("headings = %v", h)
	}
	want := "## pkg/f07.go\n```\npackage pkg\n\n// F7 is file number 7.\nfunc F7() int { return 7 }\n" + filler + "```"
	if anchor[6].Text() != want {
		t.Fatalf("block = %q, want %q", anchor[6].Text(), want)
	}
	u := v1.Usage.Layer(filesystem.DefaultID)
	if u.Band != core.BandAnchor || !v1.Usage.Epoch.Reanchored || len(v1.Updates()) != 0 {
		t.Fatalf("first assembly: usage %+v epoch %+v", u, v1.Usage.Epoch)
	}

	// Nothing changed: pinned bytes, no update.
	v2 := turn(t, s, "Anything else?")
	if bandJSON(t, v2, core.BandAnchor) != bandJSON(t, v1, core.BandAnchor) || len(v2.Updates()) != 0 {
		t.Fatal("an unchanged turn changed the anchor or published an update")
	}

	// Edit one file of twelve.
	write(t, dir, "pkg/f07.go", "package pkg\n\n// F7 now returns seventy.\nfunc F7() int { return 70 }\n", t0.Add(time.Hour))
	v3 := turn(t, s, "I edited it.")
	if bandJSON(t, v3, core.BandAnchor) != bandJSON(t, v1, core.BandAnchor) {
		t.Fatal("the edit rewrote the pinned prefix")
	}
	upd := v3.Updates()
	if len(upd) != 1 {
		t.Fatalf("updates = %v", upd)
	}
	text := upd[0].Text()
	if !strings.Contains(text, `<update layer="filesystem" action="replace">`) || !strings.Contains(text, "return 70") {
		t.Fatalf("update = %q", text)
	}
	if h := headings(upd); !slices.Equal(h, []string{"pkg/f07.go"}) {
		t.Fatalf("update carries %v, want only pkg/f07.go", h)
	}
	if lu := v3.Usage.Layer(filesystem.DefaultID); lu.Update != core.ActionReplace || lu.Served != core.ServedPinned {
		t.Fatalf("usage = %+v", lu)
	}
	// The update costs one file, not twelve.
	if v3.Usage.Epoch.UpdateTokens*4 > v3.Usage.BandTokens[core.BandAnchor] {
		t.Fatalf("update %d tokens vs anchor %d: not a delta", v3.Usage.Epoch.UpdateTokens, v3.Usage.BandTokens[core.BandAnchor])
	}

	// A deleted file is reported as removed, next to the edited one.
	if err := os.Remove(filepath.Join(dir, "pkg", "f03.go")); err != nil {
		t.Fatal(err)
	}
	// The update published last turn stays in the conversation (inline
	// updates); this turn publishes only what changed since: the removal.
	v4 := turn(t, s, "I deleted f03.")
	text = v4.Updates()[0].Text()
	if h := headings(v4.Updates()); !slices.Equal(h, []string{"pkg/f03.go"}) {
		t.Fatalf("update carries %v", h)
	}
	if v4.Usage.Epoch.Updates != 2 {
		t.Fatalf("updates kept in the conversation = %d, want 2", v4.Usage.Epoch.Updates)
	}
	if !strings.Contains(text, "## pkg/f03.go\n(no longer in context") {
		t.Fatalf("removal not reported: %q", text)
	}
}

func TestPathTraversalRefused(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	write(t, root, "a.txt", "inside a", t0)
	write(t, root, "b.txt", "inside b", t0)
	write(t, base, "outside/secret.txt", "TOP SECRET", t0)
	if err := os.Symlink(filepath.Join(base, "outside", "secret.txt"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(root, "alias.txt")); err != nil {
		t.Fatal(err)
	}
	s := start(t, filesystem.Options{Root: root, Functions: true})
	abs := filepath.Join(base, "outside", "secret.txt")
	v := turn(t, s, "See #../outside/secret.txt, #link.txt, #"+abs+", #a.txt and #alias.txt, #hashtag #42 #sub/../../outside/secret.txt")
	if got := tracked(s); !slices.Equal(got, []string{"a.txt", "alias.txt"}) {
		t.Fatalf("tracked = %v", got)
	}
	for _, it := range v.Items() {
		if strings.Contains(it.Text(), "TOP SECRET") {
			t.Fatal("content from outside the root reached the view")
		}
	}

	// The provided function says why.
	out, err := s.ExecuteTool(ctx, core.FunctionCall("c1", "filesystem/track",
		`{"paths":["../outside/secret.txt","link.txt","`+filepath.ToSlash(filepath.Join(root, "b.txt"))+`","missing.txt"]}`))

	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Tracking: b.txt.", `Refused "../outside/secret.txt": outside the project root.`,
		`Refused "link.txt": outside the project root.`, `Refused "missing.txt": not a file under the project root.`} {
		if !strings.Contains(out.Output, want) {
			t.Fatalf("output %q lacks %q", out.Output, want)
		}
	}

	if out, _ := s.ExecuteTool(ctx, core.FunctionCall("c2", "filesystem/track", `{"paths":[]}`)); !strings.HasPrefix(out.Output, "error: ") {
		t.Fatalf("empty paths: %q", out.Output)
	}

	// A tracked file swapped for a link out of the root is not followed.
	if err := os.Remove(filepath.Join(root, "alias.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "outside", "secret.txt"), filepath.Join(root, "alias.txt")); err != nil {
		t.Fatal(err)
	}
	v = turn(t, s, "again")
	for _, it := range v.Items() {
		if strings.Contains(it.Text(), "TOP SECRET") {
			t.Fatal("a swapped-in symlink leaked content from outside the root")
		}
	}
	if h := headings(v.Updates()); !slices.Equal(h, []string{"alias.txt", "b.txt"}) {
		t.Fatalf("update headings = %v", h)
	}
}

func TestBudgetByPriorityThenRecency(t *testing.T) {
	dir := t.TempDir()
	body := strings.Repeat("line of text for the budget test\n", 20)
	for _, n := range []string{"a.txt", "b.txt", "c.txt", "d.txt", "keep.txt"} {
		write(t, dir, n, body, t0)
	}
	write(t, dir, "tiny.txt", "x\n", t0)
	tk := tokens.Estimate()
	cost := func(name, content string) int {
		return tk.Count(filesystem.RenderFile(name, []byte(content), false, int64(len(content)))) + core.ItemOverhead
	}
	// keep (priority) and d (most recent) fit; b, c and a do not; tiny,
	// the oldest, still fits in what is left.
	budget := cost("keep.txt", body) + cost("d.txt", body) + cost("tiny.txt", "x\n")
	if cost("a.txt", body) <= cost("tiny.txt", "x\n") {
		t.Fatal("test files too small")
	}
	s := start(t, filesystem.Options{Root: dir, Budget: core.Fixed(float64(budget)),
		Priority: func(p string) int {
			if p == "keep.txt" {
				return 1
			}
			return 0
		}})
	v := turn(t, s, "#tiny.txt #a.txt #keep.txt #b.txt #c.txt #d.txt")
	if h := headings(v.Band(core.BandAnchor)); !slices.Equal(h, []string{"d.txt", "keep.txt", "tiny.txt"}) {
		t.Fatalf("rendered %v", h)
	}
	u := v.Usage.Layer(filesystem.DefaultID)
	if u.Tokens > budget || u.Budget != budget || u.Truncated != 0 {
		t.Fatalf("usage %+v over budget %d", u, budget)
	}
	// Mentioning a again makes it the most recent: it displaces d.
	v = turn(t, s, "now #a.txt")
	if h := headings(v.Updates()); !slices.Equal(h, []string{"a.txt", "d.txt"}) {
		t.Fatalf("update headings = %v", h)
	}
	if text := v.Updates()[0].Text(); !strings.Contains(text, "## d.txt\n(no longer in context") {
		t.Fatalf("update = %q", text)
	}
}

func TestDeterministicBytes(t *testing.T) {
	dir, _ := twelveFiles(t)
	render := func(message string) string {
		return bandJSON(t, turn(t, start(t, filesystem.Options{Root: dir}), message), core.BandAnchor)
	}
	a := render("#pkg/f01.go #pkg/f02.go #pkg/f03.go")
	if c := render("#pkg/f02.go #pkg/f03.go #pkg/f01.go"); a != c {
		t.Fatal("mention order changed the rendered bytes")
	}
	// Tracked over two turns (the first epoch pinned f03 alone), the same
	// set renders the same bytes in a fresh session.
	s := start(t, filesystem.Options{Root: dir})
	turn(t, s, "#pkg/f03.go")
	turn(t, s, "#pkg/f01.go #pkg/f02.go")
	st, _ := core.State[filesystem.State](s, filesystem.DefaultID)
	s2 := start(t, filesystem.Options{Root: dir})
	if err := core.SetState(context.Background(), s2, filesystem.DefaultID, st); err != nil {
		t.Fatal(err)
	}
	v, err := s2.Assemble(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if bandJSON(t, v, core.BandAnchor) != a {
		t.Fatal("same tracked set rendered different bytes")
	}
}

func TestReadToolsTrack(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, n := range []string{"x.go", "y.go", "z.go", "w.go"} {
		write(t, dir, "src/"+n, "package src\n", t0)
	}
	s := start(t, filesystem.Options{Root: dir, DisableMentions: true,
		ReadTools: []filesystem.ReadTool{{Name: "read_file", Arg: "path"}, {Name: "read_many", Arg: "paths"}}})
	_ = s.Append(ctx, core.UserMessage("look at #src/w.go"))
	calls := []core.Item{
		core.FunctionCall("c1", "read_file", `{"path":"src/x.go"}`),
		core.FunctionCall("c2", "read_many", `{"paths":["src/y.go", "`+filepath.ToSlash(filepath.Join(dir, "src", "z.go"))+`"]}`),
		core.FunctionCall("c3", "write_file", `{"path":"src/w.go"}`),
		core.FunctionCall("c4", "read_file", `{"path":"../../etc/passwd"}`),
	}
	if err := s.Record(ctx, calls...); err != nil {
		t.Fatal(err)
	}
	if got := tracked(s); len(got) != 0 {
		t.Fatalf("recording the calls tracked %v before anyone allowed them", got)
	}
	for _, c := range calls {
		hostRuns(t, s, c)
	}
	if got := tracked(s); !slices.Equal(got, []string{"src/x.go", "src/y.go", "src/z.go"}) {
		t.Fatalf("tracked = %v", got)
	}
	// An output the host appends without asking the layers tracks
	// nothing.
	write(t, dir, "src/v.go", "package src\n", t0)
	c5 := core.FunctionCall("c5", "read_file", `{"path":"src/v.go"}`)
	if err := s.Record(ctx, c5); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, core.FunctionCallOutput("c5", "package src")); err != nil {
		t.Fatal(err)
	}
	if got := tracked(s); slices.Contains(got, "src/v.go") {
		t.Fatalf("an unchecked read was tracked: %v", got)
	}
}

// hostRuns plays the host for a recorded call of a tool the host runs
// itself: ask the layers, run what they allow, append the output.
func hostRuns(t *testing.T, s *core.Session, call core.Item) core.ToolDecisionResult {
	t.Helper()
	ctx := context.Background()
	d, err := s.BeforeToolCall(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	out := d.Output
	if d.Allowed {
		out = core.FunctionCallOutput(call.CallID, "(file content)")
	}
	if err := s.Append(ctx, out); err != nil {
		t.Fatal(err)
	}
	return d
}

// A read_file the steering layer denies used to be tracked when the call
// was recorded, before the host asked BeforeToolCall: the denial said
// "denied" and the next view showed the file anyway.
func TestDeniedReadIsNotTracked(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write(t, dir, "secret.env", "API_KEY=hunter2\n", t0)
	write(t, dir, "notes.txt", "buy milk\n", t0)
	fs, err := filesystem.New(filesystem.Options{Root: dir, ReadTools: []filesystem.ReadTool{{Name: "read_file", Arg: "path"}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := steering.New(steering.Options{Rules: []steering.Rule{{Name: "no-secrets", Tool: "read_file",
		Match:  steering.ArgsContain(".env"),
		Action: steering.Deny, Reason: "secrets are off limits"}}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{fs, st}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Append(ctx, core.UserMessage("hi"))
	denied := core.FunctionCall("c1", "read_file", `{"path":"secret.env"}`)
	allowed := core.FunctionCall("c2", "read_file", `{"path":"notes.txt"}`)
	if err := s.Record(ctx, denied, allowed); err != nil { // as agent.Turn does, before asking
		t.Fatal(err)
	}
	if d := hostRuns(t, s, denied); d.Allowed {
		t.Fatal("expected a denial")
	}
	if d := hostRuns(t, s, allowed); !d.Allowed {
		t.Fatalf("allowed read denied: %+v", d)
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, it := range v.Items() {
		all.WriteString(it.Text())
	}
	if strings.Contains(all.String(), "hunter2") {
		t.Fatalf("denied file content reaches the model: %q", all.String())
	}
	if !strings.Contains(all.String(), "buy milk") {
		t.Fatalf("allowed read not shown: %q", all.String())
	}
	if got := tracked(s); !slices.Equal(got, []string{"notes.txt"}) {
		t.Fatalf("tracked = %v", got)
	}
}

func TestTrackFunctionCapsPaths(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.txt", "a", t0)
	s := start(t, filesystem.Options{Root: dir, Functions: true})
	paths := make([]string, 257)
	for i := range paths {
		paths[i] = "a.txt"
	}
	raw, _ := json.Marshal(map[string]any{"paths": paths})
	out, err := s.ExecuteTool(context.Background(), core.FunctionCall("c1", "filesystem/track", string(raw)))
	if err != nil || !strings.Contains(out.Output, "at most 256") {
		t.Fatalf("257 paths: %q %v", out.Output, err)
	}
	if got := tracked(s); len(got) != 0 {
		t.Fatalf("tracked %v", got)
	}
}

func TestLargeBinaryAndMarkdownFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write(t, dir, "big.txt", strings.Repeat("é", 100), t0) // 200 bytes
	write(t, dir, "blob.bin", "\x00\x01\x02", t0)
	md := "# Title\n\n## Install\n\n```sh\ngo get x\n```\n"
	write(t, dir, "README.md", md, t0)
	write(t, dir, "empty.txt", "", t0)
	s := start(t, filesystem.Options{Root: dir, MaxFileBytes: 51, Functions: true})
	v := turn(t, s, "#big.txt #blob.bin #README.md #empty.txt")
	texts := map[string]string{}
	for _, it := range v.Band(core.BandAnchor) {
		h, _, _ := strings.Cut(it.Text(), "\n")
		texts[strings.TrimPrefix(h, "## ")] = it.Text()
	}
	if want := "## big.txt\n```\n" + strings.Repeat("é", 25) + "\n```\n[truncated: showing the first 50 of 200 bytes]"; texts["big.txt"] != want {
		t.Fatalf("big = %q", texts["big.txt"])
	}
	if texts["blob.bin"] != "## blob.bin\n[binary file, 3 bytes: not shown]" {
		t.Fatalf("blob = %q", texts["blob.bin"])
	}
	if texts["README.md"] != "## README.md\n````\n"+md+"````" {
		t.Fatalf("readme = %q", texts["README.md"])
	}
	if texts["empty.txt"] != "## empty.txt\n(empty file)" {
		t.Fatalf("empty = %q", texts["empty.txt"])
	}
	// Markdown "## " lines inside a file do not split its block in the
	// delta.
	write(t, dir, "README.md", md+"\n## Usage\n\nrun it\n", t0.Add(time.Hour))
	v = turn(t, s, "edited the readme")
	if h := headings(v.Updates()); !slices.Equal(h, []string{"README.md", "Install", "Usage"}) {
		t.Fatalf("update headings = %v", h)
	}
	// Untracking the readme reports it removed.
	out, err := s.ExecuteTool(ctx, core.FunctionCall("c1", "filesystem/untrack", `{"paths":["./README.md"]}`))
	if err != nil || out.Output != "No longer tracking: README.md." {
		t.Fatalf("untrack: %+v %v", out, err)
	}
	v = turn(t, s, "drop it")
	if text := v.Updates()[0].Text(); !strings.Contains(text, "## README.md\n(no longer in context") {
		t.Fatalf("update = %q", text)
	}
}

func TestMaxFilesEvictsLeastRecent(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c", "p"} {
		write(t, dir, n, n, t0)
	}
	s := start(t, filesystem.Options{Root: dir, MaxFiles: 2, Priority: func(p string) int {
		if p == "p" {
			return 5
		}
		return 0
	}})
	turn(t, s, "#a #b")
	turn(t, s, "#a")
	turn(t, s, "#c")
	if got := tracked(s); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("tracked = %v", got)
	}
	turn(t, s, "#p")
	turn(t, s, "#b")
	if got := tracked(s); !slices.Equal(got, []string{"b", "p"}) {
		t.Fatalf("tracked = %v (the high-priority file must outlive recency)", got)
	}
}

func TestMentions(t *testing.T) {
	got := filesystem.Mentions("Fix #a/b.go, then (#c.txt) and `#d e`.\n# Heading\n## Sub\nissue#12 #f.md# #g.md.")
	want := []string{"a/b.go", "c.txt", "d", "f.md", "g.md"}
	if !slices.Equal(got, want) {
		t.Fatalf("Mentions = %q, want %q", got, want)
	}
}

func TestRootMustExist(t *testing.T) {
	l, err := filesystem.New(filesystem.Options{Root: filepath.Join(t.TempDir(), "nope")})
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}})
	_, err = rt.Start(context.Background(), core.RunOptions{ThreadID: "t"})
	var he *core.HookError
	if !errors.As(err, &he) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

func TestOptionsErrors(t *testing.T) {
	for _, c := range []struct {
		opts  filesystem.Options
		field string
	}{
		{filesystem.Options{}, "Root"},
		{filesystem.Options{Root: ".", Scope: "run"}, "Scope"},
		{filesystem.Options{Root: ".", MaxFileBytes: -1}, "MaxFileBytes"},
		{filesystem.Options{Root: ".", MaxFiles: -1}, "MaxFiles"},
		{filesystem.Options{Root: ".", ReadTools: []filesystem.ReadTool{{Arg: "path"}}}, "ReadTools[0].Name"},
		{filesystem.Options{Root: ".", ReadTools: []filesystem.ReadTool{{Name: "read"}}}, "ReadTools[0].Arg"},
		{filesystem.Options{Root: ".", ReadTools: []filesystem.ReadTool{{Name: "r", Arg: "p"}, {Name: "r", Arg: "q"}}}, "ReadTools[1].Name"},
		{filesystem.Options{Root: ".", Budget: core.Range(5, 1)}, "Budget.Max"},
	} {
		_, err := filesystem.New(c.opts)
		var ce *core.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || ce.Layer != filesystem.DefaultID {
			t.Errorf("%s: err = %v", c.field, err)
		}
	}
}

func TestConcurrentRunsOfAThreadMergeTrackedFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		write(t, dir, n, n, t0)
	}
	l, err := filesystem.New(filesystem.Options{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}})
	if err != nil {
		t.Fatal(err)
	}
	s1, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
	s2, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
	// Both runs loaded the empty set; the second write conflicts and is
	// merged instead of lost.
	if err := s1.Append(ctx, core.UserMessage("#a #b")); err != nil {
		t.Fatal(err)
	}
	if err := s2.Append(ctx, core.UserMessage("#c")); err != nil {
		t.Fatal(err)
	}
	if got := tracked(s2); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("merged = %v", got)
	}
	s3, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
	if got := tracked(s3); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("next run sees %v", got)
	}
}
