package anthropic_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/anthropic"
	pt "github.com/stratamem/strata/provider/internal/providertest"
)

func newModel(t *testing.T, f *fakeAnthropic, opts anthropic.Options) *anthropic.Model {
	t.Helper()
	if opts.Model == "" {
		opts.Model = "claude-sonnet-4-5"
	}
	opts.APIKey = "test-key"
	opts.BaseURL = f.URL
	m, err := anthropic.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGoldenRequests sends representative views through the SDK to the
// fake server, checks the exact bodies it received against
// testdata/<view>.json (go test -update rewrites them), against the
// request schema, and against the rules the schema cannot express.
func TestGoldenRequests(t *testing.T) {
	schema := pt.LoadSchema(t, filepath.Join("testdata", "messages-request.schema.json"))
	for _, stream := range []bool{false, true} {
		f := newFakeAnthropic(t)
		m := newModel(t, f, anthropic.Options{Stream: stream})
		for _, gv := range pt.GoldenViews(t) {
			t.Run(fmt.Sprintf("%s/stream=%v", gv.Name, stream), func(t *testing.T) {
				n := f.Requests()
				resp, err := m.Respond(context.Background(), provider.Request{View: gv.View, ThreadID: "thread-" + gv.Name, MaxOutputTokens: 1024})
				if err != nil {
					t.Fatal(err)
				}
				if len(resp.Items) != 1 || resp.Items[0].Text() != "ok" {
					t.Fatalf("items = %+v", resp.Items)
				}
				raw := f.Body(n)
				body := pt.DecodeBody(t, schema, raw)
				checkWireRules(t, body)
				checkBreakpoints(t, gv.View, body)
				pt.CheckGolden(t, filepath.Join("testdata", gv.Name+".json"), raw, body, stream, nil)
			})
		}
	}
}

// checkWireRules checks what the Messages API requires beyond the
// schema: at most four cache_control markers, user first and roles
// alternating, every tool_use answered by a tool_result at the start of
// the next user message.
func checkWireRules(t *testing.T, body map[string]any) {
	t.Helper()
	if n := len(markedBlocks(body)); n > 4 {
		t.Fatalf("%d cache_control markers, the API takes at most 4", n)
	}
	msgs := body["messages"].([]any)
	var pending []string
	for i, m := range msgs {
		msg := m.(map[string]any)
		role := msg["role"].(string)
		if want := []string{"user", "assistant"}[i%2]; role != want {
			t.Fatalf("message %d has role %s, want %s (alternation, user first)", i, role, want)
		}
		blocks, _ := msg["content"].([]any)
		var results []string
		seenOther := false
		for _, b := range blocks {
			blk := b.(map[string]any)
			switch blk["type"] {
			case "tool_use":
				pending = append(pending, blk["id"].(string))
			case "tool_result":
				if seenOther {
					t.Fatalf("message %d: tool_result after other content", i)
				}
				results = append(results, blk["tool_use_id"].(string))
			default:
				seenOther = true
			}
		}
		if role == "user" {
			slices.Sort(pending)
			slices.Sort(results)
			if !slices.Equal(pending, results) {
				t.Fatalf("message %d answers tool_use %v with tool_result %v", i, pending, results)
			}
			pending = nil
		}
	}
}

// markedBlocks describes every block carrying cache_control, in order:
// "system:<text>", "text:<text>", "tool_use:<id>", "tool_result:<id>".
func markedBlocks(body map[string]any) []string {
	var out []string
	desc := func(prefix string, blk map[string]any) string {
		switch blk["type"] {
		case "tool_use":
			return "tool_use:" + blk["id"].(string)
		case "tool_result":
			return "tool_result:" + blk["tool_use_id"].(string)
		}
		return prefix + fmt.Sprint(blk["text"])
	}
	if tools, ok := body["tools"].([]any); ok {
		for _, tl := range tools {
			if _, ok := tl.(map[string]any)["cache_control"]; ok {
				out = append(out, "tool:"+tl.(map[string]any)["name"].(string))
			}
		}
	}
	if sys, ok := body["system"].([]any); ok {
		for _, b := range sys {
			if _, ok := b.(map[string]any)["cache_control"]; ok {
				out = append(out, desc("system:", b.(map[string]any)))
			}
		}
	}
	for _, m := range body["messages"].([]any) {
		blocks, _ := m.(map[string]any)["content"].([]any)
		for _, b := range blocks {
			if _, ok := b.(map[string]any)["cache_control"]; ok {
				out = append(out, desc("text:", b.(map[string]any)))
			}
		}
	}
	return out
}

// checkBreakpoints checks that cache_control sits exactly on the blocks of
// the items the view's breakpoints name, and nowhere else.
func checkBreakpoints(t *testing.T, v *core.View, body map[string]any) {
	t.Helper()
	items := v.Items()
	var want []string
	for _, bp := range v.Breakpoints {
		it := items[bp.Index]
		switch {
		case it.Type == core.TypeFunctionCall:
			want = append(want, "tool_use:"+it.CallID)
		case it.Type == core.TypeFunctionCallOutput:
			want = append(want, "tool_result:"+it.CallID)
		case bp.Band == core.BandSystem:
			want = append(want, "system:"+it.Content[len(it.Content)-1].Text)
		case it.Role == core.RoleDeveloper:
			want = append(want, "text:<system-reminder>\n"+it.Text()+"\n</system-reminder>")
		default:
			want = append(want, "text:"+it.Content[len(it.Content)-1].Text)
		}
	}
	if got := markedBlocks(body); !slices.Equal(got, want) {
		t.Fatalf("cache_control on %q, want %q", got, want)
	}
}
