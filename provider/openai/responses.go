package openai

import (
	"context"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/internal/wirename"
)

// responsesParams builds a Responses request. Items map almost one to
// one: messages (input_text parts; assistant text as a string),
// function_call and function_call_output items.
func (m *Model) responsesParams(req provider.Request, maxTokens int) (responses.ResponseNewParams, error) {
	var p responses.ResponseNewParams
	marks := breakpointSet(req.View)
	var input responses.ResponseInputParam
	// last is the newest input_text a breakpoint may go on.
	var last *responses.ResponseInputTextParam
	var marked []*responses.ResponseInputTextParam
	i := 0
	for band, it := range req.View.All() {
		switch it.Type {
		case core.TypeMessage:
			role, wrap := m.roleOf(band, it)
			if role == "assistant" {
				if text := it.Text(); text != "" {
					input = append(input, responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
						Role: responses.EasyInputMessageRoleAssistant, Type: responses.EasyInputMessageTypeMessage,
						Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(text)}}})
				}
				break
			}
			texts := messageTexts(it, wrap)
			if len(texts) == 0 {
				break
			}
			content := make(responses.ResponseInputMessageContentListParam, len(texts))
			for k, text := range texts {
				content[k] = responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: text}}
			}
			last = content[len(content)-1].OfInputText
			input = append(input, responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
				Role: responses.EasyInputMessageRole(role), Type: responses.EasyInputMessageTypeMessage,
				Content: responses.EasyInputMessageContentUnionParam{OfInputItemContentList: content}}})
		case core.TypeFunctionCall:
			args := it.Arguments
			if args == "" {
				args = "{}"
			}
			input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCall: &responses.ResponseFunctionToolCallParam{
				CallID: it.CallID, Name: WireName(it.Name), Arguments: args}})
		case core.TypeFunctionCallOutput:
			input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: param.NewOpt(it.CallID), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(it.Output)}}})
		default:
			return p, fmt.Errorf("%w: item %d: type %q", ErrInvalidRequest, i, it.Type)
		}
		if marks[i] && last != nil && (len(marked) == 0 || marked[len(marked)-1] != last) {
			marked = append(marked, last)
		}
		i++
	}
	if len(input) == 0 {
		return p, fmt.Errorf("%w: the view has no messages", ErrInvalidRequest)
	}
	if m.opts.ExplicitBreakpoints {
		for _, t := range marked {
			t.PromptCacheBreakpoint = responses.NewResponseInputTextPromptCacheBreakpointParam()
		}
	}
	for _, t := range req.View.Tools {
		schema, err := schemaObject(t)
		if err != nil {
			return p, err
		}
		// Function tools are strict by default in this API, which only
		// accepts schemas with every property required and no others:
		// layers' schemas are not written for that.
		fn := &responses.FunctionToolParam{Name: WireName(t.Name), Parameters: schema, Strict: param.NewOpt(false)}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: fn})
	}
	p.Model = shared.ResponsesModel(m.opts.Model)
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	if maxTokens > 0 {
		p.MaxOutputTokens = param.NewOpt(int64(maxTokens))
	}
	if req.ThreadID != "" && !m.opts.NoCacheKey {
		p.PromptCacheKey = param.NewOpt(cacheKey(req.ThreadID))
	}
	if r := m.retention(req); r != "" {
		p.PromptCacheRetention = responses.ResponseNewParamsPromptCacheRetention(r)
	}
	if m.retention(req) != "in_memory" {
		// A request that asks for the in-memory lifetime (CacheTTL of
		// five minutes or less) sends no longer ttl beside it.
		p.PromptCacheOptions.Ttl = m.opts.CacheTTL
	}
	if id, ok := m.last.Get(req.ThreadID); ok && m.diagnose {
		p.PromptCacheOptions.ComparisonResponseID = param.NewOpt(id)
	}
	return p, nil
}

func (m *Model) respondResponses(ctx context.Context, req provider.Request, maxTokens int, names wirename.Table) (*provider.Response, error) {
	p, err := m.responsesParams(req, maxTokens)
	if err != nil {
		return nil, err
	}
	var r *responses.Response
	if m.opts.Stream {
		r, err = m.streamResponses(ctx, p)
	} else {
		r, err = m.client.Responses.New(ctx, p)
	}
	if err != nil {
		return nil, err
	}
	resp, err := responsesResponse(r, names)
	if err != nil {
		return nil, err
	}
	if m.diagnose {
		// The thread's next request is compared with this response.
		m.last.Set(req.ThreadID, r.ID)
	}
	return resp, nil
}

// streamResponses reads the event stream up to its terminal event, which
// carries the whole response: response.completed or response.incomplete
// (an answer cut by the output cap is still an answer), or
// response.failed and error, which are failures.
func (m *Model) streamResponses(ctx context.Context, p responses.ResponseNewParams) (*responses.Response, error) {
	s := m.client.Responses.NewStreaming(ctx, p)
	defer s.Close()
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "response.completed", "response.incomplete":
			r := ev.Response
			return &r, nil
		case "response.failed":
			return nil, &streamFailure{code: string(ev.Response.Error.Code), message: ev.Response.Error.Message}
		case "error":
			return nil, &streamFailure{code: ev.Code, message: ev.Message}
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return nil, errIncompleteStream
}

func responsesResponse(r *responses.Response, names wirename.Table) (*provider.Response, error) {
	if r.Status == "failed" {
		return nil, &streamFailure{code: string(r.Error.Code), message: r.Error.Message}
	}
	resp := &provider.Response{StopReason: string(r.Status), Model: string(r.Model)}
	if r.Status == "incomplete" && r.IncompleteDetails.Reason != "" {
		resp.StopReason = r.IncompleteDetails.Reason
	}
	output := r.Output
	resp.Truncated = r.Status == "incomplete" && r.IncompleteDetails.Reason == "max_output_tokens"
	if n := len(output); resp.Truncated && n > 0 && output[n-1].Type == "function_call" &&
		(output[n-1].Status == "incomplete" || !completeArgs(output[n-1].Arguments.OfString)) {
		// The cap cut this call while its arguments were being written.
		output = output[:n-1]
	}
	for _, out := range output {
		switch out.Type {
		case "message":
			var parts []core.Part
			for _, c := range out.Content {
				text := c.Text
				if c.Type == "refusal" {
					text = c.Refusal
				}
				if text != "" {
					parts = append(parts, core.Part{Type: "output_text", Text: text})
				}
			}
			if len(parts) > 0 {
				resp.Items = append(resp.Items, core.Item{Type: core.TypeMessage, Role: core.RoleAssistant, Content: parts})
			}
		case "function_call":
			args := strings.TrimSpace(out.Arguments.OfString)
			if args == "" {
				args = "{}"
			}
			resp.Items = append(resp.Items, core.FunctionCall(out.CallID, names.Original(out.Name), args))
		}
		// Reasoning and built-in tool items have no item form.
	}
	u := r.Usage
	resp.InputTokens, resp.OutputTokens = int(u.InputTokens), int(u.OutputTokens)
	d := u.InputTokensDetails
	resp.Cache = cacheReport(u.InputTokens, d.CachedTokens, d.CacheWriteTokens,
		r.JSON.Usage.Valid() && u.JSON.InputTokensDetails.Valid() && d.JSON.CachedTokens.Valid())
	resp.Cache.Miss = cacheMiss(r)
	return resp, nil
}
