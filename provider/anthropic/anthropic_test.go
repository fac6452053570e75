package anthropic_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/anthropic"
	pt "github.com/stratamem/strata/provider/internal/providertest"
)

func TestNewValidatesOptions(t *testing.T) {
	for _, tc := range []struct {
		opts  anthropic.Options
		field string
	}{
		{anthropic.Options{}, "Model"},
		{anthropic.Options{Model: "  "}, "Model"},
		{anthropic.Options{Model: "m", MaxOutputTokens: -1}, "MaxOutputTokens"},
		{anthropic.Options{Model: "m", MaxRetries: -1}, "MaxRetries"},
		{anthropic.Options{Model: "m", Timeout: -time.Second}, "Timeout"},
		{anthropic.Options{Model: "m", CacheTTL: "10m"}, "CacheTTL"},
	} {
		_, err := anthropic.New(tc.opts)
		var oe *anthropic.OptionError
		if !errors.As(err, &oe) || oe.Field != tc.field {
			t.Errorf("New(%+v) = %v, want an OptionError on %s", tc.opts, err, tc.field)
		}
	}
	if _, err := anthropic.New(anthropic.Options{Model: "claude-sonnet-4-5"}); err != nil {
		t.Fatal(err)
	}
}

func TestWireName(t *testing.T) {
	for in, want := range map[string]string{
		"notes/add":             "notes__add",
		"search":                "search",
		"a.b c/d-e":             "a_b_c__d-e",
		"":                      "_",
		strings.Repeat("x", 64): strings.Repeat("x", 64),
	} {
		if got := anthropic.WireName(in); got != want {
			t.Errorf("WireName(%q) = %q, want %q", in, got, want)
		}
	}
	long := anthropic.WireName(strings.Repeat("layer/", 20))
	if len(long) != 64 || long == anthropic.WireName(strings.Repeat("layer/", 21)) {
		t.Fatalf("long names must be cut to 64 bytes and stay distinct: %q", long)
	}
}

// A view whose tools collide on the wire, or whose call arguments are not
// an object, is refused before anything is sent.
func TestInvalidViews(t *testing.T) {
	f := newFakeAnthropic(t)
	m := newModel(t, f, anthropic.Options{})
	if _, err := m.Respond(context.Background(), provider.Request{}); !errors.Is(err, anthropic.ErrInvalidRequest) {
		t.Fatalf("nil view: %v", err)
	}
	s := pt.StartSession(t, core.Config{System: []core.Item{core.SystemMessage("sys")}})
	v := pt.Assemble(t, s)
	if _, err := m.Respond(context.Background(), provider.Request{View: v}); !errors.Is(err, anthropic.ErrInvalidRequest) {
		t.Fatalf("system-only view: %v", err)
	}
	s = pt.StartSession(t, core.Config{})
	pt.Must(t, s.Append(context.Background(), core.UserMessage("q"), core.FunctionCall("c1", "f", `[1,2]`), core.FunctionCallOutput("c1", "x")))
	v = pt.Assemble(t, s)
	if _, err := m.Respond(context.Background(), provider.Request{View: v}); !errors.Is(err, anthropic.ErrInvalidRequest) {
		t.Fatalf("array arguments: %v", err)
	}
	if f.Requests() != 0 {
		t.Fatalf("%d requests sent for invalid views", f.Requests())
	}
}

// The answer's blocks become items, tool names map back to strata's, and
// the cache figures are read from usage, streamed or not.
func TestResponseItemsAndUsage(t *testing.T) {
	for _, stream := range []bool{false, true} {
		f := newFakeAnthropic(t)
		f.reply = func(n int, _ map[string]any) fakeReply {
			return fakeReply{stopReason: "tool_use", blocks: []map[string]any{
				{"type": "text", "text": "Let me note that."},
				{"type": "tool_use", "id": "toolu_01", "name": "notes__add", "input": map[string]any{"text": "milk"}},
			}}
		}
		m := newModel(t, f, anthropic.Options{Stream: stream})
		s := pt.StartSession(t, core.Config{System: []core.Item{core.SystemMessage(strings.Repeat("Be precise. ", 600))},
			Layers: []core.AnyLayer{pt.NotesLayer()}})
		pt.Must(t, s.Append(context.Background(), core.UserMessage("Remember milk.")))
		v := pt.Assemble(t, s)
		var reads []int
		for round := 0; round < 2; round++ {
			resp, err := m.Respond(context.Background(), provider.Request{View: v})
			if err != nil {
				t.Fatal(err)
			}
			want := []core.Item{
				{Type: core.TypeMessage, Role: core.RoleAssistant, Content: []core.Part{{Type: "output_text", Text: "Let me note that."}}},
				core.FunctionCall("toolu_01", "notes/add", `{"text":"milk"}`),
			}
			if len(resp.Items) != 2 || resp.Items[0].Text() != want[0].Text() || resp.Items[0].Role != core.RoleAssistant ||
				!reflect.DeepEqual(resp.Items[1], want[1]) {
				t.Fatalf("stream=%v items = %+v", stream, resp.Items)
			}
			if err := resp.Items[1].Validate(); err != nil {
				t.Fatal(err)
			}
			c := resp.Cache
			if !c.Reported || c.FirstRound || resp.InputTokens != c.ReadTokens+c.WriteTokens+c.UncachedTokens ||
				resp.StopReason != "tool_use" || resp.Model != "claude-sonnet-4-5" || resp.OutputTokens == 0 {
				t.Fatalf("stream=%v response = %+v", stream, resp)
			}
			reads = append(reads, c.ReadTokens)
			if round == 0 && (c.WriteTokens == 0 || c.ReadTokens != 0) {
				t.Fatalf("first request should write the prefix: %+v", c)
			}
		}
		// The same view again reads what the first request wrote.
		if reads[1] == 0 {
			t.Fatalf("stream=%v: the repeated prefix was not read from cache: %v", stream, reads)
		}
	}
}

func TestCompatibleServerWithoutCacheFigures(t *testing.T) {
	f := newFakeAnthropic(t)
	f.omitCache = true
	m := newModel(t, f, anthropic.Options{})
	s := pt.StartSession(t, core.Config{})
	pt.Must(t, s.Append(context.Background(), core.UserMessage("hi")))
	resp, err := m.Respond(context.Background(), provider.Request{View: pt.Assemble(t, s)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Cache.Reported || resp.InputTokens == 0 {
		t.Fatalf("cache = %+v input = %d", resp.Cache, resp.InputTokens)
	}
}

// Provider failures come back as *provider.Error with retry advice and
// no response, never as a partial answer.
func TestErrors(t *testing.T) {
	view := pt.PlainView(t)
	for _, tc := range []struct {
		name       string
		stream     bool
		status     int
		header     http.Header
		reply      *fakeReply
		timeout    time.Duration
		wantStatus int
		retryable  bool
		after      time.Duration
	}{
		{name: "429 retry-after seconds", status: 429, header: http.Header{"Retry-After": {"7"}}, wantStatus: 429, retryable: true, after: 7 * time.Second},
		{name: "429 retry-after-ms", status: 429, header: http.Header{"Retry-After-Ms": {"1500"}}, wantStatus: 429, retryable: true, after: 1500 * time.Millisecond},
		{name: "529 overloaded", status: 529, wantStatus: 529, retryable: true},
		{name: "500", status: 500, wantStatus: 500, retryable: true},
		{name: "400 is final", status: 400, wantStatus: 400},
		{name: "x-should-retry false", status: 500, header: http.Header{"X-Should-Retry": {"false"}}, wantStatus: 500},
		{name: "timeout", timeout: 50 * time.Millisecond, retryable: true},
		{name: "error event mid-stream", stream: true, reply: &fakeReply{streamErr: "overloaded_error",
			blocks: []map[string]any{{"type": "text", "text": "partial answer"}}}, wantStatus: 529, retryable: true},
		{name: "stream cut before message_stop", stream: true, reply: &fakeReply{cut: true,
			blocks: []map[string]any{{"type": "text", "text": "partial answer"}}}, retryable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAnthropic(t)
			if tc.status != 0 {
				f.Failure = func(int) (int, http.Header, string) { return tc.status, tc.header, "the server said no" }
			}
			if tc.reply != nil {
				rep := *tc.reply
				f.reply = func(int, map[string]any) fakeReply { return rep }
			}
			if tc.timeout > 0 {
				f.Delay = 2 * time.Second
			}
			m := newModel(t, f, anthropic.Options{Stream: tc.stream, Timeout: tc.timeout})
			resp, err := m.Respond(context.Background(), provider.Request{View: view})
			perr := pt.ProviderError(t, resp, err)
			if perr.Provider != "anthropic" || perr.StatusCode != tc.wantStatus || perr.Retryable != tc.retryable || perr.RetryAfter != tc.after {
				t.Fatalf("err = %+v", perr)
			}
			if perr.Message == "" {
				t.Fatal("no message")
			}
			if tc.status != 0 && tc.status != 529 && !strings.Contains(perr.Message, "the server said no") {
				t.Fatalf("message = %q", perr.Message)
			}
			if f.Requests() != 1 {
				t.Fatalf("%d requests: the SDK must not retry by default", f.Requests())
			}
		})
	}
}

// With MaxRetries the SDK retries retryable failures itself.
func TestSDKRetries(t *testing.T) {
	f := newFakeAnthropic(t)
	f.Failure = pt.FailFirst(2, 503, http.Header{"Retry-After-Ms": {"1"}}, "busy")
	m := newModel(t, f, anthropic.Options{MaxRetries: 2})
	if _, err := m.Respond(context.Background(), provider.Request{View: pt.PlainView(t)}); err != nil {
		t.Fatal(err)
	}
	if f.Requests() != 3 {
		t.Fatalf("%d requests, want 3", f.Requests())
	}
}

func TestCanceledIsNotRetryable(t *testing.T) {
	f := newFakeAnthropic(t)
	f.Delay = 2 * time.Second
	m := newModel(t, f, anthropic.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err := m.Respond(ctx, provider.Request{View: pt.PlainView(t)})
	var perr *provider.Error
	if !errors.As(err, &perr) || perr.Retryable || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// A first-round miss reported by the provider re-anchors the epoch: three
// turns through the adapter against the simulated cache, the cache
// expires before turn 3, and the view after it starts a new epoch with
// reason cache-miss.
func TestFirstRoundMissReanchors(t *testing.T) {
	f := newFakeAnthropic(t)
	m := newModel(t, f, anthropic.Options{Stream: true})
	s, reports := pt.MissTurns(t, m, func() {
		f.Advance(10 * time.Minute) // past the 5-minute TTL: the cache is gone
	})
	if r := reports[1]; r.ReadTokens < 1000 {
		t.Fatalf("turn 2 should read the anchored prefix from cache: %+v", r)
	}
	if r := reports[2]; r.ReadTokens != 0 || r.WriteTokens+r.UncachedTokens < 1000 {
		t.Fatalf("turn 3 should miss with a large input: %+v", r)
	}
	pt.CheckReanchored(t, s)
}

// The key comes from Options.APIKey, else from ANTHROPIC_API_KEY.
func TestAPIKeyFromOptionOrEnv(t *testing.T) {
	f := newFakeAnthropic(t)
	view := pt.PlainView(t)
	t.Setenv("ANTHROPIC_API_KEY", "key-from-env")
	for n, opts := range []anthropic.Options{
		{Model: "claude-sonnet-4-5", BaseURL: f.URL, APIKey: "key-from-options"},
		{Model: "claude-sonnet-4-5", BaseURL: f.URL},
	} {
		m, err := anthropic.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Respond(context.Background(), provider.Request{View: view}); err != nil {
			t.Fatal(err)
		}
		want := []string{"key-from-options", "key-from-env"}[n]
		h := f.Header(n)
		if got := h.Get("X-Api-Key") + h.Get("Authorization"); !strings.Contains(got, want) {
			t.Fatalf("request %d authenticated with %q, want %q", n, got, want)
		}
		if h.Get("Anthropic-Version") == "" {
			t.Fatal("no anthropic-version header")
		}
	}
}
