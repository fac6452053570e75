package provider_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/stratamem/strata/agent"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
)

// shout is a provider.Model of its own: any model API fits behind
// Respond. A real adapter turns req.View (its bands, tools and cache
// breakpoints) into the API's request, and the API's cache figures into
// Response.Cache.
type shout struct{}

func (shout) Respond(_ context.Context, req provider.Request) (*provider.Response, error) {
	history := req.View.Band(core.BandHistory)
	text := strings.ToUpper(history[len(history)-1].Text())
	return &provider.Response{Items: []core.Item{core.AssistantMessage(text)}, StopReason: "end_turn",
		Cache: core.CacheReport{Reported: false}}, nil
}

// Your own model in the agent loop.
func ExampleModel() {
	ctx := context.Background()
	rt, _ := core.NewRuntime(core.Config{System: []core.Item{core.SystemMessage("Repeat loudly.")}})
	sess, _ := rt.Start(ctx, core.RunOptions{})
	loop, _ := agent.New(agent.Options{Model: shout{}})
	res, err := loop.Turn(ctx, sess, core.UserMessage("hello"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Text())
	// Output: HELLO
}
