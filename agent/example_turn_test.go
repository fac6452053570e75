package agent_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratamem/strata/agent"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/toolcalls"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/scripted"
)

var clock = toolcalls.MustTool(toolcalls.ToolDef[struct{}, string]{Name: "get_time", Description: "The current time.",
	Execute: func(context.Context, struct{}, core.ToolContext) (string, error) { return "12:00", nil }})

// One turn: the model calls a tool, the loop runs it and calls the model
// again with its output, and the model answers.
func ExampleAgent_Turn() {
	ctx := context.Background()
	model, _ := scripted.New(func(req provider.Request, call int) ([]core.Item, error) {
		history := req.View.Band(core.BandHistory)
		if last := history[len(history)-1]; last.Type == core.TypeFunctionCallOutput {
			return []core.Item{core.AssistantMessage("It is " + last.Output + ".")}, nil
		}
		return []core.Item{core.FunctionCall("c1", "get_time", `{}`)}, nil
	}, scripted.Options{})
	rt, _ := core.NewRuntime(core.Config{Tools: []core.Tool{clock}})
	sess, _ := rt.Start(ctx, core.RunOptions{})
	loop, _ := agent.New(agent.Options{Model: model})
	res, err := loop.Turn(ctx, sess, core.UserMessage("What time is it?"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Text(), len(res.Rounds), res.Stop)
	// Output: It is 12:00. 2 no_tool_calls
}

// A model that keeps calling tools ends the turn at the round limit with
// a *MaxRoundsError, not with an empty answer and no error.
func ExampleMaxRoundsError() {
	ctx := context.Background()
	model := &scripted.Model{Script: func(req provider.Request, call int) ([]core.Item, error) {
		return []core.Item{core.FunctionCall(fmt.Sprint("c", call), "get_time", `{}`)}, nil
	}}
	rt, _ := core.NewRuntime(core.Config{Tools: []core.Tool{clock}})
	sess, _ := rt.Start(ctx, core.RunOptions{})
	loop, _ := agent.New(agent.Options{Model: model, MaxRounds: 3})
	res, err := loop.Turn(ctx, sess, core.UserMessage("What time is it?"))
	var mre *agent.MaxRoundsError
	fmt.Println(errors.As(err, &mre), mre.Rounds, mre.LastCalls, res.Stop)
	// Output: true 3 [get_time] max_rounds
}
