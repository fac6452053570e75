package openai_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/openai"
)

// One turn of a host loop against the OpenAI Responses API: assemble,
// call, report the first round's cache figures, record, run the function
// calls, repeat until the model answers in text. It needs OPENAI_API_KEY,
// so it is compiled but not run.
func Example() {
	ctx := context.Background()
	model, err := openai.New(openai.Options{Model: "gpt-5-mini"})
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

// A local model served by Ollama through its OpenAI-compatible Chat
// Completions endpoint. Its templates know no developer role, and it
// reports no cache figures, so the runtime will mark it blind.
func ExampleNew_ollama() {
	model, err := openai.New(openai.Options{
		Model:     "llama3.2",
		API:       openai.ChatCompletions,
		BaseURL:   "http://localhost:11434/v1",
		Developer: openai.DeveloperAsSystem,
		Stream:    true,
	})
	fmt.Println(model != nil, err)
	// Output: true <nil>
}

// Claude through OpenRouter: Chat Completions with Anthropic's
// cache_control markers at the view's breakpoints, and the layers' output
// after the system prompt sent as user messages, so the system prompt
// that Claude caches first holds still.
func ExampleNew_openRouter() {
	_, err := openai.New(openai.Options{
		Model:        "anthropic/claude-sonnet-4.5",
		API:          openai.ChatCompletions,
		BaseURL:      "https://openrouter.ai/api/v1",
		CacheControl: true,
		Developer:    openai.DeveloperAsUser,
	})
	fmt.Println(err)
	_, err = openai.New(openai.Options{Model: "gpt-5-mini", CacheControl: true})
	fmt.Println(err)
	// Output:
	// <nil>
	// openai: option CacheControl: only Chat Completions carries cache_control (set API: ChatCompletions)
}
