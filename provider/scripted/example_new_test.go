package scripted_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratamem/strata/agent"
	"github.com/stratamem/strata/cachesim"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/toolcalls"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/scripted"
)

// A scripted model in an agent loop, offline, with simulated cache
// figures: the script reads the view as a model would.
func ExampleNew() {
	ctx := context.Background()
	sim, _ := cachesim.NewAnthropic(cachesim.AnthropicOptions{})
	model, err := scripted.New(func(req provider.Request, call int) ([]core.Item, error) {
		history := req.View.Band(core.BandHistory)
		last := history[len(history)-1]
		return []core.Item{core.AssistantMessage("You said: " + last.Text())}, nil
	}, scripted.Options{Cache: sim})
	if err != nil {
		fmt.Println(err)
		return
	}
	rt, _ := core.NewRuntime(core.Config{System: []core.Item{core.SystemMessage("You are helpful.")}})
	sess, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t1"})
	loop, _ := agent.New(agent.Options{Model: model})
	res, err := loop.Turn(ctx, sess, core.UserMessage("hello"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Text(), res.Stop)
	// Output: You said: hello no_tool_calls
}

// A script that does not see its tool ran would call it again and again;
// the checked model refuses the repeat with a *MismatchError instead.
func ExampleMismatchError() {
	ctx := context.Background()
	model, _ := scripted.New(func(req provider.Request, call int) ([]core.Item, error) {
		return []core.Item{core.FunctionCall(fmt.Sprint("c", call), "get_time", `{}`)}, nil
	}, scripted.Options{})
	clock := toolcalls.MustTool(toolcalls.ToolDef[struct{}, string]{Name: "get_time", Description: "The current time.",
		Execute: func(context.Context, struct{}, core.ToolContext) (string, error) { return "12:00", nil }})
	rt, _ := core.NewRuntime(core.Config{Tools: []core.Tool{clock}})
	sess, _ := rt.Start(ctx, core.RunOptions{})
	loop, _ := agent.New(agent.Options{Model: model})
	_, err := loop.Turn(ctx, sess, core.UserMessage("what time is it?"))
	var mismatch *scripted.MismatchError
	fmt.Println(errors.As(err, &mismatch), mismatch.Call)
	// Output: true 1
}
