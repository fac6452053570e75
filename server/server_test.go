package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/server"
)

// TestResourceIsolationHTTP runs the HTTP API on each store: a key for
// user-7 records and finds its memories and can never read or write
// user-8's, through any route.
func TestResourceIsolationHTTP(t *testing.T) {
	needModel(t)
	for name, target := range targets(t) {
		t.Run(name, func(t *testing.T) {
			_, hs := serve(t, target(t), server.Options{})
			var facts server.FactsResult
			if st := call(t, hs, key7, "POST", "/v1/facts", server.FactsRequest{Facts: []temporal.Input{
				{Subject: "user", Predicate: "lives in", Value: "Lisbon", When: "yesterday"}}}, &facts); st != 200 || facts.Added != 1 {
				t.Fatalf("record a fact: %d %+v", st, facts)
			}
			if st := call(t, hs, key8, "POST", "/v1/facts", server.FactsRequest{Facts: []temporal.Input{
				{Subject: "user", Predicate: "lives in", Value: "Oslo"}}}, nil); st != 200 {
				t.Fatalf("user-8 records its own fact: %d", st)
			}
			var hits server.SearchResult
			if st := call(t, hs, key7, "POST", "/v1/search", server.SearchRequest{Query: "which city is the user's home"}, &hits); st != 200 {
				t.Fatalf("search: %d", st)
			}
			if len(hits.Memories) == 0 || !strings.Contains(hits.Memories[0].Text, "Lisbon") {
				t.Fatalf("user-7's search: %+v, want the Lisbon fact first", hits)
			}
			for _, m := range hits.Memories {
				if m.Resource != "user-7" || strings.Contains(m.Text, "Oslo") {
					t.Fatalf("user-7's search returned %+v", m)
				}
			}
			id := facts.Facts[0].ID

			// Every way of reaching user-7's memories with user-8's key.
			var e apiError
			for _, c := range []struct {
				method, path string
				body         any
				want         int
			}{
				{"POST", "/v1/search", server.SearchRequest{Resource: "user-7", Query: "home"}, 403},
				{"GET", "/v1/memories?resource=user-7", nil, 403},
				{"GET", "/v1/memories?resource=*", nil, 403},
				{"GET", "/v1/memories/" + id, nil, 404},
				{"DELETE", "/v1/memories/" + id, nil, 404},
				{"POST", "/v1/forget", server.ForgetRequest{Resource: "user-7", All: true}, 403},
				{"GET", "/v1/facts?resource=user-7", nil, 403},
				{"POST", "/v1/facts", server.FactsRequest{Resource: "user-7", Facts: []temporal.Input{{Subject: "user", Predicate: "lives in", Value: "Mars"}}}, 403},
				{"POST", "/v1/entities", server.EntitiesRequest{Resource: "user-7"}, 403},
				{"GET", "/v1/entities?resource=user-7", nil, 403},
				{"GET", "/v1/scratchpad?resource=user-7", nil, 403},
				{"POST", "/v1/scratchpad", server.ScratchpadUpdate{Resource: "user-7", Set: map[string]string{"x": "y"}}, 403},
				{"POST", "/v1/messages", server.MessagesRequest{Resource: "user-7", Thread: "t", Messages: []server.Message{{Role: "user", Text: "hi"}}}, 403},
				{"GET", "/v1/stats?resource=user-7", nil, 403},
				{"GET", "/v1/assembly?resource=user-7&thread=t1", nil, 403},
			} {
				if st := call(t, hs, key8, c.method, c.path, c.body, &e); st != c.want {
					t.Errorf("user-8's key: %s %s = %d, want %d (%s)", c.method, c.path, st, c.want, e.Error.Message)
				}
			}
			// user-8 forgetting user-7's id through its own resource deletes
			// nothing.
			var fr server.ForgetResult
			if st := call(t, hs, key8, "POST", "/v1/forget", server.ForgetRequest{IDs: []string{id}}, &fr); st != 200 || fr.Records != 0 || fr.NotFoundIDs != 1 {
				t.Errorf("user-8 forgets user-7's id: %d %+v", st, fr)
			}
			var m server.Memory
			if st := call(t, hs, key7, "GET", "/v1/memories/"+id, nil, &m); st != 200 || m.ID != id {
				t.Fatalf("user-7's fact after user-8's attempts: %d %+v", st, m)
			}
			// The admin key sees both, and the whole store's stats.
			var stats server.Stats
			if st := call(t, hs, keyAdmin, "GET", "/v1/stats", nil, &stats); st != 200 || stats.Resources != 2 || stats.ByLayer["temporal"] != 2 {
				t.Errorf("admin stats: %d %+v", st, stats)
			}
			// No key, a wrong key.
			if st := call(t, hs, "", "GET", "/v1/whoami", nil, &e); st != 401 {
				t.Errorf("no key: %d", st)
			}
			if st := call(t, hs, "not-a-key-of-this-server", "GET", "/v1/whoami", nil, &e); st != 401 || e.Error.Code != "unauthenticated" {
				t.Errorf("unknown key: %d %+v", st, e)
			}
		})
	}
}

// TestMCPOverHTTP connects the SDK's client over streamable HTTP with each
// user's key: it lists the tools, records and searches a memory, and is
// refused the other resource's.
func TestMCPOverHTTP(t *testing.T) {
	needModel(t)
	for name, target := range targets(t) {
		t.Run(name, func(t *testing.T) {
			_, hs := serve(t, target(t), server.Options{})
			ctx := context.Background()
			connect := func(key string) *mcp.ClientSession {
				tr := &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp",
					HTTPClient: &http.Client{Transport: bearerTransport{key: key, base: http.DefaultTransport}}, MaxRetries: -1}
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, tr, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = cs.Close() })
				return cs
			}
			c7, c8 := connect(key7), connect(key8)
			tools, err := c7.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			for _, want := range []string{server.ToolSearch, server.ToolRecordFacts, server.ToolUpdateEntities,
				server.ToolReadScratchpad, server.ToolSetScratchpad, server.ToolList, server.ToolForget} {
				if !slices.Contains(names, want) {
					t.Errorf("tools %v lack %s", names, want)
				}
			}
			res := tool(t, c7, server.ToolRecordFacts, map[string]any{"facts": []map[string]any{
				{"subject": "user", "predicate": "favourite drink", "value": "green tea"}}})
			if res.IsError {
				t.Fatalf("record_facts: %s", text(res))
			}
			res = tool(t, c7, server.ToolSearch, map[string]any{"query": "what does the user like to drink"})
			var hits server.SearchResult
			decodeTool(t, res, &hits)
			if len(hits.Memories) == 0 || !strings.Contains(hits.Memories[0].Text, "green tea") {
				t.Fatalf("search_memories: %+v", hits)
			}
			// The other key: refused user-7 by name, and its own search
			// (leaving the resource out) finds nothing of user-7's.
			for _, c := range []struct {
				name string
				args map[string]any
			}{
				{server.ToolSearch, map[string]any{"resource": "user-7", "query": "drink"}},
				{server.ToolList, map[string]any{"resource": "user-7"}},
				{server.ToolForget, map[string]any{"resource": "user-7", "all": true}},
				{server.ToolRecordFacts, map[string]any{"resource": "user-7", "facts": []map[string]any{{"subject": "user", "predicate": "x", "value": "y"}}}},
				{server.ToolSetScratchpad, map[string]any{"resource": "user-7", "set": map[string]string{"k": "v"}}},
				{server.ToolReadScratchpad, map[string]any{"resource": "user-7"}},
				{server.ToolUpdateEntities, map[string]any{"resource": "user-7", "entities": []map[string]any{{"name": "Eve", "type": "person"}}}},
			} {
				res := tool(t, c8, c.name, c.args)
				if !res.IsError || !strings.Contains(text(res), "forbidden") {
					t.Errorf("user-8's %s on user-7: %v %s", c.name, res.IsError, text(res))
				}
			}
			decodeTool(t, tool(t, c8, server.ToolSearch, map[string]any{"query": "what does the user like to drink"}), &hits)
			for _, m := range hits.Memories {
				if m.Resource != "user-8" {
					t.Errorf("user-8's search returned %+v", m)
				}
			}
		})
	}
}

func tool(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func decodeTool(t testing.TB, res *mcp.CallToolResult, out any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// TestLimits: a body over the limit is 413, a key over its rate 429 with
// Retry-After, and the typed errors say which.
func TestLimits(t *testing.T) {
	needModel(t)
	_, hs := serve(t, t.TempDir(), server.Options{MaxBodyBytes: 512, Rate: 1, Burst: 3})
	var e apiError
	big := server.ScratchpadUpdate{Set: map[string]string{"k": strings.Repeat("x", 600)}}
	if st := call(t, hs, key7, "POST", "/v1/scratchpad", big, &e); st != http.StatusRequestEntityTooLarge || e.Error.Code != "too_large" {
		t.Fatalf("big body: %d %+v", st, e)
	}
	// The burst was 3 and one went on the big body: two more pass, the
	// next is refused. user-8's bucket is its own.
	for i := range 2 {
		if st := call(t, hs, key7, "GET", "/v1/whoami", nil, nil); st != 200 {
			t.Fatalf("request %d within the burst: %d", i, st)
		}
	}
	req, _ := http.NewRequest("GET", hs.URL+"/v1/whoami", nil)
	req.Header.Set("Authorization", "Bearer "+key7)
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the rate: %d Retry-After=%q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if st := call(t, hs, key8, "GET", "/v1/whoami", nil, nil); st != 200 {
		t.Errorf("another key is limited by user-7's rate: %d", st)
	}
	le := &server.LimitError{Limit: server.ErrRateLimited, Max: 1, RetryAfter: time.Second}
	if !errors.Is(le, server.ErrRateLimited) || server.Status(le) != 429 || server.Status(&server.LimitError{Limit: server.ErrTooLarge}) != 413 {
		t.Errorf("LimitError: Is=%v status=%d", errors.Is(le, server.ErrRateLimited), server.Status(le))
	}
}

// TestShutdownRefusesNewWork: after Shutdown, operations fail with
// ErrShuttingDown (503), and the health check says so.
func TestShutdownRefusesNewWork(t *testing.T) {
	needModel(t)
	srv, hs := serve(t, t.TempDir(), server.Options{})
	if st := call(t, hs, "", "GET", "/healthz", nil, nil); st != 200 {
		t.Fatalf("healthz: %d", st)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var e apiError
	if st := call(t, hs, key7, "GET", "/v1/scratchpad", nil, &e); st != 503 || e.Error.Code != "shutting_down" {
		t.Errorf("after shutdown: %d %+v", st, e)
	}
	if st := call(t, hs, "", "GET", "/healthz", nil, nil); st != 503 {
		t.Errorf("healthz after shutdown: %d", st)
	}
	p, _ := keyring(t).Lookup(key7)
	if _, err := srv.Search(context.Background(), p, server.SearchRequest{Query: "x"}); !errors.Is(err, server.ErrShuttingDown) {
		t.Errorf("Search after shutdown: %v", err)
	}
}

// TestStateAndScratchpad: layer state is read and written with its
// revision (409 on a stale one), per resource and thread, and the
// scratchpad keeps a thread's notes apart from the resource's.
func TestStateAndScratchpad(t *testing.T) {
	needModel(t)
	_, hs := serve(t, t.TempDir(), server.Options{})
	var sv server.StateValue
	if st := call(t, hs, key7, "PUT", "/v1/state/todos/state?thread=t1", map[string]any{"value": map[string]any{"items": []string{"a"}}, "revision": 0}, &sv); st != 200 || sv.Revision == 0 {
		t.Fatalf("put state: %d %+v", st, sv)
	}
	var e apiError
	if st := call(t, hs, key7, "PUT", "/v1/state/todos/state?thread=t1", map[string]any{"value": []int{1}, "revision": 0}, &e); st != 409 {
		t.Errorf("stale revision: %d %+v", st, e)
	}
	var got server.StateValue
	if st := call(t, hs, key7, "GET", "/v1/state/todos/state?thread=t1", nil, &got); st != 200 || got.Revision != sv.Revision || !strings.Contains(string(got.Value), `"a"`) {
		t.Errorf("get state: %d %+v", st, got)
	}
	if st := call(t, hs, key8, "GET", "/v1/state/todos/state?resource=user-7&thread=t1", nil, &e); st != 403 {
		t.Errorf("user-8 reads user-7's state: %d", st)
	}
	// user-8's own thread of the same name is another key.
	if st := call(t, hs, key8, "GET", "/v1/state/todos/state?thread=t1", nil, &e); st != 404 {
		t.Errorf("user-8's thread t1: %d %+v", st, e)
	}
	if st := call(t, hs, key7, "GET", "/v1/state/todos/state?scope=global", nil, &e); st != 403 {
		t.Errorf("global state with a user key: %d", st)
	}
	var keys server.StateKeys
	if st := call(t, hs, key7, "GET", "/v1/state", nil, &keys); st != 200 || len(keys.Keys) != 1 || keys.Keys[0].Layer != "todos" {
		t.Errorf("list state: %d %+v", st, keys)
	}

	if st := call(t, hs, key7, "POST", "/v1/scratchpad", server.ScratchpadUpdate{Thread: "t1", Set: map[string]string{"plan": "thread plan"}}, nil); st != 200 {
		t.Fatal(st)
	}
	if st := call(t, hs, key7, "POST", "/v1/scratchpad", server.ScratchpadUpdate{Set: map[string]string{"plan": "resource plan"}}, nil); st != 200 {
		t.Fatal(st)
	}
	var notes server.Notes
	call(t, hs, key7, "GET", "/v1/scratchpad?thread=t1", nil, &notes)
	if len(notes.Notes) != 1 || notes.Notes[0].Value != "thread plan" {
		t.Errorf("thread notes: %+v", notes)
	}
	call(t, hs, key7, "GET", "/v1/scratchpad?key=plan", nil, &notes)
	if len(notes.Notes) != 1 || notes.Notes[0].Value != "resource plan" {
		t.Errorf("resource notes: %+v", notes)
	}
	var sr server.ScratchpadResult
	if st := call(t, hs, key7, "POST", "/v1/scratchpad", server.ScratchpadUpdate{Delete: []string{"plan", "nope"}}, &sr); st != 200 || sr.Deleted != 1 {
		t.Errorf("delete: %d %+v", st, sr)
	}
	if st := call(t, hs, key7, "GET", "/v1/scratchpad?key=plan", nil, &e); st != 404 {
		t.Errorf("deleted key: %d", st)
	}
}

// TestSpansAndMetrics: a search over HTTP is a server span named by its
// route, with the embedding call and the vector query as its children;
// /metrics has the request duration and the recall latency.
func TestSpansAndMetrics(t *testing.T) {
	needModel(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	_, hs := serve(t, t.TempDir(), server.Options{TracerProvider: tp})
	if st := call(t, hs, key7, "POST", "/v1/search", server.SearchRequest{Query: "anything"}, nil); st != 200 {
		t.Fatal(st)
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range exp.GetSpans().Snapshots() {
		byName[s.Name()] = s
	}
	root, ok := byName["POST /v1/search"]
	if !ok {
		t.Fatalf("no request span in %v", slices.Collect(maps.Keys(byName)))
	}
	var route string
	for _, kv := range root.Attributes() {
		if kv.Key == "http.route" {
			route = kv.Value.AsString()
		}
	}
	if route != "/v1/search" || root.SpanKind() != trace.SpanKindServer {
		t.Errorf("request span: route %q kind %v", route, root.SpanKind())
	}
	var embed, query bool
	for name, s := range byName {
		child := s.Parent().SpanID() == root.SpanContext().SpanID()
		switch {
		case strings.HasPrefix(name, "embeddings "):
			embed = child
		case strings.HasPrefix(name, "query "):
			query = child
		}
	}
	if !embed || !query {
		t.Errorf("children of the request span: embeddings %v, query %v (%v)", embed, query, slices.Collect(maps.Keys(byName)))
	}
	req, _ := http.NewRequest("GET", hs.URL+"/metrics", nil)
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`http_server_request_duration_seconds_count{http_request_method="POST",http_response_status_code="200",http_route="/v1/search"`,
		"strata_recall_duration_seconds_count", "strata_vector_query_duration_seconds_count"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestRecordedAssemblies: an agent run over the same store records its
// assemblies; its resource's key reads them (inspect), another's cannot.
func TestRecordedAssemblies(t *testing.T) {
	needModel(t)
	_, hs, env := serveEnv(t, t.TempDir(), server.Options{})
	rt, err := core.NewRuntime(core.Config{Store: env.State, RecordAssemblies: true,
		System: []core.Item{core.SystemMessage("You are helpful.")}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sess, err := rt.Start(ctx, core.RunOptions{ThreadID: "t1", ResourceID: "user-7"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Append(ctx, core.UserMessage("Hello there")); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Assemble(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sess.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
	var list server.AssemblyList
	if st := call(t, hs, key7, "GET", "/v1/assemblies?thread=t1", nil, &list); st != 200 || len(list.Assemblies) != 1 {
		t.Fatalf("list: %d %+v", st, list)
	}
	var rec map[string]any
	if st := call(t, hs, key7, "GET", "/v1/assembly?thread=t1", nil, &rec); st != 200 || rec["thread_id"] != "t1" {
		t.Fatalf("latest: %d %v", st, rec)
	}
	if b, _ := json.Marshal(rec); !strings.Contains(string(b), "Hello there") {
		t.Errorf("the recorded view lacks the user's message: %s", b)
	}
	var e apiError
	if st := call(t, hs, key8, "GET", "/v1/assembly?thread=t1", nil, &e); st != 404 {
		t.Errorf("user-8's thread t1: %d %+v", st, e)
	}
	if st := call(t, hs, key8, "GET", "/v1/assemblies?resource=user-7&thread=t1", nil, &e); st != 403 {
		t.Errorf("user-8 lists user-7's: %d", st)
	}
}

// TestMessagesSearch: messages added through the semantic layer are found
// by meaning, once each: the layer's context copies are not results.
func TestMessagesSearch(t *testing.T) {
	needModel(t)
	_, hs := serve(t, t.TempDir(), server.Options{})
	msgs := []server.Message{
		{Role: "user", Text: "My daughter started violin lessons this autumn."},
		{Role: "assistant", Text: "Lovely! How is she finding it?"},
		{Role: "user", Text: "The quarterly report is due on Friday."},
	}
	var mr server.MessagesResult
	if st := call(t, hs, key7, "POST", "/v1/messages", server.MessagesRequest{Thread: "t1", Messages: msgs}, &mr); st != 200 || mr.Stored != 3 {
		t.Fatalf("messages: %d %+v", st, mr)
	}
	var hits server.SearchResult
	if st := call(t, hs, key7, "POST", "/v1/search", server.SearchRequest{Query: "which musical instrument does the child play", K: 3}, &hits); st != 200 || len(hits.Memories) == 0 {
		t.Fatalf("search: %d %+v", st, hits)
	}
	if !strings.Contains(hits.Memories[0].Text, "violin") {
		t.Errorf("best hit %q, want the violin message", hits.Memories[0].Text)
	}
	seen := map[string]bool{}
	for _, m := range hits.Memories {
		if m.Kind != "message" || seen[m.Text] {
			t.Errorf("hit %+v: want each message once", m)
		}
		seen[m.Text] = true
	}
	var e apiError
	if st := call(t, hs, key7, "POST", "/v1/messages", server.MessagesRequest{Thread: "t1", Messages: []server.Message{{Role: "system", Text: "x"}}}, &e); st != 400 {
		t.Errorf("a system message: %d", st)
	}
}
