package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/anthropic"
	pt "github.com/stratamem/strata/provider/internal/providertest"
)

// toolResultsFirst applies the Messages API's rule for tool use: every
// tool_use of an assistant message is answered in the next message, a
// user message whose tool_result blocks come before any other block. It
// returns what breaks the rule, "" when the request keeps it.
func toolResultsFirst(body []byte) string {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string `json:"type"`
				ID        string `json:"id"`
				ToolUseID string `json:"tool_use_id"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return err.Error()
	}
	for n, m := range req.Messages {
		var uses []string
		for _, b := range m.Content {
			if m.Role == "assistant" && b.Type == "tool_use" {
				uses = append(uses, b.ID)
			}
		}
		if len(uses) == 0 {
			continue
		}
		if n+1 == len(req.Messages) || req.Messages[n+1].Role != "user" {
			return fmt.Sprintf("message %d: tool_use %v is not answered by the next message", n, uses)
		}
		next := req.Messages[n+1].Content
		answered := map[string]bool{}
		for i, b := range next {
			if b.Type != "tool_result" {
				if len(answered) < len(uses) {
					return fmt.Sprintf("message %d: block %d (%s) comes before the tool_result blocks of %v", n+1, i, b.Type, uses)
				}
				break
			}
			answered[b.ToolUseID] = true
		}
		for _, id := range uses {
			if !answered[id] {
				return fmt.Sprintf("message %d: tool_use %s has no tool_result first in the next message", n, id)
			}
		}
	}
	return ""
}

// A host that assembles between recording a function call and appending
// its output, while an anchored layer drifts, still sends requests whose
// tool_use is answered by its tool_result first in the next user turn:
// the context update does not land between them. The update is sent,
// after the result.
func TestUpdateAfterToolResult(t *testing.T) {
	ctx := context.Background()
	f := newFakeAnthropic(t)
	m := newModel(t, f, anthropic.Options{})
	plan := "step 1"
	s := pt.StartSession(t, core.Config{System: []core.Item{core.SystemMessage("Be brief.")},
		Layers: []core.AnyLayer{pt.TextLayer("plan", 100, core.PlacementAnchor, &plan)}})
	pt.Must(t, s.Append(ctx, core.UserMessage("Look it up.")))
	if _, err := m.Respond(ctx, provider.Request{View: pt.Assemble(t, s)}); err != nil {
		t.Fatal(err)
	}
	pt.Must(t, s.Record(ctx, core.AssistantMessage("Looking."), core.FunctionCall("toolu_1", "lookup", `{"q":"x"}`)))
	plan = "step 2"
	if v := pt.Assemble(t, s); len(v.Updates()) != 1 {
		t.Fatalf("the drift was not published: updates = %v", v.Updates())
	}
	pt.Must(t, s.Append(ctx, core.FunctionCallOutput("toolu_1", "found")))
	resp, err := m.Respond(ctx, provider.Request{View: pt.Assemble(t, s)})
	if err != nil {
		t.Fatal(err)
	}
	pt.Must(t, s.Record(ctx, resp.Items...))
	pt.Must(t, s.Append(ctx, core.UserMessage("Thanks.")))
	if _, err := m.Respond(ctx, provider.Request{View: pt.Assemble(t, s)}); err != nil {
		t.Fatal(err)
	}
	for n := range f.Requests() {
		if msg := toolResultsFirst(f.Body(n)); msg != "" {
			t.Fatalf("request %d: %s\n%s", n, msg, f.Body(n))
		}
	}
	for n := 1; n < f.Requests(); n++ {
		if !strings.Contains(string(f.Body(n)), `action=\"replace\"`) {
			t.Fatalf("request %d does not carry the update:\n%s", n, f.Body(n))
		}
	}
}
