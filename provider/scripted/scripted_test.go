package scripted_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/cachesim"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/scripted"
	"github.com/stratamem/strata/tokens"
)

func view(t *testing.T, disabled bool) *core.View {
	t.Helper()
	ctx := context.Background()
	anchor := core.Layer[int]{ID: "a", Scope: core.ScopeExecution, Placement: core.PlacementAnchor,
		Hooks: core.Hooks[int]{Recall: func(context.Context, core.RecallParams[int]) (core.Recall[int], error) {
			return core.Text[int]("anchored " + strings.Repeat("x", 6000))
		}}}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{anchor}, Cache: core.CacheConfig{Disabled: disabled},
		System: []core.Item{core.SystemMessage("sys")}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	_ = s.Append(ctx, core.UserMessage("hello"))
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRequestBlocksAndBreakpoints(t *testing.T) {
	v := view(t, false)
	req := scripted.Request(v, tokens.Estimate())
	if len(req.Blocks) != 3 {
		t.Fatalf("blocks = %d, want one per item", len(req.Blocks))
	}
	for i, b := range req.Blocks {
		if !b.Breakpoint {
			t.Errorf("block %d (system, anchor, history) has no breakpoint", i)
		}
	}
	if got, want := req.Blocks[1].Tokens, tokens.Estimate().Count(v.Band(core.BandAnchor)[0].Text())+core.ItemOverhead; got != want {
		t.Fatalf("anchor block tokens = %d, want %d", got, want)
	}
	for _, b := range scripted.Request(view(t, true), tokens.Estimate()).Blocks {
		if b.Breakpoint {
			t.Fatal("a view without breakpoints produced one")
		}
	}
}

func TestRespondReportsSimulatedCache(t *testing.T) {
	sim, _ := cachesim.NewAnthropic(cachesim.AnthropicOptions{})
	m := &scripted.Model{Cache: sim, Script: func(req provider.Request, call int) ([]core.Item, error) {
		return []core.Item{core.AssistantMessage("ok")}, nil
	}}
	v := view(t, false)
	first, err := m.Respond(context.Background(), provider.Request{View: v})
	if err != nil {
		t.Fatal(err)
	}
	second, _ := m.Respond(context.Background(), provider.Request{View: v})
	if !first.Cache.Reported || first.Cache.ReadTokens != 0 || first.Cache.WriteTokens == 0 {
		t.Fatalf("first = %+v", first.Cache)
	}
	if second.Cache.ReadTokens != first.Cache.WriteTokens {
		t.Fatalf("second read %d, first wrote %d", second.Cache.ReadTokens, first.Cache.WriteTokens)
	}
	if _, err := (&scripted.Model{}).Respond(context.Background(), provider.Request{View: v}); !errors.Is(err, scripted.ErrNoScript) {
		t.Fatalf("no script: %v", err)
	}
}

// A request without a view is refused with a sentinel, not a panic, and
// the script is not asked.
func TestRespondWithoutView(t *testing.T) {
	asked := false
	m := &scripted.Model{Script: func(provider.Request, int) ([]core.Item, error) {
		asked = true
		return []core.Item{core.AssistantMessage("ok")}, nil
	}}
	resp, err := m.Respond(context.Background(), provider.Request{})
	if !errors.Is(err, scripted.ErrNoView) || resp != nil || asked {
		t.Fatalf("resp = %v, err = %v, script asked = %v", resp, err, asked)
	}
	if got := scripted.Request(nil, tokens.Estimate()); len(got.Blocks) != 0 {
		t.Fatalf("Request(nil) = %+v", got)
	}
}

// A cancelled call is final and a timed-out one retryable, as with the
// real adapters.
func TestContextErrorsMatchAdapters(t *testing.T) {
	m := &scripted.Model{Script: func(provider.Request, int) ([]core.Item, error) {
		return []core.Item{core.AssistantMessage("ok")}, nil
	}}
	v := view(t, false)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), -time.Second)
	defer cancel2()
	for _, tc := range []struct {
		ctx       context.Context
		cause     error
		retryable bool
	}{{cancelled, context.Canceled, false}, {expired, context.DeadlineExceeded, true}} {
		_, err := m.Respond(tc.ctx, provider.Request{View: v})
		var perr *provider.Error
		if !errors.As(err, &perr) || perr.Retryable != tc.retryable || !errors.Is(err, tc.cause) || perr.Provider != "scripted" {
			t.Fatalf("%v: err = %#v", tc.cause, err)
		}
	}
}
