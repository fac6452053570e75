package steering_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/steering"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/tokens"
)

func newSession(t *testing.T, opts steering.Options, store storage.Store, thread string) *core.Session {
	t.Helper()
	l, err := steering.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}, Store: store,
		System: []core.Item{core.SystemMessage("You are a database assistant.")}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(context.Background(), core.RunOptions{ThreadID: thread})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func assemble(t *testing.T, s *core.Session) *core.View {
	t.Helper()
	v, err := s.Assemble(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// guidance returns the steering text of a view and its position in
// View.Items, or -1.
func guidance(v *core.View) (string, int) {
	for i, it := range v.Items() {
		if strings.HasPrefix(it.Text(), "<steering>") {
			return it.Text(), i
		}
	}
	return "", -1
}

func dbRules() []steering.Rule {
	return []steering.Rule{
		{Name: "read-only-prod", Tool: "db_*",
			Match:  func(c core.Item) bool { return strings.Contains(c.Arguments, `"prod"`) },
			Action: steering.Deny, Reason: "production is read-only",
			Guidance: "Write to the staging database instead."},
		{Name: "explain-first", Tool: "db_write", Action: steering.Guide, Guidance: "Explain each write before making it."},
		{Name: "reads", Tool: "db_read", Action: steering.Allow},
		{Name: "nothing-else", Tool: "*", Action: steering.Deny, Reason: "only database tools are available"},
	}
}

func TestDeniedCallGetsAnOutputAndGuidanceDrainsOnceAfterHistory(t *testing.T) {
	ctx := context.Background()
	s := newSession(t, steering.Options{Rules: dbRules()}, nil, "")
	_ = s.Append(ctx, core.UserMessage("Delete the test rows in prod."))
	if text, _ := guidance(assemble(t, s)); text != "" {
		t.Fatalf("guidance before any rule matched: %q", text)
	}

	call := core.FunctionCall("c1", "db_write", `{"db":"prod","sql":"DELETE FROM t"}`)
	res, err := s.BeforeToolCall(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	if res.Allowed || res.DeniedBy != steering.DefaultID || res.Reason != "production is read-only" {
		t.Fatalf("decision = %+v", res)
	}
	if res.Output.Type != core.TypeFunctionCallOutput || res.Output.CallID != "c1" ||
		!strings.Contains(res.Output.Output, "production is read-only") {
		t.Fatalf("denial output = %+v", res.Output)
	}
	if err := s.Record(ctx, call); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, res.Output); err != nil {
		t.Fatal(err)
	}

	v := assemble(t, s)
	text, at := guidance(v)
	want := "<steering>\n<guidance rule=\"read-only-prod\">Write to the staging database instead.</guidance>\n</steering>"
	if text != want {
		t.Fatalf("guidance = %q, want %q", text, want)
	}
	history := v.Band(core.BandHistory)
	if len(history) != 3 || at <= len(v.Band(core.BandSystem))+len(v.Band(core.BandAnchor))+len(history)-1 {
		t.Fatalf("guidance at %d is not after the %d history items", at, len(history))
	}
	if u := v.Usage.Layer(steering.DefaultID); u.Band != core.BandTail || u.Served != core.ServedFresh {
		t.Fatalf("usage = %+v", u)
	}
	if st, _ := core.State[steering.State](s, steering.DefaultID); len(st.Pending) != 0 {
		t.Fatalf("queue not drained: %+v", st)
	}

	// Drained once: the next assembly has no guidance.
	_ = s.Record(ctx, core.AssistantMessage("I cannot write to prod."))
	if text, _ := guidance(assemble(t, s)); text != "" {
		t.Fatalf("guidance rendered twice: %q", text)
	}
}

func TestRuleOrderGuideAllowDeny(t *testing.T) {
	ctx := context.Background()
	s := newSession(t, steering.Options{Rules: dbRules()}, nil, "")
	decide := func(name, args string) core.ToolDecisionResult {
		t.Helper()
		res, err := s.BeforeToolCall(ctx, core.FunctionCall("c", name, args))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := decide("db_read", `{"db":"staging"}`); !res.Allowed {
		t.Fatalf("db_read denied: %+v", res)
	}
	if res := decide("shell", `{}`); res.Allowed || res.Reason != "only database tools are available" {
		t.Fatalf("shell: %+v", res)
	}
	// A Guide rule lets the call run; the same rule three times queues its
	// guidance once. db_write to staging passes Guide, is matched by no
	// Allow, then falls to the catch-all Deny: order matters.
	for range 3 {
		if res := decide("db_write", `{"db":"staging"}`); res.Allowed {
			t.Fatalf("db_write reached past the catch-all: %+v", res)
		}
	}
	st, _ := core.State[steering.State](s, steering.DefaultID)
	if len(st.Pending) != 1 || st.Pending[0].Rule != "explain-first" {
		t.Fatalf("queue = %+v", st)
	}
	text, _ := guidance(assemble(t, s))
	if strings.Count(text, "<guidance ") != 1 || !strings.Contains(text, "Explain each write") {
		t.Fatalf("guidance = %q", text)
	}
}

func TestResponseRulesQueueGuidance(t *testing.T) {
	ctx := context.Background()
	s := newSession(t, steering.Options{ResponseRules: []steering.ResponseRule{{
		Name: "no-competitors", Match: steering.Mentions("Acme", "Globex Corp"),
		Guidance: "Recommend our own products, not competitors'.",
	}}}, nil, "")
	for _, c := range []struct {
		answer string
		want   bool
	}{
		{"You could try ACME's tool.", true},
		{"Acmeville is a nice town.", false},
		{"globex corp sells one too", true},
		{"Use our product.", false},
	} {
		_ = s.Append(ctx, core.UserMessage("Which tool should I use?"))
		if err := s.Record(ctx, core.AssistantMessage(c.answer)); err != nil {
			t.Fatal(err)
		}
		text, _ := guidance(assemble(t, s))
		if got := strings.Contains(text, "Recommend our own products"); got != c.want {
			t.Fatalf("%q: guidance = %q, want present=%v", c.answer, text, c.want)
		}
	}
	// The user writing a competitor's name is not the model's answer.
	if steering.Mentions("acme")([]core.Item{core.UserMessage("what about acme?")}) {
		t.Fatal("Mentions matched a user message")
	}
}

func TestGuidanceOverBudgetWaits(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("word ", 30)
	var rules []steering.Rule
	for _, n := range []string{"a", "b", "c"} {
		rules = append(rules, steering.Rule{Name: n, Tool: n, Action: steering.Guide, Guidance: n + ": " + long})
	}
	tk := tokens.Estimate()
	one := tk.Count("<steering>\n<guidance rule=\"a\">a: "+long+"</guidance>\n</steering>") + core.ItemOverhead
	// Room for two entries, not three.
	budget := one*2 + 5
	s := newSession(t, steering.Options{Rules: rules, Budget: core.Fixed(float64(budget))}, nil, "")
	for _, n := range []string{"a", "b", "c"} {
		if _, err := s.BeforeToolCall(ctx, core.FunctionCall("c-"+n, n, `{}`)); err != nil {
			t.Fatal(err)
		}
	}
	v := assemble(t, s)
	text, _ := guidance(v)
	if !strings.Contains(text, `rule="a"`) || !strings.Contains(text, `rule="b"`) || strings.Contains(text, `rule="c"`) {
		t.Fatalf("first drain = %q", text)
	}
	if u := v.Usage.Layer(steering.DefaultID); u.Tokens > budget || u.Truncated != 0 {
		t.Fatalf("usage %+v over budget %d", u, budget)
	}
	text, _ = guidance(assemble(t, s))
	if !strings.Contains(text, `rule="c"`) || strings.Contains(text, `rule="a"`) {
		t.Fatalf("second drain = %q", text)
	}
}

func TestThreadScopeKeepsPendingGuidanceForTheNextRun(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemory()
	opts := steering.Options{Rules: dbRules(), Scope: core.ScopeThread}
	s := newSession(t, opts, store, "t1")
	if _, err := s.BeforeToolCall(ctx, core.FunctionCall("c1", "db_write", `{"db":"prod"}`)); err != nil {
		t.Fatal(err)
	}
	_ = s.Complete(ctx, "ok")
	next := newSession(t, opts, store, "t1")
	if text, _ := guidance(assemble(t, next)); !strings.Contains(text, "staging database") {
		t.Fatalf("next run of the thread = %q", text)
	}
	other := newSession(t, opts, store, "t2")
	if text, _ := guidance(assemble(t, other)); text != "" {
		t.Fatalf("another thread saw t1's guidance: %q", text)
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true},
		{"*", "scratchpad/update", true},
		{"db_*", "db_write", true},
		{"db_*", "xdb_write", false},
		{"*/update", "scratchpad/update", true},
		{"*/update", "scratchpad/updates", false},
		{"read_?ile", "read_file", true},
		{"read_?ile", "read_ffile", false},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"?", "é", true},
		{"*é", "aéé", true},
		{"", "x", false},
		{"exact", "exact", true},
	} {
		if got := steering.Glob(c.pattern, c.name); got != c.want {
			t.Errorf("Glob(%q, %q) = %v", c.pattern, c.name, got)
		}
	}
}

func TestOptionsErrors(t *testing.T) {
	ok := func(core.Item) bool { return true }
	for _, c := range []struct {
		opts  steering.Options
		field string
	}{
		{steering.Options{}, "Rules"},
		{steering.Options{Rules: []steering.Rule{{Tool: "x", Action: steering.Allow}}}, "Rules[0].Name"},
		{steering.Options{Rules: []steering.Rule{{Name: "a", Tool: "x"}}}, "Rules[0].Action"},
		{steering.Options{Rules: []steering.Rule{{Name: "a", Tool: "x", Action: steering.Deny}}}, "Rules[0].Reason"},
		{steering.Options{Rules: []steering.Rule{{Name: "a", Tool: "x", Action: steering.Guide}}}, "Rules[0].Guidance"},
		{steering.Options{Rules: []steering.Rule{{Name: "a", Action: steering.Allow}}}, "Rules[0].Tool"},
		{steering.Options{Rules: []steering.Rule{{Name: "a", Match: ok, Action: steering.Allow}, {Name: "a", Tool: "*", Action: steering.Allow}}}, "Rules[1].Name"},
		{steering.Options{Rules: []steering.Rule{{Name: "a", Tool: "*", Action: steering.Allow}},
			ResponseRules: []steering.ResponseRule{{Name: "a", Match: func([]core.Item) bool { return true }, Guidance: "g"}}}, "ResponseRules[0].Name"},
		{steering.Options{ResponseRules: []steering.ResponseRule{{Name: "r", Guidance: "g"}}}, "ResponseRules[0].Match"},
		{steering.Options{ResponseRules: []steering.ResponseRule{{Name: "r", Match: steering.Mentions("x")}}}, "ResponseRules[0].Guidance"},
		{steering.Options{Rules: []steering.Rule{{Name: "a", Tool: "*", Action: steering.Allow}}, Scope: "run"}, "Scope"},
		{steering.Options{Rules: []steering.Rule{{Name: "a", Tool: "*", Action: steering.Allow}}, Budget: core.Fixed(-1)}, "Budget.Tokens"},
	} {
		_, err := steering.New(c.opts)
		var ce *core.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || ce.Layer != steering.DefaultID {
			t.Errorf("%s: err = %v", c.field, err)
		}
	}
}

func TestPanickingRulesFailClosed(t *testing.T) {
	ctx := context.Background()
	boom := func(core.Item) bool { panic("rule bug") }
	s := newSession(t, steering.Options{
		Rules: []steering.Rule{{Name: "buggy", Tool: "db_*", Match: boom, Action: steering.Deny, Reason: "never"}},
		ResponseRules: []steering.ResponseRule{
			{Name: "buggy-response", Match: func([]core.Item) bool { panic("bug") }, Guidance: "x"},
			{Name: "fine", Match: steering.Mentions("acme"), Guidance: "No competitors."},
		},
	}, nil, "")
	res, err := s.BeforeToolCall(ctx, core.FunctionCall("c1", "db_read", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Allowed || !strings.Contains(res.Reason, `"buggy" could not be checked`) {
		t.Fatalf("a panicking deny rule let the call through: %+v", res)
	}
	if res, _ := s.BeforeToolCall(ctx, core.FunctionCall("c2", "other", `{}`)); !res.Allowed {
		t.Fatalf("a call the rule does not cover was denied: %+v", res)
	}
	_ = s.Record(ctx, core.AssistantMessage("Try Acme."))
	if text, _ := guidance(assemble(t, s)); !strings.Contains(text, "No competitors.") || strings.Contains(text, "buggy") {
		t.Fatalf("guidance = %q", text)
	}
}

// The package example used to match strings.Contains(call.Arguments,
// "DELETE"), which a JSON escape ("\u0044ELETE", decoded by the tool back to
// DELETE), lower case or a duplicate key slipped past.
func TestArgsContainMatchesWhatTheToolReceives(t *testing.T) {
	rules := []steering.Rule{{Name: "no-deletes", Tool: "sql_*", Action: steering.Deny, Reason: "no",
		Match: steering.ArgsContain("DELETE")}}
	for _, args := range []string{
		`{"sql":"DELETE FROM orders"}`,
		`{"sql":"\u0044ELETE FROM orders"}`,
		`{"sql":"delete from orders"}`,
		`{"sql":"DeLeTe from orders"}`,
		`{"sql":"ＤＥＬＥＴＥ FROM orders"}`,
		`{"sql":"SELECT 1","sql":"\u0064elete from orders"}`,
		`{"q":{"parts":["x","dele\u0074e"]}}`,
		`{"sql":"DELETE FROM`, // not JSON: matched raw
	} {
		if d := steering.Decide(rules, steering.State{}, core.FunctionCall("c", "sql_exec", args)); !d.Deny {
			t.Errorf("%s: allowed", args)
		}
	}
	for _, args := range []string{`{"sql":"SELECT * FROM orders"}`, `{}`, ``, `{"n":42}`} {
		if d := steering.Decide(rules, steering.State{}, core.FunctionCall("c", "sql_exec", args)); d.Deny {
			t.Errorf("%s: denied", args)
		}
	}
	if !steering.ArgsContain("42")(core.FunctionCall("c", "f", `{"n":42}`)) {
		t.Error("numbers are not matched")
	}
	if steering.ArgsContain()(core.FunctionCall("c", "f", `{"a":"b"}`)) {
		t.Error("no words matched")
	}
}

// A Deny rule whose Match outlasts the beforeToolCall timeout used to let
// the call run (the runtime failed open on a timeout). It denies now.
func TestSlowMatchDenies(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	defer close(release)
	s := newSession(t, steering.Options{
		Rules: []steering.Rule{{Name: "no-rm", Tool: "shell", Action: steering.Deny, Reason: "no",
			Match: func(core.Item) bool { <-release; return true }}},
		Timeouts: core.Timeouts{core.HookBeforeToolCall: 20 * time.Millisecond},
	}, nil, "")
	res, err := s.BeforeToolCall(ctx, core.FunctionCall("c", "shell", `{"cmd":"rm -rf /"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Allowed {
		t.Fatal("a deny rule timed out and the call was ALLOWED")
	}
	if !strings.Contains(res.Output.Output, "could not be checked") {
		t.Fatalf("output %q", res.Output.Output)
	}
	if d := s.Diagnostics(); len(d) != 1 || d[0].Kind != core.KindTimeout {
		t.Fatalf("diagnostics %+v", d)
	}
}
