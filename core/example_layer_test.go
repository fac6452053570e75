package core_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/storage"
)

// Profile is the state of the profile layer: what the model has learnt
// about the user, key by key. The runtime persists it as JSON under the
// layer's scope.
type Profile struct {
	Facts map[string]string `json:"facts"`
}

type setFact struct {
	Key   string `json:"key" jsonschema:"what the fact is about, e.g. city"`
	Value string `json:"value" jsonschema:"the fact"`
}

// profileLayer is the layer of docs/writing-a-layer.md: resource-scoped
// state, rendered in the anchor band, changed only through the function
// it offers the model.
func profileLayer() core.Layer[Profile] {
	return core.Layer[Profile]{
		ID: "profile", Slot: core.SlotEntity, Scope: core.ScopeResource, Placement: core.PlacementAnchor,
		Budget: core.Range(20, 400),
		Hooks: core.Hooks[Profile]{
			Recall: func(_ context.Context, p core.RecallParams[Profile]) (core.Recall[Profile], error) {
				if len(p.State.Facts) == 0 {
					return core.Recall[Profile]{}, nil // nothing to show: no item, no tokens
				}
				var b strings.Builder
				b.WriteString("<profile>\n")
				for _, k := range slices.Sorted(maps.Keys(p.State.Facts)) { // sorted: the same state, the same bytes
					fmt.Fprintf(&b, "%s: %s\n", k, p.State.Facts[k])
				}
				b.WriteString("</profile>")
				return core.Text[Profile](b.String())
			},
		},
		Functions: []core.Function[Profile]{
			core.NewFunction("set", "Remember a fact about the user.", func(_ context.Context, st Profile, a setFact) (string, *Profile, error) {
				next := Profile{Facts: maps.Clone(st.Facts)}
				if next.Facts == nil {
					next.Facts = map[string]string{}
				}
				next.Facts[a.Key] = a.Value
				return "remembered " + a.Key, &next, nil
			}),
		},
	}
}

// A layer of your own: the model calls profile/set, the host routes the
// call, the state is stored under the user's resource, and the user's
// next thread shows it in the anchor band.
func ExampleLayer_profile() {
	ctx := context.Background()
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{profileLayer()}, Store: storage.NewMemory()})
	if err != nil {
		fmt.Println(err)
		return
	}
	sess, _ := rt.Start(ctx, core.RunOptions{ThreadID: "visit-1", ResourceID: "ada"})
	_ = sess.Append(ctx, core.UserMessage("I live in Lisbon."))
	view, _ := sess.Assemble(ctx)
	fmt.Println("tools offered:", view.Tools[0].Name)
	call := core.FunctionCall("c1", "profile/set", `{"key":"city","value":"Lisbon"}`) // what the model answered
	_ = sess.Record(ctx, call)
	out, _ := sess.ExecuteTool(ctx, call) // the host routes the call (after steering, if any)
	_ = sess.Append(ctx, out)
	fmt.Println("output:", out.Output)
	_ = sess.Complete(ctx, "ok")

	next, _ := rt.Start(ctx, core.RunOptions{ThreadID: "visit-2", ResourceID: "ada"})
	view, _ = next.Assemble(ctx)
	fmt.Println(view.Band(core.BandAnchor)[0].Text())
	// Output:
	// tools offered: profile/set
	// output: remembered city
	// <profile>
	// city: Lisbon
	// </profile>
}
