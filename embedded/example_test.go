package embedded_test

import (
	"context"
	"fmt"
	"log"

	"github.com/stratamem/strata/agent"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/provider/anthropic"
)

// The README's "Add memory to your agent", kept compiling. It is not run:
// it needs the offline model (make model) and an Anthropic API key.
func Example_memory() {
	ctx := context.Background()
	env, err := embedded.Open(ctx, ".strata/data", embedded.Options{}) // records, vectors, layer state
	if err != nil {
		log.Fatal(err) // e.g. the offline model is not installed: see below
	}
	defer env.Close()

	ents, _ := entity.New(env.Memory, entity.Options{Common: memory.Common{Scope: core.ScopeResource}})       // people, organisations, places
	eps, _ := episodic.New(env.Memory, episodic.Options{})                                                    // a summary of every past run
	facts, _ := temporal.New(env.Memory, temporal.Options{Common: memory.Common{Scope: core.ScopeResource}})  // dated facts with validity
	recall, _ := semantic.New(env.Memory, semantic.Options{Common: memory.Common{Scope: core.ScopeResource}}) // all of the user's past messages (default: this thread's)

	rt, _ := core.NewRuntime(core.Config{
		Layers: []core.AnyLayer{ents, eps, facts, recall},
		Store:  env.State, // thread/resource/global state survives restarts (nil: in memory, lost on exit)
		System: []core.Item{core.SystemMessage("You are a personal assistant.")},
	})
	model, _ := anthropic.New(anthropic.Options{Model: "claude-sonnet-4-5"}) // or openai.New, or your own provider.Model
	loop, _ := agent.New(agent.Options{Model: model})

	sess, _ := rt.Start(ctx, core.RunOptions{ThreadID: "t-42", ResourceID: "user-7"})
	res, _ := loop.Turn(ctx, sess, core.UserMessage("I moved to Lisbon yesterday."))
	fmt.Println(res.Text())
	_ = sess.Complete(ctx, "ok") // episodic summarises the run here
}
