package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	pt "github.com/stratamem/strata/provider/internal/providertest"
	"github.com/stratamem/strata/provider/openai"
)

var apis = []openai.API{openai.Responses, openai.ChatCompletions}

func TestNewValidatesOptions(t *testing.T) {
	for _, tc := range []struct {
		opts  openai.Options
		field string
	}{
		{openai.Options{}, "Model"},
		{openai.Options{Model: " "}, "Model"},
		{openai.Options{Model: "m", API: 7}, "API"},
		{openai.Options{Model: "m", Developer: 9}, "Developer"},
		{openai.Options{Model: "m", MaxOutputTokens: -1}, "MaxOutputTokens"},
		{openai.Options{Model: "m", MaxRetries: -1}, "MaxRetries"},
		{openai.Options{Model: "m", Timeout: -1}, "Timeout"},
		{openai.Options{Model: "m", CacheControl: true}, "CacheControl"},
		{openai.Options{Model: "m", LegacyMaxTokens: true}, "LegacyMaxTokens"},
		{openai.Options{Model: "m", CacheRetention: "1h"}, "CacheRetention"},
		{openai.Options{Model: "m", CacheTTL: "24h"}, "CacheTTL"},
		{openai.Options{Model: "m", CacheTTL: "12h", API: openai.ChatCompletions}, "CacheTTL"},
	} {
		_, err := openai.New(tc.opts)
		var oe *openai.OptionError
		if !errors.As(err, &oe) || oe.Field != tc.field {
			t.Errorf("New(%+v) = %v, want an OptionError on %s", tc.opts, err, tc.field)
		}
	}
}

func TestInvalidViews(t *testing.T) {
	f := newFakeOpenAI(t)
	for _, api := range apis {
		m := newModel(t, f, openai.Options{API: api})
		if _, err := m.Respond(context.Background(), provider.Request{}); !errors.Is(err, openai.ErrInvalidRequest) {
			t.Fatalf("%v nil view: %v", api, err)
		}
		s := pt.StartSession(t, core.Config{})
		if _, err := m.Respond(context.Background(), provider.Request{View: pt.Assemble(t, s)}); !errors.Is(err, openai.ErrInvalidRequest) {
			t.Fatalf("%v empty view: %v", api, err)
		}
		// Two functions that meet on the wire cannot be told apart.
		a := core.Layer[int]{ID: "a", Scope: core.ScopeExecution, Functions: []core.Function[int]{{Spec: core.ToolSpec{Name: "b_c"}}}}
		ab := core.Layer[int]{ID: "a_b", Scope: core.ScopeExecution, Functions: []core.Function[int]{{Spec: core.ToolSpec{Name: "c"}}}}
		// "a/b_c" -> "a__b_c", "a_b/c" -> "a_b__c": distinct; "a.b/c" -> "a_b__c" collides.
		adot := core.Layer[int]{ID: "a.b", Scope: core.ScopeExecution, Functions: []core.Function[int]{{Spec: core.ToolSpec{Name: "c"}}}}
		s = pt.StartSession(t, core.Config{Layers: []core.AnyLayer{a, ab, adot}})
		pt.Must(t, s.Append(context.Background(), core.UserMessage("hi")))
		if _, err := m.Respond(context.Background(), provider.Request{View: pt.Assemble(t, s)}); !errors.Is(err, openai.ErrInvalidRequest) ||
			!strings.Contains(err.Error(), "a_b__c") {
			t.Fatalf("%v colliding tools: %v", api, err)
		}
	}
	if f.Requests() != 0 {
		t.Fatalf("%d requests sent for invalid views", f.Requests())
	}
}

// The answer becomes items with strata's tool names, and the cache
// figures are read from usage, streamed or not, for both APIs.
func TestResponseItemsAndUsage(t *testing.T) {
	for _, api := range apis {
		for _, stream := range []bool{false, true} {
			name := fmt.Sprintf("%v/stream=%v", api, stream)
			f := newFakeOpenAI(t)
			f.reply = func(int, map[string]any) fakeReply {
				return fakeReply{text: "Noting both.", calls: []fakeCall{
					{id: "call_a", name: "notes__add", args: `{"text":"milk"}`},
					{id: "call_b", name: "notes__add", args: `{"text":"eggs"}`},
				}}
			}
			m := newModel(t, f, openai.Options{API: api, Stream: stream})
			s := pt.StartSession(t, core.Config{System: []core.Item{core.SystemMessage(strings.Repeat("Be precise. ", 600))},
				Layers: []core.AnyLayer{pt.NotesLayer()}})
			pt.Must(t, s.Append(context.Background(), core.UserMessage("Remember milk and eggs.")))
			v := pt.Assemble(t, s)
			var reads []int
			for round := 0; round < 2; round++ {
				resp, err := m.Respond(context.Background(), provider.Request{View: v, ThreadID: "thread-1"})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				want := []core.Item{
					{Type: core.TypeMessage, Role: core.RoleAssistant, Content: []core.Part{{Type: "output_text", Text: "Noting both."}}},
					core.FunctionCall("call_a", "notes/add", `{"text":"milk"}`),
					core.FunctionCall("call_b", "notes/add", `{"text":"eggs"}`),
				}
				if !reflect.DeepEqual(resp.Items, want) {
					t.Fatalf("%s: items = %+v", name, resp.Items)
				}
				c := resp.Cache
				if !c.Reported || c.FirstRound || resp.InputTokens != c.ReadTokens+c.UncachedTokens || c.WriteTokens != 0 ||
					resp.Model != "gpt-5-mini" || resp.OutputTokens == 0 || resp.StopReason == "" {
					t.Fatalf("%s: response = %+v", name, resp)
				}
				reads = append(reads, c.ReadTokens)
			}
			if reads[0] != 0 || reads[1] < 1024 {
				t.Fatalf("%s: the repeated prefix should be read from cache the second time: %v", name, reads)
			}
		}
	}
}

// An OpenAI-compatible server reached by base URL: Chat Completions, no
// API key from the options (the environment's is used), developer
// messages as system messages, the legacy max_tokens, and usage without
// prompt_tokens_details, which reports no cache figures and, reported
// three times, makes the runtime stop consulting the provider.
func TestCompatibleServer(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "key-from-env")
	f := newFakeOpenAI(t)
	f.omitDetails = true
	m, err := openai.New(openai.Options{Model: "llama3.2", API: openai.ChatCompletions, BaseURL: f.URL,
		Developer: openai.DeveloperAsSystem, LegacyMaxTokens: true, MaxOutputTokens: 256, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	doc := "Reference."
	s := pt.StartSession(t, core.Config{Layers: []core.AnyLayer{pt.TextLayer("ref", core.SlotRAG, core.PlacementAnchor, &doc)}})
	ctx := context.Background()
	for turn := 0; turn < 4; turn++ {
		pt.Must(t, s.Append(ctx, core.UserMessage(fmt.Sprint("q", turn))))
		v := pt.Assemble(t, s)
		resp, err := m.Respond(ctx, provider.Request{View: v, ThreadID: "thread-1"})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Cache.Reported {
			t.Fatalf("turn %d: cache figures reported by a server that sent none: %+v", turn, resp.Cache)
		}
		r := resp.Cache
		r.FirstRound = true
		s.ReportCache(r)
		pt.Must(t, s.Record(ctx, resp.Items...))
	}
	var body map[string]any
	pt.Must(t, json.Unmarshal(f.Body(0), &body))
	msgs := body["messages"].([]any)
	if body["max_tokens"] != 256.0 || body["max_completion_tokens"] != nil || msgs[0].(map[string]any)["role"] != "system" {
		t.Fatalf("body = %s", f.Body(0))
	}
	if got := f.Header(0).Get("Authorization"); got != "Bearer key-from-env" {
		t.Fatalf("Authorization = %q", got)
	}
	pt.Must(t, s.Append(ctx, core.UserMessage("q4")))
	if v := pt.Assemble(t, s); !v.Usage.Epoch.Blind {
		t.Fatalf("a provider without cache figures should be marked blind: %+v", v.Usage.Epoch)
	}
}

// Provider failures come back as *provider.Error with retry advice and
// no response, never as a partial answer.
func TestErrors(t *testing.T) {
	view := pt.PlainView(t)
	type tcase struct {
		name       string
		api        openai.API
		stream     bool
		status     int
		header     http.Header
		reply      *fakeReply
		timeout    time.Duration
		wantStatus int
		retryable  bool
		after      time.Duration
	}
	var cases []tcase
	for _, api := range apis {
		cases = append(cases,
			tcase{name: "429 retry-after", api: api, status: 429, header: http.Header{"Retry-After": {"3"}}, wantStatus: 429, retryable: true, after: 3 * time.Second},
			tcase{name: "503 retry-after-ms", api: api, status: 503, header: http.Header{"Retry-After-Ms": {"250"}}, wantStatus: 503, retryable: true, after: 250 * time.Millisecond},
			tcase{name: "400 is final", api: api, status: 400, wantStatus: 400},
			tcase{name: "timeout", api: api, timeout: 50 * time.Millisecond, retryable: true},
			tcase{name: "stream cut", api: api, stream: true, reply: &fakeReply{text: "partial answer", cut: true}, retryable: true},
		)
	}
	cases = append(cases,
		tcase{name: "chat error chunk mid-stream", api: openai.ChatCompletions, stream: true, reply: &fakeReply{text: "partial answer", streamErr: true},
			wantStatus: 502, retryable: true},
		tcase{name: "responses response.failed", api: openai.Responses, stream: true, reply: &fakeReply{text: "partial answer", streamErr: true},
			wantStatus: 500, retryable: true},
	)
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v/%s", tc.api, tc.name), func(t *testing.T) {
			f := newFakeOpenAI(t)
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
			m := newModel(t, f, openai.Options{API: tc.api, Stream: tc.stream, Timeout: tc.timeout})
			resp, err := m.Respond(context.Background(), provider.Request{View: view})
			perr := pt.ProviderError(t, resp, err)
			if perr.Provider != "openai" || perr.StatusCode != tc.wantStatus || perr.Retryable != tc.retryable || perr.RetryAfter != tc.after || perr.Message == "" {
				t.Fatalf("err = %+v", perr)
			}
			if tc.status != 0 && !strings.Contains(perr.Message, "the server said no") {
				t.Fatalf("message = %q", perr.Message)
			}
			if f.Requests() != 1 {
				t.Fatalf("%d requests: the SDK must not retry by default", f.Requests())
			}
		})
	}
}

func TestSDKRetries(t *testing.T) {
	f := newFakeOpenAI(t)
	f.Failure = pt.FailFirst(2, 500, http.Header{"Retry-After-Ms": {"1"}}, "busy")
	m := newModel(t, f, openai.Options{MaxRetries: 2})
	if _, err := m.Respond(context.Background(), provider.Request{View: pt.PlainView(t)}); err != nil {
		t.Fatal(err)
	}
	if f.Requests() != 3 {
		t.Fatalf("%d requests, want 3", f.Requests())
	}
}

// A first-round miss re-anchors the epoch, for both APIs: three turns
// against the simulated automatic cache, which expires before turn 3.
func TestFirstRoundMissReanchors(t *testing.T) {
	for _, api := range apis {
		t.Run(api.String(), func(t *testing.T) {
			f := newFakeOpenAI(t)
			m := newModel(t, f, openai.Options{API: api, Stream: api == openai.ChatCompletions})
			s, reports := pt.MissTurns(t, m, func() { f.Advance(2 * time.Hour) })
			if reports[1].ReadTokens < 1024 {
				t.Fatalf("turn 2 should read the prefix from cache: %+v", reports[1])
			}
			if r := reports[2]; r.ReadTokens != 0 || r.UncachedTokens < 1024 {
				t.Fatalf("turn 3 should miss with a large input: %+v", r)
			}
			pt.CheckReanchored(t, s)
		})
	}
}

func TestWireName(t *testing.T) {
	if got := openai.WireName("notes/add"); got != "notes__add" {
		t.Fatal(got)
	}
	if got := openai.WireName(strings.Repeat("x/", 40)); len(got) != 64 {
		t.Fatalf("%q has %d bytes", got, len(got))
	}
}
