package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/tokens/tiktoken"
)

// demoRun runs the built-in script offline with the real default
// embedding model, as make demo does, and returns what it printed.
func demoRun(t *testing.T, views, quiet bool) string {
	t.Helper()
	if _, err := uselite.Default(); err != nil {
		if os.Getenv("STRATA_REQUIRE_MODEL") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	tk, err := tiktoken.New(tiktoken.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	model, err := offlineModel(tk)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o := options{Dir: filepath.Join(t.TempDir(), "agent"), Resource: "ada", Model: model, ModelName: "scripted", Simulated: true,
		Tokenizer: tk, Runs: builtinScript, Views: views, Quiet: quiet}
	if err := run(context.Background(), &out, o); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// The demo shows memory carried into the second visit, a compaction, the
// summary and a look back at an earlier turn from the plan records.
func TestBuiltinScript(t *testing.T) {
	text := demoRun(t, true, false)
	for _, want := range []string{
		"How to read it.", "over Anthropic's 1,024-token minimum",
		"denied by steering",
		"agent: I cannot delete your files from here; please confirm in the app.",
		"agent: You live in Lisbon (since the day before your last visit); your todo list has: review the gripper design.",
		"epoch t:ada-visit-2#0", "(re-anchored: initial)\n      why: the thread's first call",
		// The second visit recalls what the first left behind.
		"<semantic_recall", "Ada (person)", "Lisbon", "<episodes>",
		"agent: On your first visit you said the gripper drops parts wider than 40 mm",
		// The scratchpad still holds what the compaction folded away.
		"agent: The gripper drops parts wider than 40 mm",
		"[anchor]", "[history]", "[live]", "published this turn: <context_updates", "tokens/budget",
		"** compaction: this view would have passed 80% of the 2200-token window", "<conversation_summary>",
		"=== summary ===", "input-token equivalents", "re-rendered on every call",
		"=== looking back: what the model was sent on turn", "inspect ada-visit-1 -r ada --turn ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The second visit's first call reads the front the first visit
	// cached, so only the first visit's may say nothing is cached.
	if n := strings.Count(text, "nothing is cached yet"); n != 1 {
		t.Errorf("\"nothing is cached yet\" said %d times, want once (the first visit's first call)", n)
	}
	if t.Failed() {
		t.Log(text)
	}
}

// -quiet prints the summary alone.
func TestQuiet(t *testing.T) {
	text := demoRun(t, false, true)
	if !strings.HasPrefix(text, "\n=== summary ===\n") || strings.Contains(text, "user:") || strings.Contains(text, "looking back") {
		t.Fatalf("quiet output:\n%s", text)
	}
	if !strings.Contains(text, "History was compacted 1 time(s)") {
		t.Errorf("quiet summary lacks the compaction:\n%s", text)
	}
}

// The why of a thread's first call follows its cache figures: a later
// thread reads the shared system prompt and tools from the cache, so
// "nothing is cached yet" would be false there.
func TestReanchorTextFirstCall(t *testing.T) {
	first := reanchorText(core.ReasonInitial, core.CacheReport{WriteTokens: 1920})
	if !strings.Contains(first, "nothing is cached yet") || strings.Contains(first, "never cached") {
		t.Errorf("first thread, nothing read: %q", first)
	}
	later := reanchorText(core.ReasonInitial, core.CacheReport{ReadTokens: 2197, WriteTokens: 114, UncachedTokens: 242})
	if strings.Contains(later, "nothing is cached") || !strings.Contains(later, "read from") || !strings.Contains(later, "never cached") {
		t.Errorf("later thread, shared front read: %q", later)
	}
	if got := reanchorText(core.ReasonMaxAge, core.CacheReport{ReadTokens: 1}); got != reanchorWhy[core.ReasonMaxAge] {
		t.Errorf("max age: %q", got)
	}
}
