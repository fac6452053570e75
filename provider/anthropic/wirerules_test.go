package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/anthropic"
	pt "github.com/stratamem/strata/provider/internal/providertest"
)

// Whitespace-only text is never sent — the API rejects such blocks with
// 400 "text content blocks must contain non-whitespace text", which the
// fake enforces — and whitespace-only blocks of an answer are not
// recorded, so they cannot break a later replay.
func TestWhitespaceTextDropped(t *testing.T) {
	ctx := context.Background()
	for _, stream := range []bool{false, true} {
		f := newFakeAnthropic(t)
		f.reply = func(int, map[string]any) fakeReply {
			return fakeReply{stopReason: "end_turn", blocks: []map[string]any{
				{"type": "text", "text": "\n\n"}, {"type": "text", "text": "ok"}, {"type": "text", "text": " "}}}
		}
		m := newModel(t, f, anthropic.Options{Stream: stream})
		s := pt.StartSession(t, core.Config{System: []core.Item{core.SystemMessage("Be brief."),
			{Type: core.TypeMessage, Role: core.RoleSystem, Content: []core.Part{{Type: "input_text", Text: " \n"}}}}})
		pt.Must(t, s.Append(ctx,
			core.Item{Type: core.TypeMessage, Role: core.RoleUser, Content: []core.Part{{Type: "input_text", Text: "hi"}, {Type: "input_text", Text: "\t"}}},
			core.AssistantMessage("\n"),
			core.FunctionCall("c1", "f", `{}`), core.FunctionCallOutput("c1", " "),
			core.UserMessage("and now?")))
		resp, err := m.Respond(ctx, provider.Request{View: pt.Assemble(t, s)})
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		if len(resp.Items) != 1 || resp.Items[0].Text() != "ok" || len(resp.Items[0].Content) != 1 {
			t.Fatalf("stream=%v: items = %+v", stream, resp.Items)
		}
		// A whitespace-only answer records nothing.
		f.reply = func(int, map[string]any) fakeReply {
			return fakeReply{stopReason: "end_turn", blocks: []map[string]any{{"type": "text", "text": " \n "}}}
		}
		resp, err = m.Respond(ctx, provider.Request{View: pt.PlainView(t)})
		if err != nil || len(resp.Items) != 0 {
			t.Fatalf("stream=%v: whitespace answer: items = %+v, err = %v", stream, resp, err)
		}
	}
}

// A tool_use the output cap cut off is dropped — streamed, the SDK
// empties its unfinished input to {}, so it would run with no
// arguments — and the response says it was truncated. Complete calls
// before it stay.
func TestTruncatedToolUseDropped(t *testing.T) {
	for _, stream := range []bool{false, true} {
		f := newFakeAnthropic(t)
		f.reply = func(int, map[string]any) fakeReply {
			return fakeReply{stopReason: "max_tokens", blocks: []map[string]any{
				{"type": "text", "text": "Saving both."},
				{"type": "tool_use", "id": "toolu_1", "name": "notes__add", "input": map[string]any{"text": "milk"}},
				{"type": "tool_use", "id": "toolu_2", "name": "notes__add", "input": map[string]any{}, "partial": `{"text": "eg`},
			}}
		}
		m := newModel(t, f, anthropic.Options{Stream: stream})
		s := pt.StartSession(t, core.Config{Layers: []core.AnyLayer{pt.NotesLayer()}})
		pt.Must(t, s.Append(context.Background(), core.UserMessage("Remember milk and eggs.")))
		resp, err := m.Respond(context.Background(), provider.Request{View: pt.Assemble(t, s), MaxOutputTokens: 40})
		if err != nil {
			t.Fatal(err)
		}
		want := []core.Item{
			{Type: core.TypeMessage, Role: core.RoleAssistant, Content: []core.Part{{Type: "output_text", Text: "Saving both."}}},
			core.FunctionCall("toolu_1", "notes/add", `{"text":"milk"}`),
		}
		if !reflect.DeepEqual(resp.Items, want) || !resp.Truncated || resp.StopReason != "max_tokens" {
			t.Fatalf("stream=%v: truncated=%v stop=%q items=%+v", stream, resp.Truncated, resp.StopReason, resp.Items)
		}
		// A complete answer is not truncated, and its trailing call stays.
		f.reply = func(int, map[string]any) fakeReply {
			return fakeReply{stopReason: "tool_use", blocks: []map[string]any{
				{"type": "tool_use", "id": "toolu_3", "name": "notes__add", "input": map[string]any{}}}}
		}
		resp, err = m.Respond(context.Background(), provider.Request{View: pt.Assemble(t, s)})
		if err != nil || resp.Truncated || len(resp.Items) != 1 || resp.Items[0].Arguments != "{}" {
			t.Fatalf("stream=%v: complete answer: %+v, %v", stream, resp, err)
		}
	}
}

// When the first message after the system prompt would be the
// assistant's (history windowed, no anchor band), a fixed user block goes
// first: the API answers 400 "first message must use the user role".
func TestFirstMessageIsUser(t *testing.T) {
	ctx := context.Background()
	f := newFakeAnthropic(t)
	m := newModel(t, f, anthropic.Options{})
	s := pt.StartSession(t, core.Config{System: []core.Item{core.SystemMessage("Be brief.")}})
	pt.Must(t, s.Append(ctx, core.AssistantMessage("Earlier, I said hello."), core.UserMessage("Go on.")))
	v := pt.Assemble(t, s)
	for range 2 {
		n := f.Requests()
		if _, err := m.Respond(ctx, provider.Request{View: v}); err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		pt.Must(t, json.Unmarshal(f.Body(n), &body))
		checkWireRules(t, body)
		checkBreakpoints(t, v, body)
		msgs := body["messages"].([]any)
		first := msgs[0].(map[string]any)["content"].([]any)[0].(map[string]any)
		want := "<system-reminder>\nThe conversation continues from earlier messages.\n</system-reminder>"
		if len(msgs) != 3 || first["text"] != want {
			t.Fatalf("messages = %v", msgs)
		}
		if n > 0 && string(f.Body(n)) != string(f.Body(0)) {
			t.Fatal("the prepended block is not deterministic")
		}
	}
}

// Both APIs require a tool's input schema to be of type object; a schema
// without it fails before anything is sent, naming the tool.
func TestToolSchemaMustBeObject(t *testing.T) {
	f := newFakeAnthropic(t)
	m := newModel(t, f, anthropic.Options{})
	for _, params := range []string{`{"properties":{"q":{"type":"string"}}}`, `{"type":"array"}`, `{"type":["object"]}`} {
		layer := core.Layer[int]{ID: "search", Scope: core.ScopeExecution,
			Functions: []core.Function[int]{{Spec: core.ToolSpec{Name: "find", Parameters: json.RawMessage(params)}}}}
		s := pt.StartSession(t, core.Config{Layers: []core.AnyLayer{layer}})
		pt.Must(t, s.Append(context.Background(), core.UserMessage("hi")))
		_, err := m.Respond(context.Background(), provider.Request{View: pt.Assemble(t, s)})
		if !errors.Is(err, anthropic.ErrInvalidRequest) || !strings.Contains(err.Error(), `"search/find"`) {
			t.Fatalf("%s: err = %v", params, err)
		}
	}
	if f.Requests() != 0 {
		t.Fatalf("%d requests sent", f.Requests())
	}
}
