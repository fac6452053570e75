package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/anthropic"
)

// One turn of a host loop: assemble, call the model, report the cache
// figures of the first round, record, run the function calls, repeat
// until the model answers in text. It needs ANTHROPIC_API_KEY, so it is
// compiled but not run.
func Example() {
	ctx := context.Background()
	model, err := anthropic.New(anthropic.Options{Model: "claude-sonnet-4-5", Stream: true})
	if err != nil {
		log.Fatal(err)
	}
	rt, err := core.NewRuntime(core.Config{System: []core.Item{core.SystemMessage("You are helpful.")}})
	if err != nil {
		log.Fatal(err)
	}
	sess, err := rt.Start(ctx, core.RunOptions{ThreadID: "thread-1"})
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close(ctx)

	_ = sess.Append(ctx, core.UserMessage("What is the capital of France?"))
	for round := 0; round < 8; round++ {
		view, err := sess.Assemble(ctx)
		if err != nil {
			log.Fatal(err)
		}
		resp, err := model.Respond(ctx, provider.Request{View: view, ThreadID: sess.Run().ThreadID})
		var perr *provider.Error
		if errors.As(err, &perr) && perr.Retryable {
			log.Fatalf("try again in %s: %v", perr.RetryAfter, err)
		} else if err != nil {
			log.Fatal(err)
		}
		report := resp.Cache
		report.FirstRound = round == 0
		sess.ReportCache(report)
		if err := sess.Record(ctx, resp.Items...); err != nil {
			log.Fatal(err)
		}
		called := false
		for _, it := range resp.Items {
			if it.Type == core.TypeFunctionCall {
				out, _ := sess.ExecuteTool(ctx, it)
				_ = sess.Append(ctx, out)
				called = true
			} else {
				fmt.Println(it.Text())
			}
		}
		if !called {
			break
		}
	}
}

// Provided functions are named "layer/fn"; on the wire they travel under
// a name the API accepts, and come back under their own.
func ExampleWireName() {
	fmt.Println(anthropic.WireName("notes/add"))
	fmt.Println(anthropic.WireName("files/read.all"))
	// Output:
	// notes__add
	// files__read_all
}
