package main_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// Tables fit 80 columns on a pipe and the terminal's width on a terminal
// wider than that.
func TestTableWidthFollowsTerminal(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	seed(t, e, store)
	e.ok("--store", store, "--embedder", "hash:64", "add", "-l", "semantic", "-t", "t1", "-r", "alice", "--role", "user",
		strings.Repeat("a long message about the gripper and its jaw travel ", 4))
	widest := func(out string) int {
		n := 0
		for _, l := range strings.Split(out, "\n") {
			n = max(n, len([]rune(strings.TrimRight(l, "\r"))))
		}
		return n
	}
	if w := widest(e.ok("--store", store, "ls", "--all").stdout); w > 80 {
		t.Fatalf("piped: a line of %d columns", w)
	}
	script, err := execLookPath("script")
	if err != nil {
		t.Skip("no script(1) to give memctl a terminal")
	}
	out := runUnderPTY(t, e, script, "stty cols 160; "+bin+" --store "+store+" ls --all")
	if w := widest(out); w <= 80 || w > 160 {
		t.Fatalf("on a 160-column terminal: widest line %d columns:\n%s", w, out)
	}
}
