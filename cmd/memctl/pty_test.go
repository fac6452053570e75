package main_test

import (
	"os/exec"
	"strings"
	"testing"
)

func execLookPath(name string) (string, error) { return exec.LookPath(name) }

// runUnderPTY runs a shell command line with a pseudo-terminal as its
// stdin, stdout and stderr, through util-linux script(1), and returns
// what it printed, whatever its exit status.
func runUnderPTY(t *testing.T, e *env, script, cmdline string) string {
	t.Helper()
	c := exec.Command(script, "-qefc", cmdline, "/dev/null")
	c.Dir, c.Env = e.dir, e.vars
	c.Stdin = strings.NewReader(e.stdin)
	out, err := c.CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("%s: %v\n%s", cmdline, err, out)
	}
	return string(out)
}
