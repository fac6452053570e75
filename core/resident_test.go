package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
)

func residentRuntime(t *testing.T, cfg core.Config) *core.Runtime {
	t.Helper()
	cfg.Layers = append(cfg.Layers, anchoredNotes())
	cfg.System = []core.Item{core.SystemMessage("You are a careful assistant.")}
	rt, err := core.NewRuntime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

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

func indexOf(items []string, prefix string) int {
	for i, s := range items {
		if strings.HasPrefix(s, prefix) {
			return i
		}
	}
	return -1
}

// Content activated before the loop renders in the anchor band, in kind
// order, ahead of the layers' output, and never in history.
func TestResidentHeadInAnchorBand(t *testing.T) {
	ctx := context.Background()
	rt := residentRuntime(t, core.Config{ContentKinds: []core.ContentKind{{Name: "repo",
		Render: func(key, text string) string { return "REPO " + key + ": " + text }}}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []core.Content{
		{Kind: "repo", Key: "main", Text: "a Go module"},
		{Kind: core.ContentEnvironment, Key: "os", Text: "linux/amd64"},
		{Kind: core.ContentSkills, Key: "pdf", Text: "Reads PDF files."},
	} {
		if err := s.Activate(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, core.UserMessage("hello")); err != nil {
		t.Fatal(err)
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	anchor := texts(v.Band(core.BandAnchor))
	want := []string{`<skills key="pdf">`, `<environment key="os">`, "REPO main: a Go module", "<notes>"}
	if len(anchor) != len(want) {
		t.Fatalf("anchor band %q, want %d items", anchor, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(anchor[i], w) {
			t.Fatalf("anchor[%d] = %q, want prefix %q (all: %q)", i, anchor[i], w, anchor)
		}
	}
	if h := texts(v.Band(core.BandHistory)); len(h) != 1 || h[0] != "hello" {
		t.Fatalf("history %q, want only the user message", h)
	}
	for _, it := range v.Items() {
		if it.Type == core.TypeContent {
			t.Fatalf("a raw content event reached the view: %+v", it)
		}
	}
	if n := len(v.Usage.Resident); n != 3 || v.Usage.Resident[0].Band != core.BandAnchor {
		t.Fatalf("usage resident %+v", v.Usage.Resident)
	}
}

// Content activated mid-task renders in history where it was activated,
// after the outputs of the round trip open then: a call and its output
// are never separated, and the head (system + anchor band) stays the
// same bytes.
func TestResidentMidTaskSlidesPastOutputs(t *testing.T) {
	ctx := context.Background()
	rt := residentRuntime(t, core.Config{})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Append(ctx, core.UserMessage("read two files")))
	v1, err := s.Assemble(ctx)
	must(err)
	must(s.Record(ctx, core.FunctionCall("c1", "read", `{"path":"a"}`), core.FunctionCall("c2", "read", `{"path":"b"}`)))
	must(s.Append(ctx, core.FunctionCallOutput("c1", "contents of a")))
	// Activated while c2 is still open.
	must(s.Activate(ctx, core.Content{Kind: core.ContentSkills, Key: "review", Text: "How to review code."}))
	v, err := s.Assemble(ctx)
	must(err)
	if i := indexOf(texts(v.Band(core.BandHistory)), "<skills"); i >= 0 {
		t.Fatalf("content shown before the round trip it was activated in is answered: %q", texts(v.Band(core.BandHistory)))
	}
	must(s.Append(ctx, core.FunctionCallOutput("c2", "contents of b")))
	v, err = s.Assemble(ctx)
	must(err)
	h := texts(v.Band(core.BandHistory))
	want := []string{"read two files", "call:c1", "call:c2", "output:c1", "output:c2", `<skills key="review">`}
	if len(h) != len(want) {
		t.Fatalf("history %q, want %q", h, want)
	}
	for i := range want {
		if !strings.HasPrefix(h[i], want[i]) {
			t.Fatalf("history %q, want %q", h, want)
		}
	}
	if stablePrefix(t, v) != stablePrefix(t, v1) {
		t.Fatal("a mid-task activation changed the head")
	}
	// Activating the same key again is a no-op; an unknown kind fails.
	n := len(s.Items())
	must(s.Activate(ctx, core.Content{Kind: core.ContentSkills, Key: "review", Text: "other text"}))
	if len(s.Items()) != n {
		t.Fatal("a second activation of a key was logged")
	}
	if err := s.Activate(ctx, core.Content{Kind: "nope", Key: "k", Text: "t"}); !errors.Is(err, core.ErrUnknownContentKind) {
		t.Fatalf("unknown kind: %v", err)
	}
	if err := s.Activate(ctx, core.Content{Kind: core.ContentSkills, Key: "k"}); !errors.Is(err, core.ErrInvalidItem) {
		t.Fatalf("empty text: %v", err)
	}
	// Resumed from the log, the same view renders to the same bytes.
	s2, err := rt.Start(ctx, core.RunOptions{History: s.Items()})
	must(err)
	v2, err := s2.Assemble(ctx)
	must(err)
	if canon(t, v2.Items()) != canon(t, v.Items()) {
		t.Fatalf("resumed view differs:\n%s\n%s", canon(t, v2.Items()), canon(t, v.Items()))
	}
}

// A compaction that folds the point of activation mounts the content
// again right after the summary.
func TestResidentRemountedAfterCompaction(t *testing.T) {
	ctx := context.Background()
	rt := residentRuntime(t, core.Config{Compaction: &core.CompactionConfig{Window: 900, Keep: 4}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	activated := false
	for n := 0; n < 60; n++ {
		q, a := turnText(n)
		if err := s.Append(ctx, core.UserMessage(q)); err != nil {
			t.Fatal(err)
		}
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Record(ctx, core.AssistantMessage(a)); err != nil {
			t.Fatal(err)
		}
		if n == 2 {
			if err := s.Activate(ctx, core.Content{Kind: core.ContentInstructions, Key: "pkg/AGENTS.md", Text: "Run go vet."}); err != nil {
				t.Fatal(err)
			}
			activated = true
		}
		if !activated || v.Usage.Compaction == nil || v.Usage.Compaction.Folded <= 6 {
			continue
		}
		h := texts(v.Band(core.BandHistory))
		if !strings.HasPrefix(h[0], "<conversation_summary>") || !strings.HasPrefix(h[1], `<instructions key="pkg/AGENTS.md">`) {
			t.Fatalf("after a compaction, history starts %q", h[:2])
		}
		if strings.Count(strings.Join(h, "\n"), "Run go vet.") != 1 {
			t.Fatal("the content is shown more than once")
		}
		return
	}
	t.Fatal("no compaction folded the activation")
}

// A layer's item hook activates content through ItemAppendParams.Activate:
// logged after the batch being appended.
func TestResidentActivatedByHook(t *testing.T) {
	ctx := context.Background()
	watcher := core.Layer[struct{}]{ID: "watcher", Slot: 50, Scope: core.ScopeExecution,
		Hooks: core.Hooks[struct{}]{OnItemAppend: func(_ context.Context, p core.ItemAppendParams[struct{}]) (*struct{}, error) {
			if p.Item.Type == core.TypeFunctionCallOutput && p.CallAllowed {
				return nil, p.Activate(core.Content{Kind: core.ContentInstructions, Key: "dir/AGENTS.md", Text: "Use tabs."})
			}
			return nil, nil
		}}}
	rt := residentRuntime(t, core.Config{Layers: []core.AnyLayer{watcher}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, core.UserMessage("go")); err != nil {
		t.Fatal(err)
	}
	call := core.FunctionCall("c1", "watcher/none", `{}`)
	if err := s.Record(ctx, call); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeforeToolCall(ctx, call); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, core.FunctionCallOutput("c1", "done")); err != nil {
		t.Fatal(err)
	}
	items := s.Items()
	last := items[len(items)-1]
	if last.Type != core.TypeContent || last.Resident.Key != "dir/AGENTS.md" {
		t.Fatalf("last log item %+v, want the activation", last)
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := texts(v.Band(core.BandHistory))
	if !strings.HasPrefix(h[len(h)-1], `<instructions key="dir/AGENTS.md">`) {
		t.Fatalf("history %q", h)
	}
}

// Under a Policy that drops the oldest history, content activated
// mid-task is mounted again at the front of the history it keeps, so it
// stays in every view (in activation order, its tokens within the
// budget), and Usage.Resident lists what the view shows.
func TestResidentSurvivesPolicyDrop(t *testing.T) {
	ctx := context.Background()
	const budget = 600
	rt, err := core.NewRuntime(core.Config{System: []core.Item{core.SystemMessage("You are a careful assistant.")},
		Policy: &core.Policy{TokenBudget: budget, ResponseReserve: 50}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	dropped := 0
	for n := range 40 {
		q, a := turnText(n)
		_ = s.Append(ctx, core.UserMessage(q))
		switch n {
		case 2:
			_ = s.Activate(ctx, core.Content{Kind: core.ContentEnvironment, Key: "env", Text: "FIRSTCONTENT"})
		case 3:
			_ = s.Activate(ctx, core.Content{Kind: core.ContentSkills, Key: "mid", Text: "SECONDCONTENT"})
		}
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		text := canon(t, v.Items())
		first, second := strings.Index(text, "FIRSTCONTENT"), strings.Index(text, "SECONDCONTENT")
		if n >= 2 && first < 0 || n >= 3 && second < 0 {
			t.Fatalf("turn %d: resident content missing from the view (dropped %d)", n, v.Usage.HistoryDropped)
		}
		if n >= 3 && second < first {
			t.Fatalf("turn %d: mounted out of activation order", n)
		}
		if v.Usage.Total > budget {
			t.Fatalf("turn %d: view of %d tokens over the %d budget", n, v.Usage.Total, budget)
		}
		listed := 0
		for _, r := range v.Usage.Resident {
			if r.Key == "env" || r.Key == "mid" {
				listed++
			}
		}
		if want := min(max(n-1, 0), 2); listed != want {
			t.Fatalf("turn %d: Usage.Resident lists %d of the %d shown", n, listed, want)
		}
		if n > 3 && v.Usage.HistoryDropped > 6 {
			dropped++
		}
		_ = s.Record(ctx, core.AssistantMessage(a))
	}
	if dropped == 0 {
		t.Fatal("the budget never dropped the activations' history: the test checks nothing")
	}
}
