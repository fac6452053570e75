package openai_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/openai"
)

var update = flag.Bool("update", false, "rewrite the golden request bodies in testdata/")

func newModel(t *testing.T, f *fakeOpenAI, opts openai.Options) *openai.Model {
	t.Helper()
	if opts.Model == "" {
		opts.Model = "gpt-5-mini"
	}
	opts.APIKey = "test-key"
	opts.BaseURL = f.srv.URL
	m, err := openai.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func loadSchema(t *testing.T, name string) *jsonschema.Resolved {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
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
		openai.ChatCompletions: loadSchema(t, "chat-request.schema.json"),
		openai.Responses:       loadSchema(t, "responses-request.schema.json"),
	}
	views := goldenViews(t)
	for _, gc := range goldenCases {
		for _, stream := range []bool{false, true} {
			f := newFakeOpenAI(t)
			opts := gc.opts
			opts.Stream = stream
			m := newModel(t, f, opts)
			for _, gv := range views {
				if gc.views != nil && !slices.Contains(gc.views, gv.name) {
					continue
				}
				t.Run(fmt.Sprintf("%s-%s/stream=%v", gc.name, gv.name, stream), func(t *testing.T) {
					n := f.requests()
					resp, err := m.Respond(context.Background(), provider.Request{View: gv.view, ThreadID: "thread-1", MaxOutputTokens: 1024})
					if err != nil {
						t.Fatal(err)
					}
					if len(resp.Items) != 1 || resp.Items[0].Text() != "ok" || !resp.Cache.Reported {
						t.Fatalf("response = %+v", resp)
					}
					wantPath := map[openai.API]string{openai.ChatCompletions: "/chat/completions", openai.Responses: "/responses"}[gc.opts.API]
					if f.path(n) != wantPath {
						t.Fatalf("path %s, want %s", f.path(n), wantPath)
					}
					raw := f.body(n)
					var body map[string]any
					if err := json.Unmarshal(raw, &body); err != nil {
						t.Fatal(err)
					}
					if err := schemas[gc.opts.API].Validate(body); err != nil {
						t.Fatalf("body violates the request schema: %v\n%s", err, raw)
					}
					if body["prompt_cache_key"] != "thread-1" {
						t.Fatalf("prompt_cache_key = %v", body["prompt_cache_key"])
					}
					if gc.opts.API == openai.ChatCompletions {
						checkChatRules(t, body)
					} else {
						checkResponsesRules(t, body)
					}
					checkMarkers(t, gc.opts, gv.view, body)
					golden := filepath.Join("testdata", gc.name+"-"+gv.name+".json")
					if stream {
						if body["stream"] != true {
							t.Fatal("streaming request without stream: true")
						}
						delete(body, "stream")
						if gc.opts.API == openai.ChatCompletions {
							if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
								t.Fatal("a streamed chat request must ask for the usage chunk")
							}
							delete(body, "stream_options")
						}
						want, err := os.ReadFile(golden)
						if err != nil {
							t.Fatal(err)
						}
						if plain, _ := json.Marshal(body); !jsonEqual(t, plain, want) {
							t.Fatalf("streamed body differs from the golden one:\n%s", raw)
						}
						return
					}
					compareGolden(t, golden, indent(t, raw))
				})
			}
		}
	}
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Fatalf("request body differs from %s:\n got: %s\nwant: %s", path, got, want)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		t.Fatal("not JSON")
	}
	ra, _ := json.Marshal(x)
	rb, _ := json.Marshal(y)
	return string(ra) == string(rb)
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
