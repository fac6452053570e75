package main_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/pgvector"
)

// bin is the strata binary, built once: the tests run it as an operator
// and an MCP client do.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "strata-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "strata")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build strata:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const (
	key7 = "key-for-user-7-aaaaaaaaaaaa"
	key8 = "key-for-user-8-bbbbbbbbbbbb"
)

// keyFile writes a key file with a key for user-7 and one for user-8.
func keyFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.json")
	kf := fmt.Sprintf(`{"keys": [
  {"name": "agent-7", "key": %q, "resources": ["user-7"]},
  {"name": "agent-8", "key": %q, "resources": ["user-8"]}
]}`, key7, key8)
	if err := os.WriteFile(p, []byte(kf), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func needModel(t testing.TB) {
	t.Helper()
	if _, err := uselite.DefaultDir(); errors.Is(err, uselite.ErrModelNotFound) {
		if os.Getenv("STRATA_REQUIRE_MODEL") == "1" {
			t.Fatalf("default model missing and STRATA_REQUIRE_MODEL=1: %v", err)
		}
		t.Skip("default model not installed (make model)")
	} else if err != nil {
		t.Fatal(err)
	}
}

// pgTarget is a store URL with a collection of the test's own on the
// test server (scripts/pg.sh), dropped at cleanup; skipped without one
// unless STRATA_REQUIRE_PG=1.
func pgTarget(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("STRATA_TEST_PG_DSN")
	if dsn == "" {
		if os.Getenv("STRATA_REQUIRE_PG") == "1" {
			t.Fatal("STRATA_TEST_PG_DSN is not set but STRATA_REQUIRE_PG=1; run: scripts/pg.sh up")
		}
		t.Skip("STRATA_TEST_PG_DSN is not set; run: scripts/pg.sh up")
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "cmd_" + hex.EncodeToString(b)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("collection", name)
	u.RawQuery = q.Encode()
	t.Cleanup(func() {
		p, err := pgxpool.New(context.Background(), dsn)
		if err != nil {
			t.Error(err)
			return
		}
		defer p.Close()
		if err := pgvector.DropCollection(context.Background(), p, "", name); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	return u.String()
}

func targets() map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"embedded": func(t *testing.T) string { return filepath.Join(t.TempDir(), "data") },
		"postgres": pgTarget,
	}
}

// environ is the test process's environment for the binary, with the
// race detector's exit pause off.
func environ(extra ...string) []string {
	env := os.Environ()
	if raceEnabled {
		env = append(env, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	return append(env, extra...)
}

// proc is a running `strata serve` on HTTP.
type proc struct {
	cmd  *exec.Cmd
	url  string
	mu   sync.Mutex
	logs bytes.Buffer
	done chan error
}

var listening = regexp.MustCompile(`serving .* on (http://\S+)`)

// startHTTP runs `strata serve` on a free port of 127.0.0.1 and waits
// until it says where it listens.
func startHTTP(t *testing.T, store, keys string) *proc {
	t.Helper()
	p := &proc{done: make(chan error, 1)}
	p.cmd = exec.Command(bin, "serve", "--store", store, "--key-file", keys, "--addr", "127.0.0.1:0", "--rate", "-1")
	p.cmd.Env = environ()
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			p.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				found <- m[1]
			}
		}
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
		}
	})
	select {
	case p.url = <-found:
	case err := <-p.done:
		t.Fatalf("strata serve exited: %v\n%s", err, p.log())
	case <-time.After(60 * time.Second):
		t.Fatalf("strata serve did not start:\n%s", p.log())
	}
	return p
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("strata serve after SIGTERM: %v\n%s", err, p.log())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("strata serve did not stop:\n%s", p.log())
	}
}

// bearer adds a key to every request of an HTTP client.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// exercise is what the test does with one MCP session of user-7's key:
// the tools are listed, the fact found by a search, and user-8's
// resource refused.
func exercise(t *testing.T, cs *mcp.ClientSession, record map[string]any, query, want string) {
	t.Helper()
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) < 7 {
		t.Errorf("%d tools", len(tools.Tools))
	}
	if record != nil {
		if out, isErr := callTool(t, cs, "record_facts", map[string]any{"facts": []any{record}}); isErr {
			t.Fatalf("record_facts: %s", out)
		}
	}
	out, isErr := callTool(t, cs, "search_memories", map[string]any{"query": query, "k": 3})
	if isErr || !strings.Contains(out, want) {
		t.Fatalf("search_memories %q: %v %s, want %q", query, isErr, out, want)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"search_memories", map[string]any{"resource": "user-8", "query": query}},
		{"record_facts", map[string]any{"resource": "user-8", "facts": []any{map[string]any{"subject": "user", "predicate": "x", "value": "y"}}}},
		{"read_scratchpad", map[string]any{"resource": "user-8"}},
	} {
		if out, isErr := callTool(t, cs, c.tool, c.args); !isErr || !strings.Contains(out, "forbidden") {
			t.Errorf("%s on user-8 with user-7's key: %v %s", c.tool, isErr, out)
		}
	}
}

// TestServeMCP is the end-to-end run: `strata serve` on 127.0.0.1 with
// each store, the SDK's MCP client over streamable HTTP and then over
// stdio (the built binary as a subprocess), one key recording and finding
// a memory and refused the other resource's.
func TestServeMCP(t *testing.T) {
	needModel(t)
	for name, target := range targets() {
		t.Run(name, func(t *testing.T) {
			store, keys := target(t), keyFile(t)
			ctx := context.Background()

			p := startHTTP(t, store, keys)
			tr := &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{key7}}, MaxRetries: -1}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-http", Version: "v0"}, nil).Connect(ctx, tr, nil)
			if err != nil {
				t.Fatalf("connect over HTTP: %v\n%s", err, p.log())
			}
			exercise(t, cs, map[string]any{"subject": "user", "predicate": "lives in", "value": "Lisbon", "when": "last week"},
				"where does the user live", "Lisbon")
			_ = cs.Close()
			// A key the server does not know is refused before MCP starts.
			bad := &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{"no-such-key-of-this-server"}}, MaxRetries: -1}
			if cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-bad"}, nil).Connect(ctx, bad, nil); err == nil {
				_ = cs.Close()
				t.Error("an unknown key connected")
			}
			p.stop(t) // the embedded store is one process's: stdio needs it back

			cmd := exec.Command(bin, "serve", "--stdio", "--store", store, "--key-file", keys)
			cmd.Env = environ("STRATA_API_KEY=" + key7)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cs, err = mcp.NewClient(&mcp.Implementation{Name: "e2e-stdio", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("connect over stdio: %v\n%s", err, stderr.String())
			}
			// The fact recorded over HTTP is found over stdio, after a
			// restart; a new one too.
			exercise(t, cs, nil, "which city is the user's home", "Lisbon")
			exercise(t, cs, map[string]any{"subject": "user", "predicate": "favourite drink", "value": "green tea"},
				"what does the user like to drink", "green tea")
			if err := cs.Close(); err != nil {
				t.Errorf("close stdio session: %v\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), "store closed") {
				t.Errorf("stdio server did not close the store cleanly:\n%s", stderr.String())
			}
		})
	}
}

// TestShutdownKeepsAcknowledgedWrites writes facts from several clients
// while `strata serve` receives SIGTERM: every write it acknowledged is
// in the store when it is opened again.
func TestShutdownKeepsAcknowledgedWrites(t *testing.T) {
	needModel(t)
	for name, target := range targets() {
		t.Run(name, func(t *testing.T) {
			store, keys := target(t), keyFile(t)
			p := startHTTP(t, store, keys)
			client := &http.Client{Transport: bearer{key7}, Timeout: 30 * time.Second}
			var mu sync.Mutex
			var acked []string
			refused := 0
			var wg sync.WaitGroup
			const writers, perWriter = 6, 40
			started := make(chan struct{}, writers*perWriter)
			for w := range writers {
				wg.Go(func() {
					for i := range perWriter {
						pred := fmt.Sprintf("item %d-%d", w, i)
						body, _ := json.Marshal(map[string]any{"facts": []any{map[string]any{"subject": "inventory", "predicate": pred, "value": "present"}}})
						resp, err := client.Post(p.url+"/v1/facts", "application/json", bytes.NewReader(body))
						started <- struct{}{}
						if err != nil {
							return // the server is gone: nothing more is acknowledged
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						mu.Lock()
						if resp.StatusCode == http.StatusOK {
							acked = append(acked, pred)
						} else {
							refused++
						}
						mu.Unlock()
						if resp.StatusCode != http.StatusOK {
							return
						}
					}
				})
			}
			for range writers * 5 { // some writes in, then the signal, with more under way
				<-started
			}
			p.stop(t)
			wg.Wait()
			if len(acked) == 0 {
				t.Fatal("no write was acknowledged before the shutdown")
			}
			env, err := environment.Open(context.Background(), store, environment.Options{MustExist: true})
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			facts, err := temporal.New(env.Memory, temporal.Options{Common: memory.Common{Scope: core.ScopeResource}})
			if err != nil {
				t.Fatal(err)
			}
			fs, err := facts.List(context.Background(), vectorstore.Scope{Resource: "user-7"})
			if err != nil {
				t.Fatal(err)
			}
			have := map[string]bool{}
			for _, f := range fs {
				have[f.Predicate] = true
			}
			for _, pred := range acked {
				if !have[pred] {
					t.Errorf("acknowledged fact %q is not in the store", pred)
				}
			}
			t.Logf("%d writes acknowledged, %d refused while draining, %d facts stored", len(acked), refused, len(fs))
		})
	}
}

// TestServeUsage: serve refuses to run without keys, and anonymous access
// on an address other machines reach, with exit code 2.
func TestServeUsage(t *testing.T) {
	store := filepath.Join(t.TempDir(), "data")
	for _, args := range [][]string{
		{"serve", "--store", store},
		{"serve", "--store", store, "--allow-anonymous", "--addr", "0.0.0.0:0"},
		{"serve", "--store", store, "--key", "no-shape"},
		{"serve", "--store", store, "--allow-anonymous", "--tls-cert", "c.pem"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Env = environ("STRATA_KEY_FILE=", "STRATA_STORE=")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("strata %v: %v\n%s", args, err, out)
		}
	}
	if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused serve created the store: %v", err)
	}
}
