package core_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
)

// Content activated before the loop renders in the anchor band in the
// full kind order: skills, memory, instructions, environment, then the
// host's kinds in registration order (not by name), activations of one
// kind in activation order, all ahead of the layers' anchored output.
func TestAuditResidentFullKindOrder(t *testing.T) {
	ctx := context.Background()
	// "repo" is registered before "alpha": registration order, not names.
	rt := residentRuntime(t, core.Config{ContentKinds: []core.ContentKind{{Name: "repo"}, {Name: "alpha"}}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Activated in an order unlike the kinds'.
	for _, c := range []core.Content{
		{Kind: "alpha", Key: "a", Text: "host kind two"},
		{Kind: core.ContentEnvironment, Key: "os", Text: "linux/amd64"},
		{Kind: core.ContentSkills, Key: "s2", Text: "second skill name, first activated"},
		{Kind: "repo", Key: "r", Text: "host kind one"},
		{Kind: core.ContentInstructions, Key: "AGENTS.md", Text: "Run go vet."},
		{Kind: core.ContentMemory, Key: "index", Text: "memory index"},
		{Kind: core.ContentSkills, Key: "s1", Text: "first skill name, second activated"},
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
	want := []string{`<skills key="s2">`, `<skills key="s1">`, `<memory key="index">`, `<instructions key="AGENTS.md">`,
		`<environment key="os">`, `<repo key="r">`, `<alpha key="a">`, "<notes>"}
	anchor := texts(v.Band(core.BandAnchor))
	if len(anchor) != len(want) {
		t.Fatalf("anchor band %q, want %d items", anchor, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(anchor[i], w) {
			t.Fatalf("anchor[%d] = %q, want prefix %q (all: %q)", i, anchor[i], w, anchor)
		}
	}
	// Usage lists them in the same (view) order.
	keys := []string{"s2", "s1", "index", "AGENTS.md", "os", "r", "a"}
	if len(v.Usage.Resident) != len(keys) {
		t.Fatalf("usage resident %+v", v.Usage.Resident)
	}
	for i, k := range keys {
		if r := v.Usage.Resident[i]; r.Key != k || r.Band != core.BandAnchor {
			t.Fatalf("usage resident[%d] = %+v, want %s in the anchor band", i, r, k)
		}
	}
}

// A compaction that folds several mid-task activations mounts them again
// right after the summary in activation order (not kind order), each once,
// and keeps doing so after a further compaction.
func TestAuditRemountKeepsActivationOrder(t *testing.T) {
	ctx := context.Background()
	rt := residentRuntime(t, core.Config{Compaction: &core.CompactionConfig{Window: 900, Keep: 4}})
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Activation order environment, skills, instructions: the kind order
	// would be skills, instructions, environment.
	acts := map[int][]core.Content{
		1: {{Kind: core.ContentEnvironment, Key: "e1", Text: "GOOS=linux"}},
		2: {{Kind: core.ContentSkills, Key: "s1", Text: "How to bisect."}, {Kind: core.ContentInstructions, Key: "pkg/AGENTS.md", Text: "Run go vet."}},
	}
	want := []string{`<environment key="e1">`, `<skills key="s1">`, `<instructions key="pkg/AGENTS.md">`}
	wantKeys := []string{"e1", "s1", "pkg/AGENTS.md"}
	lastAct := -1
	checked, firstCount := 0, 0
	for n := 0; n < 120 && checked < 2; n++ {
		q, a := turnText(n)
		if err := s.Append(ctx, core.UserMessage(q)); err != nil {
			t.Fatal(err)
		}
		for _, c := range acts[n] {
			if err := s.Activate(ctx, c); err != nil {
				t.Fatal(err)
			}
			lastAct = len(s.Items()) - 1
		}
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Record(ctx, core.AssistantMessage(a)); err != nil {
			t.Fatal(err)
		}
		u := v.Usage.Compaction
		if lastAct < 0 || u.Folded <= lastAct {
			continue
		}
		// The second check needs a later compaction than the first.
		if checked == 1 && u.Count == firstCount {
			continue
		}
		h := texts(v.Band(core.BandHistory))
		if len(h) < 1+len(want) || !strings.HasPrefix(h[0], "<conversation_summary>") {
			t.Fatalf("turn %d: history starts %q", n, h[:min(len(h), 4)])
		}
		for i, w := range want {
			if !strings.HasPrefix(h[1+i], w) {
				t.Fatalf("turn %d (compaction %d): history[%d] = %.40q, want %q first (history %q)", n, u.Count, 1+i, h[1+i], w, h[:4])
			}
		}
		all := strings.Join(texts(v.Items()), "\n")
		for _, text := range []string{"GOOS=linux", "How to bisect.", "Run go vet."} {
			if c := strings.Count(all, text); c != 1 {
				t.Fatalf("turn %d: %q shown %d times", n, text, c)
			}
		}
		if len(v.Usage.Resident) != len(wantKeys) {
			t.Fatalf("turn %d: usage resident %+v", n, v.Usage.Resident)
		}
		for i, k := range wantKeys {
			if r := v.Usage.Resident[i]; r.Key != k || r.Band != core.BandHistory {
				t.Fatalf("turn %d: usage resident[%d] = %+v, want %s in history", n, i, r, k)
			}
		}
		checked++
		firstCount = u.Count
	}
	if checked < 2 {
		t.Fatalf("checked %d compactions past the activations, want 2", checked)
	}
}
