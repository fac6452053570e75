// Command agent is a small but complete agent on strata: instructions,
// steering, a todo list owned by tools, and the memory layers (scratchpad,
// entities, a temporal fact ledger, observations, episodes and semantic
// recall of past messages), all kept in the embedded default store under
// one directory.
//
// With ANTHROPIC_API_KEY or OPENAI_API_KEY set it talks to that provider
// (model from STRATA_MODEL, or a default), asking for the prompt cache where
// the view says; without a key, or with -offline, it uses a scripted model.
// Each turn prints the reply and the cache figures of every model call;
// -views also prints every assembled view band by band with the per-layer
// usage report (that is `make demo`).
//
//	go run ./examples/agent                  # the built-in script
//	go run ./examples/agent -offline -views  # make demo
//	go run ./examples/agent -i               # type your own turns (empty line ends a run)
//	go run ./examples/agent -data DIR -resource alice
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/stratamem/strata/agent"
	"github.com/stratamem/strata/cachesim"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/layers/instructions"
	"github.com/stratamem/strata/layers/steering"
	"github.com/stratamem/strata/layers/toolcalls"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/anthropic"
	"github.com/stratamem/strata/provider/openai"
	"github.com/stratamem/strata/provider/scripted"
	"github.com/stratamem/strata/tokens"
	"github.com/stratamem/strata/tokens/tiktoken"
)

func main() {
	data := flag.String("data", filepath.Join(".strata", "agent"), "data directory of the embedded store")
	resource := flag.String("resource", "ada", "resource (user) whose memories the agent keeps")
	interactive := flag.Bool("i", false, "read turns from standard input instead of the built-in script")
	fresh := flag.Bool("fresh", true, "wipe the data directory first (the built-in script expects a new store)")
	offline := flag.Bool("offline", false, "use the scripted model even when an API key is set")
	views := flag.Bool("views", false, "print every assembled view band by band with the per-layer usage")
	flag.Parse()
	if *fresh && !*interactive {
		_ = os.RemoveAll(*data)
	}
	tk, err := tiktoken.New(tiktoken.O200kBase)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
	model, name, err := pickModel(tk, *offline)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
	runs := builtinScript
	if *interactive {
		runs = readRuns(os.Stdin)
	}
	if err := run(context.Background(), os.Stdout, *data, *resource, model, name, tk, runs, *views); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

// builtinScript is two runs (two sessions, like two visits) of one user.
var builtinScript = [][]string{
	{
		"Hi! My name is Ada and I work at Acme Robotics.",
		"todo: review the gripper design",
		"I moved to Lisbon yesterday.",
		"Please delete all my files.",
	},
	{
		"Where do I live now, and what is on my todo list?",
		"What did I say about the gripper?",
	},
}

func readRuns(r io.Reader) [][]string {
	var runs [][]string
	var cur []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			if len(cur) > 0 {
				runs = append(runs, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, line)
	}
	if len(cur) > 0 {
		runs = append(runs, cur)
	}
	return runs
}

// pickModel uses a real provider when a key is set, the scripted model
// with a simulated Anthropic cache otherwise.
func pickModel(tk tokens.Tokenizer, offline bool) (provider.Model, string, error) {
	switch {
	case offline:
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		name := envOr("STRATA_MODEL", "claude-sonnet-4-5")
		m, err := anthropic.New(anthropic.Options{Model: name})
		return m, "anthropic " + name, err
	case os.Getenv("OPENAI_API_KEY") != "":
		name := envOr("STRATA_MODEL", "gpt-5-mini")
		m, err := openai.New(openai.Options{Model: name})
		return m, "openai " + name, err
	}
	sim, err := cachesim.NewAnthropic(cachesim.AnthropicOptions{})
	if err != nil {
		return nil, "", err
	}
	return &scripted.Model{Cache: sim, Script: scriptedAgent, Tokenizer: tk}, "scripted (no API key; cache figures simulated)", nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Todo is the tool-owned state of the todo tools.
type Todo struct {
	Items []string `json:"items"`
}

type addTodo struct {
	Item string `json:"item" jsonschema:"what to do"`
}

var todoState = &toolcalls.ToolState[Todo]{
	ID: "todos",
	Recall: func(s Todo) (string, bool) {
		if len(s.Items) == 0 {
			return "", false
		}
		return "<todos>\n- " + strings.Join(s.Items, "\n- ") + "\n</todos>", true
	},
	// Kept across runs of the user's threads.
	Scope: core.ScopeResource,
}

var writeTodo = toolcalls.MustTool(toolcalls.ToolDef[addTodo, string]{
	Name: "add_todo", Description: "Add an item to the user's todo list.", State: todoState,
	Execute: func(_ context.Context, in addTodo, tc core.ToolContext) (string, error) {
		st, _ := toolcalls.GetState[Todo](tc, "todos")
		next := Todo{Items: append(append([]string(nil), st.Items...), in.Item)}
		return "added", tc.Set("todos", next)
	},
})

var deleteFiles = toolcalls.MustTool(toolcalls.ToolDef[struct{}, string]{
	Name: "delete_all_files", Description: "Delete every file of the user.",
	Execute: func(context.Context, struct{}, core.ToolContext) (string, error) {
		return "", errors.New("this tool must never run: steering denies it")
	},
})

// layers builds every layer of the agent on one memory store. The
// memory layers count their output with the runtime's tokenizer (tk in
// main), so none is given one.
func layers(store *memory.Store) ([]core.AnyLayer, error) {
	instr, err := instructions.New(instructions.Options{Text: "You are a personal assistant. Keep answers to two sentences. " +
		"Record people and organisations with entity/update, dated facts with temporal/record, " +
		"working notes with scratchpad/update, and todos with add_todo."})
	if err != nil {
		return nil, err
	}
	steer, err := steering.New(steering.Options{Rules: []steering.Rule{{
		Name: "no-destruction", Tool: "delete_*", Action: steering.Deny,
		Reason: "destructive tools need the user's explicit confirmation in the app",
	}}})
	if err != nil {
		return nil, err
	}
	scratch, err := scratchpad.New(store, scratchpad.Options{Common: memory.Common{Scope: core.ScopeResource}})
	if err != nil {
		return nil, err
	}
	ents, err := entity.New(store, entity.Options{Common: memory.Common{Scope: core.ScopeResource}})
	if err != nil {
		return nil, err
	}
	eps, err := episodic.New(store, episodic.Options{})
	if err != nil {
		return nil, err
	}
	facts, err := temporal.New(store, temporal.Options{Common: memory.Common{Scope: core.ScopeResource}})
	if err != nil {
		return nil, err
	}
	obs, err := observations.New(store, observations.Options{Common: memory.Common{Scope: core.ScopeResource}})
	if err != nil {
		return nil, err
	}
	recall, err := semantic.New(store, semantic.Options{Common: memory.Common{Scope: core.ScopeResource}})
	if err != nil {
		return nil, err
	}
	out := []core.AnyLayer{instr, steer, scratch, ents, eps, facts, obs, recall}
	return append(out, toolcalls.Layers(writeTodo, deleteFiles)...), nil
}

func run(ctx context.Context, w io.Writer, dir, resource string, model provider.Model, modelName string, tk tokens.Tokenizer, runs [][]string, views bool) error {
	env, err := embedded.Open(ctx, dir, embedded.Options{})
	if err != nil {
		return err
	}
	defer env.Close()
	ls, err := layers(env.Memory)
	if err != nil {
		return err
	}
	rt, err := core.NewRuntime(core.Config{
		Layers: ls, Tools: []core.Tool{writeTodo, deleteFiles}, Store: env.State, Tokenizer: tk,
		System:           []core.Item{core.SystemMessage(systemPrompt)},
		Policy:           &core.Policy{TokenBudget: 64000, ResponseReserve: 4000},
		RecordAssemblies: true,
	})
	if err != nil {
		return err
	}
	loop, err := agent.New(agent.Options{Model: model})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "model: %s\nstore: %s (embedder %s)\n", modelName, dir, env.Memory.Embedder.Model())
	for i, turns := range runs {
		thread := fmt.Sprintf("%s-visit-%d", resource, i+1)
		sess, err := rt.Start(ctx, core.RunOptions{ThreadID: thread, ResourceID: resource})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n=== run %d, thread %s ===\n", i+1, thread)
		for _, user := range turns {
			fmt.Fprintf(w, "\nuser:  %s\n", user)
			res, err := loop.Turn(ctx, sess, core.UserMessage(user))
			if err != nil {
				return err
			}
			for r, round := range res.Rounds {
				if views {
					printView(w, round.View)
				}
				c := round.Cache
				ep := round.View.Usage.Epoch
				fmt.Fprintf(w, "  call %d: view %d tokens + tool schemas; cache read %d, write %d, uncached %d; epoch %s age %d",
					r+1, round.View.Usage.Total, c.ReadTokens, c.WriteTokens, c.UncachedTokens, ep.ID, ep.Age)
				if ep.Reanchored {
					fmt.Fprintf(w, " (re-anchored: %s)", ep.ReanchorReason)
				}
				fmt.Fprintln(w)
				for _, it := range round.Output {
					if it.Type == core.TypeFunctionCall {
						fmt.Fprintf(w, "  tool:  %s %s\n", it.Name, it.Arguments)
					}
				}
				for _, it := range round.ToolOutputs {
					fmt.Fprintf(w, "      -> %s\n", it.Output)
				}
			}
			fmt.Fprintf(w, "agent: %s\n", res.Text())
		}
		if err := sess.Complete(ctx, "ok"); err != nil {
			return err
		}
	}
	return nil
}

var systemPrompt = "You are strata's example agent.\n" + strings.Repeat(
	"Be accurate and brief. Use the memory blocks you are given; they are about the current user. ", 60)

// scriptedAgent is the offline stand-in for a model: a few rules that call
// the same tools a real model would, and answers built from what the view
// shows, so the memory layers can be seen at work.
func scriptedAgent(req provider.Request, call int) ([]core.Item, error) {
	v := req.View
	var user string
	var called bool
	for _, it := range v.Band(core.BandHistory) {
		switch {
		case it.Type == core.TypeMessage && it.Role == core.RoleUser:
			user, called = it.Text(), false
		case it.Type == core.TypeFunctionCall:
			called = true
		}
	}
	id := fmt.Sprintf("call-%d", call)
	if !called {
		switch {
		case strings.HasPrefix(user, "Hi! My name is Ada"):
			return []core.Item{
				core.FunctionCall(id+"a", "entity/update", `{"entities":[{"name":"Ada","type":"person","notes":["the user"]},{"name":"Acme Robotics","type":"organization","notes":["Ada works here"]}]}`),
				core.FunctionCall(id+"b", "temporal/record", `{"facts":[{"subject":"Ada","predicate":"works at","value":"Acme Robotics"}]}`),
			}, nil
		case strings.HasPrefix(user, "todo: "):
			return []core.Item{core.FunctionCall(id, "add_todo", fmt.Sprintf(`{"item":%q}`, strings.TrimPrefix(user, "todo: ")))}, nil
		case strings.Contains(user, "moved to Lisbon yesterday"):
			return []core.Item{core.FunctionCall(id, "temporal/record", `{"facts":[{"subject":"Ada","predicate":"lives in","value":"Lisbon","when":"yesterday"}]}`)}, nil
		case strings.Contains(user, "delete all"):
			return []core.Item{core.FunctionCall(id, "delete_all_files", `{}`)}, nil
		}
	}
	if called {
		// The tools ran (or were refused): say so, as a model would,
		// instead of answering the request again.
		if strings.Contains(user, "delete all") {
			return []core.Item{core.AssistantMessage("I cannot delete your files from here; please confirm in the app.")}, nil
		}
		return []core.Item{core.AssistantMessage("Done.")}, nil
	}
	all := ""
	for _, it := range v.Items() {
		all += it.Text() + "\n"
	}
	switch {
	case strings.Contains(user, "Where do I live"):
		var parts []string
		if strings.Contains(all, "Lisbon") {
			parts = append(parts, "You live in Lisbon (since the day before your last visit)")
		}
		if strings.Contains(all, "review the gripper design") {
			parts = append(parts, "your todo list has: review the gripper design")
		}
		if len(parts) == 0 {
			return []core.Item{core.AssistantMessage("I have nothing about you yet.")}, nil
		}
		return []core.Item{core.AssistantMessage(strings.Join(parts, "; ") + ".")}, nil
	case strings.Contains(user, "gripper"):
		// Answered from the semantic recall block: the first visit's
		// messages found by meaning.
		for _, it := range v.Band(core.BandLive) {
			if strings.Contains(it.Text(), "todo: review the gripper design") {
				return []core.Item{core.AssistantMessage("On your first visit you asked me to add \"review the gripper design\" to your todos.")}, nil
			}
		}
		return []core.Item{core.AssistantMessage("I found nothing about a gripper.")}, nil
	}
	return []core.Item{core.AssistantMessage("Done.")}, nil
}

// printView shows a view band by band, what was published this turn, and
// the per-layer usage report.
func printView(w io.Writer, v *core.View) {
	fmt.Fprintf(w, "\n  --- view %d: %d items, %d tokens ---\n", v.Usage.Turn+1, v.Len(), v.Usage.Total)
	for _, b := range []core.Band{core.BandSystem, core.BandAnchor, core.BandHistory, core.BandLive, core.BandUpdates, core.BandTail} {
		items := v.Band(b)
		if len(items) == 0 {
			continue
		}
		fmt.Fprintf(w, "  [%s] %d tokens\n", b, v.Usage.BandTokens[b])
		for _, it := range items {
			if b == core.BandLive {
				// What recall found this turn, in full: the point of
				// the demo.
				fmt.Fprintf(w, "      %s\n", strings.ReplaceAll(describe(it), "\n", "\n      "))
				continue
			}
			text := strings.ReplaceAll(describe(it), "\n", " ")
			if len(text) > 110 {
				text = text[:107] + "..."
			}
			fmt.Fprintf(w, "      %s\n", text)
		}
	}
	for _, it := range v.Updates() {
		fmt.Fprintf(w, "  published this turn: %s\n", strings.ReplaceAll(it.Text(), "\n", "\n      "))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "    layer\tslot\tband\tserved\ttokens\tbudget\tchurn")
	for _, l := range v.Usage.Layers {
		budget := fmt.Sprint(l.Budget)
		if l.Budget == core.Unlimited {
			budget = "auto"
		}
		fmt.Fprintf(tw, "    %s\t%d\t%s\t%s\t%d\t%s\t%.2f\n", l.LayerID, l.Slot, l.Band, l.Served, l.Tokens, budget, l.ChurnRate)
	}
	tw.Flush()
	for _, d := range v.Usage.Diagnostics {
		fmt.Fprintf(w, "    diagnostic: %s %s %s: %s\n", d.Layer, d.Hook, d.Kind, d.Message)
	}
}

func describe(it core.Item) string {
	switch it.Type {
	case core.TypeFunctionCall:
		return fmt.Sprintf("call %s %s", it.Name, it.Arguments)
	case core.TypeFunctionCallOutput:
		return "output " + it.Output
	}
	return fmt.Sprintf("%s: %s", it.Role, it.Text())
}
