// Command demo runs a small agent on strata with a scripted model: no
// network, no API key. It makes two runs of one thread against the
// embedded file store and prints, for every turn, the assembled view band
// by band with token counts, and the per-layer usage report.
//
//	go run ./examples/demo            # or: make demo
//	go run ./examples/demo -data DIR  # keep the store somewhere else
package main

import (
	"context"
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
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/scripted"
	"github.com/stratamem/strata/storage/filestore"
	"github.com/stratamem/strata/tokens"
)

func main() {
	data := flag.String("data", filepath.Join(".strata", "demo"), "directory of the embedded store (wiped at start)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *data); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// systemPrompt is long enough to be cacheable (Anthropic caches prefixes of
// 1024 tokens and more), as real agents' prompts are.
var systemPrompt = "You are a helpful assistant for a small engineering team.\n" + strings.Repeat(
	"Be precise and brief. Prefer metric units. Cite the notes you rely on. When a request is ambiguous, ask one short question. ", 45)

// notes is the state of the thread-scoped notes layer.
type notes struct {
	Lines []string `json:"lines"`
}

type noteArgs struct {
	Text string `json:"text" jsonschema:"the fact to remember"`
}

// layers builds the demo's context layers.
func layers() []core.AnyLayer {
	// Static instructions: anchored, never changes.
	instructions := core.Layer[struct{}]{
		ID: "instructions", Slot: 50, Scope: core.ScopeExecution, Placement: core.PlacementAnchor,
		Hooks: core.Hooks[struct{}]{Recall: func(context.Context, core.RecallParams[struct{}]) (core.Recall[struct{}], error) {
			return core.Text[struct{}]("<instructions>\nAnswer in one sentence. Call notes/add to remember facts about the user.\n</instructions>")
		}},
	}
	// Notes the model writes through a provided function; persisted per
	// thread, so the second run starts with them.
	memory := core.Layer[notes]{
		ID: "notes", Name: "Notes", Slot: core.SlotScratchpad, Scope: core.ScopeThread, Budget: core.Range(20, 200),
		Hooks: core.Hooks[notes]{Recall: func(_ context.Context, p core.RecallParams[notes]) (core.Recall[notes], error) {
			if len(p.State.Lines) == 0 {
				return core.Recall[notes]{}, nil
			}
			return core.Text[notes]("<notes>\n- " + strings.Join(p.State.Lines, "\n- ") + "\n</notes>")
		}},
		Functions: []core.Function[notes]{core.NewFunction("add", "Remember a fact about the user.",
			func(_ context.Context, s notes, a noteArgs) (string, *notes, error) {
				if strings.TrimSpace(a.Text) == "" {
					return "", nil, &core.ArgumentError{Function: "add", Err: fmt.Errorf("text is empty")}
				}
				next := notes{Lines: append(append([]string(nil), s.Lines...), a.Text)}
				return "remembered", &next, nil
			})},
	}
	// A turn counter standing in for a clock: changes every turn, so it is
	// live and sits after history where its churn costs no cache.
	clock := core.Layer[struct{}]{
		ID: "clock", Slot: core.SlotReminder, Scope: core.ScopeExecution, Placement: core.PlacementLive, Budget: core.Fixed(16),
		Hooks: core.Hooks[struct{}]{Recall: func(_ context.Context, p core.RecallParams[struct{}]) (core.Recall[struct{}], error) {
			return core.Text[struct{}](fmt.Sprintf("<clock>turn %d</clock>", p.Turn+1))
		}},
	}
	return []core.AnyLayer{instructions, memory, clock}
}

// scriptedModel answers from a script keyed by the user's last message
// and whether it already called a tool since.
func scriptedModel(view *core.View) []core.Item {
	var last string
	called := false
	for _, it := range view.Band(core.BandHistory) {
		switch {
		case it.Type == core.TypeMessage && it.Role == core.RoleUser:
			last, called = it.Text(), false
		case it.Type == core.TypeFunctionCall:
			called = true
		}
	}
	switch {
	case strings.Contains(last, "Ada") && !called:
		return []core.Item{core.FunctionCall("call-1", "notes/add", `{"text":"The user's name is Ada; she prefers metric units."}`)}
	case strings.Contains(last, "Ada"):
		return []core.Item{core.AssistantMessage("Nice to meet you, Ada.")}
	case strings.Contains(last, "name"):
		for _, it := range view.Items() {
			if strings.Contains(it.Text(), "name is Ada") && it.Role == core.RoleDeveloper {
				return []core.Item{core.AssistantMessage("You are Ada, and you prefer metric units.")}
			}
		}
		return []core.Item{core.AssistantMessage("I do not know your name yet.")}
	}
	return []core.Item{core.AssistantMessage("Noted.")}
}

func run(ctx context.Context, w io.Writer, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	tk, err := tokens.New("o200k_base")
	if err != nil {
		return err
	}
	// The scripted model stands in for a provider; the simulator plays
	// Anthropic's prompt cache so the figures are what a real call with
	// these breakpoints would report.
	sim, err := cachesim.NewAnthropic(cachesim.AnthropicOptions{})
	if err != nil {
		return err
	}
	model := &scripted.Model{Cache: sim, Tokenizer: tk, Script: func(req provider.Request, call int) ([]core.Item, error) {
		return scriptedModel(req.View), nil
	}}
	loop, err := agent.New(agent.Options{Model: model})
	if err != nil {
		return err
	}
	script := [][]string{
		{"Hi, I am Ada and I like metric units.", "Thanks!"},
		{"Do you remember my name?"},
	}
	for runNo, turns := range script {
		// Each run opens the store anew, as a new process would.
		store, err := filestore.Open(dir, filestore.Options{})
		if err != nil {
			return err
		}
		rt, err := core.NewRuntime(core.Config{
			Layers:    layers(),
			System:    []core.Item{core.SystemMessage(systemPrompt)},
			Store:     store,
			Tokenizer: tk,
			Policy:    &core.Policy{TokenBudget: 8000, ResponseReserve: 1000},
		})
		if err != nil {
			return err
		}
		sess, err := rt.Start(ctx, core.RunOptions{ThreadID: "demo-thread"})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n######## run %d of thread %q ########\n", runNo+1, sess.Run().ThreadID)
		for _, user := range turns {
			fmt.Fprintf(w, "\nuser > %s\n", user)
			res, err := loop.Turn(ctx, sess, core.UserMessage(user))
			if err != nil {
				return err
			}
			for _, round := range res.Rounds {
				printView(w, round.View)
				c := round.Cache
				fmt.Fprintf(w, "  cache (simulated Anthropic): read %d, write %d, uncached %d tokens\n", c.ReadTokens, c.WriteTokens, c.UncachedTokens)
				for _, it := range round.Output {
					fmt.Fprintf(w, "model> %s\n", describe(it))
				}
				for _, it := range round.ToolOutputs {
					fmt.Fprintf(w, "tool > %s\n", it.Output)
				}
			}
		}
		if err := sess.Complete(ctx, "ok"); err != nil {
			return err
		}
		if err := store.Close(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nstate persisted under %s\n", dir)
	return nil
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

func printView(w io.Writer, v *core.View) {
	fmt.Fprintf(w, "\n--- turn %d: view of %d items, %d tokens ---\n", v.Turn+1, v.Len(), v.Tokens())
	for _, b := range []core.Band{core.BandSystem, core.BandAnchor, core.BandHistory, core.BandLive, core.BandUpdates, core.BandTail} {
		items := v.Band(b)
		if len(items) == 0 {
			continue
		}
		fmt.Fprintf(w, "[%s] %d tokens\n", b, v.BandTokens(b))
		for _, it := range items {
			text := strings.ReplaceAll(describe(it), "\n", " ")
			if len(text) > 96 {
				text = text[:93] + "..."
			}
			fmt.Fprintf(w, "    %s\n", text)
		}
	}
	for _, it := range v.Updates() {
		// The anchors stay pinned; what changed is published once, at the
		// end of history, and stays in the conversation from then on.
		fmt.Fprintf(w, "  published this turn: %s\n", strings.ReplaceAll(it.Text(), "\n", "\n    "))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  layer\tslot\tband\tserved\ttokens\tbudget")
	for _, l := range v.Usage.Layers {
		budget := fmt.Sprint(l.Budget)
		if l.Budget == core.Unlimited {
			budget = "auto"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%d\t%s\n", l.LayerID, l.Slot, l.Band, l.Served, l.Tokens, budget)
	}
	tw.Flush()
	for _, d := range v.Usage.Diagnostics {
		fmt.Fprintf(w, "  diagnostic: %s %s %s: %s\n", d.Layer, d.Hook, d.Kind, d.Message)
	}
}
