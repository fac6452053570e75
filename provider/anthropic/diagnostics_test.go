package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/anthropic"
	pt "github.com/stratamem/strata/provider/internal/providertest"
)

// previousID is the diagnostics.previous_message_id of request n: the id
// string, "null", or "" when the request carries no diagnostics object.
func previousID(t *testing.T, f *fakeAnthropic, n int) string {
	t.Helper()
	var body struct {
		Diagnostics *struct {
			Previous *string `json:"previous_message_id"`
		} `json:"diagnostics"`
	}
	if err := json.Unmarshal(f.Body(n), &body); err != nil {
		t.Fatal(err)
	}
	switch {
	case body.Diagnostics == nil:
		return ""
	case body.Diagnostics.Previous == nil:
		return "null"
	}
	return *body.Diagnostics.Previous
}

// Every request of a thread asks for cache diagnostics: the first opts in
// with a null id, each later one names the previous response, and the
// answer's diagnosis comes back in Response.Cache.Miss, streamed or not.
func TestCacheDiagnostics(t *testing.T) {
	ctx := context.Background()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			f := newFakeAnthropic(t)
			m := newModel(t, f, anthropic.Options{Stream: stream})
			system := strings.Repeat("Answer from the notes. ", 300)
			s := pt.StartSession(t, core.Config{System: []core.Item{core.SystemMessage(system)}})
			send := func(thread string) *provider.Response {
				t.Helper()
				resp, err := m.Respond(ctx, provider.Request{View: pt.Assemble(t, s), ThreadID: thread})
				if err != nil {
					t.Fatal(err)
				}
				pt.Must(t, s.Record(ctx, resp.Items...))
				return resp
			}

			pt.Must(t, s.Append(ctx, core.UserMessage("first")))
			if resp := send("t1"); resp.Cache.Miss != nil {
				t.Fatalf("first request: miss = %+v", resp.Cache.Miss)
			}
			pt.Must(t, s.Append(ctx, core.UserMessage("second")))
			// History only grew: nothing diverged, diagnostics is null.
			if resp := send("t1"); resp.Cache.Miss != nil || resp.Cache.ReadTokens == 0 {
				t.Fatalf("appended turn: cache = %+v", resp.Cache)
			}
			if got := []string{previousID(t, f, 0), previousID(t, f, 1)}; got[0] != "null" || got[1] != "msg_000" {
				t.Fatalf("previous_message_id = %q, want [null msg_000]", got)
			}

			// Another thread on the same model starts its own chain.
			pt.Must(t, s.Append(ctx, core.UserMessage("elsewhere")))
			send("t2")
			if got := previousID(t, f, 2); got != "null" {
				t.Fatalf("a new thread sent previous_message_id %q, want null", got)
			}

			// A session with another system prompt on thread t1: the
			// API names the system prompt and what it could not reuse.
			s = pt.StartSession(t, core.Config{System: []core.Item{core.SystemMessage(system + "Today is Monday.")}})
			pt.Must(t, s.Append(ctx, core.UserMessage("first")))
			miss := send("t1").Cache.Miss
			if previousID(t, f, 3) != "msg_001" || miss == nil || miss.Reason != core.MissSystemChanged ||
				miss.Detail != "system_changed" || miss.MissedTokens < 1000 || miss.Pending {
				t.Fatalf("system changed: previous %q, miss = %+v", previousID(t, f, 3), miss)
			}

			// The API no longer holds the previous fingerprint.
			f.mu.Lock()
			f.fingerprints = nil
			f.mu.Unlock()
			pt.Must(t, s.Append(ctx, core.UserMessage("later")))
			if miss := send("t1").Cache.Miss; miss == nil || miss.Reason != core.MissPreviousNotFound || miss.MissedTokens != 0 {
				t.Fatalf("fingerprint gone: miss = %+v", miss)
			}

			// The comparison had not finished: no evidence either way.
			f.mu.Lock()
			f.pendingDiagnosis = true
			f.mu.Unlock()
			pt.Must(t, s.Append(ctx, core.UserMessage("again")))
			if miss := send("t1").Cache.Miss; miss == nil || !miss.Pending || miss.Reason != "" {
				t.Fatalf("pending: miss = %+v", miss)
			}
		})
	}
}

// Diagnostics are not asked for when turned off, without a thread to
// compare within, or for a Bedrock or Vertex AI model id, where the API
// has none.
func TestCacheDiagnosticsOff(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		opts   anthropic.Options
		thread string
	}{
		{"option", anthropic.Options{NoCacheDiagnostics: true}, "t1"},
		{"no thread", anthropic.Options{}, ""},
		{"bedrock", anthropic.Options{Model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}, "t1"},
		{"bedrock arn", anthropic.Options{Model: "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc"}, "t1"},
		{"vertex", anthropic.Options{Model: "claude-sonnet-4-5@20250929"}, "t1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeAnthropic(t)
			m := newModel(t, f, c.opts)
			for range 2 {
				if _, err := m.Respond(ctx, provider.Request{View: pt.PlainView(t), ThreadID: c.thread}); err != nil {
					t.Fatal(err)
				}
			}
			for n := range 2 {
				if got := previousID(t, f, n); got != "" {
					t.Fatalf("request %d carries diagnostics (previous_message_id %q)", n, got)
				}
			}
		})
	}
}

// The diagnostics of recorded answers, every cache_miss_reason type the
// API documents and one it may add later, as they arrive on the wire.
func TestCacheMissFromWire(t *testing.T) {
	cases := []struct {
		diagnostics string // the response's "diagnostics" member; "" leaves it out
		want        *core.CacheMiss
	}{
		{"", nil},
		{`null`, nil},
		{`{"cache_miss_reason": null}`, &core.CacheMiss{Pending: true}},
		{`{"cache_miss_reason": {"type": "model_changed", "cache_missed_input_tokens": 5120}}`,
			&core.CacheMiss{Reason: core.MissModelChanged, Detail: "model_changed", MissedTokens: 5120}},
		{`{"cache_miss_reason": {"type": "system_changed", "cache_missed_input_tokens": 4800}}`,
			&core.CacheMiss{Reason: core.MissSystemChanged, Detail: "system_changed", MissedTokens: 4800}},
		{`{"cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 3900}}`,
			&core.CacheMiss{Reason: core.MissToolsChanged, Detail: "tools_changed", MissedTokens: 3900}},
		{`{"cache_miss_reason": {"type": "messages_changed", "cache_missed_input_tokens": 812}}`,
			&core.CacheMiss{Reason: core.MissMessagesChanged, Detail: "messages_changed", MissedTokens: 812}},
		{`{"cache_miss_reason": {"type": "previous_message_not_found"}}`,
			&core.CacheMiss{Reason: core.MissPreviousNotFound, Detail: "previous_message_not_found"}},
		{`{"cache_miss_reason": {"type": "unavailable"}}`,
			&core.CacheMiss{Reason: core.MissUnavailable, Detail: "unavailable"}},
		{`{"cache_miss_reason": {"type": "speed_changed", "cache_missed_input_tokens": 7}}`,
			&core.CacheMiss{Reason: core.MissUnavailable, Detail: "speed_changed", MissedTokens: 7}},
	}
	for _, c := range cases {
		t.Run(c.diagnostics, func(t *testing.T) {
			diag := ""
			if c.diagnostics != "" {
				diag = `,"diagnostics":` + c.diagnostics
			}
			body := `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",` +
				`"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,` +
				`"usage":{"input_tokens":12,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":1}` + diag + `}`
			srv := pt.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ pt.Received) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(body))
			})
			m, err := anthropic.New(anthropic.Options{Model: "claude-sonnet-4-5", APIKey: "k", BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := m.Respond(context.Background(), provider.Request{View: pt.PlainView(t), ThreadID: "t1"})
			if err != nil {
				t.Fatal(err)
			}
			got := resp.Cache.Miss
			if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
				t.Fatalf("miss = %+v, want %+v", got, c.want)
			}
		})
	}
}
