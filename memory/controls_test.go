package memory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
)

// One rule for every layer's text: a function call whose text holds a
// terminal control (an OSC title sequence, BEL) is refused back to the
// model and stores nothing; text an extractor reads from the conversation
// is stored without them.
func TestControlCharactersNeverReachARecord(t *testing.T) {
	ctx := context.Background()
	const osc = `\u001b]0;pwned\u0007`
	st := memtest.NewStore(t, "", nil)
	obs, err := observations.New(st, observations.Options{Common: memory.Common{Scope: core.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := temporal.New(st, temporal.Options{Common: memory.Common{Scope: core.ScopeResource}, Extractor: temporal.Patterns{}})
	if err != nil {
		t.Fatal(err)
	}
	ent, err := entity.New(st, entity.Options{Common: memory.Common{Scope: core.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	pad, err := scratchpad.New(st, scratchpad.Options{Common: memory.Common{Scope: core.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{obs, tmp, ent, pad}})
	s := memtest.Start(t, rt, core.RunOptions{ThreadID: "t1", ResourceID: "alice"})
	for i, call := range []core.Item{
		core.FunctionCall("c1", "observations/record", `{"observations":[{"text":"The user likes tea `+osc+`"}]}`),
		core.FunctionCall("c2", "temporal/record", `{"facts":[{"subject":"user","predicate":"lives in","value":"Lisbon `+osc+`"}]}`),
		core.FunctionCall("c3", "entity/update", `{"entities":[{"name":"Ada","type":"person","notes":["friend `+osc+`"]}]}`),
		core.FunctionCall("c4", "scratchpad/update", `{"set":{"plan":"call `+osc+`"}}`),
	} {
		out, _ := s.ExecuteTool(ctx, call)
		if !strings.HasPrefix(out.Output, "error:") || !strings.Contains(out.Output, "control character") {
			t.Fatalf("call %d answered %q", i, out.Output)
		}
	}
	// The extractors' path: the user's own message, controls and all.
	if err := s.Record(ctx, core.UserMessage("I live in Porto\x1b[2J.")); err != nil {
		t.Fatal(err)
	}
	recs, _, err := st.Records.List(ctx, vectorstore.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("the extracted fact was not stored")
	}
	for _, r := range recs {
		for _, s := range append([]string{r.Text}, mapValues(r.Metadata)...) {
			if strings.ContainsAny(s, "\x1b\x07") {
				t.Fatalf("record %s holds a control: %q", r.ID, s)
			}
		}
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
