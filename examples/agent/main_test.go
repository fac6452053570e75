package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratamem/strata/cachesim"
	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/provider/scripted"
	"github.com/stratamem/strata/tokens/tiktoken"
)

// The example runs its built-in script offline with the real default
// embedding model and shows memory carried into the second visit.
func TestBuiltinScript(t *testing.T) {
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
	sim, _ := cachesim.NewAnthropic(cachesim.AnthropicOptions{})
	model := &scripted.Model{Cache: sim, Script: scriptedAgent, Tokenizer: tk}
	var out bytes.Buffer
	if err := run(context.Background(), &out, filepath.Join(t.TempDir(), "agent"), "ada", model, "scripted", tk, builtinScript, true); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"denied by steering",
		"agent: I cannot delete your files from here; please confirm in the app.",
		"agent: You live in Lisbon (since the day before your last visit); your todo list has: review the gripper design.",
		"epoch t:ada-visit-2#0",
		// The second visit recalls what the first left behind.
		"<semantic_recall", "Ada (person)", "Lisbon", "<episodes>",
		`agent: On your first visit you asked me to add "review the gripper design" to your todos.`,
		"[anchor]", "[history]", "[live]", "published this turn: <context_updates",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}
