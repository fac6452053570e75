package steering

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/internal/layeropt"
	"github.com/stratamem/strata/tokens"
)

// DefaultID is the layer id when Options.ID is empty.
const DefaultID = "steering"

// Action is what a tool-call rule does when it matches.
type Action string

// Actions. There is no zero value: every rule says what it does.
const (
	// Allow lets the call run and stops checking.
	Allow Action = "allow"
	// Deny refuses the call with the rule's Reason and stops checking.
	Deny Action = "deny"
	// Guide queues the rule's guidance and goes on checking.
	Guide Action = "guide"
)

// Rule is a tool-call rule. It matches a call when Tool (if set) matches
// the call's name and Match (if set) returns true; at least one of them
// must be set (Tool "*" matches every call).
type Rule struct {
	// Name identifies the rule in rendered guidance; unique in a layer.
	Name string
	// Tool is a glob over the function name: '*' matches any run of
	// characters ('/' included), '?' one character.
	Tool string
	// Match decides on the call item (name, JSON arguments). It runs in
	// the beforeToolCall hook, under its timeout; a Match that panics or
	// outlasts the timeout denies the call (fail closed).
	//
	// call.Arguments is JSON text as the model wrote it, not what the tool
	// receives: strings.Contains(call.Arguments, "DELETE") is bypassed by
	// "\u0044ELETE" (which the tool decodes to DELETE), by "delete", by a
	// duplicate key. Match on decoded values: ArgsContain matches decoded,
	// NFKC-normalised, case-folded argument values, or decode them with
	// core.DecodeArguments. A substring blocklist stays a blocklist (a
	// tool may accept other spellings still); an Allow rule for the known
	// good calls followed by a Deny for the rest is the stronger policy.
	Match  func(call core.Item) bool
	Action Action
	// Reason explains a denial to the model; required for Deny.
	Reason string
	// Guidance is queued when the rule matches; required for Guide.
	Guidance string
}

// ResponseRule queues guidance when what the model wrote in one call
// matches.
type ResponseRule struct {
	// Name identifies the rule; unique in a layer (across Rules too).
	Name string
	// Match gets the items of one model call, in order.
	Match    func(items []core.Item) bool
	Guidance string
}

// Options configure the layer.
type Options struct {
	// ID names the layer; DefaultID when empty.
	ID string
	// Slot defaults to core.SlotSteering.
	Slot core.Slot
	// Scope defaults to core.ScopeExecution.
	Scope core.Scope
	// Budget defaults to auto. Guidance that does not fit waits.
	Budget core.Budget
	// Rules check tool calls, in order.
	Rules []Rule
	// ResponseRules check what the model wrote, in order.
	ResponseRules []ResponseRule
	// Tokenizer counts guidance to fit the budget; nil means
	// tokens.Estimate(). Give it the runtime's tokenizer for exact fits.
	Tokenizer tokens.Tokenizer
	// Timeouts override the runtime's hook timeouts (Match functions run
	// under BeforeToolCall and AfterModelCall).
	Timeouts core.Timeouts
}

// Pending is one queued piece of guidance.
type Pending struct {
	Rule string `json:"rule"`
	Text string `json:"text"`
}

// State is the guidance queue, oldest first.
type State struct {
	Pending []Pending `json:"pending,omitempty"`
}

// queue returns a state with the guidance of rule appended, unless that
// rule's guidance already waits. ok is false when nothing was added.
func (s State) queue(rule, text string) (State, bool) {
	for _, p := range s.Pending {
		if p.Rule == rule {
			return s, false
		}
	}
	return State{Pending: append(slices.Clip(s.Pending), Pending{Rule: rule, Text: text})}, true
}

// New validates opts and returns the layer. Invalid options fail with a
// *core.ConfigError naming the field.
func New(opts Options) (core.Layer[State], error) {
	if opts.ID == "" {
		opts.ID = DefaultID
	}
	bad := func(field, reason string) error { return layeropt.Error(opts.ID, field, reason) }
	if len(opts.Rules) == 0 && len(opts.ResponseRules) == 0 {
		return core.Layer[State]{}, bad("Rules", "no rules: set Rules or ResponseRules")
	}
	names := map[string]bool{}
	name := func(field, n string) error {
		switch {
		case strings.TrimSpace(n) == "":
			return bad(field, "empty")
		case !utf8.ValidString(n):
			return bad(field, "not valid UTF-8")
		case names[n]:
			return bad(field, fmt.Sprintf("rule name %q used twice", n))
		}
		names[n] = true
		return nil
	}
	for i, r := range opts.Rules {
		f := fmt.Sprintf("Rules[%d].", i)
		if err := name(f+"Name", r.Name); err != nil {
			return core.Layer[State]{}, err
		}
		switch r.Action {
		case Allow, Guide:
		case Deny:
			if strings.TrimSpace(r.Reason) == "" {
				return core.Layer[State]{}, bad(f+"Reason", "a Deny rule needs a reason for the model")
			}
		default:
			return core.Layer[State]{}, bad(f+"Action", fmt.Sprintf("unknown action %q (want allow, deny or guide)", r.Action))
		}
		if r.Action == Guide && strings.TrimSpace(r.Guidance) == "" {
			return core.Layer[State]{}, bad(f+"Guidance", "a Guide rule needs guidance")
		}
		if r.Tool == "" && r.Match == nil {
			return core.Layer[State]{}, bad(f+"Tool", `set Tool or Match (Tool "*" matches every call)`)
		}
	}
	for i, r := range opts.ResponseRules {
		f := fmt.Sprintf("ResponseRules[%d].", i)
		if err := name(f+"Name", r.Name); err != nil {
			return core.Layer[State]{}, err
		}
		if r.Match == nil {
			return core.Layer[State]{}, bad(f+"Match", "nil")
		}
		if strings.TrimSpace(r.Guidance) == "" {
			return core.Layer[State]{}, bad(f+"Guidance", "empty")
		}
	}
	var err error
	if opts.Scope, err = layeropt.Scope(opts.ID, opts.Scope, core.ScopeExecution); err != nil {
		return core.Layer[State]{}, err
	}
	if opts.Slot == 0 {
		opts.Slot = core.SlotSteering
	}
	if err = layeropt.Budget(opts.ID, opts.Budget); err != nil {
		return core.Layer[State]{}, err
	}
	tk := opts.Tokenizer
	if tk == nil {
		tk = tokens.Estimate()
	}
	rules := slices.Clone(opts.Rules)
	responses := slices.Clone(opts.ResponseRules)
	return core.Layer[State]{
		ID: opts.ID, Name: "Steering", Slot: opts.Slot, Scope: opts.Scope, Budget: opts.Budget,
		// Recall drains the queue (it returns state), so the layer is never
		// pinned; guidance belongs in the tail, last before the model
		// answers.
		Placement: core.PlacementTail, Timeouts: opts.Timeouts,
		Hooks: core.Hooks[State]{
			BeforeToolCall: func(_ context.Context, p core.CallParams[State]) (core.ToolDecision[State], error) {
				return Decide(rules, p.State, p.Call), nil
			},
			AfterModelCall: func(_ context.Context, p core.StoreParams[State]) (*State, error) {
				st, changed := p.State, false
				for _, r := range responses {
					if matched, ok := safely(func() bool { return r.Match(p.NewItems) }); ok && matched {
						var added bool
						st, added = st.queue(r.Name, r.Guidance)
						changed = changed || added
					}
				}
				if !changed {
					return nil, nil
				}
				return &st, nil
			},
			Recall: func(_ context.Context, p core.RecallParams[State]) (core.Recall[State], error) {
				text, rest, ok := Drain(p.State, p.Budget, tk)
				if !ok {
					return core.Recall[State]{}, nil
				}
				r, _ := core.Text[State](text)
				r.State = &rest
				return r, nil
			},
		},
	}, nil
}

// Decide checks call against rules (see the package doc) and returns the
// decision, with the new queue as State when guidance was queued. A Match
// function that panics denies the call: a rule that cannot be checked
// must not let through what it exists to stop.
func Decide(rules []Rule, st State, call core.Item) core.ToolDecision[State] {
	var d core.ToolDecision[State]
	changed := false
	for _, r := range rules {
		if r.Tool != "" && !Glob(r.Tool, call.Name) {
			continue
		}
		if r.Match != nil {
			matched, ok := safely(func() bool { return r.Match(call) })
			if !ok {
				d.Deny, d.Reason = true, fmt.Sprintf("steering rule %q could not be checked", r.Name)
				break
			}
			if !matched {
				continue
			}
		}
		if r.Guidance != "" {
			var added bool
			st, added = st.queue(r.Name, r.Guidance)
			changed = changed || added
		}
		if r.Action == Deny {
			d.Deny, d.Reason = true, r.Reason
		}
		if r.Action != Guide {
			break
		}
	}
	if changed {
		d.State = &st
	}
	return d
}

// safely runs a user match function; ok is false when it panicked.
func safely(match func() bool) (matched, ok bool) {
	defer func() {
		if recover() != nil {
			matched, ok = false, false
		}
	}()
	return match(), true
}

// Drain renders the oldest pending guidance that fits budget tokens (as
// counted by tk, plus the runtime's per-item overhead) and returns the
// rest of the queue. ok is false when nothing is pending. An entry too
// large for the budget on its own is rendered anyway when it is first in
// line, so it cannot block the queue; the runtime then cuts it with a
// diagnostic.
func Drain(st State, budget int, tk tokens.Tokenizer) (text string, rest State, ok bool) {
	if len(st.Pending) == 0 {
		return "", st, false
	}
	n := len(st.Pending)
	for ; n > 1; n-- {
		if tk.Count(render(st.Pending[:n]))+core.ItemOverhead <= budget {
			break
		}
	}
	rest = State{Pending: slices.Clone(st.Pending[n:])}
	if len(rest.Pending) == 0 {
		rest.Pending = nil
	}
	return render(st.Pending[:n]), rest, true
}

func render(pending []Pending) string {
	var b strings.Builder
	b.WriteString("<steering>\n")
	for _, p := range pending {
		b.WriteString(`<guidance rule="`)
		b.WriteString(attrEscaper.Replace(p.Rule))
		b.WriteString(`">`)
		b.WriteString(p.Text)
		b.WriteString("</guidance>\n")
	}
	b.WriteString("</steering>")
	return b.String()
}

var attrEscaper = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;", `"`, "&quot;")

// Glob reports whether name matches pattern, where '*' matches any run of
// characters ('/' included, unlike path.Match, since provided functions
// are named "layer/fn") and '?' matches one character. Every other
// character matches itself.
func Glob(pattern, name string) bool {
	// Iterative matcher with one backtrack point: linear in practice, no
	// recursion on hostile patterns.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				star, mark = p, n
				p++
				continue
			case '?':
				_, size := utf8.DecodeRuneInString(name[n:])
				p++
				n += size
				continue
			default:
				if pattern[p] == name[n] {
					p++
					n++
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		p = star + 1
		_, size := utf8.DecodeRuneInString(name[mark:])
		mark += size
		n = mark
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// ArgsContain returns a Rule.Match matcher that is true when a call's
// arguments contain one of words, compared on what the tool receives: every
// string of the JSON arguments (values and keys, duplicate keys included,
// "\u0044" escapes decoded) and every number, NFKC-normalised and
// case-folded, so "DELETE", "delete", "\u0044ELETE" and "ＤＥＬＥＴＥ" all
// match "delete". Arguments that are not valid JSON are matched as raw
// text the same way, so a malformed call cannot slip past. Empty words are
// ignored; with none the matcher is always false.
func ArgsContain(words ...string) func(call core.Item) bool {
	var folded []string
	for _, w := range words {
		if w = fold(w); w != "" {
			folded = append(folded, w)
		}
	}
	return func(call core.Item) bool {
		if len(folded) == 0 {
			return false
		}
		hit := func(s string) bool {
			s = fold(s)
			for _, w := range folded {
				if strings.Contains(s, w) {
					return true
				}
			}
			return false
		}
		if hit(call.Arguments) {
			return true
		}
		dec := json.NewDecoder(strings.NewReader(call.Arguments))
		dec.UseNumber()
		for {
			tok, err := dec.Token()
			if err != nil {
				return false // io.EOF, or invalid JSON already matched raw
			}
			switch v := tok.(type) {
			case string:
				if hit(v) {
					return true
				}
			case json.Number:
				if hit(v.String()) {
					return true
				}
			}
		}
	}
}

// fold normalises s for matching: NFKC, then Unicode case folding. A
// cases.Caser is not safe for concurrent use, so each call makes one.
func fold(s string) string {
	return cases.Fold().String(norm.NFKC.String(s))
}

// Mentions returns a ResponseRule matcher that is true when an assistant
// message among the items contains one of words as a whole word (or
// phrase), ignoring case.
func Mentions(words ...string) func(items []core.Item) bool {
	lower := make([]string, 0, len(words))
	for _, w := range words {
		if w = strings.ToLower(strings.TrimSpace(w)); w != "" {
			lower = append(lower, w)
		}
	}
	return func(items []core.Item) bool {
		for _, it := range items {
			if it.Type != core.TypeMessage || it.Role != core.RoleAssistant {
				continue
			}
			text := strings.ToLower(it.Text())
			for _, w := range lower {
				if containsWord(text, w) {
					return true
				}
			}
		}
		return false
	}
}

func containsWord(text, w string) bool {
	for from := 0; from <= len(text)-len(w); {
		i := strings.Index(text[from:], w)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(w)
		before, _ := utf8.DecodeLastRuneInString(text[:i])
		after, _ := utf8.DecodeRuneInString(text[end:])
		if !isWordRune(before) && !isWordRune(after) {
			return true
		}
		_, size := utf8.DecodeRuneInString(text[i:])
		from = i + size
	}
	return false
}

func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
}
