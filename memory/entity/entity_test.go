package entity_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/vectorstore"
)

var t0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

// start runs a session with anchoring off, so views show fresh output.
func start(t *testing.T, l *entity.Layer, thread string) *core.Session {
	t.Helper()
	return memtest.Session(t, core.Config{Layers: []core.AnyLayer{l}, Cache: core.CacheConfig{Disabled: true}}, core.RunOptions{ThreadID: thread, ResourceID: "user-1"})
}

func rendered(t *testing.T, s *core.Session) string {
	t.Helper()
	return memtest.Tagged(t, s, "<known_entities>")
}

func state(t *testing.T, s *core.Session) entity.State {
	t.Helper()
	st, ok := core.State[entity.State](s, "entity")
	if !ok {
		t.Fatal("no entity state")
	}
	return st
}

func update(id, args string) core.Item { return core.FunctionCall(id, "entity/update", args) }

func TestEntitiesMergeByNormalisedNameAndType(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	s := start(t, memtest.Layer(t, entity.New, store, entity.Options{}), "thread-1")

	out, err := s.ExecuteTool(ctx, update("c1", `{"entities": [
		{"name": "Ada Lovelace", "type": "person", "notes": ["mathematician", "wrote the first program"]},
		{"name": "Analytical Engine", "type": "concept", "note": "a mechanical computer"}]}`))

	if err != nil {
		t.Fatal(err)
	}
	want := "ok: recorded 2 entities: Ada Lovelace (person, new), Analytical Engine (concept, new); 2 entities remembered."
	if out.Output != want {
		t.Fatalf("output %q, want %q", out.Output, want)
	}
	clock.Advance(time.Minute)
	// Case, spacing and width differ; the duplicate note differs in case
	// and a final full stop. "Ada Lovelace" as a place is another entity.
	out, _ = s.ExecuteTool(ctx, update("c2", `{"entities": [
		{"name": "  ＡＤＡ   lovelace ", "type": "Person", "notes": ["Mathematician.", "friend of Babbage; born 1815"], "priority": 3},
		{"name": "Ada Lovelace", "type": "place", "notes": []}]}`))

	want = "ok: recorded 2 entities: Ada Lovelace (person), Ada Lovelace (place, new); 3 entities remembered."
	if out.Output != want {
		t.Fatalf("output %q, want %q", out.Output, want)
	}
	ada, ok := state(t, s).Get("ada lovelace", entity.Person)
	if !ok {
		t.Fatal("Ada not found")
	}
	wantAda := entity.Entity{Name: "Ada Lovelace", Type: entity.Person, Mentions: 2, Priority: 3,
		Notes:     []string{"mathematician", "wrote the first program", "friend of Babbage", "born 1815"},
		FirstSeen: t0, Updated: t0.Add(time.Minute)}
	if !reflect.DeepEqual(ada, wantAda) {
		t.Fatalf("Ada = %+v\nwant %+v", ada, wantAda)
	}
	wantBlock := "<known_entities>\n" +
		"- Ada Lovelace (person): mathematician; wrote the first program; friend of Babbage; born 1815\n" +
		"- Analytical Engine (concept): a mechanical computer\n" +
		"- Ada Lovelace (place)\n" +
		"</known_entities>"
	if got := rendered(t, s); got != wantBlock {
		t.Fatalf("rendered\n%s\nwant\n%s", got, wantBlock)
	}

	recs := memtest.Records(t, store, vectorstore.Filter{Layer: "entity"})
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for _, r := range recs {
		if r.Kind != "entity" || r.Scope.Thread != "thread-1" || r.Metadata["name"] == "" || r.Metadata["type"] == "" {
			t.Fatalf("record %+v", r)
		}
		if r.Metadata["type"] == "person" {
			if r.Text != "Ada Lovelace (person): mathematician; wrote the first program; friend of Babbage; born 1815" ||
				r.Metadata["mentions"] != "2" || r.Metadata["priority"] != "3" || !r.CreatedAt.Equal(t0.Add(time.Minute)) {
				t.Fatalf("Ada's record %+v", r)
			}
		}
	}
	// Folding: ß and SS compare equal.
	if _, err := s.ExecuteTool(ctx, update("c3", `{"entities": [{"name": "Straße", "type": "place"}, {"name": "STRASSE", "type": "place", "note": "a street"}]}`)); err != nil {
		t.Fatal(err)
	}
	if st := state(t, s); st.Len() != 4 {
		t.Fatalf("%d entities after ß/SS, want 4", st.Len())
	}
	if e, _ := state(t, s).Get("strasse", entity.Place); e.Name != "Straße" || e.Mentions != 1 || !reflect.DeepEqual(e.Notes, []string{"a street"}) {
		t.Fatalf("Straße = %+v", e)
	}
}

func TestSpecFunctionCallPatternAndAppliedOnce(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	s := start(t, memtest.Layer(t, entity.New, store, entity.Options{}), "thread-1")

	// The spec's plain call, notes as one string, a type alias: applied as
	// it is recorded, with no routing.
	if err := s.Record(ctx, core.FunctionCall("c1", "updateEntities",
		`{"entities": [{"name": "Acme", "type": "organisation", "notes": "makes anvils"}]}`)); err != nil {
		t.Fatal(err)
	}
	if got := rendered(t, s); got != "<known_entities>\n- Acme (organization): makes anvils\n</known_entities>" {
		t.Fatalf("rendered %q", got)
	}
	// Replaying the plain call's id applies nothing.
	if err := s.Record(ctx, core.FunctionCall("c1", "updateEntities",
		`{"entities": [{"name": "Acme", "type": "organization", "note": "replayed"}]}`)); err != nil {
		t.Fatal(err)
	}
	if acme, _ := state(t, s).Get("acme", entity.Organization); acme.Mentions != 1 || len(acme.Notes) != 1 {
		t.Fatalf("replayed plain call applied: %+v", acme)
	}

	// The provided function's call: recording it applies nothing, routing
	// it applies it and answers with the result.
	c := update("c2", `{"entities": [{"name": "acme", "type": "organization", "note": "based in Phoenix"}]}`)
	if err := s.Record(ctx, c); err != nil {
		t.Fatal(err)
	}
	if acme, _ := state(t, s).Get("acme", entity.Organization); acme.Mentions != 1 || len(acme.Notes) != 1 {
		t.Fatalf("Record applied the provided function's call: %+v", acme)
	}
	clock.Advance(time.Hour)
	want := "ok: recorded 1 entity: Acme (organization); 1 entity remembered."
	out, err := s.ExecuteTool(ctx, c)
	if err != nil || out.Output != want || out.CallID != "c2" {
		t.Fatalf("routed output %+v %v", out, err)
	}
	acme, _ := state(t, s).Get("ACME", entity.Organization)
	if acme.Mentions != 2 || !acme.Updated.Equal(t0.Add(time.Hour)) ||
		!reflect.DeepEqual(acme.Notes, []string{"makes anvils", "based in Phoenix"}) {
		t.Fatalf("Acme after the routed call: %+v", acme)
	}
	// A replay of the routed call gets the first output and writes nothing.
	clock.Advance(time.Hour)
	out, err = s.ExecuteTool(ctx, c)
	if err != nil || out.Output != want {
		t.Fatalf("replayed output %q %v", out.Output, err)
	}
	if again, _ := state(t, s).Get("acme", entity.Organization); !reflect.DeepEqual(again, acme) {
		t.Fatalf("replay applied: %+v", again)
	}

	// Recorded with its output: answered by the host, not applied.
	if err := s.Record(ctx, core.FunctionCall("c3", "updateEntities", `{"entities": [{"name": "Globex", "type": "organization"}]}`),
		core.FunctionCallOutput("c3", "denied")); err != nil {
		t.Fatal(err)
	}
	if _, ok := state(t, s).Get("Globex", entity.Organization); ok {
		t.Fatal("answered call applied")
	}

	// A rejected plain call leaves a diagnostic naming the problem.
	if err := s.Record(ctx, core.FunctionCall("c4", "updateEntities", `{"entities": [{"name": "Rex", "type": "animal"}]}`)); err != nil {
		t.Fatal(err)
	}
	d := s.Diagnostics()
	if len(d) == 0 || !strings.Contains(d[len(d)-1].Message, `invalid arguments for updateEntities: entities[0].type: unknown type "animal"`) {
		t.Fatalf("diagnostics %+v", d)
	}

	// FunctionOnly: the plain call is not applied; the routed one is.
	f := start(t, memtest.Layer(t, entity.New, store, entity.Options{FunctionOnly: true}), "thread-2")
	routed := update("c2", `{"entities": [{"name": "Initech", "type": "organization"}]}`)
	if err := f.Record(ctx, core.FunctionCall("c1", "updateEntities", `{"entities": [{"name": "Acme", "type": "organization"}]}`), routed); err != nil {
		t.Fatal(err)
	}
	if state(t, f).Len() != 0 {
		t.Fatal("FunctionOnly applied calls from the log")
	}
	if out, err := f.ExecuteTool(ctx, routed); err != nil || out.Output != "ok: recorded 1 entity: Initech (organization, new); 1 entity remembered." {
		t.Fatalf("FunctionOnly routed output %q %v", out.Output, err)
	}
}

// The usual host loop: Record the model's items, ask BeforeToolCall, then
// ExecuteTool what is allowed. A denied call leaves no trace in memory.
func TestSteeringDenialLeavesEntitiesUnchanged(t *testing.T) {
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	// A policy layer denies every call naming "Globex".
	rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{memtest.Deny("Globex", "Globex is off limits"), memtest.Layer(t, entity.New, store, entity.Options{})},
		Cache: core.CacheConfig{Disabled: true}})
	s := memtest.Start(t, rt, core.RunOptions{ThreadID: "thread-1"})
	denied := update("c1", `{"entities": [{"name": "Globex", "type": "organization", "note": "a rival"}]}`)
	out := memtest.Turn(t, s, denied)
	if out.Output != "Call to entity/update denied by policy: Globex is off limits" {
		t.Fatalf("denied output %q", out.Output)
	}
	if n := state(t, s).Len(); n != 0 {
		t.Fatalf("denied call applied: %d entities", n)
	}
	if n := len(memtest.Records(t, store, vectorstore.Filter{Layer: "entity"})); n != 0 {
		t.Fatalf("denied call wrote %d records", n)
	}
	if got := rendered(t, s); got != "" {
		t.Fatalf("denied call rendered %q", got)
	}
	out = memtest.Turn(t, s, update("c2", `{"entities": [{"name": "Initech", "type": "organization"}]}`))
	if out.Output != "ok: recorded 1 entity: Initech (organization, new); 1 entity remembered." {
		t.Fatalf("allowed output %q", out.Output)
	}
	if _, ok := state(t, s).Get("Globex", entity.Organization); ok || state(t, s).Len() != 1 {
		t.Fatalf("entities %+v", state(t, s).Entities())
	}
}

// With a layer that can deny, the plain call is applied only when the
// host routes it once allowed, and is not offered as a tool.
func TestSteeringDenialHoldsForThePlainCall(t *testing.T) {
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{memtest.Deny("Globex", "Globex is off limits"), memtest.Layer(t, entity.New, store, entity.Options{})},
		Cache: core.CacheConfig{Disabled: true}})
	s := memtest.Start(t, rt, core.RunOptions{ThreadID: "thread-1"})
	for _, tool := range s.Tools() {
		if tool.Name == entity.DefaultCallName {
			t.Fatalf("plain call offered as a tool: %+v", s.Tools())
		}
	}
	denied := core.FunctionCall("c1", entity.DefaultCallName, `{"entities": [{"name": "Globex", "type": "organization"}]}`)
	if out := memtest.Turn(t, s, denied); !strings.Contains(out.Output, "denied by policy") {
		t.Fatalf("denied output %q", out.Output)
	}
	if n := state(t, s).Len(); n != 0 {
		t.Fatalf("denied plain call applied: %d entities", n)
	}
	allowed := core.FunctionCall("c2", entity.DefaultCallName, `{"entities": [{"name": "Initech", "type": "organization"}]}`)
	if err := s.Record(context.Background(), allowed); err != nil {
		t.Fatal(err)
	}
	if n := state(t, s).Len(); n != 0 {
		t.Fatalf("plain call applied before it was allowed: %d entities", n)
	}
	if out := memtest.Route(t, s, allowed); out.Output != "ok: applied by entity" {
		t.Fatalf("allowed output %q", out.Output)
	}
	if _, ok := state(t, s).Get("Initech", entity.Organization); !ok || state(t, s).Len() != 1 {
		t.Fatalf("entities %+v", state(t, s).Entities())
	}
}

func TestBadArgumentsRejectedStateUnchanged(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	l := memtest.Layer(t, entity.New, store, entity.Options{})
	s := start(t, l, "thread-1")
	if _, err := s.ExecuteTool(ctx, update("seed", `{"entities": [{"name": "Ada", "type": "person", "note": "x"}]}`)); err != nil {
		t.Fatal(err)
	}
	var many []string
	for i := 0; i < 101; i++ {
		many = append(many, fmt.Sprintf(`{"name": "e%d", "type": "concept"}`, i))
	}
	bigNote, _ := json.Marshal(strings.Repeat("n", 8<<10+1))
	manyNotes, _ := json.Marshal(make([]string, 51))
	cases := []struct{ name, args, want string }{
		{"invalid JSON", `{"entities": [`, "arguments must be a JSON object (invalid JSON"},
		{"not an object", `"Ada"`, "arguments must be a JSON object (got a string)"},
		{"unknown top field", `{"people": []}`, `unknown field "people"`},
		{"missing entities", `{}`, `"entities" is missing`},
		{"entities not array", `{"entities": {"name": "Ada"}}`, `"entities" must be an array of objects, got an object`},
		{"empty entities", `{"entities": []}`, `"entities" is empty`},
		{"over 100 entities", `{"entities": [` + strings.Join(many, ",") + `]}`, "101 entities in one call, the limit is 100"},
		{"entity not object", `{"entities": ["Ada"]}`, "entities[0]: must be an object"},
		{"missing name", `{"entities": [{"type": "person"}]}`, "entities[0].name: missing"},
		{"name not string", `{"entities": [{"name": 7, "type": "person"}]}`, "entities[0].name: must be a string, got a number"},
		{"blank name", `{"entities": [{"name": " \n ", "type": "person"}]}`, "entities[0].name: empty"},
		{"long name", `{"entities": [{"name": "` + strings.Repeat("a", 257) + `", "type": "person"}]}`, "the limit is 256"},
		{"control char in name", `{"entities": [{"name": "A\u0007da", "type": "person"}]}`, "control character"},
		{"missing type", `{"entities": [{"name": "Ada"}]}`, "entities[0].type: missing"},
		{"type not string", `{"entities": [{"name": "Ada", "type": ["person"]}]}`, "entities[0].type: must be a string, got an array"},
		{"unknown type", `{"entities": [{"name": "Ada", "type": "robot"}]}`, `entities[0].type: unknown type "robot"`},
		{"notes a number", `{"entities": [{"name": "Ada", "type": "person", "notes": 3}]}`, "entities[0].notes: must be an array of strings (or one string), got a number"},
		{"note in notes not string", `{"entities": [{"name": "Ada", "type": "person", "notes": ["ok", false]}]}`, "entities[0].notes[1]: must be a string, got a boolean"},
		{"note not string", `{"entities": [{"name": "Ada", "type": "person", "note": {}}]}`, "entities[0].note: must be a string, got an object"},
		{"note over 8 KiB", `{"entities": [{"name": "Ada", "type": "person", "notes": [` + string(bigNote) + `]}]}`, "entities[0].notes[0]: the note is 8193 bytes, the limit is 8192"},
		{"over 50 notes", `{"entities": [{"name": "Ada", "type": "person", "notes": ` + string(manyNotes) + `}]}`, "51 notes, the limit is 50"},
		{"NUL in note", `{"entities": [{"name": "Ada", "type": "person", "note": "a\u0000b"}]}`, "NUL"},
		{"priority too high", `{"entities": [{"name": "Ada", "type": "person", "priority": 11}]}`, "priority: must be a whole number from 0 to 10, got 11"},
		{"priority fractional", `{"entities": [{"name": "Ada", "type": "person", "priority": 2.5}]}`, "got 2.5"},
		{"priority a string", `{"entities": [{"name": "Ada", "type": "person", "priority": "high"}]}`, "got a string"},
		{"unknown entity field", `{"entities": [{"name": "Ada", "type": "person", "age": 36}]}`, `entities[0]: unknown field "age"`},
		{"second entry bad, first good", `{"entities": [{"name": "Bob", "type": "person"}, {"name": "Eve"}]}`, "entities[1].type: missing"},
		{"arguments over 1 MiB", `{"entities": [{"name": "Ada", "type": "person", "note": "` + strings.Repeat("x", 1<<20) + `"}]}`, "the limit is 1048576"},
	}
	before := state(t, s).Entities()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := s.ExecuteTool(ctx, update(fmt.Sprint("bad", i), tc.args))
			if err != nil {
				t.Fatalf("CallFunction: %v", err)
			}
			if !strings.HasPrefix(out.Output, "error: invalid arguments for entity/update: ") || !strings.Contains(out.Output, tc.want) {
				t.Fatalf("output %q, want it to contain %q", out.Output, tc.want)
			}
			if got := state(t, s).Entities(); !reflect.DeepEqual(got, before) {
				t.Fatalf("state changed: %+v", got)
			}
			if n := len(memtest.Records(t, store, vectorstore.Filter{Layer: "entity"})); n != 1 {
				t.Fatalf("%d records, want 1", n)
			}
			r, err := l.Functions[0].Call(ctx, core.CallParams[entity.State]{Run: s.Run(), State: state(t, s),
				Call: update("direct", tc.args)})
			var ae *core.ArgumentError
			if !errors.As(err, &ae) || !errors.Is(err, entity.ErrInvalidUpdate) || r.State != nil {
				t.Fatalf("direct call: %v (%T)", err, err)
			}
		})
	}
}

func TestBudgetKeepsByPriorityMentionsAndRecency(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	l := memtest.Layer(t, entity.New, store, entity.Options{Common: memory.Common{Budget: core.Fixed(80)}})
	s := start(t, l, "thread-1")
	call := func(id, args string) {
		t.Helper()
		clock.Advance(time.Second)
		out, err := s.ExecuteTool(ctx, update(id, args))
		if err != nil || strings.HasPrefix(out.Output, "error") {
			t.Fatalf("%s: %q %v", id, out.Output, err)
		}
	}
	// The oldest, with an explicit priority.
	call("p", `{"entities": [{"name": "Priority Person", "type": "person", "note": "always shown", "priority": 5}]}`)
	// Mentioned three times early on.
	for i := 0; i < 3; i++ {
		call(fmt.Sprint("m", i), `{"entities": [{"name": "Mentioned Org", "type": "organization"}]}`)
	}
	for i := 0; i < 30; i++ {
		call(fmt.Sprint("f", i), fmt.Sprintf(`{"entities": [{"name": "Filler %02d", "type": "concept", "note": "a filler concept number %d"}]}`, i, i))
	}
	got := rendered(t, s)
	u := s.LastUsage().Layer("entity")
	if u.Tokens > 80 || u.Tokens == 0 || u.Truncated != 0 {
		t.Fatalf("usage %+v\n%s", u, got)
	}
	lines := strings.Split(got, "\n")
	if lines[1] != "- Priority Person (person): always shown" || lines[2] != "- Mentioned Org (organization)" {
		t.Fatalf("ranked entities not kept first-seen first:\n%s", got)
	}
	if !strings.Contains(got, "Filler 29") || strings.Contains(got, "Filler 00") || !strings.Contains(got, "more entities not shown for space)") {
		t.Fatalf("recency not kept:\n%s", got)
	}
	if again := rendered(t, s); again != got {
		t.Fatal("same state rendered different bytes")
	}

	// An entity whose notes alone overflow the budget shows its newest.
	var notes []string
	for i := 0; i < 20; i++ {
		notes = append(notes, fmt.Sprintf("observation number %d about the giant", i))
	}
	raw, _ := json.Marshal(notes)
	s2 := start(t, memtest.Layer(t, entity.New, store, entity.Options{Common: memory.Common{Budget: core.Fixed(60)}}), "thread-2")
	if _, err := s2.ExecuteTool(ctx, update("g", `{"entities": [{"name": "Giant", "type": "other", "notes": `+string(raw)+`}]}`)); err != nil {
		t.Fatal(err)
	}
	got = rendered(t, s2)
	if !strings.HasPrefix(got, "<known_entities>\n- Giant (other): …; ") || !strings.Contains(got, "observation number 19 about the giant\n") || strings.Contains(got, "number 0 ") {
		t.Fatalf("long entity:\n%s", got)
	}
}

func TestLimitsEvictAndCapNotes(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	s := start(t, memtest.Layer(t, entity.New, store, entity.Options{MaxEntities: 100, MaxNotes: 3}), "thread-1")
	var batch []string
	for i := 0; i < 100; i++ {
		batch = append(batch, fmt.Sprintf(`{"name": "E%03d", "type": "concept"}`, i))
	}
	if _, err := s.ExecuteTool(ctx, update("c1", `{"entities": [`+strings.Join(batch, ",")+`]}`)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	// E000 is mentioned again, so E099 (last by name among the least
	// mentioned, equally recent) is the one to go.
	out, _ := s.ExecuteTool(ctx, update("c2", `{"entities": [{"name": "E000", "type": "concept", "notes": ["a", "b", "c", "d"]}, {"name": "New", "type": "place"}]}`))
	if !strings.Contains(out.Output, "forgot the 1 least used to stay within 100; 100 entities remembered.") {
		t.Fatalf("output %q", out.Output)
	}
	st := state(t, s)
	if _, ok := st.Get("E099", entity.Concept); ok || st.Len() != 100 {
		t.Fatalf("eviction: len %d", st.Len())
	}
	if n := len(memtest.Records(t, store, vectorstore.Filter{Layer: "entity"})); n != 100 {
		t.Fatalf("%d records after eviction", n)
	}
	if e, _ := st.Get("E000", entity.Concept); !reflect.DeepEqual(e.Notes, []string{"b", "c", "d"}) {
		t.Fatalf("notes cap kept %v", e.Notes)
	}
}

func TestRenderDeltaPublishesOnlyChangedEntities(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	l := memtest.Layer(t, entity.New, store, entity.Options{})
	l.Placement = core.PlacementAnchor
	s := memtest.Session(t, core.Config{Layers: []core.AnyLayer{l}}, core.RunOptions{ThreadID: "thread-1"})
	var batch []string
	for i := 0; i < 8; i++ {
		batch = append(batch, fmt.Sprintf(`{"name": "Person %d", "type": "person", "note": "works on project %d"}`, i, i))
	}
	if _, err := s.ExecuteTool(ctx, update("c1", `{"entities": [`+strings.Join(batch, ",")+`]}`)); err != nil {
		t.Fatal(err)
	}
	v1, _ := s.Assemble(ctx)
	pinned := v1.Band(core.BandAnchor)
	if _, err := s.ExecuteTool(ctx, update("c2", `{"entities": [{"name": "person 3", "type": "person", "note": "moved to Lisbon"}, {"name": "Lisbon", "type": "place"}]}`)); err != nil {
		t.Fatal(err)
	}
	v2, _ := s.Assemble(ctx)
	if !reflect.DeepEqual(v2.Band(core.BandAnchor), pinned) {
		t.Fatal("pinned block moved")
	}
	upd := v2.Updates()
	// Same first sighting (the clock did not move): by name.
	want := "<update layer=\"entity\" action=\"replace\">\nEntity changes (entities not listed here are unchanged):\n" +
		"- Lisbon (place)\n- Person 3 (person): works on project 3; moved to Lisbon\n</update>"
	if len(upd) != 1 || !strings.Contains(upd[0].Text(), want) {
		t.Fatalf("updates %v\nwant %s", upd, want)
	}
}

func TestSurvivesReopenAndSeesOutsideEdits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, dir, clock)
	for _, scope := range []core.Scope{core.ScopeThread, core.ScopeResource} {
		l := memtest.Layer(t, entity.New, store, entity.Options{Common: memory.Common{ID: "ent-" + string(scope), Scope: scope}})
		s := memtest.Session(t, core.Config{Layers: []core.AnyLayer{l}}, core.RunOptions{ThreadID: "thread-1", ResourceID: "user-1"})
		if _, err := s.ExecuteTool(ctx, core.FunctionCall("c1", l.ID+"/update", `{"entities": [{"name": "Ada", "type": "person", "notes": ["a", "b"], "priority": 2}]}`)); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(ctx, "ok"); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Records.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := memtest.NewStore(t, dir, clock)
	recs := memtest.Records(t, reopened, vectorstore.Filter{Layer: "ent-thread"})
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	// An outside edit (memctl) of the notes is what the next run sees.
	r, _ := reopened.Records.Get(ctx, recs[0].ID)
	r.Text = "Ada (person): a; b; corrected"
	if err := reopened.Records.Upsert(ctx, r); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ id, thread, want string }{
		{"ent-thread", "thread-1", "- Ada (person): a; b; corrected"},
		{"ent-resource", "thread-other", "- Ada (person): a; b"}, // resource scope spans threads
	} {
		l := memtest.Layer(t, entity.New, reopened, entity.Options{Common: memory.Common{ID: tc.id, Scope: map[string]core.Scope{"ent-thread": core.ScopeThread, "ent-resource": core.ScopeResource}[tc.id]}})
		rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{l}, Cache: core.CacheConfig{Disabled: true}})
		s := memtest.Start(t, rt, core.RunOptions{ThreadID: tc.thread, ResourceID: "user-1"})
		st, _ := core.State[entity.State](s, tc.id)
		e, ok := st.Get("ada", entity.Person)
		if !ok || e.Priority != 2 || e.Mentions != 1 || !e.FirstSeen.Equal(t0) {
			t.Fatalf("%s after reopen: %+v", tc.id, e)
		}
		v, _ := s.Assemble(ctx)
		if got := v.Items()[0].Text(); !strings.Contains(got, tc.want+"\n") {
			t.Fatalf("%s rendered %q, want %q", tc.id, got, tc.want)
		}
	}
	// A thread-scoped memory is not seen from another thread.
	if got := rendered(t, start(t, memtest.Layer(t, entity.New, reopened, entity.Options{Common: memory.Common{ID: "ent-thread"}}), "thread-2")); got != "" {
		t.Fatalf("thread-2 sees %q", got)
	}
}

func TestConfigErrors(t *testing.T) {
	store := memtest.NewStore(t, "", nil)
	memtest.ConfigErrors(t, func(o entity.Options) error { _, err := entity.New(store, o); return err }, []memtest.ConfigCase[entity.Options]{
		{Opts: entity.Options{Common: memory.Common{Scope: core.ScopeExecution}}, Field: "Scope"},
		{Opts: entity.Options{MaxEntities: -1}, Field: "MaxEntities"},
		{Opts: entity.Options{MaxEntities: 10}, Field: "MaxEntities"},
		{Opts: entity.Options{MaxNotes: -2}, Field: "MaxNotes"},
		{Opts: entity.Options{Common: memory.Common{ID: "x/y"}}, Field: "ID"},
		{Opts: entity.Options{CallName: "entity/update"}, Field: "CallName"},
		{Opts: entity.Options{Common: memory.Common{Budget: core.Fixed(-1)}}, Field: "Budget.Tokens"},
	})
	if _, err := entity.New(&memory.Store{}, entity.Options{}); !errors.Is(err, memory.ErrInvalidStore) {
		t.Errorf("empty store: %v", err)
	}
	l := memtest.Layer(t, entity.New, store, entity.Options{})
	if l.ID != "entity" || l.Slot != core.SlotEntity || l.Scope != core.ScopeThread || l.Budget != core.Range(200, 1000) ||
		l.Placement != core.PlacementAuto || l.Functions[0].Spec.Name != "update" || !json.Valid(l.Functions[0].Spec.Parameters) {
		t.Fatalf("defaults %+v", l)
	}
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{
		"  Ada   LOVELACE\n": "ada lovelace",
		"ＡＣＭＥ":               "acme",
		"Straße":             "strasse",
		"ﬁnance":             "finance", // NFKC ligature
		"":                   "",
	} {
		if got := entity.NormalizeName(in); got != want {
			t.Errorf("NormalizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// Two sessions of one resource on one store: a session's write is applied
// to the entity as the store holds it, so what the other session recorded
// since this one started is kept (it was lost when the record was rebuilt
// from the session's copy).
func TestSessionsOfOneScopeKeepEachOthersUpdates(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	session := func(thread string, opts entity.Options) *core.Session {
		opts.Scope = core.ScopeResource
		// A runtime (and layer) of its own, as another process would have.
		return start(t, memtest.Layer(t, entity.New, store, opts), thread)
	}
	call := func(s *core.Session, id, args string) {
		t.Helper()
		out, err := s.ExecuteTool(ctx, update(id, args))
		if err != nil || !strings.HasPrefix(out.Output, "ok:") {
			t.Fatalf("%s: %q, %v", id, out.Output, err)
		}
		clock.Advance(time.Minute)
	}
	stored := func(name string, typ entity.Type) vectorstore.Record {
		t.Helper()
		for _, r := range memtest.Records(t, store, vectorstore.Filter{Layer: "entity"}) {
			if entity.NormalizeName(r.Metadata["name"]) == entity.NormalizeName(name) && r.Metadata["type"] == string(typ) {
				return r
			}
		}
		t.Fatalf("no record for %s", name)
		return vectorstore.Record{}
	}

	t.Run("notes", func(t *testing.T) {
		a := session("thread-a", entity.Options{})
		call(a, "a1", `{"entities": [{"name": "Ada Lovelace", "type": "person", "note": "mathematician"}]}`)
		b := session("thread-b", entity.Options{})
		call(b, "b1", `{"entities": [{"name": "Ada Lovelace", "type": "person", "note": "wrote the first program"}]}`)
		call(a, "a2", `{"entities": [{"name": "Ada Lovelace", "type": "person", "note": "born 1815"}]}`)
		r := stored("Ada Lovelace", entity.Person)
		if r.Text != "Ada Lovelace (person): mathematician; wrote the first program; born 1815" || r.Metadata["mentions"] != "3" {
			t.Fatalf("stored %q mentions %s", r.Text, r.Metadata["mentions"])
		}
		// The writer's session sees the merged entity too.
		if e, _ := state(t, a).Get("ada lovelace", entity.Person); len(e.Notes) != 3 || e.Mentions != 3 {
			t.Fatalf("session A holds %+v", e)
		}
	})

	t.Run("unseen entity", func(t *testing.T) {
		// Both sessions start before either writes: A has never seen Acme.
		a, b := session("thread-c", entity.Options{}), session("thread-d", entity.Options{})
		call(b, "b1", `{"entities": [{"name": "Acme", "type": "org", "notes": ["client since 2019", "pays late"], "priority": 9}]}`)
		call(a, "a1", `{"entities": [{"name": "acme", "type": "organization", "note": "based in Lyon"}]}`)
		r := stored("Acme", entity.Organization)
		if r.Text != "Acme (organization): client since 2019; pays late; based in Lyon" ||
			r.Metadata["name"] != "Acme" || r.Metadata["priority"] != "9" || r.Metadata["mentions"] != "2" {
			t.Fatalf("stored %q %v", r.Text, r.Metadata)
		}
	})

	t.Run("limit counts the store's entities", func(t *testing.T) {
		opts := entity.Options{Common: memory.Common{ID: "ent-limit"}, MaxEntities: 100}
		a := session("thread-e", opts)
		b := session("thread-f", opts)
		var batch []string
		for i := 0; i < 100; i++ {
			batch = append(batch, fmt.Sprintf(`{"name": "E%03d", "type": "concept"}`, i))
		}
		if _, err := b.ExecuteTool(ctx, core.FunctionCall("b1", "ent-limit/update", `{"entities": [`+strings.Join(batch, ",")+`]}`)); err != nil {
			t.Fatal(err)
		}
		out, err := a.ExecuteTool(ctx, core.FunctionCall("a1", "ent-limit/update", `{"entities": [{"name": "New", "type": "place"}]}`))
		if err != nil || !strings.Contains(out.Output, "forgot the 1 least used to stay within 100; 100 entities remembered.") {
			t.Fatalf("output %q, %v", out.Output, err)
		}
		if n := len(memtest.Records(t, store, vectorstore.Filter{Layer: "ent-limit"})); n != 100 {
			t.Fatalf("%d records, want 100", n)
		}
	})
}

// Sessions of one runtime writing one entity at the same time: each
// call's read-modify-write is serialised, so no update is lost.
func TestConcurrentWritesToOneEntityAreAllKept(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", nil)
	l := memtest.Layer(t, entity.New, store, entity.Options{Common: memory.Common{Scope: core.ScopeResource}, MaxNotes: 40})
	rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{l}, Cache: core.CacheConfig{Disabled: true}})
	memtest.Concurrently(t, []string{"a", "b"}, func(who string) error {
		s, err := rt.Start(ctx, core.RunOptions{ThreadID: "thread-" + who, ResourceID: "user-1"})
		if err != nil {
			return err
		}
		for i := 0; i < 10; i++ {
			out, err := s.ExecuteTool(ctx, update(fmt.Sprint(who, i), fmt.Sprintf(`{"entities": [{"name": "Shared", "type": "concept", "note": "%s note %d"}]}`, who, i)))
			if err != nil {
				return err
			}
			if !strings.HasPrefix(out.Output, "ok:") {
				return errors.New(out.Output)
			}
		}
		return s.Complete(ctx, "ok")
	})
	recs := memtest.Records(t, store, vectorstore.Filter{Layer: "entity"})
	if len(recs) != 1 || recs[0].Metadata["mentions"] != "20" || strings.Count(recs[0].Text, " note ") != 20 {
		t.Fatalf("records %d: %q mentions %s", len(recs), recs[0].Text, recs[0].Metadata["mentions"])
	}
}

// Records made from outside for one entity under other ids are merged into
// the entity's own record when it is next written, and the others deleted,
// so their mentions are not counted again on every later write.
func TestOutsideDuplicateRecordsAreFoldedOnWrite(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	s := start(t, memtest.Layer(t, entity.New, store, entity.Options{}), "thread-1")
	if _, err := s.ExecuteTool(ctx, update("c1", `{"entities": [{"name": "Ada", "type": "person", "note": "a"}]}`)); err != nil {
		t.Fatal(err)
	}
	recs := memtest.Records(t, store, vectorstore.Filter{Layer: "entity"})
	dup, err := store.Records.Get(ctx, recs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	dup.ID, dup.Text, dup.Metadata["name"], dup.Metadata["mentions"] = "imported-ada", "ADA (person): b", "ADA", "4"
	if err := store.Records.Upsert(ctx, dup); err != nil {
		t.Fatal(err)
	}
	for i := 2; i <= 3; i++ {
		clock.Advance(time.Minute)
		if _, err := s.ExecuteTool(ctx, update(fmt.Sprint("c", i), fmt.Sprintf(`{"entities": [{"name": "ada", "type": "person", "note": "n%d"}]}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	recs = memtest.Records(t, store, vectorstore.Filter{Layer: "entity"})
	if len(recs) != 1 || recs[0].ID == "imported-ada" || recs[0].Text != "Ada (person): a; b; n2; n3" || recs[0].Metadata["mentions"] != "7" {
		t.Fatalf("records %+v", recs)
	}
}
