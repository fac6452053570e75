package agent_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stratamem/strata/agent"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/toolcalls"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/scripted"
	"github.com/stratamem/strata/storage"
)

// fullDisk is the in-memory store whose writes fail once fail is set: the
// state store of a machine whose disk just filled up.
type fullDisk struct {
	*storage.Memory
	fail atomic.Bool
}

var errDiskFull = errors.New("disk full")

func (f *fullDisk) Put(ctx context.Context, k storage.Key, v []byte, e int64) (int64, error) {
	if f.fail.Load() {
		return 0, errDiskFull
	}
	return f.Memory.Put(ctx, k, v, e)
}

type saves struct{ N int }

// TestSaveFailureLeavesNoDanglingCall: when a layer cannot save its state
// after the model's calls (or their outputs) were logged, every call still
// gets an output, so the next request is a well-formed conversation, and
// the turn reports the failure.
func TestSaveFailureLeavesNoDanglingCall(t *testing.T) {
	bump := func(s saves) *saves { s.N++; return &s }
	cases := map[string]struct {
		hooks core.Hooks[saves]
		calls []core.Item
	}{
		"after the model call": {
			hooks: core.Hooks[saves]{AfterModelCall: func(_ context.Context, p core.StoreParams[saves]) (*saves, error) {
				return bump(p.State), nil
			}},
			calls: []core.Item{core.FunctionCall("a", "echo", `{}`)},
		},
		"on a tool output": {
			hooks: core.Hooks[saves]{OnItemAppend: func(_ context.Context, p core.ItemAppendParams[saves]) (*saves, error) {
				if p.Item.Type != core.TypeFunctionCallOutput {
					return nil, nil
				}
				return bump(p.State), nil
			}},
			calls: []core.Item{core.FunctionCall("a", "echo", `{}`), core.FunctionCall("b", "echo", `{}`)},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			disk := &fullDisk{Memory: storage.NewMemory()}
			echo := toolcalls.MustTool(toolcalls.ToolDef[struct{}, string]{Name: "echo", Execute: func(context.Context, struct{}, core.ToolContext) (string, error) {
				return "x", nil
			}})
			rt, err := core.NewRuntime(core.Config{Tools: []core.Tool{echo}, Store: disk,
				Layers: []core.AnyLayer{core.Layer[saves]{ID: "l", Slot: 100, Scope: core.ScopeThread, Hooks: c.hooks}}})
			if err != nil {
				t.Fatal(err)
			}
			s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t"})
			if err != nil {
				t.Fatal(err)
			}
			model := &scripted.Model{Script: func(_ provider.Request, call int) ([]core.Item, error) {
				if call == 0 {
					return c.calls, nil
				}
				return []core.Item{core.AssistantMessage("done")}, nil
			}}
			a, err := agent.New(agent.Options{Model: model})
			if err != nil {
				t.Fatal(err)
			}
			disk.fail.Store(true)
			res, err := a.Turn(ctx, s, core.UserMessage("go"))
			if !errors.Is(err, errDiskFull) {
				t.Fatalf("Turn error %v, want the save failure", err)
			}
			answered := map[string]bool{}
			calls := 0
			for _, it := range s.Items() {
				switch it.Type {
				case core.TypeFunctionCall:
					calls++
				case core.TypeFunctionCallOutput:
					answered[it.CallID] = true
				}
			}
			if calls != len(c.calls) || len(answered) != calls {
				t.Fatalf("%d calls logged, %d answered", calls, len(answered))
			}
			if got := len(res.Rounds[0].ToolOutputs); got != calls {
				t.Fatalf("result lists %d tool outputs, want %d", got, calls)
			}
		})
	}
}
