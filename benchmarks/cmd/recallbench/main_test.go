package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuickCommand runs the command as make would, reduced to the embedded
// backend and no text, and checks the files it writes.
func TestQuickCommand(t *testing.T) {
	out := t.TempDir()
	var stderr bytes.Buffer
	code := run([]string{"-quick", "-backends", "chromem", "-sizes", "500", "-text-sizes", "none", "-queries", "20", "-duration", "20ms", "-out", out}, &stderr)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "recall-backends-quick.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| chromem | clustered-500 |", "go run ./benchmarks/cmd/recallbench -quick", "## Targets"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "recall-backends-quick.svg")); err != nil {
		t.Error(err)
	}
	if !strings.Contains(stderr.String(), "target: recall@10 >= 0.95") {
		t.Errorf("no target summary on stderr:\n%s", stderr.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-nope"},
		{"-sizes", "ten"},
		{"-text-sizes", "-3"},
		{"-backends", "mongo", "-text-sizes", "none", "-out", t.TempDir()},
		{"extra"},
	} {
		var stderr bytes.Buffer
		if code := run(args, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
}
