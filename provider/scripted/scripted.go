// Package scripted is a provider.Model that answers from a Go function
// instead of a network model: for examples, demos and tests that must run
// offline. When given a cache simulator it also reports realistic cache
// figures: the view is turned into the request a provider would receive
// (one block per item, cache breakpoints where the view asks for them) and
// sent through github.com/stratamem/strata/cachesim.
//
// It is not a language model and does not pretend to be one: what it
// answers is exactly what the script returns. New builds a checked model:
// an answer that cannot be right for the view it was given (nothing at
// all, a call id the conversation already holds, or a call repeated after
// its output came back in the same turn, which would otherwise loop until
// the agent's round limit) fails the call with a *MismatchError instead of
// spinning quietly.
//
//	sim, _ := cachesim.NewAnthropic(cachesim.AnthropicOptions{})
//	model, err := scripted.New(func(req provider.Request, call int) ([]core.Item, error) {
//		return []core.Item{core.AssistantMessage("Hello!")}, nil
//	}, scripted.Options{Cache: sim})
package scripted

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/stratamem/strata/cachesim"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/internal/httperr"
	"github.com/stratamem/strata/tokens"
)

// Script decides the model's output for a request. call counts the calls
// made to the model so far, from 0.
type Script func(req provider.Request, call int) ([]core.Item, error)

// Options configure New. The zero value is a model without a cache
// simulation, counting with tokens.Estimate().
type Options struct {
	// Cache, when set, simulates the provider's prompt cache and fills
	// Response.Cache with its figures.
	Cache cachesim.Simulator
	// Name is the model name sent to the simulator; "scripted" when empty.
	Name string
	// Tokenizer counts tokens per item; tokens.Estimate() when nil.
	Tokenizer tokens.Tokenizer
	// Clock gives each request's time; nil starts at 2026-01-01 and
	// advances 30 s per call.
	Clock func() time.Time
}

// New returns a checked scripted model (Model.Check set): it fails with
// ErrNoScript when script is nil.
func New(script Script, opts Options) (*Model, error) {
	if script == nil {
		return nil, ErrNoScript
	}
	return &Model{Script: script, Cache: opts.Cache, Name: opts.Name, Tokenizer: opts.Tokenizer, Clock: opts.Clock, Check: true}, nil
}

// Model is a scripted provider.Model. New is the usual way to build one;
// a literal works too, without the checks unless Check is set (tests that
// script a malformed answer on purpose use a literal).
type Model struct {
	// Script answers each call. Required.
	Script Script
	// Cache, when set, simulates the provider's prompt cache and fills
	// Response.Cache with its figures.
	Cache cachesim.Simulator
	// Name is the model name sent to the simulator (its minimum cacheable
	// length can depend on it); "scripted" when empty.
	Name string
	// Tokenizer counts tokens per item; tokens.Estimate() when nil.
	Tokenizer tokens.Tokenizer
	// Clock gives each request's time; nil starts at 2026-01-01 and
	// advances 30 s per call, so TTLs behave deterministically.
	Clock func() time.Time
	// Check makes Respond refuse, with a *MismatchError, an answer that
	// does not fit the view (see MismatchError). New sets it.
	Check bool

	mu    sync.Mutex
	calls int
}

// ErrNoScript is returned when Script is nil.
var ErrNoScript = errors.New("scripted: no script")

// ErrNoView is returned for a request without a view.
var ErrNoView = errors.New("scripted: no view")

// Respond implements provider.Model. It fails with ErrNoScript or
// ErrNoView, and with a *provider.Error when ctx is done: retryable for a
// deadline, final for a cancellation, as with the real adapters.
func (m *Model) Respond(ctx context.Context, req provider.Request) (*provider.Response, error) {
	if m.Script == nil {
		return nil, ErrNoScript
	}
	if req.View == nil {
		return nil, ErrNoView
	}
	if err := ctx.Err(); err != nil {
		// The same advice as the real adapters: a deadline is retryable,
		// a cancellation (the caller gave up) is final.
		e := &provider.Error{Provider: "scripted", Err: err}
		httperr.FromFailure(ctx, e, err)
		return nil, e
	}
	m.mu.Lock()
	call := m.calls
	m.calls++
	m.mu.Unlock()
	items, err := m.Script(req, call)
	if err != nil {
		return nil, err
	}
	if m.Check {
		if err := check(req.View, call, items); err != nil {
			return nil, err
		}
	}
	resp := &provider.Response{Items: items, Model: m.name(), StopReason: "end_turn"}
	for _, it := range items {
		if it.Type == core.TypeFunctionCall {
			resp.StopReason = "tool_use"
		}
	}
	tk := m.Tokenizer
	if tk == nil {
		tk = tokens.Estimate()
	}
	sim := Request(req.View, tk)
	if req.CacheTTL > 5*time.Minute {
		// As the Anthropic adapter does: every breakpoint asks for the
		// extended lifetime.
		for i := range sim.Blocks {
			if sim.Blocks[i].Breakpoint {
				sim.Blocks[i].TTL = cachesim.TTL1h
			}
		}
	}
	sim.Model = m.name()
	sim.At = m.now(call)
	resp.InputTokens = sim.Tokens()
	for _, it := range items {
		resp.OutputTokens += tk.Count(it.Text()) + core.ItemOverhead
	}
	if m.Cache != nil {
		u, err := m.Cache.Send(sim)
		if err != nil {
			return nil, err
		}
		resp.Cache = core.CacheReport{Reported: true, ReadTokens: u.ReadTokens, WriteTokens: u.WriteTokens(), UncachedTokens: u.UncachedTokens}
	}
	return resp, nil
}

// ErrMismatch is wrapped by every *MismatchError.
var ErrMismatch = errors.New("scripted: the script's answer does not fit the view")

// MismatchError is a checked model's refusal of a script's answer: the
// script was written for another conversation than the one the view
// shows. A real model would not answer so, and carrying on would only
// spin (an agent loop calling the same tool until its round limit, then
// ending with no answer).
type MismatchError struct {
	// Call is the model call (from 0) whose answer was refused.
	Call int
	// User is the newest user message of the view, "" when it has none:
	// what the script was answering.
	User string
	// Reason says what does not fit.
	Reason string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("scripted: call %d (newest user message %q): %s", e.Call, e.User, e.Reason)
}

func (e *MismatchError) Unwrap() error { return ErrMismatch }

// check applies Model.Check's rules to a script's answer.
func check(v *core.View, call int, items []core.Item) error {
	// What the view shows after the newest user message: this turn's
	// calls, by name and arguments, with whether their output came back.
	user := ""
	ids := map[string]bool{}
	type key struct{ name, args string }
	called := map[key]string{}
	answered := map[string]bool{}
	for _, it := range v.Items() {
		switch it.Type {
		case core.TypeMessage:
			if it.Role == core.RoleUser {
				user = it.Text()
				clear(called)
				clear(answered)
			}
		case core.TypeFunctionCall:
			ids[it.CallID] = true
			called[key{it.Name, it.Arguments}] = it.CallID
		case core.TypeFunctionCallOutput:
			answered[it.CallID] = true
		}
	}
	fail := func(format string, args ...any) error {
		return &MismatchError{Call: call, User: user, Reason: fmt.Sprintf(format, args...)}
	}
	if len(items) == 0 {
		return fail("the script returned no items: answer with an assistant message or a function call")
	}
	for _, it := range items {
		if it.Type != core.TypeFunctionCall {
			continue
		}
		if ids[it.CallID] {
			return fail("call id %q of %s is already in the conversation: give every call an id of its own (e.g. from the call number)", it.CallID, it.Name)
		}
		if id, ok := called[key{it.Name, it.Arguments}]; ok && answered[id] {
			return fail("%s %s was already called in this turn and its output is in the view; "+
				"the script must read the history (a function_call_output after the user message) and answer instead of calling again",
				it.Name, abbreviate(it.Arguments))
		}
		ids[it.CallID] = true
	}
	return nil
}

func abbreviate(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		return string(r[:77]) + "..."
	}
	return s
}

func (m *Model) name() string {
	if m.Name == "" {
		return "scripted"
	}
	return m.Name
}

func (m *Model) now(call int) time.Time {
	if m.Clock != nil {
		return m.Clock()
	}
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(call) * 30 * time.Second)
}

// Request turns a view into the block sequence a provider would receive:
// one block for the tool schemas, then one block per item, with a cache
// breakpoint after each block the view names (the tools are covered by the
// system breakpoint, as on Anthropic). A nil view has no blocks. Token counts are the runtime's
// (text plus core.ItemOverhead per item).
func Request(v *core.View, tk tokens.Tokenizer) cachesim.Request {
	var req cachesim.Request
	if v == nil {
		return req
	}
	if len(v.Tools) > 0 {
		raw, _ := json.Marshal(v.Tools)
		n := 0
		for _, t := range v.Tools {
			n += tk.Count(t.Name+" "+t.Description+" "+string(t.Parameters)) + core.ItemOverhead
		}
		req.Blocks = append(req.Blocks, cachesim.Block{Hash: sha256.Sum256(raw), Tokens: n})
	}
	offset := len(req.Blocks)
	for _, it := range v.Items() {
		raw, _ := json.Marshal(it)
		req.Blocks = append(req.Blocks, cachesim.Block{Hash: sha256.Sum256(raw), Tokens: tk.Count(it.Text()) + core.ItemOverhead})
	}
	for _, bp := range v.Breakpoints {
		req.Blocks[offset+bp.Index].Breakpoint = true
	}
	return req
}
