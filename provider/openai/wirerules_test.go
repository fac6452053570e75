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

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	pt "github.com/stratamem/strata/provider/internal/providertest"
	"github.com/stratamem/strata/provider/openai"
)

// A function call the output cap cut off (finish_reason "length", or an
// incomplete response for max_output_tokens) is dropped, since its
// arguments never closed, and the response says it was truncated. The
// complete call before it stays.
func TestTruncatedToolCallDropped(t *testing.T) {
	for _, api := range apis {
		for _, stream := range []bool{false, true} {
			name := fmt.Sprintf("%v/stream=%v", api, stream)
			f := newFakeOpenAI(t)
			f.reply = func(int, map[string]any) fakeReply {
				return fakeReply{text: "Noting both.", truncated: true, calls: []fakeCall{
					{id: "call_a", name: "notes__add", args: `{"text":"milk"}`},
					{id: "call_b", name: "notes__add", args: `{"text": "eg`},
				}}
			}
			m := newModel(t, f, openai.Options{API: api, Stream: stream})
			s := pt.StartSession(t, core.Config{Layers: []core.AnyLayer{pt.NotesLayer()}})
			pt.Must(t, s.Append(context.Background(), core.UserMessage("Remember milk and eggs.")))
			v := pt.Assemble(t, s)
			resp, err := m.Respond(context.Background(), provider.Request{View: v, MaxOutputTokens: 40})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want := []core.Item{
				{Type: core.TypeMessage, Role: core.RoleAssistant, Content: []core.Part{{Type: "output_text", Text: "Noting both."}}},
				core.FunctionCall("call_a", "notes/add", `{"text":"milk"}`),
			}
			wantStop := map[openai.API]string{openai.Responses: "max_output_tokens", openai.ChatCompletions: "length"}[api]
			if !reflect.DeepEqual(resp.Items, want) || !resp.Truncated || resp.StopReason != wantStop {
				t.Fatalf("%s: truncated=%v stop=%q items=%+v", name, resp.Truncated, resp.StopReason, resp.Items)
			}
			// Cut before its arguments began: dropped too.
			f.reply = func(int, map[string]any) fakeReply {
				return fakeReply{truncated: true, calls: []fakeCall{{id: "call_c", name: "notes__add", args: ""}}}
			}
			resp, err = m.Respond(context.Background(), provider.Request{View: v, MaxOutputTokens: 40})
			if err != nil || !resp.Truncated || len(resp.Items) != 0 {
				t.Fatalf("%s: empty arguments: %+v, %v", name, resp, err)
			}
			// Not truncated: nothing dropped, even arguments the tool
			// will reject.
			f.reply = func(int, map[string]any) fakeReply {
				return fakeReply{calls: []fakeCall{{id: "call_d", name: "notes__add", args: `{"text":`}}}
			}
			resp, err = m.Respond(context.Background(), provider.Request{View: v})
			if err != nil || resp.Truncated || len(resp.Items) != 1 {
				t.Fatalf("%s: complete answer: %+v, %v", name, resp, err)
			}
		}
	}
}

// prompt_cache_key takes at most 64 characters (OpenAI answers 400
// string_above_max_length, as the fake does): a longer thread id is sent
// as a stable hash of it, a shorter one as it is.
func TestLongThreadIDCacheKey(t *testing.T) {
	view := pt.PlainView(t)
	long := strings.Repeat("tenant-42/user-7/conversation-", 4)
	for _, api := range apis {
		f := newFakeOpenAI(t)
		m := newModel(t, f, openai.Options{API: api})
		keys := map[string]string{}
		for _, id := range []string{long, long, long + "x", strings.Repeat("k", 64)} {
			n := f.Requests()
			if _, err := m.Respond(context.Background(), provider.Request{View: view, ThreadID: id}); err != nil {
				t.Fatalf("%v: %v", api, err)
			}
			var body map[string]any
			pt.Must(t, json.Unmarshal(f.Body(n), &body))
			key, _ := body["prompt_cache_key"].(string)
			if prev, ok := keys[id]; ok && prev != key {
				t.Fatalf("%v: key for the same thread changed: %q then %q", api, prev, key)
			}
			keys[id] = key
		}
		if k := keys[long]; len(k) != 64 || !strings.HasPrefix(k, "s_") {
			t.Fatalf("%v: key %q (%d bytes)", api, k, len(k))
		}
		if keys[long] == keys[long+"x"] {
			t.Fatalf("%v: two threads share a key", api)
		}
		if k := strings.Repeat("k", 64); keys[k] != k {
			t.Fatalf("%v: a 64-byte thread id was changed to %q", api, keys[k])
		}
	}
}

// insufficient_quota comes as a 429, but waiting does not refill the
// account: it is final, unlike a rate limit.
func TestInsufficientQuotaIsFinal(t *testing.T) {
	view := pt.PlainView(t)
	for _, api := range apis {
		f := newFakeOpenAI(t)
		f.errCode = "insufficient_quota"
		f.Failure = func(int) (int, http.Header, string) {
			return 429, http.Header{"Retry-After": {"20"}}, "You exceeded your current quota, please check your plan and billing details."
		}
		m := newModel(t, f, openai.Options{API: api})
		resp, err := m.Respond(context.Background(), provider.Request{View: view})
		perr := pt.ProviderError(t, resp, err)
		if perr.StatusCode != 429 || perr.Retryable {
			t.Fatalf("%v: err = %+v", api, perr)
		}
		// The same inside a stream.
		f = newFakeOpenAI(t)
		f.reply = func(int, map[string]any) fakeReply {
			return fakeReply{text: "partial answer", streamErr: true, streamErrCode: "insufficient_quota"}
		}
		m = newModel(t, f, openai.Options{API: api, Stream: true})
		resp, err = m.Respond(context.Background(), provider.Request{View: view})
		if perr = pt.ProviderError(t, resp, err); perr.Retryable {
			t.Fatalf("%v stream: err = %+v", api, perr)
		}
	}
}

// An assistant turn of text, a call, and more text (as Claude writes, and
// a replay carries) keeps the call's message directly before its tool
// messages, which Chat Completions requires (the fake answers 400
// otherwise): the later text joins the message with the tool_calls.
func TestChatTextAfterToolCall(t *testing.T) {
	f := newFakeOpenAI(t)
	m := newModel(t, f, openai.Options{API: openai.ChatCompletions})
	s := pt.StartSession(t, core.Config{})
	pt.Must(t, s.Append(context.Background(), core.UserMessage("Weather in Lyon?"),
		core.AssistantMessage("Let me check."), core.FunctionCall("c1", "weather", `{"city":"Lyon"}`),
		core.AssistantMessage("Checking now."), core.FunctionCall("c2", "time", `{}`),
		core.FunctionCallOutput("c1", "sunny"), core.FunctionCallOutput("c2", "noon")))
	if _, err := m.Respond(context.Background(), provider.Request{View: pt.Assemble(t, s)}); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	pt.Must(t, json.Unmarshal(f.Body(0), &body))
	checkChatRules(t, body)
	msgs := body["messages"].([]any)
	if len(msgs) != 4 {
		t.Fatalf("messages = %v", msgs)
	}
	a := msgs[1].(map[string]any)
	content, _ := json.Marshal(a["content"])
	if !strings.Contains(string(content), "Let me check.") || !strings.Contains(string(content), "Checking now.") ||
		len(a["tool_calls"].([]any)) != 2 {
		t.Fatalf("assistant message = %v", a)
	}
}

// Both APIs require a tool's parameters to be a schema of type object;
// any other fails before anything is sent, naming the tool.
func TestToolSchemaMustBeObject(t *testing.T) {
	f := newFakeOpenAI(t)
	for _, api := range apis {
		m := newModel(t, f, openai.Options{API: api})
		for _, params := range []string{`{"properties":{"q":{"type":"string"}}}`, `{"type":"array"}`} {
			layer := core.Layer[int]{ID: "search", Scope: core.ScopeExecution,
				Functions: []core.Function[int]{{Spec: core.ToolSpec{Name: "find", Parameters: json.RawMessage(params)}}}}
			s := pt.StartSession(t, core.Config{Layers: []core.AnyLayer{layer}})
			pt.Must(t, s.Append(context.Background(), core.UserMessage("hi")))
			_, err := m.Respond(context.Background(), provider.Request{View: pt.Assemble(t, s)})
			if !errors.Is(err, openai.ErrInvalidRequest) || !strings.Contains(err.Error(), `"search/find"`) {
				t.Fatalf("%v %s: err = %v", api, params, err)
			}
		}
	}
	if f.Requests() != 0 {
		t.Fatalf("%d requests sent", f.Requests())
	}
}
