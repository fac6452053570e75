package scripted_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/scripted"
)

// turnView is the view after a user message, one call of lookup and its
// output: what a script sees on the second round of a turn.
func turnView(t *testing.T) *core.View {
	t.Helper()
	ctx := context.Background()
	rt, err := core.NewRuntime(core.Config{System: []core.Item{core.SystemMessage("sys")}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { return s.Append(ctx, core.UserMessage("where is my parcel?")) },
		func() error { return s.Record(ctx, core.FunctionCall("c1", "lookup", `{"what":"parcel"}`)) },
		func() error { return s.Append(ctx, core.FunctionCallOutput("c1", "in Lisbon")) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNewChecksTheAnswer(t *testing.T) {
	if _, err := scripted.New(nil, scripted.Options{}); !errors.Is(err, scripted.ErrNoScript) {
		t.Fatalf("New(nil) = %v", err)
	}
	v := turnView(t)
	for _, tc := range []struct {
		name   string
		answer []core.Item
		reason string // "" when the answer fits
	}{
		{"nothing", nil, "returned no items"},
		{"the same call again", []core.Item{core.FunctionCall("c2", "lookup", `{"what":"parcel"}`)}, "already called in this turn"},
		{"a used call id", []core.Item{core.FunctionCall("c1", "lookup", `{"what":"invoice"}`)}, `call id "c1"`},
		{"two calls with one id", []core.Item{core.FunctionCall("c2", "lookup", `{"what":"a"}`), core.FunctionCall("c2", "lookup", `{"what":"b"}`)}, `call id "c2"`},
		{"an answer", []core.Item{core.AssistantMessage("It is in Lisbon.")}, ""},
		{"another call", []core.Item{core.FunctionCall("c2", "lookup", `{"what":"invoice"}`)}, ""},
	} {
		m, err := scripted.New(func(provider.Request, int) ([]core.Item, error) { return tc.answer, nil }, scripted.Options{})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := m.Respond(context.Background(), provider.Request{View: v})
		if tc.reason == "" {
			if err != nil || len(resp.Items) != len(tc.answer) {
				t.Errorf("%s: resp %+v, err %v", tc.name, resp, err)
			}
			continue
		}
		var me *scripted.MismatchError
		if !errors.As(err, &me) || !errors.Is(err, scripted.ErrMismatch) || !strings.Contains(me.Reason, tc.reason) ||
			me.User != "where is my parcel?" || me.Call != 0 {
			t.Errorf("%s: err = %v, want a mismatch saying %q", tc.name, err, tc.reason)
		}
		// A literal model does not check: a test can script the same
		// answer on purpose.
		lit := &scripted.Model{Script: func(provider.Request, int) ([]core.Item, error) { return tc.answer, nil }}
		if _, err := lit.Respond(context.Background(), provider.Request{View: v}); err != nil {
			t.Errorf("%s: unchecked model: %v", tc.name, err)
		}
	}
}
