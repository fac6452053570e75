package core_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/storage"
)

// What the usage report says about the cache when an anchored layer
// changes mid-epoch (docs/cache-costs.md): the layer keeps serving its
// pinned bytes, the change is published once as a context update, and
// RebillTokens counts what re-rendering it in place would have re-billed.
func ExampleUsage_cache() {
	ctx := context.Background()
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{profileLayer()}, Store: storage.NewMemory(),
		System: []core.Item{core.SystemMessage(strings.Repeat("You are a careful assistant. ", 20))}})
	sess, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t1", ResourceID: "ada"})
	set := func(id, city string) {
		call := core.FunctionCall(id, "profile/set", fmt.Sprintf(`{"key":"city","value":%q}`, city))
		_ = sess.Record(ctx, call)
		out, _ := sess.ExecuteTool(ctx, call)
		_ = sess.Append(ctx, out)
	}
	report := func(v *core.View) {
		l := v.Usage.Layer("profile")
		fmt.Printf("epoch %s age %d: profile %s, %d tokens, update %q, rebill %d; %d update message(s)\n",
			v.Usage.Epoch.ID, v.Usage.Epoch.Age, l.Served, l.Tokens, l.Update, l.RebillTokens, len(v.Updates()))
	}
	_ = sess.Append(ctx, core.UserMessage("I live in Porto."))
	set("c1", "Porto")
	v, _ := sess.Assemble(ctx)
	report(v)
	_ = sess.Record(ctx, core.AssistantMessage("Noted."))
	_ = sess.Append(ctx, core.UserMessage("Actually, I moved to Lisbon."))
	set("c2", "Lisbon")
	v, _ = sess.Assemble(ctx)
	report(v)
	fmt.Println(strings.Contains(v.Updates()[0].Text(), "city: Lisbon"))
	// Output:
	// epoch t:t1#0 age 1: profile pinned, 11 tokens, update "", rebill 0; 0 update message(s)
	// epoch t:t1#0 age 2: profile pinned, 11 tokens, update "replace", rebill 76; 1 update message(s)
	// true
}
