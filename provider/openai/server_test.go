package openai_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stratamem/strata/cachesim"
	pt "github.com/stratamem/strata/provider/internal/providertest"
	"github.com/stratamem/strata/tokens"
)

// fakeOpenAI is an httptest server speaking OpenAI's wire formats: POST
// /chat/completions and POST /responses, as JSON or server-sent events.
// Its usage figures come from cachesim's model of OpenAI's automatic
// prefix cache fed with the request body's tools and messages (keyed by
// model and prompt_cache_key), so a repeated prefix of 1024+ tokens is
// read back and an expired one misses.
type fakeOpenAI struct {
	*pt.Server
	sim *cachesim.OpenAI

	mu sync.Mutex
	// reply answers request n; nil answers "ok".
	reply func(n int, body map[string]any) fakeReply
	// omitDetails leaves prompt_tokens_details / input_tokens_details out
	// of usage, as some compatible servers do.
	omitDetails bool
	// errCode, when set, is the type and code of the Failure answers
	// (e.g. "insufficient_quota"), else they follow the status.
	errCode string
	// responses are the Responses requests answered, by response id: the
	// baselines prompt-cache diagnostics compare with.
	responses map[string]fingerprint
}

// fingerprint is what prompt-cache diagnostics compare: the settings that
// key the cache and the tools and input items, without their cache
// markers, each with its token estimate.
type fingerprint struct {
	model, key, tier string
	tools, input     []fpItem
}

type fpItem struct {
	id     string
	tokens int
}

func fingerprintOf(req map[string]any) fingerprint {
	fp := fingerprint{}
	fp.model, _ = req["model"].(string)
	fp.key, _ = req["prompt_cache_key"].(string)
	fp.tier, _ = req["service_tier"].(string)
	items := func(key string) []fpItem {
		var out []fpItem
		list, _ := req[key].([]any)
		for _, v := range list {
			c, _ := json.Marshal(v) // simBlocks stripped the markers
			out = append(out, fpItem{string(c), max(1, estimate.Count(string(c)))})
		}
		return out
	}
	fp.tools, fp.input = items("tools"), items("input")
	return fp
}

// diagnose compares a request with the response it names, in the order
// OpenAI's guide lists what breaks reuse (model, service tier, cache key,
// tools, then the input prefix), as prompt_cache_diagnostics.
func diagnose(prev, cur fingerprint) map[string]any {
	total := 0
	for _, it := range append(append([]fpItem{}, prev.tools...), prev.input...) {
		total += it.tokens
	}
	miss := func(reason string, missed int) map[string]any {
		return map[string]any{"type": "cache_miss", "reason": reason, "cache_missed_tokens": missed, "comparison_reusable_tokens": total}
	}
	switch {
	case prev.model != cur.model:
		return miss("model_changed", total)
	case prev.tier != cur.tier:
		return miss("service_tier_changed", total)
	case prev.key != cur.key:
		return miss("prompt_cache_key_changed", total)
	case !slices.Equal(prev.tools, cur.tools):
		return miss("tools_changed", total)
	}
	for i, it := range prev.input {
		if i >= len(cur.input) || cur.input[i] != it {
			missed := 0
			for _, rest := range prev.input[i:] {
				missed += rest.tokens
			}
			return miss("input_changed", missed)
		}
	}
	return map[string]any{"type": "cache_hit"}
}

// diagnostics keeps the request as the baseline of response id and, when
// it names a comparison response, returns the diagnostics to answer
// with (nil when none were asked for).
func (f *fakeOpenAI) diagnostics(id string, req map[string]any) map[string]any {
	cur := fingerprintOf(req)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.responses == nil {
		f.responses = map[string]fingerprint{}
	}
	f.responses[id] = cur
	opts, _ := req["prompt_cache_options"].(map[string]any)
	cmp, _ := opts["comparison_response_id"].(string)
	if cmp == "" {
		return nil
	}
	prev, ok := f.responses[cmp]
	if !ok {
		return map[string]any{"type": "comparison_response_not_found"}
	}
	return diagnose(prev, cur)
}

type fakeReply struct {
	text  string
	calls []fakeCall
	// streamErr ends a stream with an error after the first delta.
	streamErr bool
	// cut ends a stream before its terminal event.
	cut bool
	// truncated answers as the output cap does: finish_reason "length",
	// or status "incomplete" for max_output_tokens with the last call
	// incomplete. The calls' args are sent as given, cut or not.
	truncated bool
	// streamErrCode is the code of the streamErr failure ("server_error"
	// on Responses, a numeric 502 on Chat when empty).
	streamErrCode string
	// diagnostics is the response's prompt_cache_diagnostics (Responses),
	// set by the server.
	diagnostics map[string]any
}

type fakeCall struct{ id, name, args string }

func newFakeOpenAI(t *testing.T) *fakeOpenAI {
	t.Helper()
	sim, err := cachesim.NewOpenAI(cachesim.OpenAIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeOpenAI{sim: sim}
	f.Server = pt.NewServer(t, f.handle)
	return f
}

func (f *fakeOpenAI) handle(w http.ResponseWriter, r *http.Request, got pt.Received) {
	n, raw, at := got.N, got.Body, got.At
	f.mu.Lock()
	reply, omit, errCode := f.reply, f.omitDetails, f.errCode
	f.mu.Unlock()

	chat := r.URL.Path == "/chat/completions"
	if !chat && r.URL.Path != "/responses" {
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown path "+r.URL.Path)
		return
	}
	if status, msg := f.Failed(w, n); status != 0 {
		typ := "server_error"
		switch {
		case status == 429:
			typ = "rate_limit_exceeded"
		case status < 500:
			typ = "invalid_request_error"
		}
		if errCode != "" {
			typ = errCode
		}
		writeError(w, status, typ, msg)
		return
	}

	var req map[string]any
	if err := json.Unmarshal(raw, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "body is not JSON")
		return
	}
	if code, msg := checkRequest(req, chat); msg != "" {
		writeErrorCode(w, http.StatusBadRequest, "invalid_request_error", code, msg)
		return
	}
	model, _ := req["model"].(string)
	key, _ := req["prompt_cache_key"].(string)
	blocks := simBlocks(req, chat)
	if len(blocks) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "no input")
		return
	}
	usage, err := f.sim.Send(cachesim.Request{At: at, Model: model + "|" + key, Blocks: blocks})
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	rep := fakeReply{text: "ok"}
	if reply != nil {
		rep = reply(n, req)
	}
	prompt := usage.ReadTokens + usage.UncachedTokens
	out := 1 + len(rep.text)/4
	for _, c := range rep.calls {
		out += 1 + len(c.args)/4
	}
	stream, _ := req["stream"].(bool)
	if chat {
		u := map[string]any{"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out,
			"completion_tokens_details": map[string]any{"reasoning_tokens": 0}}
		if !omit {
			u["prompt_tokens_details"] = map[string]any{"cached_tokens": usage.ReadTokens, "audio_tokens": 0}
		}
		if stream {
			opts, _ := req["stream_options"].(map[string]any)
			if opts["include_usage"] != true {
				u = nil
			}
			writeChatStream(w, n, model, rep, u)
			return
		}
		writeJSON(w, chatCompletion(n, model, rep, u))
		return
	}
	rep.diagnostics = f.diagnostics(fmt.Sprintf("resp_%d", n), req)
	u := map[string]any{"input_tokens": prompt, "output_tokens": out, "total_tokens": prompt + out,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	if !omit {
		u["input_tokens_details"] = map[string]any{"cached_tokens": usage.ReadTokens}
	}
	if stream {
		writeResponsesStream(w, n, model, rep, u)
		return
	}
	writeJSON(w, response(n, model, rep, u, "completed"))
}

func chatCompletion(n int, model string, rep fakeReply, usage map[string]any) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if rep.text != "" {
		msg["content"] = rep.text
	}
	finish := "stop"
	if len(rep.calls) > 0 {
		finish = "tool_calls"
		var calls []any
		for _, c := range rep.calls {
			calls = append(calls, map[string]any{"id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": c.args}})
		}
		msg["tool_calls"] = calls
	}
	if rep.truncated {
		finish = "length"
	}
	out := map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1767323045, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}}}
	if usage != nil {
		out["usage"] = usage
	}
	if rep.diagnostics != nil {
		out["prompt_cache_diagnostics"] = rep.diagnostics
	}
	return out
}

func writeChatStream(w http.ResponseWriter, n int, model string, rep fakeReply, usage map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	id := fmt.Sprintf("chatcmpl-%d", n)
	send := func(v any) {
		raw, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", raw)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1767323045, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, piece := range pt.Split(rep.text) {
		send(chunk(map[string]any{"content": piece}, nil))
		if rep.streamErr {
			if rep.streamErrCode != "" {
				send(map[string]any{"error": map[string]any{"message": "stream failed", "type": rep.streamErrCode, "code": rep.streamErrCode}})
				return
			}
			// A gateway's mid-stream failure (OpenRouter's shape).
			send(map[string]any{"error": map[string]any{"message": "upstream overloaded", "code": 502}})
			return
		}
	}
	for k, c := range rep.calls {
		send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": k, "id": c.id, "type": "function",
			"function": map[string]any{"name": c.name, "arguments": ""}}}}, nil))
		for _, piece := range pt.Split(c.args) {
			send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": k, "function": map[string]any{"arguments": piece}}}}, nil))
		}
	}
	if rep.cut {
		return
	}
	finish := "stop"
	if len(rep.calls) > 0 {
		finish = "tool_calls"
	}
	if rep.truncated {
		finish = "length"
	}
	send(chunk(map[string]any{}, finish))
	if usage != nil {
		send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1767323045, "model": model,
			"choices": []any{}, "usage": usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func response(n int, model string, rep fakeReply, usage map[string]any, status string) map[string]any {
	var output []any
	if rep.text != "" {
		output = append(output, map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", n), "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": rep.text, "annotations": []any{}}}})
	}
	for k, c := range rep.calls {
		callStatus := "completed"
		if rep.truncated && k == len(rep.calls)-1 {
			callStatus = "incomplete"
		}
		output = append(output, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d_%d", n, k), "call_id": c.id,
			"name": c.name, "arguments": c.args, "status": callStatus})
	}
	var incomplete any
	if rep.truncated && status == "completed" {
		status, incomplete = "incomplete", map[string]any{"reason": "max_output_tokens"}
	}
	out := map[string]any{"id": fmt.Sprintf("resp_%d", n), "object": "response", "created_at": 1767323045, "status": status,
		"model": model, "output": output, "error": nil, "incomplete_details": incomplete, "parallel_tool_calls": true, "tools": []any{}}
	if usage != nil {
		out["usage"] = usage
	}
	if rep.diagnostics != nil {
		out["prompt_cache_diagnostics"] = rep.diagnostics
	}
	return out
}

func writeResponsesStream(w http.ResponseWriter, n int, model string, rep fakeReply, usage map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	seq := 0
	send := func(event string, v map[string]any) {
		v["type"] = event
		v["sequence_number"] = seq
		seq++
		raw, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, raw)
		if fl != nil {
			fl.Flush()
		}
	}
	send("response.created", map[string]any{"response": response(n, model, fakeReply{}, nil, "in_progress")})
	if rep.text != "" {
		item := map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", n), "status": "in_progress", "role": "assistant", "content": []any{}}
		send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
		for _, piece := range pt.Split(rep.text) {
			send("response.output_text.delta", map[string]any{"item_id": item["id"], "output_index": 0, "content_index": 0, "delta": piece})
			if rep.streamErr {
				code := "server_error"
				if rep.streamErrCode != "" {
					code = rep.streamErrCode
				}
				failed := response(n, model, fakeReply{}, nil, "failed")
				failed["error"] = map[string]any{"code": code, "message": "The server had an error processing the request."}
				send("response.failed", map[string]any{"response": failed})
				return
			}
		}
	}
	for k, c := range rep.calls {
		send("response.function_call_arguments.delta", map[string]any{"item_id": fmt.Sprintf("fc_%d_%d", n, k), "output_index": k + 1, "delta": c.args})
	}
	if rep.cut {
		return
	}
	if rep.truncated {
		send("response.incomplete", map[string]any{"response": response(n, model, rep, usage, "completed")})
		return
	}
	send("response.completed", map[string]any{"response": response(n, model, rep, usage, "completed")})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeErrorCode(w, status, typ, typ, msg)
}

func writeErrorCode(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}

// checkRequest applies rules OpenAI answers with 400 that a request
// schema does not hold: prompt_cache_key is at most 64 characters, and
// (Chat Completions) an assistant message with tool_calls is followed
// directly by the tool messages answering each call. It returns the
// error code and message, "" when the request passes.
func checkRequest(req map[string]any, chat bool) (code, msg string) {
	if key, _ := req["prompt_cache_key"].(string); len([]rune(key)) > 64 {
		return "string_above_max_length", fmt.Sprintf("Invalid 'prompt_cache_key': string too long. Expected a string with maximum length 64, but got a string with length %d instead.", len([]rune(key)))
	}
	if !chat {
		return "", ""
	}
	var pending []string
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		msg, _ := m.(map[string]any)
		if msg["role"] == "tool" {
			id, _ := msg["tool_call_id"].(string)
			pending = slices.DeleteFunc(pending, func(p string) bool { return p == id })
			continue
		}
		if len(pending) > 0 {
			break
		}
		calls, _ := msg["tool_calls"].([]any)
		for _, c := range calls {
			pending = append(pending, c.(map[string]any)["id"].(string))
		}
	}
	if len(pending) > 0 {
		return "invalid_request_error", "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(pending, ", ")
	}
	return "", ""
}

var estimate = tokens.Estimate()

// simBlocks is the request as the cache sees it: the tools, then every
// message or input item, each without its cache markers (they mark a
// block and are not part of its content).
func simBlocks(req map[string]any, chat bool) []cachesim.Block {
	var blocks []cachesim.Block
	add := func(v any) {
		strip(v)
		raw, _ := json.Marshal(v)
		blocks = append(blocks, cachesim.TextBlock(string(raw), max(1, estimate.Count(string(raw)))))
	}
	if tools, ok := req["tools"].([]any); ok {
		for _, t := range tools {
			add(t)
		}
	}
	key := "input"
	if chat {
		key = "messages"
	}
	if items, ok := req[key].([]any); ok {
		for _, it := range items {
			add(it)
		}
	}
	return blocks
}

func strip(v any) {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "cache_control")
		delete(x, "prompt_cache_breakpoint")
		for _, e := range x {
			strip(e)
		}
	case []any:
		for _, e := range x {
			strip(e)
		}
	}
}
