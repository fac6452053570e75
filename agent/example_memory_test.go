package agent_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/agent"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/anthropic"
	"github.com/stratamem/strata/provider/openai"
	"github.com/stratamem/strata/provider/scripted"
)

// The README's "Your own agent": one visit per run of the program, three
// memory layers kept in one directory across visits. It is compiled, not
// run here (it would write .strata/myagent); TestVisitRemembers runs the
// same visit function twice.
func Example_visit() {
	msg := strings.Join(os.Args[1:], " ") // go run . I moved to Lisbon yesterday.
	if err := visit(context.Background(), ".strata/myagent", "ada", msg, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// visit is one visit of user to the agent: a new thread of the user's
// resource, one turn, then the run completes. Everything below is the
// README's program.
func visit(ctx context.Context, dir, user, msg string, out io.Writer) error {
	env, err := embedded.Open(ctx, dir, embedded.Options{}) // records, vectors and layer state in one directory
	if err != nil {
		return err // the offline embedding model missing? see "The embedding model" below
	}
	defer env.Close()

	// ScopeResource: every thread of the user sees these memories. The
	// default, ScopeThread, would start each visit empty.
	mine := memory.Common{Scope: core.ScopeResource}
	facts, err := temporal.New(env.Memory, temporal.Options{Common: mine}) // dated facts, as the model records them
	if err != nil {
		return err
	}
	notes, err := observations.New(env.Memory, observations.Options{Common: mine}) // what the user says about themselves
	if err != nil {
		return err
	}
	recall, err := semantic.New(env.Memory, semantic.Options{Common: mine}) // past messages found by meaning
	if err != nil {
		return err
	}
	rt, err := core.NewRuntime(core.Config{
		Layers: []core.AnyLayer{facts, notes, recall},
		Store:  env.State, // layer state on disk too
		System: []core.Item{core.SystemMessage("You are a personal assistant. Use what you remember about the user.")},
	})
	if err != nil {
		return err
	}
	model, err := pickModel()
	if err != nil {
		return err
	}
	loop, err := agent.New(agent.Options{Model: model})
	if err != nil {
		return err
	}
	// A new thread per visit; the resource says whose memories these are.
	thread := fmt.Sprintf("%s-%d", user, time.Now().UnixNano())
	sess, err := rt.Start(ctx, core.RunOptions{ThreadID: thread, ResourceID: user})
	if err != nil {
		return err
	}
	res, err := loop.Turn(ctx, sess, core.UserMessage(msg))
	if err != nil {
		return err
	}
	fmt.Fprintln(out, res.Text())
	return sess.Complete(ctx, "ok") // writes the visit's memories before the program ends
}

// pickModel is Claude or GPT when their key is set, else a stand-in that
// answers with the memory it was shown, so the program runs offline.
func pickModel() (provider.Model, error) {
	switch {
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		return anthropic.New(anthropic.Options{Model: "claude-sonnet-4-5"})
	case os.Getenv("OPENAI_API_KEY") != "":
		return openai.New(openai.Options{Model: "gpt-5-mini"})
	}
	return scripted.New(func(req provider.Request, _ int) ([]core.Item, error) {
		shown := "(nothing yet)"
		if live := req.View.Band(core.BandLive); len(live) > 0 {
			var texts []string
			for _, it := range live {
				texts = append(texts, it.Text())
			}
			shown = strings.Join(texts, "\n")
		}
		return []core.Item{core.AssistantMessage("(offline stand-in) My memory shows me:\n" + shown)}, nil
	}, scripted.Options{})
}

// Two visits, two runtimes, one directory: the second visit's view holds
// what the first one said.
func TestVisitRemembers(t *testing.T) {
	if _, err := uselite.Default(); err != nil {
		if os.Getenv("STRATA_REQUIRE_MODEL") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "")
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "myagent")
	var first, second strings.Builder
	if err := visit(ctx, dir, "ada", "I moved to Lisbon yesterday.", &first); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(first.String(), "Lisbon") {
		t.Fatalf("the first visit already knew: %s", first.String())
	}
	if err := visit(ctx, dir, "ada", "Where do I live now?", &second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(second.String(), "I moved to Lisbon yesterday.") {
		t.Fatalf("the second visit was not shown the first one's message:\n%s", second.String())
	}
	// Another user's visit sees none of it.
	var other strings.Builder
	if err := visit(ctx, dir, "bob", "Where do I live now?", &other); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(other.String(), "Lisbon") {
		t.Fatalf("bob was shown ada's memory:\n%s", other.String())
	}
}
