package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// The demo is the README's first command: keep it working and showing
// what it claims to show.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, filepath.Join(t.TempDir(), "demo")); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"######## run 2",
		"[anchor]", "[history]", "[live]",
		`published this turn: <context_updates epoch="t:demo-thread#0">`,
		`<update layer="notes" action="add">`,
		"notes         100   anchor  pinned", // run 2 starts with the note pinned
		"model> assistant: You are Ada, and you prefer metric units.",
		"cache (simulated Anthropic): read 1311",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}
