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
	msg := strings.Join(os.Args[1:], " ") // go run . I work at Acme Robotics and I moved to Lisbon yesterday.
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
	// dated facts: the model records them (temporal/record); offline, Patterns reads plain statements
	facts, err := temporal.New(env.Memory, temporal.Options{Common: mine, Extractor: temporal.Patterns{}})
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
		Layers:           []core.AnyLayer{facts, notes, recall},
		Store:            env.State, // layer state on disk too
		RecordAssemblies: true,      // so memctl inspect works: every view sent to the model is recorded
		System:           []core.Item{core.SystemMessage("You are a personal assistant. Use what you remember about the user.")},
	})
	if err != nil {
		return err
	}
	model, err := pickModel(out)
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
	fmt.Fprintf(out, "answer: %s\n(thread %s)\n", res.Text(), thread)
	return sess.Complete(ctx, "ok") // writes the visit's memories before the program ends
}

// pickModel is Claude or GPT when their key is set, else a stand-in that
// prints the memory in the view and answers with a fixed line, so the
// program runs offline. Its answer does not quote the memory: the answer is
// a message too, which the semantic layer stores and would recall, nested,
// on every later visit.
func pickModel(out io.Writer) (provider.Model, error) {
	switch {
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		return anthropic.New(anthropic.Options{Model: "claude-sonnet-4-5"})
	case os.Getenv("OPENAI_API_KEY") != "":
		return openai.New(openai.Options{Model: "gpt-5-mini"})
	}
	return scripted.New(func(req provider.Request, _ int) ([]core.Item, error) {
		fmt.Fprintln(out, "memory in the view:")
		shown := 0
		for band, it := range req.View.All() {
			if band != core.BandSystem && band != core.BandHistory { // the layers' bands: anchor, live, updates, tail
				fmt.Fprintf(out, "  [%s] %s\n", band, strings.ReplaceAll(it.Text(), "\n", "\n    "))
				shown++
			}
		}
		if shown == 0 {
			fmt.Fprintln(out, "  (nothing yet)")
		}
		return []core.Item{core.AssistantMessage("(offline stand-in: no model to answer)")}, nil
	}, scripted.Options{})
}

// Two visits, two runtimes, one directory: the second visit's view holds
// what the first one said, and the stand-in's answers, stored as messages,
// do not carry the recall into later recalls.
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
	const said = "I work at Acme Robotics and I moved to Lisbon yesterday."
	var first, second, third strings.Builder
	if err := visit(ctx, dir, "ada", said, &first); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(first.String(), "Lisbon") || !strings.Contains(first.String(), "(nothing yet)") {
		t.Fatalf("the first visit already knew:\n%s", first.String())
	}
	if err := visit(ctx, dir, "ada", "Where do I live now?", &second); err != nil {
		t.Fatal(err)
	}
	// The README says what each layer shows offline: observations in the
	// anchor band, the recalled message in the live band.
	for _, want := range []string{"[anchor] <observations>", "User works at Acme Robotics", "[live] <semantic_recall>", said} {
		if !strings.Contains(second.String(), want) {
			t.Errorf("the second visit was not shown %q:\n%s", want, second.String())
		}
	}
	if err := visit(ctx, dir, "ada", "And where do I work?", &third); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(third.String(), "<semantic_recall>"); n != 1 {
		t.Errorf("the third visit's recall nests %d deep:\n%s", n, third.String())
	}
	// Another user's visit sees none of it.
	var other strings.Builder
	if err := visit(ctx, dir, "bob", "Where do I live now?", &other); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(other.String(), "Lisbon") || strings.Contains(other.String(), "Acme") {
		t.Fatalf("bob was shown ada's memory:\n%s", other.String())
	}
}
