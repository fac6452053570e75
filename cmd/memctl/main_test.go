package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bin is the memctl binary built once for every test: the tests run the
// command as an operator does, through its exit status, stdout and stderr.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "memctl-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "memctl")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build memctl:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// env is a test's environment: a working directory and the variables
// memctl reads, isolated from the machine's (no user config file).
type env struct {
	t     *testing.T
	dir   string
	vars  []string
	stdin string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	var vars []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "STRATA_STORE", "STRATA_EMBEDDER", "STRATA_MEMCTL_CONFIG", "XDG_CONFIG_HOME", "HOME", "VISUAL", "EDITOR":
			continue
		}
		vars = append(vars, kv)
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	vars = append(vars, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	if raceEnabled {
		// A race-enabled binary sleeps a second at exit by default
		// (atexit_sleep_ms); the tests run it hundreds of times.
		vars = append(vars, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	return &env{t: t, dir: dir, vars: vars}
}

func (e *env) with(kv ...string) *env {
	c := *e
	c.vars = append(append([]string(nil), e.vars...), kv...)
	return &c
}

func (e *env) input(s string) *env {
	c := *e
	c.stdin = s
	return &c
}

// run runs memctl with args.
func (e *env) run(args ...string) result {
	e.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = e.dir, e.vars
	cmd.Stdin = strings.NewReader(e.stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("run memctl %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// ok runs memctl and fails the test unless it exits 0.
func (e *env) ok(args ...string) result {
	e.t.Helper()
	r := e.run(args...)
	if r.code != 0 {
		e.t.Fatalf("memctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// fails runs memctl and checks the failure: the exit status, a single
// line on stderr containing want, and no trace of a panic.
func (e *env) fails(code int, want string, args ...string) result {
	e.t.Helper()
	r := e.run(args...)
	checkFailure(e.t, r, code, want, args)
	return r
}

func checkFailure(t *testing.T, r result, code int, want string, args []string) {
	t.Helper()
	msg := strings.TrimRight(r.stderr, "\n")
	switch {
	case r.code != code:
		t.Errorf("memctl %s: exit %d, want %d\nstderr: %s", strings.Join(args, " "), r.code, code, r.stderr)
	case msg == "" || strings.Contains(msg, "\n"):
		t.Errorf("memctl %s: want one line on stderr, got %q", strings.Join(args, " "), r.stderr)
	case !strings.HasPrefix(msg, "memctl: "):
		t.Errorf("memctl %s: stderr %q does not start with \"memctl: \"", strings.Join(args, " "), msg)
	case !strings.Contains(strings.ToLower(msg), strings.ToLower(want)):
		t.Errorf("memctl %s: stderr %q does not mention %q", strings.Join(args, " "), msg, want)
	}
	for _, bad := range []string{"goroutine ", "panic", "runtime error"} {
		if strings.Contains(r.stderr+r.stdout, bad) {
			t.Errorf("memctl %s: output has %q: %s", strings.Join(args, " "), bad, r.stderr)
		}
	}
}

// record is a memory as memctl prints it with --json.
type record struct {
	ID       string            `json:"id"`
	Layer    string            `json:"layer"`
	Kind     string            `json:"kind"`
	Scope    map[string]string `json:"scope"`
	Text     string            `json:"text"`
	Vector   []float32         `json:"vector"`
	Metadata map[string]string `json:"metadata"`
	Created  time.Time         `json:"created_at"`
	From     time.Time         `json:"valid_from"`
	To       time.Time         `json:"valid_to"`
	Score    float64           `json:"score"`
	Action   string            `json:"action"`
}

// jsonLines decodes JSON lines.
func jsonLines(t *testing.T, s string) []record {
	t.Helper()
	var out []record
	dec := json.NewDecoder(strings.NewReader(s))
	for dec.More() {
		var r record
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("decode %q: %v", s, err)
		}
		out = append(out, r)
	}
	return out
}

func decodeJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
}

func ids(recs []record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}
