package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider/internal/wirename"
)

// The wrapper around developer text that lands in a user turn. The
// Messages API has one system prompt and no developer role: layer output
// after the system band (anchor and live layers, context updates, the
// tail) travels inside user turns, and the tags let the model tell the
// runtime's context from what the user typed.
const (
	reminderOpen  = "<system-reminder>\n"
	reminderClose = "\n</system-reminder>"
)

// maxBreakpoints is the Messages API's limit on cache_control markers.
const maxBreakpoints = 4

// blockRef addresses one content block of the request being built.
type blockRef struct {
	system     bool
	msg, block int
}

// requestBuilder turns view items into system blocks and alternating
// messages, merging consecutive same-role blocks into one message.
type requestBuilder struct {
	system []sdk.TextBlockParam
	msgs   []sdk.MessageParam
	last   blockRef
	any    bool // whether last addresses a block yet
}

func (b *requestBuilder) addSystem(text string) {
	b.system = append(b.system, sdk.TextBlockParam{Text: text})
	b.last, b.any = blockRef{system: true, block: len(b.system) - 1}, true
}

func (b *requestBuilder) content(msg int) *[]sdk.ContentBlockParamUnion {
	if m := b.msgs[msg].OfUser; m != nil {
		return &m.Content
	}
	return &b.msgs[msg].OfAssistant.Content
}

// continuation opens the messages when the first one would be the
// assistant's (history windowed, no anchor band): the Messages API
// answers 400 "first message must use the user role". It is fixed text,
// so the cached prefix stays the same from one request to the next.
const continuation = reminderOpen + "The conversation continues from earlier messages." + reminderClose

func (b *requestBuilder) add(assistant bool, block sdk.ContentBlockParamUnion) {
	if assistant && len(b.msgs) == 0 {
		b.msgs = append(b.msgs, sdk.MessageParam{OfUser: &sdk.UserMessageParam{
			Content: []sdk.ContentBlockParamUnion{{OfText: &sdk.TextBlockParam{Text: continuation}}}}})
	}
	n := len(b.msgs)
	if n == 0 || (b.msgs[n-1].OfAssistant != nil) != assistant {
		if assistant {
			b.msgs = append(b.msgs, sdk.MessageParam{OfAssistant: &sdk.AssistantMessageParam{}})
		} else {
			b.msgs = append(b.msgs, sdk.MessageParam{OfUser: &sdk.UserMessageParam{}})
		}
		n++
	}
	c := b.content(n - 1)
	*c = append(*c, block)
	b.last, b.any = blockRef{msg: n - 1, block: len(*c) - 1}, true
}

func (b *requestBuilder) addText(assistant bool, text string) {
	b.add(assistant, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: text}})
}

// mark puts the cache directive on the block ref addresses.
func (b *requestBuilder) mark(ref blockRef, cc sdk.CacheControlEphemeralParam) {
	if ref.system {
		b.system[ref.block].CacheControl = cc
		return
	}
	blk := (*b.content(ref.msg))[ref.block]
	switch {
	case blk.OfText != nil:
		blk.OfText.CacheControl = cc
	case blk.OfToolUse != nil:
		blk.OfToolUse.CacheControl = cc
	case blk.OfToolResult != nil:
		blk.OfToolResult.CacheControl = cc
	}
}

// buildParams turns a view into a Messages request. It returns the table
// that maps the response's tool names back.
func (m *Model) buildParams(view *core.View, maxTokens int, ttl string) (sdk.MessageNewParams, wirename.Table, error) {
	var p sdk.MessageNewParams
	if view == nil {
		return p, nil, fmt.Errorf("%w: no view", ErrInvalidRequest)
	}
	names, err := wirename.NewTable(view.Tools, ErrInvalidRequest)
	if err != nil {
		return p, nil, err
	}
	for _, t := range view.Tools {
		schema := bytes.TrimSpace(t.Parameters)
		if len(schema) == 0 {
			schema = []byte(`{"type":"object"}`)
		}
		var top struct {
			Type any `json:"type"`
		}
		if !json.Valid(schema) || schema[0] != '{' || json.Unmarshal(schema, &top) != nil {
			return p, nil, fmt.Errorf("%w: tool %q: parameters are not a JSON schema object", ErrInvalidRequest, t.Name)
		}
		if top.Type != "object" {
			// The API requires input_schema.type "object"; say so before
			// sending rather than get a 400 back.
			return p, nil, fmt.Errorf(`%w: tool %q: parameters must be a schema of "type": "object", got "type": %v`, ErrInvalidRequest, t.Name, jsonText(top.Type))
		}
		tool := sdk.ToolParam{Name: WireName(t.Name), InputSchema: param.Override[sdk.ToolInputSchemaParam](json.RawMessage(schema))}
		if t.Description != "" {
			tool.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tool})
	}

	// Breakpoints by item index, only in the bands that may carry one and
	// no more than the API takes. None at all when anchoring is off.
	marks := map[int]core.Band{}
	for _, bp := range view.Breakpoints {
		if len(marks) == maxBreakpoints {
			break
		}
		switch bp.Band {
		case core.BandSystem, core.BandAnchor, core.BandHistory:
			marks[bp.Index] = bp.Band
		}
	}

	var b requestBuilder
	var refs []blockRef
	history := -1 // the index in refs of history's breakpoint
	i := 0
	for band, it := range view.All() {
		if err := b.addItem(band, it); err != nil {
			return p, nil, fmt.Errorf("item %d: %w", i, err)
		}
		// The breakpoint goes on the last block emitted up to this item:
		// its own block, or the one before when it rendered to nothing.
		// Merged messages do not move it, since blocks keep their order.
		if mb, ok := marks[i]; ok && b.any && (len(refs) == 0 || refs[len(refs)-1] != b.last) {
			refs = append(refs, b.last)
			if mb == core.BandHistory {
				history = len(refs) - 1
			}
		}
		i++
	}
	if len(b.msgs) == 0 {
		return p, nil, fmt.Errorf("%w: the view has no messages after the system prompt", ErrInvalidRequest)
	}
	if history >= 0 && len(refs) < maxBreakpoints {
		refs = b.bridge(refs, history)
	}
	cc := sdk.NewCacheControlEphemeralParam()
	cc.TTL = sdk.CacheControlEphemeralTTL(ttl)
	for _, ref := range refs {
		b.mark(ref, cc)
	}
	p.Model = sdk.Model(m.opts.Model)
	p.MaxTokens = int64(maxTokens)
	p.System = b.system
	p.Messages = b.msgs
	return p, names, nil
}

// lookbackBlocks is how far before a breakpoint the API looks for a
// cached prefix: it checks the breakpoint's block and the boundaries of
// the 20 blocks before it, and finds nothing further back.
const lookbackBlocks = 20

// bridge adds a breakpoint where the previous request of an agent loop
// ended, when the history breakpoint (refs[history]) is too far past it
// for the lookback to reach. Each model call of a loop sends the last one
// again plus the model's answer and what answered it: a round of 30
// parallel calls adds 30 tool_use and 30 tool_result blocks after the
// previous request's history breakpoint, so the new breakpoint would find
// nothing cached and write the whole history again. The previous request
// ended just before the last assistant message, and a breakpoint there
// reads its entry back (and looks 20 blocks further back itself, should a
// context update have been placed there since). A breakpoint costs
// nothing by itself — the API bills the tokens read and written, not the
// markers — so a bridge that finds nothing only spends a free slot; it is
// added only while the request has fewer than four and only after every
// breakpoint before history's, where it could not help.
func (b *requestBuilder) bridge(refs []blockRef, history int) []blockRef {
	end := refs[history]
	if end.system {
		return refs
	}
	// start[k] is the position of message k's first block among all the
	// message blocks.
	start := make([]int, len(b.msgs)+1)
	for k := range b.msgs {
		start[k+1] = start[k] + len(*b.content(k))
	}
	pos := func(r blockRef) int {
		if r.system {
			return -1
		}
		return start[r.msg] + r.block
	}
	a := end.msg
	for a > 0 && b.msgs[a].OfAssistant == nil {
		a--
	}
	if a == 0 {
		return refs // no assistant message: the first request of a thread
	}
	prev := blockRef{msg: a - 1, block: len(*b.content(a - 1)) - 1}
	if pos(end)-pos(prev) < lookbackBlocks {
		return refs
	}
	for _, r := range refs[:history] {
		if pos(r) >= pos(prev) {
			return refs
		}
	}
	return slices.Insert(refs, history, prev)
}

func (b *requestBuilder) addItem(band core.Band, it core.Item) error {
	switch it.Type {
	case core.TypeMessage:
		switch {
		case band == core.BandSystem && (it.Role == core.RoleSystem || it.Role == core.RoleDeveloper):
			for _, part := range it.Content {
				if hasText(part.Text) {
					b.addSystem(part.Text)
				}
			}
		case it.Role == core.RoleUser || it.Role == core.RoleAssistant:
			for _, part := range it.Content {
				if hasText(part.Text) {
					b.addText(it.Role == core.RoleAssistant, part.Text)
				}
			}
		case it.Role == core.RoleSystem || it.Role == core.RoleDeveloper:
			if text := it.Text(); hasText(text) {
				b.addText(false, reminderOpen+text+reminderClose)
			}
		default:
			return fmt.Errorf("%w: message role %q", ErrInvalidRequest, it.Role)
		}
	case core.TypeFunctionCall:
		input, err := toolInput(it.Arguments)
		if err != nil {
			return fmt.Errorf("function_call %q: %w", it.Name, err)
		}
		b.add(true, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{ID: it.CallID, Name: WireName(it.Name), Input: input}})
	case core.TypeFunctionCallOutput:
		res := &sdk.ToolResultBlockParam{ToolUseID: it.CallID}
		if hasText(it.Output) {
			res.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: it.Output}}}
		}
		b.add(false, sdk.ContentBlockParamUnion{OfToolResult: res})
	default:
		return fmt.Errorf("%w: item type %q", ErrInvalidRequest, it.Type)
	}
	return nil
}

// jsonText renders a decoded JSON value for an error message.
func jsonText(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// hasText reports whether text may be sent as a text block: the API
// rejects empty and whitespace-only ones with 400 "text content blocks
// must contain non-whitespace text", inside tool results too.
func hasText(text string) bool { return strings.TrimSpace(text) != "" }

// toolInput is a function call's arguments as the tool_use input object.
// Empty arguments are the empty object.
func toolInput(args string) (json.RawMessage, error) {
	raw := bytes.TrimSpace([]byte(args))
	if len(raw) == 0 {
		return json.RawMessage(`{}`), nil
	}
	if !json.Valid(raw) || raw[0] != '{' {
		return nil, fmt.Errorf("%w: arguments are not a JSON object", ErrInvalidRequest)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	return buf.Bytes(), nil
}
