package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	pt "github.com/stratamem/strata/provider/internal/providertest"
	"github.com/stratamem/strata/provider/openai"
)

// promptCacheOptions is request n's prompt_cache_options, nil when absent.
func promptCacheOptions(t *testing.T, f *fakeOpenAI, n int) map[string]any {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(f.Body(n), &body); err != nil {
		t.Fatal(err)
	}
	opts, _ := body["prompt_cache_options"].(map[string]any)
	return opts
}

// On gpt-5.6 and later each request of a thread after the first names the
// thread's previous response as the comparison baseline, and the
// response's prompt_cache_diagnostics come back in Response.Cache.Miss,
// streamed or not.
func TestCacheDiagnostics(t *testing.T) {
	ctx := context.Background()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			f := newFakeOpenAI(t)
			m := newModel(t, f, openai.Options{Model: "gpt-5.6", Stream: stream})
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
			if resp := send("t1"); resp.Cache.Miss != nil || promptCacheOptions(t, f, 0) != nil {
				t.Fatalf("first request: miss = %+v, prompt_cache_options = %v", resp.Cache.Miss, promptCacheOptions(t, f, 0))
			}
			pt.Must(t, s.Append(ctx, core.UserMessage("second")))
			// The input only grew: cache_hit, no miss.
			if resp := send("t1"); resp.Cache.Miss != nil || resp.Cache.ReadTokens == 0 {
				t.Fatalf("appended turn: cache = %+v", resp.Cache)
			}
			if got := promptCacheOptions(t, f, 1)["comparison_response_id"]; got != "resp_0" {
				t.Fatalf("comparison_response_id = %v, want resp_0", got)
			}

			// Another system prompt on the same thread: the input changed
			// from its first item, which the fake counts as all of it.
			s = pt.StartSession(t, core.Config{System: []core.Item{core.SystemMessage("Today is Monday. " + system)}})
			pt.Must(t, s.Append(ctx, core.UserMessage("first")))
			miss := send("t1").Cache.Miss
			if got := promptCacheOptions(t, f, 2)["comparison_response_id"]; got != "resp_1" {
				t.Fatalf("comparison_response_id = %v, want resp_1", got)
			}
			if miss == nil || miss.Reason != core.MissMessagesChanged || miss.Detail != "input_changed" || miss.MissedTokens < 1000 {
				t.Fatalf("system changed: miss = %+v", miss)
			}

			// A tool appears: tools_changed.
			s = pt.StartSession(t, core.Config{System: []core.Item{core.SystemMessage(system)}, Layers: []core.AnyLayer{pt.NotesLayer()}})
			pt.Must(t, s.Append(ctx, core.UserMessage("first")))
			if miss := send("t1").Cache.Miss; miss == nil || miss.Reason != core.MissToolsChanged || miss.Detail != "tools_changed" {
				t.Fatalf("tools changed: miss = %+v", miss)
			}

			// The baseline is gone.
			f.mu.Lock()
			f.responses = nil
			f.mu.Unlock()
			pt.Must(t, s.Append(ctx, core.UserMessage("later")))
			if miss := send("t1").Cache.Miss; miss == nil || miss.Reason != core.MissPreviousNotFound || miss.Detail != "comparison_response_not_found" {
				t.Fatalf("baseline gone: miss = %+v", miss)
			}
		})
	}
}

// Diagnostics are asked for only on the Responses API, with a thread,
// for models that have them, and not when turned off.
func TestCacheDiagnosticsWhen(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		opts   openai.Options
		thread string
		want   bool
	}{
		{"gpt-5.6", openai.Options{Model: "gpt-5.6"}, "t1", true},
		{"gpt-5.6-mini", openai.Options{Model: "gpt-5.6-mini"}, "t1", true},
		{"gpt-5.10", openai.Options{Model: "gpt-5.10"}, "t1", true},
		{"gpt-6-astra", openai.Options{Model: "gpt-6-astra"}, "t1", true},
		{"gpt-5.5", openai.Options{Model: "gpt-5.5"}, "t1", false},
		{"gpt-5-mini", openai.Options{Model: "gpt-5-mini"}, "t1", false},
		{"gpt-4.1", openai.Options{Model: "gpt-4.1"}, "t1", false},
		{"llama", openai.Options{Model: "llama3.2"}, "t1", false},
		{"option", openai.Options{Model: "gpt-5.6", NoCacheDiagnostics: true}, "t1", false},
		{"chat", openai.Options{Model: "gpt-5.6", API: openai.ChatCompletions}, "t1", false},
		{"no thread", openai.Options{Model: "gpt-5.6"}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeOpenAI(t)
			m := newModel(t, f, c.opts)
			for range 2 {
				if _, err := m.Respond(ctx, provider.Request{View: pt.PlainView(t), ThreadID: c.thread}); err != nil {
					t.Fatal(err)
				}
			}
			var body map[string]any
			if err := json.Unmarshal(f.Body(1), &body); err != nil {
				t.Fatal(err)
			}
			opts, _ := body["prompt_cache_options"].(map[string]any)
			if got := opts["comparison_response_id"] != nil; got != c.want {
				t.Fatalf("second request asks for diagnostics: %v, want %v (%s)", got, c.want, f.Body(1))
			}
		})
	}
}

// The retention options are sent as set, on both APIs where they exist,
// and not at all by default.
func TestCacheRetentionOptions(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		opts      openai.Options
		reqTTL    time.Duration // provider.Request.CacheTTL
		retention any
		ttl       any
	}{
		{openai.Options{}, 0, nil, nil},
		{openai.Options{CacheRetention: "24h", CacheTTL: "12h"}, 0, "24h", "12h"},
		{openai.Options{CacheRetention: "in_memory"}, 0, "in_memory", nil},
		{openai.Options{API: openai.ChatCompletions, CacheRetention: "24h"}, 0, "24h", nil},
		// A request's own lifetime wins over the options.
		{openai.Options{}, time.Hour, "24h", nil},
		{openai.Options{API: openai.ChatCompletions}, time.Hour, "24h", nil},
		{openai.Options{CacheRetention: "24h"}, 5 * time.Minute, "in_memory", nil},
	}
	for _, c := range cases {
		f := newFakeOpenAI(t)
		m := newModel(t, f, c.opts)
		if _, err := m.Respond(ctx, provider.Request{View: pt.PlainView(t), ThreadID: "t1", CacheTTL: c.reqTTL}); err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		if err := json.Unmarshal(f.Body(0), &body); err != nil {
			t.Fatal(err)
		}
		opts, _ := body["prompt_cache_options"].(map[string]any)
		if body["prompt_cache_retention"] != c.retention || opts["ttl"] != c.ttl {
			t.Fatalf("%+v, request ttl %v: prompt_cache_retention = %v, prompt_cache_options = %v", c.opts, c.reqTTL, body["prompt_cache_retention"], opts)
		}
	}
}

// prompt_cache_diagnostics of recorded Responses answers, every type and
// reason the API documents and ones it may add later.
func TestCacheMissFromWire(t *testing.T) {
	cases := []struct {
		diagnostics string // "" leaves the member out
		want        *core.CacheMiss
	}{
		{"", nil},
		{`null`, nil},
		{`{"type": "cache_hit"}`, nil},
		{`{"type": "cache_miss", "reason": "model_changed", "cache_missed_tokens": 4096, "comparison_reusable_tokens": 4200}`,
			&core.CacheMiss{Reason: core.MissModelChanged, Detail: "model_changed", MissedTokens: 4096}},
		{`{"type": "cache_miss", "reason": "service_tier_changed", "cache_missed_tokens": 4096}`,
			&core.CacheMiss{Reason: core.MissModelChanged, Detail: "service_tier_changed", MissedTokens: 4096}},
		{`{"type": "cache_miss", "reason": "tools_changed", "cache_missed_tokens": 3000, "comparison_reusable_tokens": 3100}`,
			&core.CacheMiss{Reason: core.MissToolsChanged, Detail: "tools_changed", MissedTokens: 3000}},
		{`{"type": "cache_miss", "reason": "input_changed", "cache_missed_tokens": 640, "comparison_reusable_tokens": 5000}`,
			&core.CacheMiss{Reason: core.MissMessagesChanged, Detail: "input_changed", MissedTokens: 640}},
		{`{"type": "cache_miss", "reason": "context_compacted", "cache_missed_tokens": 9000}`,
			&core.CacheMiss{Reason: core.MissMessagesChanged, Detail: "context_compacted", MissedTokens: 9000}},
		{`{"type": "cache_miss", "reason": "prompt_cache_key_changed", "cache_missed_tokens": 5000}`,
			&core.CacheMiss{Reason: core.MissUnavailable, Detail: "prompt_cache_key_changed", MissedTokens: 5000}},
		{`{"type": "cache_miss", "reason": "reasoning_effort_changed", "cache_missed_tokens": 5000}`,
			&core.CacheMiss{Reason: core.MissUnavailable, Detail: "reasoning_effort_changed", MissedTokens: 5000}},
		{`{"type": "cache_miss", "reason": "instructions_moved", "cache_missed_tokens": 12}`,
			&core.CacheMiss{Reason: core.MissUnavailable, Detail: "instructions_moved", MissedTokens: 12}},
		{`{"type": "comparison_response_not_found"}`,
			&core.CacheMiss{Reason: core.MissPreviousNotFound, Detail: "comparison_response_not_found"}},
		{`{"type": "unavailable"}`, &core.CacheMiss{Reason: core.MissUnavailable, Detail: "unavailable"}},
		{`{"type": "partial_hit"}`, &core.CacheMiss{Reason: core.MissUnavailable, Detail: "partial_hit"}},
	}
	for _, c := range cases {
		t.Run(c.diagnostics, func(t *testing.T) {
			diag := ""
			if c.diagnostics != "" {
				diag = `,"prompt_cache_diagnostics":` + c.diagnostics
			}
			body := `{"id":"resp_1","object":"response","created_at":1767323045,"status":"completed","model":"gpt-5.6",` +
				`"output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[]}]}],` +
				`"error":null,"incomplete_details":null,"parallel_tool_calls":true,"tools":[],` +
				`"usage":{"input_tokens":5000,"input_tokens_details":{"cached_tokens":0},"output_tokens":1,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":5001}` +
				diag + `}`
			srv := pt.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ pt.Received) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(body))
			})
			m, err := openai.New(openai.Options{Model: "gpt-5.6", APIKey: "k", BaseURL: srv.URL})
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
