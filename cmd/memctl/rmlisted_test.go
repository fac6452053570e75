package main_test

import (
	"bytes"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRemoveDeletesWhatItListed: a filter rm deletes the records it
// listed and asked about, not whatever matches the filter when the
// operator answers: a memory written while the confirmation waits stays.
func TestRemoveDeletesWhatItListed(t *testing.T) {
	dsn := pgDSN(t)
	script, err := execLookPath("script")
	if err != nil {
		t.Skip("no script(1) to give rm a terminal")
	}
	e := newEnv(t)
	pg := pgCollection(t, dsn)
	m := []string{"--store", pg, "--embedder", "hash:64"}
	e.ok(append(m, "add", "-l", "scratchpad", "-t", "t9", "--key", "a", "first")...)
	e.ok(append(m, "add", "-l", "scratchpad", "-t", "t9", "--key", "b", "second")...)

	c := exec.Command(script, "-qefc", bin+" --store '"+pg+"' rm --layer scratchpad --thread t9", "/dev/null")
	c.Dir, c.Env = e.dir, e.vars
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out bytes.Buffer
	asked, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		once := sync.Once{}
		for {
			n, err := stdout.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			if strings.Contains(out.String(), "[y/N]") {
				once.Do(func() { close(asked) })
			}
			mu.Unlock()
			if err != nil {
				return // EOF: rm and script are done
			}
		}
	}()
	select {
	case <-asked:
	case <-time.After(60 * time.Second):
		_ = c.Process.Kill()
		t.Fatal("rm did not ask for confirmation")
	}
	// Written after rm listed what it deletes, before the answer.
	e.ok(append(m, "add", "-l", "scratchpad", "-t", "t9", "--key", "late", "written meanwhile")...)
	if _, err := io.WriteString(stdin, "y\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = c.Process.Kill()
		t.Fatal("rm did not finish")
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("rm: %v\n%s", err, out.String())
	}
	mu.Lock()
	printed := out.String()
	mu.Unlock()
	if !strings.Contains(printed, "Delete 2 memories") || !strings.Contains(printed, "deleted 2 memories") {
		t.Errorf("rm output: %q", printed)
	}
	left := jsonLines(t, e.ok("--store", pg, "ls", "--json", "--all").stdout)
	if len(left) != 1 || !strings.Contains(left[0].Text, "written meanwhile") {
		t.Fatalf("after rm: %v, want only the note written meanwhile", ids(left))
	}
}
