// Package fsutiltest runs a second process for tests of cross-process file
// locks: the test binary again, running one helper test that takes a lock
// and holds it until the parent lets it go.
package fsutiltest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
)

// Child is a helper process started by Start.
type Child struct {
	// Pid is the child's process id.
	Pid   int
	cmd   *exec.Cmd
	stdin io.Closer
}

// Start runs the test binary again, running only the test named run with
// the environment variable env set to value, and returns once the child
// has said it is ready (Hold). The child is released when the test ends,
// if Release has not released it before.
func Start(t testing.TB, run, env, value string) *Child {
	t.Helper()
	if testing.Short() {
		t.Skip("spawns a process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+value)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Child{Pid: cmd.Process.Pid, cmd: cmd, stdin: stdin}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("child: %q", sc.Text())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return c
}

// Release lets the child go (closes its stdin) and waits for it to exit.
func (c *Child) Release(t testing.TB) {
	t.Helper()
	c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}

// Hold, in the child, says it is ready and waits until the parent
// releases it.
func Hold() {
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// Fail, in the child, reports err to the parent, whose Start fails with
// it, and exits.
func Fail(err error) {
	fmt.Println("error:", err)
	os.Exit(3)
}
