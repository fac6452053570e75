package providertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
)

// fatalTB records a helper's failure instead of failing this test, so the
// helpers' own failures can be checked.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failure runs fn with a fatalTB and returns the message it failed with,
// "" when it passed.
func failure(t *testing.T, fn func(tb testing.TB)) string {
	tb := &fatalTB{TB: t}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fn(tb)
	}()
	wg.Wait()
	return tb.msg
}

func TestServerRecordsAndFails(t *testing.T) {
	var mu sync.Mutex
	var seen []Received
	var s *Server
	s = NewServer(t, func(w http.ResponseWriter, r *http.Request, got Received) {
		mu.Lock()
		seen = append(seen, got)
		mu.Unlock()
		if status, msg := s.Failed(w, got.N); status != 0 {
			http.Error(w, msg, status)
			return
		}
		fmt.Fprint(w, "ok")
	})
	s.Failure = FailFirst(1, http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}}, "slow down")
	post := func(path, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Test", path)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := post("/a", "first"); r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "2" {
		t.Fatalf("first request: %d %v, want the failure with its header", r.StatusCode, r.Header)
	}
	s.Advance(time.Hour)
	if r := post("/b", "second"); r.StatusCode != http.StatusOK {
		t.Fatalf("second request: %d", r.StatusCode)
	}
	if s.Requests() != 2 || string(s.Body(1)) != "second" || s.Path(0) != "/a" || s.Header(1).Get("X-Test") != "/b" {
		t.Fatalf("recorded %d requests: %q %q %v", s.Requests(), s.Body(1), s.Path(0), s.Header(1))
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mu.Lock()
	defer mu.Unlock()
	if seen[0].At != start.Add(time.Second) || seen[1].At != start.Add(time.Hour+2*time.Second) || seen[1].N != 1 {
		t.Fatalf("clock: %v then %v", seen[0].At, seen[1].At)
	}
}

func TestDelayGivesUpWithTheClient(t *testing.T) {
	handled := make(chan struct{}, 1)
	s := NewServer(t, func(w http.ResponseWriter, r *http.Request, got Received) { handled <- struct{}{} })
	s.Delay = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, strings.NewReader("x"))
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("a delayed answer arrived before the client's deadline")
	}
	if s.Requests() != 1 {
		t.Fatalf("%d requests recorded", s.Requests())
	}
	select {
	case <-handled:
		t.Fatal("the handler ran for a client that had gone")
	case <-time.After(50 * time.Millisecond):
	}
}

func TestSplit(t *testing.T) {
	for _, s := range []string{"", "ab", "abc", "Let me note that."} {
		parts := Split(s)
		if strings.Join(parts, "") != s || (len(s) >= 3 && len(parts) != 3) {
			t.Errorf("Split(%q) = %q", s, parts)
		}
	}
}

func TestGoldenViews(t *testing.T) {
	var names []string
	for _, gv := range GoldenViews(t) {
		names = append(names, gv.Name)
		switch gv.Name {
		case "tools":
			if len(gv.View.Tools) != 1 || gv.View.Tools[0].Name != "notes/add" {
				t.Fatalf("tools view offers %+v", gv.View.Tools)
			}
		case "disabled":
			if len(gv.View.Breakpoints) != 0 {
				t.Fatalf("a view with anchoring disabled has breakpoints: %+v", gv.View.Breakpoints)
			}
		case "bands":
			if len(gv.View.Breakpoints) == 0 {
				t.Fatal("the bands view has no breakpoints")
			}
		}
	}
	if got := strings.Join(names, ","); got != "plain,bands,trailing,tools,disabled" {
		t.Fatalf("views %s", got)
	}
	if v := BenchView(t); len(v.Items()) < 400 {
		t.Fatalf("bench view has %d items", len(v.Items()))
	}
	if v := PlainView(t); len(v.Items()) != 1 || v.Items()[0].Role != core.RoleUser {
		t.Fatalf("plain view = %+v", v.Items())
	}
}

func TestGoldenComparison(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "body.json")
	raw := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	Must(t, os.WriteFile(path, Indent(t, raw), 0o644))

	if msg := failure(t, func(tb testing.TB) { CompareGolden(tb, path, Indent(tb, raw)) }); msg != "" {
		t.Fatalf("the same body failed: %s", msg)
	}
	other := []byte(`{"model":"m","messages":[]}`)
	if msg := failure(t, func(tb testing.TB) { CompareGolden(tb, path, Indent(tb, other)) }); !strings.Contains(msg, "differs from") {
		t.Fatalf("a different body passed (%q)", msg)
	}
	if msg := failure(t, func(tb testing.TB) { CompareGolden(tb, filepath.Join(dir, "none.json"), raw) }); !strings.Contains(msg, "-update") {
		t.Fatalf("a missing golden file: %q", msg)
	}

	// Streamed: the flag must be there; without it the JSON must match.
	streamed := []byte(`{"stream":true,"messages":[{"content":"hi","role":"user"}],"model":"m"}`)
	check := func(tb testing.TB, raw []byte, drop func(map[string]any)) {
		var body map[string]any
		Must(tb, json.Unmarshal(raw, &body))
		CheckGolden(tb, path, raw, body, true, drop)
	}
	if msg := failure(t, func(tb testing.TB) { check(tb, streamed, nil) }); msg != "" {
		t.Fatalf("the streamed body failed: %s", msg)
	}
	if msg := failure(t, func(tb testing.TB) { check(tb, raw, nil) }); !strings.Contains(msg, "stream: true") {
		t.Fatalf("a streamed body without the flag passed (%q)", msg)
	}
	extra := []byte(`{"stream":true,"stream_options":{},"messages":[{"content":"hi","role":"user"}],"model":"m"}`)
	if msg := failure(t, func(tb testing.TB) { check(tb, extra, nil) }); !strings.Contains(msg, "differs from the golden") {
		t.Fatalf("an extra field passed (%q)", msg)
	}
	drop := func(b map[string]any) { delete(b, "stream_options") }
	if msg := failure(t, func(tb testing.TB) { check(tb, extra, drop) }); msg != "" {
		t.Fatalf("dropStream did not apply: %s", msg)
	}
}

func TestJSONEqual(t *testing.T) {
	if !JSONEqual(t, []byte(`{"a":1,"b":[1,2]}`), []byte("{ \"b\": [1, 2],\n \"a\": 1 }")) {
		t.Fatal("key order and spacing must not matter")
	}
	if JSONEqual(t, []byte(`{"b":[2,1]}`), []byte(`{"b":[1,2]}`)) {
		t.Fatal("array order must matter")
	}
}

func TestDecodeBodyValidates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schema.json")
	Must(t, os.WriteFile(path, []byte(`{"type":"object","required":["model"],"properties":{"model":{"type":"string"}}}`), 0o644))
	schema := LoadSchema(t, path)
	if body := DecodeBody(t, schema, []byte(`{"model":"m"}`)); body["model"] != "m" {
		t.Fatalf("body = %v", body)
	}
	if msg := failure(t, func(tb testing.TB) { DecodeBody(tb, schema, []byte(`{"model":1}`)) }); !strings.Contains(msg, "violates the request schema") {
		t.Fatalf("an invalid body passed (%q)", msg)
	}
	if msg := failure(t, func(tb testing.TB) { DecodeBody(tb, schema, []byte(`not json`)) }); msg == "" {
		t.Fatal("a body that is not JSON passed")
	}
}
