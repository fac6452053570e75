package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

// every thread-scoped memory layer on one store.
func threadLayers(t *testing.T, st *memory.Store) []core.AnyLayer {
	t.Helper()
	sem, err := semantic.New(st, semantic.Options{Mode: semantic.ModeLexical})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := observations.New(st, observations.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := temporal.New(st, temporal.Options{Extractor: temporal.Patterns{}})
	if err != nil {
		t.Fatal(err)
	}
	ent, err := entity.New(st, entity.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pad, err := scratchpad.New(st, scratchpad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	epi, err := episodic.New(st, episodic.Options{Common: memory.Common{Scope: core.ScopeThread}})
	if err != nil {
		t.Fatal(err)
	}
	return []core.AnyLayer{sem, obs, tmp, ent, pad, epi}
}

func assembled(t *testing.T, s *core.Session) string {
	t.Helper()
	v, err := s.Assemble(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, it := range v.Items() {
		b.WriteString(it.Text())
		b.WriteByte('\n')
	}
	return b.String()
}

// carolVisits writes one memory of every kind on thread "main".
func carolVisits(t *testing.T, rt *core.Runtime) {
	t.Helper()
	ctx := context.Background()
	s := memtest.Start(t, rt, core.RunOptions{ThreadID: "main", ResourceID: "carol"})
	for _, err := range []error{
		s.Append(ctx, core.UserMessage("I'm allergic to peanuts. I live in Lyon.")),
		s.Record(ctx, core.AssistantMessage("Noted: carol's secret is safe.")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, call := range []core.Item{
		core.FunctionCall("c1", "scratchpad/update", `{"set":{"pin":"carol's PIN is 4711"}}`),
		core.FunctionCall("c2", "entity/update", `{"entities":[{"name":"Mallory","type":"person","notes":["carol's ex"]}]}`),
	} {
		if out, err := s.ExecuteTool(ctx, call); err != nil || strings.HasPrefix(out.Output, "error") {
			t.Fatalf("%s: %q %v", call.Name, out.Output, err)
		}
	}
	if err := s.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
}

// carolsWords are in carol's memories and not in dave's question.
var carolsWords = []string{"4711", "carol's ex", "allergic", "I live in Lyon", "is safe", "carol"}

// Two resources that both call their thread "main", through every
// memory layer: the second is refused while the binding is shared, and
// where it is not (a process with its own state store over the same
// records), keys alone keep every record of the one from the other, for
// reading and for writing.
func TestTwoTenantsOneThreadName(t *testing.T) {
	ctx := context.Background()
	st := memtest.NewStore(t, "", nil)
	state := memtest.StateStore(t, t.TempDir())
	rt := memtest.Runtime(t, core.Config{Store: state, Layers: threadLayers(t, st)})
	carolVisits(t, rt)

	if _, err := rt.Start(ctx, core.RunOptions{ThreadID: "main", ResourceID: "dave"}); !errors.As(err, new(*core.ThreadBoundError)) {
		t.Fatalf("dave on carol's thread: %v", err)
	}

	rt2 := memtest.Runtime(t, core.Config{Store: storage.NewMemory(), Layers: threadLayers(t, st)})
	dave := memtest.Start(t, rt2, core.RunOptions{ThreadID: "main", ResourceID: "dave"})
	if err := dave.Append(ctx, core.UserMessage("what is my PIN? who is Mallory? peanuts? Lyon? secret?")); err != nil {
		t.Fatal(err)
	}
	view := assembled(t, dave)
	for _, w := range carolsWords {
		if strings.Contains(view, w) {
			t.Fatalf("dave's view shows carol's %q:\n%s", w, view)
		}
	}
	// Dave writes the same keys: carol's records stay hers.
	for _, call := range []core.Item{
		core.FunctionCall("d1", "scratchpad/update", `{"set":{"pin":"dave's PIN is 0000"}}`),
		core.FunctionCall("d2", "entity/update", `{"entities":[{"name":"Mallory","type":"person","notes":["dave's boss"]}]}`),
	} {
		if out, err := dave.ExecuteTool(ctx, call); err != nil || strings.HasPrefix(out.Output, "error") {
			t.Fatalf("%s: %q %v", call.Name, out.Output, err)
		}
	}
	_ = dave.Complete(ctx, "ok")

	carol := memtest.Start(t, rt, core.RunOptions{ThreadID: "main", ResourceID: "carol"})
	_ = carol.Append(ctx, core.UserMessage("remind me"))
	view = assembled(t, carol)
	if !strings.Contains(view, "4711") || !strings.Contains(view, "carol's ex") || strings.Contains(view, "dave") {
		t.Fatalf("carol's view after dave wrote:\n%s", view)
	}
	// Every record of thread "main" names its resource.
	recs, _, err := st.Records.List(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Thread: "main"}, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	byRes := map[string]int{}
	for _, r := range recs {
		byRes[r.Scope.Resource]++
	}
	if byRes[""] != 0 || byRes["carol"] == 0 || byRes["dave"] == 0 {
		t.Fatalf("records of thread main by resource: %v", byRes)
	}
}

// A store written before threads were keyed by resource: records of the
// thread with no resource and ids that do not name one. The resource
// that claims the thread sees them and replaces them on its next write.
func TestLegacyThreadRecordsAreAdopted(t *testing.T) {
	ctx := context.Background()
	st := memtest.NewStore(t, "", nil)
	vec, err := st.Embedder.Embed(ctx, []string{"pin: 4711"})
	if err != nil {
		t.Fatal(err)
	}
	legacy := vectorstore.Record{ID: "note-legacy", Layer: "scratchpad", Kind: scratchpad.KindNote,
		Scope: vectorstore.Scope{Thread: "main"}, Text: "pin: 4711", Vector: vec[0],
		Metadata: map[string]string{"key": "pin", "scope": "thread"}}
	if err := st.Records.Upsert(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	rt := memtest.Runtime(t, core.Config{Store: storage.NewMemory(), Layers: threadLayers(t, st)})
	s := memtest.Start(t, rt, core.RunOptions{ThreadID: "main", ResourceID: "carol"})
	_ = s.Append(ctx, core.UserMessage("hi"))
	if v := assembled(t, s); !strings.Contains(v, "4711") {
		t.Fatalf("legacy note not adopted:\n%s", v)
	}
	if out, err := s.ExecuteTool(ctx, core.FunctionCall("c1", "scratchpad/update", `{"set":{"pin":"4712"}}`)); err != nil || strings.HasPrefix(out.Output, "error") {
		t.Fatalf("%q %v", out.Output, err)
	}
	notes, _, _ := st.Records.List(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Layer: "scratchpad"}})
	if len(notes) != 1 || notes[0].ID == "note-legacy" || notes[0].Scope.Resource != "carol" || !strings.Contains(notes[0].Text, "4712") {
		t.Fatalf("notes after the write: %+v", notes)
	}
}
