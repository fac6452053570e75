package anthropic_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stratamem/strata/cachesim"
	pt "github.com/stratamem/strata/provider/internal/providertest"
	"github.com/stratamem/strata/tokens"
)

// fakeAnthropic is an httptest server speaking the Messages API wire
// format, JSON and server-sent events. Its usage figures are not made up:
// the request body's tools, system blocks and message blocks, with their
// cache_control markers, go through cachesim's model of Anthropic's cache,
// so a request without breakpoints caches nothing and an expired entry
// misses, as on the real API.
type fakeAnthropic struct {
	*pt.Server
	sim *cachesim.Anthropic

	mu sync.Mutex
	// reply answers request n (from 0); nil answers "ok".
	reply func(n int, body map[string]any) fakeReply
	// omitCache leaves the cache fields out of usage, like a compatible
	// server that does not report them.
	omitCache bool
	// fingerprints are the requests that asked for cache diagnostics, by
	// the id of their response, as the API keeps them.
	fingerprints map[string]fingerprint
	// pendingDiagnosis answers diagnostics with a null cache_miss_reason,
	// as the API does when its comparison has not finished.
	pendingDiagnosis bool
}

// fingerprint is what the cache diagnostics compare: the model, and the
// system, tools and message blocks as hashed identities with their
// token estimates (cache_control left out, it is no content).
type fingerprint struct {
	model                  string
	tools, system, message []fpBlock
}

type fpBlock struct {
	id     string
	tokens int
}

func fingerprintOf(req map[string]any) fingerprint {
	fp := fingerprint{}
	fp.model, _ = req["model"].(string)
	block := func(role string, v any) fpBlock {
		m, _ := v.(map[string]any)
		c := map[string]any{}
		for k, x := range m {
			if k != "cache_control" {
				c[k] = x
			}
		}
		raw, _ := json.Marshal(c)
		return fpBlock{id: role + ":" + string(raw), tokens: max(1, estimate.Count(string(raw)))}
	}
	tools, _ := req["tools"].([]any)
	for _, t := range tools {
		fp.tools = append(fp.tools, block("tool", t))
	}
	sys, _ := req["system"].([]any)
	for _, b := range sys {
		fp.system = append(fp.system, block("system", b))
	}
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		msg, _ := m.(map[string]any)
		role, _ := msg["role"].(string)
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			fp.message = append(fp.message, block(role, b))
		}
	}
	return fp
}

func tokensOf(blocks []fpBlock) int {
	n := 0
	for _, b := range blocks {
		n += b.tokens
	}
	return n
}

// diagnose compares cur with the fingerprint prev the way the cache
// diagnostics documentation describes, in the order the API caches:
// model, tools, system, then messages, which may only have blocks
// appended. It returns the diagnostics object, nil for no divergence.
// cache_missed_input_tokens estimates the previous request's tokens from
// the divergence on.
func diagnose(prev, cur fingerprint) map[string]any {
	miss := func(typ string, tokens int) map[string]any {
		return map[string]any{"cache_miss_reason": map[string]any{"type": typ, "cache_missed_input_tokens": tokens}}
	}
	all := tokensOf(prev.tools) + tokensOf(prev.system) + tokensOf(prev.message)
	same := func(a, b []fpBlock) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	switch {
	case prev.model != cur.model:
		return miss("model_changed", all)
	case !same(prev.tools, cur.tools):
		return miss("tools_changed", all)
	case !same(prev.system, cur.system):
		return miss("system_changed", all-tokensOf(prev.tools))
	}
	for i, b := range prev.message {
		if i >= len(cur.message) || cur.message[i] != b {
			return miss("messages_changed", tokensOf(prev.message[i:]))
		}
	}
	return nil
}

// fakeReply is the content of one answer.
type fakeReply struct {
	// blocks are "text" or "tool_use" content blocks. A tool_use with a
	// "partial" string was cut by the output cap: streamed, its
	// input_json_delta pieces are that unfinished JSON; answered whole, it
	// carries its "input".
	blocks     []map[string]any
	stopReason string
	// streamErr, when set, is sent as an SSE error event after the first
	// content block (streaming requests only).
	streamErr string
	// cut ends the stream before message_stop.
	cut bool
}

func newFakeAnthropic(t *testing.T) *fakeAnthropic {
	t.Helper()
	sim, err := cachesim.NewAnthropic(cachesim.AnthropicOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeAnthropic{sim: sim}
	f.Server = pt.NewServer(t, f.handle)
	return f
}

func (f *fakeAnthropic) handle(w http.ResponseWriter, r *http.Request, got pt.Received) {
	n, raw, at := got.N, got.Body, got.At
	f.mu.Lock()
	reply, omit := f.reply, f.omitCache
	f.mu.Unlock()

	if r.URL.Path != "/v1/messages" || r.Method != http.MethodPost {
		writeError(w, http.StatusNotFound, "not_found_error", "no route "+r.URL.Path)
		return
	}
	if status, msg := f.Failed(w, n); status != 0 {
		typ := map[int]string{400: "invalid_request_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}[status]
		writeError(w, status, typ, msg)
		return
	}

	var req map[string]any
	if err := json.Unmarshal(raw, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "body is not JSON")
		return
	}
	if msg := checkRequest(req); msg != "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}
	model, _ := req["model"].(string)
	blocks, err := simBlocks(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	usage, err := f.sim.Send(cachesim.Request{At: at, Model: model, Blocks: blocks})
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	rep := fakeReply{blocks: []map[string]any{{"type": "text", "text": "ok"}}, stopReason: "end_turn"}
	if reply != nil {
		rep = reply(n, req)
	}
	out := 0
	for _, b := range rep.blocks {
		out += 1 + len(fmt.Sprint(b["text"], b["input"]))/4
	}
	u := map[string]any{"input_tokens": usage.UncachedTokens, "output_tokens": out}
	if !omit {
		u["cache_read_input_tokens"] = usage.ReadTokens
		u["cache_creation_input_tokens"] = usage.WriteTokens()
		u["cache_creation"] = map[string]any{"ephemeral_5m_input_tokens": usage.Write5mTokens, "ephemeral_1h_input_tokens": usage.Write1hTokens}
		u["service_tier"] = "standard"
	}
	id := fmt.Sprintf("msg_%03d", n)
	diag := f.diagnostics(id, req)
	if stream, _ := req["stream"].(bool); stream {
		f.writeStream(w, id, model, rep, u, out, diag)
		return
	}
	// A cut-off tool_use carries the input the server could parse.
	content := make([]map[string]any, len(rep.blocks))
	for i, b := range rep.blocks {
		content[i] = map[string]any{}
		for k, v := range b {
			if k != "partial" {
				content[i][k] = v
			}
		}
	}
	msg := map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": rep.stopReason, "stop_sequence": nil, "usage": u, "diagnostics": diag}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_"+id)
	_ = json.NewEncoder(w).Encode(msg)
}

// diagnostics keeps the fingerprint of a request that carries the
// diagnostics object under its response id and, when it names a previous
// response, compares the two: the response's diagnostics, nil (null) when
// none were asked for or nothing diverged.
func (f *fakeAnthropic) diagnostics(id string, req map[string]any) map[string]any {
	d, ok := req["diagnostics"].(map[string]any)
	if !ok {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := fingerprintOf(req)
	if f.fingerprints == nil {
		f.fingerprints = map[string]fingerprint{}
	}
	f.fingerprints[id] = cur
	prevID, _ := d["previous_message_id"].(string)
	if prevID == "" {
		return nil
	}
	if f.pendingDiagnosis {
		return map[string]any{"cache_miss_reason": nil}
	}
	prev, found := f.fingerprints[prevID]
	if !found {
		return map[string]any{"cache_miss_reason": map[string]any{"type": "previous_message_not_found"}}
	}
	return diagnose(prev, cur)
}

// writeStream answers with the event sequence of the streaming Messages
// API: message_start (input usage), per block a start, deltas split in
// pieces and a stop, message_delta (stop reason, output usage),
// message_stop, with a ping in between.
func (f *fakeAnthropic) writeStream(w http.ResponseWriter, id, model string, rep fakeReply, usage map[string]any, out int, diag map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	send := func(event string, data map[string]any) {
		raw, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, raw)
		if fl != nil {
			fl.Flush()
		}
	}
	startUsage := map[string]any{}
	for k, v := range usage {
		startUsage[k] = v
	}
	startUsage["output_tokens"] = 1
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": startUsage, "diagnostics": diag}})
	send("ping", map[string]any{"type": "ping"})
	for i, b := range rep.blocks {
		switch b["type"] {
		case "text":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			text := b["text"].(string)
			for _, piece := range pt.Split(text) {
				send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": piece}})
			}
		case "tool_use":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			input, _ := json.Marshal(b["input"])
			if partial, ok := b["partial"].(string); ok {
				// The output cap cut the call: its JSON never closes.
				input = []byte(partial)
			}
			for _, piece := range pt.Split(string(input)) {
				send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
			}
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		if rep.streamErr != "" {
			send("error", map[string]any{"type": "error", "error": map[string]any{"type": rep.streamErr, "message": "Overloaded"}})
			return
		}
	}
	if rep.cut {
		return
	}
	send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": rep.stopReason, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": out}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

// checkRequest applies the Messages API's rules a JSON schema cannot
// express and the real API answers with 400: the first message is the
// user's, and no text block (system, message or inside a tool_result) is
// empty or whitespace only. It returns the API's message, "" when the
// request passes.
func checkRequest(req map[string]any) string {
	blank := func(v any) bool {
		b, _ := v.(map[string]any)
		text, _ := b["text"].(string)
		return b["type"] == "text" && strings.TrimSpace(text) == ""
	}
	if sys, ok := req["system"].([]any); ok {
		for _, b := range sys {
			if blank(b) {
				return "system: text content blocks must contain non-whitespace text"
			}
		}
	}
	msgs, _ := req["messages"].([]any)
	if len(msgs) > 0 {
		if first, _ := msgs[0].(map[string]any); first["role"] != "user" {
			return `messages: first message must use the "user" role`
		}
	}
	for _, m := range msgs {
		blocks, _ := m.(map[string]any)["content"].([]any)
		for _, b := range blocks {
			if blank(b) {
				return "messages: text content blocks must contain non-whitespace text"
			}
			inner, _ := b.(map[string]any)["content"].([]any)
			for _, c := range inner {
				if blank(c) {
					return "messages: text content blocks must contain non-whitespace text"
				}
			}
		}
	}
	return ""
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

var estimate = tokens.Estimate()

// simBlocks turns a request body into the cache simulator's blocks, in
// the order the API caches them: tools, system, messages. A block's
// identity is its JSON without cache_control, which marks a block and is
// not part of its content.
func simBlocks(req map[string]any) ([]cachesim.Block, error) {
	var blocks []cachesim.Block
	add := func(v any) {
		m, ok := v.(map[string]any)
		var cc any
		if ok {
			cc = m["cache_control"]
			delete(m, "cache_control")
		}
		raw, _ := json.Marshal(v)
		b := cachesim.TextBlock(string(raw), max(1, estimate.Count(string(raw))))
		if cc != nil {
			ttl := cachesim.TTL5m
			if c, _ := cc.(map[string]any); c["ttl"] == "1h" {
				ttl = cachesim.TTL1h
			}
			b = b.WithBreakpoint(ttl)
		}
		blocks = append(blocks, b)
	}
	if tools, ok := req["tools"].([]any); ok {
		for _, t := range tools {
			add(t)
		}
	}
	switch s := req["system"].(type) {
	case string:
		add(map[string]any{"type": "text", "text": s})
	case []any:
		for _, b := range s {
			add(b)
		}
	}
	msgs, _ := req["messages"].([]any)
	if len(msgs) == 0 {
		return nil, fmt.Errorf("messages: at least one message is required")
	}
	for _, m := range msgs {
		msg, _ := m.(map[string]any)
		switch c := msg["content"].(type) {
		case string:
			add(map[string]any{"type": "text", "text": c})
		case []any:
			for _, b := range c {
				add(b)
			}
		}
	}
	return blocks, nil
}
