package steering_test

import (
	"context"
	"fmt"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/steering"
)

func Example() {
	ctx := context.Background()
	layer, err := steering.New(steering.Options{
		Rules: []steering.Rule{{
			Name: "no-deletes", Tool: "sql_*",
			// Matched on decoded, case-folded values: "delete" and
			// "\u0044ELETE" are caught too.
			Match:    steering.ArgsContain("DELETE"),
			Action:   steering.Deny,
			Reason:   "deleting rows is not allowed",
			Guidance: "Mark rows as archived instead of deleting them.",
		}},
		ResponseRules: []steering.ResponseRule{{
			Name: "no-competitors", Match: steering.Mentions("Acme"),
			Guidance: "Do not recommend competitors.",
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}})
	sess, _ := rt.Start(ctx, core.RunOptions{})
	_ = sess.Append(ctx, core.UserMessage("Clean up the orders table."))

	// The model asks for a tool call; the host checks it first.
	call := core.FunctionCall("call-1", "sql_exec", `{"sql":"DELETE FROM orders"}`)
	res, _ := sess.BeforeToolCall(ctx, call)
	_ = sess.Record(ctx, call)
	if !res.Allowed {
		_ = sess.Append(ctx, res.Output) // the refusal is the call's output
		fmt.Println(res.Output.Output)
	}

	// The next view carries the queued guidance after history, once.
	view, _ := sess.Assemble(ctx)
	for _, it := range view.Band(core.BandTail) {
		fmt.Println(it.Text())
	}
	// Output:
	// Call to sql_exec denied by steering: deleting rows is not allowed
	// <steering>
	// <guidance rule="no-deletes">Mark rows as archived instead of deleting them.</guidance>
	// </steering>
}
