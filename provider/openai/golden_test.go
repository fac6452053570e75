package openai_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	pt "github.com/stratamem/strata/provider/internal/providertest"
	"github.com/stratamem/strata/provider/openai"
)

func newModel(t *testing.T, f *fakeOpenAI, opts openai.Options) *openai.Model {
	t.Helper()
	if opts.Model == "" {
		opts.Model = "gpt-5-mini"
	}
	opts.APIKey = "test-key"
	opts.BaseURL = f.URL
	m, err := openai.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type goldenCase struct {
	name  string
	opts  openai.Options
	views []string // nil: all
}

var goldenCases = []goldenCase{
	{name: "chat", opts: openai.Options{API: openai.ChatCompletions}},
	{name: "responses", opts: openai.Options{API: openai.Responses}},
	{name: "chat-explicit", opts: openai.Options{API: openai.ChatCompletions, ExplicitBreakpoints: true}, views: []string{"bands", "tools"}},
	{name: "responses-explicit", opts: openai.Options{API: openai.Responses, ExplicitBreakpoints: true}, views: []string{"bands", "trailing", "tools", "disabled"}},
	{name: "chat-cache-control", opts: openai.Options{API: openai.ChatCompletions, CacheControl: true, Developer: openai.DeveloperAsUser, Model: "anthropic/claude-sonnet-4.5"}, views: []string{"bands", "trailing", "tools"}},
	{name: "chat-developer-as-user", opts: openai.Options{API: openai.ChatCompletions, Developer: openai.DeveloperAsUser}, views: []string{"bands", "trailing"}},
	{name: "responses-developer-as-system", opts: openai.Options{API: openai.Responses, Developer: openai.DeveloperAsSystem}, views: []string{"bands", "trailing"}},
}

// TestGoldenRequests sends representative views through the SDK to the
// fake server and checks the exact bodies against testdata/<case>-<view>.json
// (go test -update rewrites them), against the request schema written
// from OpenAI's documented shapes, and against the rules a schema cannot
// express: calls answered, markers on exactly the breakpoint texts.
func TestGoldenRequests(t *testing.T) {
	schemas := map[openai.API]*jsonschema.Resolved{
		openai.ChatCompletions: pt.LoadSchema(t, filepath.Join("testdata", "chat-request.schema.json")),
		openai.Responses:       pt.LoadSchema(t, filepath.Join("testdata", "responses-request.schema.json")),
	}
	views := pt.GoldenViews(t)
	for _, gc := range goldenCases {
		for _, stream := range []bool{false, true} {
			f := newFakeOpenAI(t)
			opts := gc.opts
			opts.Stream = stream
			m := newModel(t, f, opts)
			for _, gv := range views {
				if gc.views != nil && !slices.Contains(gc.views, gv.Name) {
					continue
				}
				t.Run(fmt.Sprintf("%s-%s/stream=%v", gc.name, gv.Name, stream), func(t *testing.T) {
					n := f.Requests()
					resp, err := m.Respond(context.Background(), provider.Request{View: gv.View, ThreadID: "thread-1", MaxOutputTokens: 1024})
					if err != nil {
						t.Fatal(err)
					}
					if len(resp.Items) != 1 || resp.Items[0].Text() != "ok" || !resp.Cache.Reported {
						t.Fatalf("response = %+v", resp)
					}
					wantPath := map[openai.API]string{openai.ChatCompletions: "/chat/completions", openai.Responses: "/responses"}[gc.opts.API]
					if f.Path(n) != wantPath {
						t.Fatalf("path %s, want %s", f.Path(n), wantPath)
					}
					raw := f.Body(n)
					body := pt.DecodeBody(t, schemas[gc.opts.API], raw)
					if body["prompt_cache_key"] != "thread-1" {
						t.Fatalf("prompt_cache_key = %v", body["prompt_cache_key"])
					}
					if gc.opts.API == openai.ChatCompletions {
						checkChatRules(t, body)
					} else {
						checkResponsesRules(t, body)
					}
					checkMarkers(t, gc.opts, gv.View, body)
					var dropStream func(map[string]any)
					if gc.opts.API == openai.ChatCompletions {
						dropStream = func(body map[string]any) {
							if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
								t.Fatal("a streamed chat request must ask for the usage chunk")
							}
							delete(body, "stream_options")
						}
					}
					pt.CheckGolden(t, filepath.Join("testdata", gc.name+"-"+gv.Name+".json"), raw, body, stream, dropStream)
				})
			}
		}
	}
}

// checkChatRules: every tool call of an assistant message is answered by
// tool messages right after it, before any other message.
func checkChatRules(t *testing.T, body map[string]any) {
	t.Helper()
	var pending []string
	for i, m := range body["messages"].([]any) {
		msg := m.(map[string]any)
		role := msg["role"].(string)
		if role == "tool" {
			id := msg["tool_call_id"].(string)
			k := slices.Index(pending, id)
			if k < 0 {
				t.Fatalf("message %d answers unknown tool call %s", i, id)
			}
			pending = slices.Delete(pending, k, k+1)
			continue
		}
		if len(pending) > 0 {
			t.Fatalf("message %d (%s) comes before the outputs of %v", i, role, pending)
		}
		calls, _ := msg["tool_calls"].([]any)
		for _, c := range calls {
			pending = append(pending, c.(map[string]any)["id"].(string))
		}
	}
}

// checkResponsesRules: every function_call has its output later on.
func checkResponsesRules(t *testing.T, body map[string]any) {
	t.Helper()
	open := map[string]bool{}
	for _, it := range body["input"].([]any) {
		item := it.(map[string]any)
		switch item["type"] {
		case "function_call":
			open[item["call_id"].(string)] = true
		case "function_call_output":
			if !open[item["call_id"].(string)] {
				t.Fatalf("output for unknown call %v", item["call_id"])
			}
			delete(open, item["call_id"].(string))
		}
	}
	if len(open) > 0 {
		t.Fatalf("calls without output: %v", open)
	}
}

// checkMarkers checks the cache markers: with ExplicitBreakpoints a
// prompt_cache_breakpoint, with CacheControl a cache_control, each on the
// last input text at or before a breakpoint's item, and no marker at all
// otherwise.
func checkMarkers(t *testing.T, opts openai.Options, v *core.View, body map[string]any) {
	t.Helper()
	var got []string
	key := "input"
	if opts.API == openai.ChatCompletions {
		key = "messages"
	}
	for _, e := range body[key].([]any) {
		parts, _ := e.(map[string]any)["content"].([]any)
		for _, p := range parts {
			part := p.(map[string]any)
			_, bp := part["prompt_cache_breakpoint"]
			_, cc := part["cache_control"]
			if bp && !opts.ExplicitBreakpoints || cc && !opts.CacheControl {
				t.Fatalf("unexpected marker on %v", part)
			}
			if bp || cc {
				got = append(got, part["text"].(string))
			}
		}
	}
	var want []string
	if opts.ExplicitBreakpoints || opts.CacheControl {
		bps := map[int]bool{}
		for _, bp := range v.Breakpoints {
			bps[bp.Index] = true
		}
		last := ""
		i := 0
		for band, it := range v.All() {
			switch {
			case it.Type == core.TypeFunctionCallOutput && opts.API == openai.ChatCompletions && it.Output != "":
				last = it.Output
			case it.Type != core.TypeMessage || it.Role == core.RoleAssistant:
			case opts.Developer == openai.DeveloperAsUser && band != core.BandSystem && it.Role != core.RoleUser:
				last = "<system-reminder>\n" + it.Text() + "\n</system-reminder>"
			default:
				last = it.Content[len(it.Content)-1].Text
			}
			if bps[i] && last != "" && (len(want) == 0 || want[len(want)-1] != last) {
				want = append(want, last)
			}
			i++
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("markers on %q, want %q", got, want)
	}
}
