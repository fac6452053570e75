package openai

import (
	"context"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/internal/wirename"
)

// chatMsg is one Chat Completions message before it becomes an SDK param.
type chatMsg struct {
	role   string // system, developer, user, assistant, tool
	parts  []string
	callID string      // tool messages
	calls  []core.Item // assistant tool calls
	marked map[int]bool
}

// chatRequest is a view laid out as chat messages.
type chatRequest struct {
	msgs []chatMsg
	// last is the newest part that may carry a breakpoint: message and
	// part index, or msg -1.
	lastMsg, lastPart int
}

func (r *chatRequest) add(msg chatMsg) {
	r.msgs = append(r.msgs, msg)
	// Assistant output is not among the blocks OpenAI takes a breakpoint
	// on; every other text is.
	if msg.role != "assistant" && len(msg.parts) > 0 && msg.parts[len(msg.parts)-1] != "" {
		r.lastMsg, r.lastPart = len(r.msgs)-1, len(msg.parts)-1
	}
}

// layoutChat turns the view into chat messages and marks the parts that
// carry the view's breakpoints: the last eligible part at or before each
// breakpoint's item.
func (m *Model) layoutChat(v *core.View) (*chatRequest, error) {
	marks := breakpointSet(v)
	r := &chatRequest{lastMsg: -1}
	i := 0
	for band, it := range v.All() {
		switch it.Type {
		case core.TypeMessage:
			role, wrap := m.roleOf(band, it)
			parts := messageTexts(it, wrap)
			if n := len(r.msgs); n > 0 && role == "assistant" && len(r.msgs[n-1].calls) > 0 {
				// Text after a call in one assistant turn ([text, tool_use,
				// text], as Claude writes): a message of its own would come
				// between the tool_calls and their tool messages, which the
				// API rejects. It joins the message with the calls, whose
				// content the model wrote in the same turn.
				r.msgs[n-1].parts = append(r.msgs[n-1].parts, parts...)
			} else if len(parts) > 0 {
				r.add(chatMsg{role: role, parts: parts})
			}
		case core.TypeFunctionCall:
			// Calls join the assistant message before them, as the model
			// wrote them: one message with content and tool_calls.
			if n := len(r.msgs); n > 0 && r.msgs[n-1].role == "assistant" {
				r.msgs[n-1].calls = append(r.msgs[n-1].calls, it)
			} else {
				r.add(chatMsg{role: "assistant", calls: []core.Item{it}})
			}
		case core.TypeFunctionCallOutput:
			r.add(chatMsg{role: "tool", callID: it.CallID, parts: []string{it.Output}})
		default:
			return nil, fmt.Errorf("%w: item %d: type %q", ErrInvalidRequest, i, it.Type)
		}
		if marks[i] && r.lastMsg >= 0 {
			msg := &r.msgs[r.lastMsg]
			if msg.marked == nil {
				msg.marked = map[int]bool{}
			}
			msg.marked[r.lastPart] = true
		}
		i++
	}
	if len(r.msgs) == 0 {
		return nil, fmt.Errorf("%w: the view has no messages", ErrInvalidRequest)
	}
	return r, nil
}

// chatParams builds the Chat Completions request and the options that
// inject what the SDK cannot express.
func (m *Model) chatParams(req provider.Request, maxTokens int) (sdk.ChatCompletionNewParams, []option.RequestOption, error) {
	var p sdk.ChatCompletionNewParams
	layout, err := m.layoutChat(req.View)
	if err != nil {
		return p, nil, err
	}
	var inject []option.RequestOption
	for n, msg := range layout.msgs {
		// A message is sent as a plain string unless it has several parts
		// or a part carries a marker: the string form is the one every
		// compatible server reads.
		asParts := len(msg.parts) > 1 || (len(msg.marked) > 0 && (m.opts.ExplicitBreakpoints || m.opts.CacheControl))
		textParts := func() []sdk.ChatCompletionContentPartTextParam {
			out := make([]sdk.ChatCompletionContentPartTextParam, len(msg.parts))
			for k, text := range msg.parts {
				out[k] = sdk.ChatCompletionContentPartTextParam{Text: text}
				if msg.marked[k] && m.opts.ExplicitBreakpoints {
					out[k].PromptCacheBreakpoint = sdk.NewChatCompletionContentPartTextPromptCacheBreakpointParam()
				}
				if msg.marked[k] && m.opts.CacheControl {
					inject = append(inject, option.WithJSONSet(fmt.Sprintf("messages.%d.content.%d.cache_control", n, k),
						map[string]string{"type": "ephemeral"}))
				}
			}
			return out
		}
		joined := ""
		for k, text := range msg.parts {
			if k > 0 {
				joined += "\n"
			}
			joined += text
		}
		var u sdk.ChatCompletionMessageParamUnion
		switch msg.role {
		case "system":
			c := sdk.ChatCompletionSystemMessageParamContentUnion{OfString: param.NewOpt(joined)}
			if asParts {
				c = sdk.ChatCompletionSystemMessageParamContentUnion{OfArrayOfContentParts: textParts()}
			}
			u.OfSystem = &sdk.ChatCompletionSystemMessageParam{Content: c}
		case "developer":
			c := sdk.ChatCompletionDeveloperMessageParamContentUnion{OfString: param.NewOpt(joined)}
			if asParts {
				c = sdk.ChatCompletionDeveloperMessageParamContentUnion{OfArrayOfContentParts: textParts()}
			}
			u.OfDeveloper = &sdk.ChatCompletionDeveloperMessageParam{Content: c}
		case "user":
			c := sdk.ChatCompletionUserMessageParamContentUnion{OfString: param.NewOpt(joined)}
			if asParts {
				var parts []sdk.ChatCompletionContentPartUnionParam
				for _, tp := range textParts() {
					parts = append(parts, sdk.ChatCompletionContentPartUnionParam{OfText: &tp})
				}
				c = sdk.ChatCompletionUserMessageParamContentUnion{OfArrayOfContentParts: parts}
			}
			u.OfUser = &sdk.ChatCompletionUserMessageParam{Content: c}
		case "tool":
			c := sdk.ChatCompletionToolMessageParamContentUnion{OfString: param.NewOpt(joined)}
			if asParts {
				c = sdk.ChatCompletionToolMessageParamContentUnion{OfArrayOfContentParts: textParts()}
			}
			u.OfTool = &sdk.ChatCompletionToolMessageParam{ToolCallID: msg.callID, Content: c}
		case "assistant":
			a := &sdk.ChatCompletionAssistantMessageParam{}
			switch {
			case len(msg.parts) > 1:
				for _, tp := range textParts() {
					a.Content.OfArrayOfContentParts = append(a.Content.OfArrayOfContentParts,
						sdk.ChatCompletionAssistantMessageParamContentArrayOfContentPartUnion{OfText: &tp})
				}
			case len(msg.parts) == 1:
				a.Content.OfString = param.NewOpt(joined)
			}
			for _, call := range msg.calls {
				args := call.Arguments
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{ID: call.CallID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: WireName(call.Name), Arguments: args}}})
			}
			u.OfAssistant = a
		}
		p.Messages = append(p.Messages, u)
	}
	for _, t := range req.View.Tools {
		schema, err := schemaObject(t)
		if err != nil {
			return p, nil, err
		}
		fn := shared.FunctionDefinitionParam{Name: WireName(t.Name), Parameters: shared.FunctionParameters(schema)}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionToolUnionParam{OfFunction: &sdk.ChatCompletionFunctionToolParam{Function: fn}})
	}
	p.Model = shared.ChatModel(m.opts.Model)
	if maxTokens > 0 {
		if m.opts.LegacyMaxTokens {
			p.MaxTokens = param.NewOpt(int64(maxTokens))
		} else {
			p.MaxCompletionTokens = param.NewOpt(int64(maxTokens))
		}
	}
	if req.ThreadID != "" && !m.opts.NoCacheKey {
		p.PromptCacheKey = param.NewOpt(cacheKey(req.ThreadID))
	}
	if r := m.retention(req); r != "" {
		p.PromptCacheRetention = sdk.ChatCompletionNewParamsPromptCacheRetention(r)
	}
	if m.opts.Stream {
		p.StreamOptions.IncludeUsage = param.NewOpt(true)
	}
	return p, inject, nil
}

func (m *Model) respondChat(ctx context.Context, req provider.Request, maxTokens int, names wirename.Table) (*provider.Response, error) {
	p, inject, err := m.chatParams(req, maxTokens)
	if err != nil {
		return nil, err
	}
	var cc *sdk.ChatCompletion
	if m.opts.Stream {
		cc, err = m.streamChat(ctx, p, inject)
	} else {
		cc, err = m.client.Chat.Completions.New(ctx, p, inject...)
	}
	if err != nil {
		return nil, err
	}
	return chatResponse(cc, names)
}

// streamChat assembles a completion from its chunks. The usage arrives
// in a last chunk without choices; it is taken from there as sent, with
// its fields' presence, which the SDK's accumulator does not keep.
func (m *Model) streamChat(ctx context.Context, p sdk.ChatCompletionNewParams, inject []option.RequestOption) (*sdk.ChatCompletion, error) {
	s := m.client.Chat.Completions.NewStreaming(ctx, p, inject...)
	defer s.Close()
	var acc sdk.ChatCompletionAccumulator
	var usage *sdk.CompletionUsage
	finished := false
	for s.Next() {
		chunk := s.Current()
		if !acc.AddChunk(chunk) {
			return nil, fmt.Errorf("openai: malformed stream chunk %q", chunk.RawJSON())
		}
		if chunk.JSON.Usage.Valid() {
			u := chunk.Usage
			usage = &u
		}
		for _, c := range chunk.Choices {
			if c.FinishReason != "" {
				finished = true
			}
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if !finished {
		return nil, errIncompleteStream
	}
	cc := acc.ChatCompletion
	cc.Usage = sdk.CompletionUsage{}
	if usage != nil {
		cc.Usage = *usage
	}
	return &cc, nil
}

func chatResponse(cc *sdk.ChatCompletion, names wirename.Table) (*provider.Response, error) {
	if len(cc.Choices) == 0 {
		return nil, fmt.Errorf("%w: the completion has no choices", errIncompleteStream)
	}
	choice := cc.Choices[0]
	resp := &provider.Response{StopReason: choice.FinishReason, Model: cc.Model, Truncated: choice.FinishReason == "length"}
	text := choice.Message.Content
	if text == "" {
		text = choice.Message.Refusal
	}
	if text != "" {
		resp.Items = append(resp.Items, core.Item{Type: core.TypeMessage, Role: core.RoleAssistant,
			Content: []core.Part{{Type: "output_text", Text: text}}})
	}
	calls := choice.Message.ToolCalls
	if n := len(calls); resp.Truncated && n > 0 && !completeArgs(calls[n-1].Function.Arguments) {
		// The cap cut the last call while its arguments were being
		// written: it must not run on half of them.
		calls = calls[:n-1]
	}
	for _, tc := range calls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		args := tc.Function.Arguments
		if args == "" {
			args = "{}"
		}
		resp.Items = append(resp.Items, core.FunctionCall(tc.ID, names.Original(tc.Function.Name), args))
	}
	u := cc.Usage
	resp.InputTokens, resp.OutputTokens = int(u.PromptTokens), int(u.CompletionTokens)
	d := u.PromptTokensDetails
	resp.Cache = cacheReport(u.PromptTokens, d.CachedTokens, d.CacheWriteTokens,
		u.JSON.PromptTokensDetails.Valid() && d.JSON.CachedTokens.Valid())
	return resp, nil
}
