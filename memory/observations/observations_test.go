package observations_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/tokens"
	"github.com/stratamem/strata/vectorstore"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func newLayer(t *testing.T, store *memory.Store, opts observations.Options) *observations.Layer {
	t.Helper()
	if opts.Placement == "" {
		// Content tests read the fresh render; anchoring (which would
		// serve the first, empty render pinned) has its own test.
		opts.Placement = core.PlacementLive
	}
	return memtest.Layer(t, observations.New, store, opts)
}

func start(t *testing.T, l *observations.Layer, st storage.Store, thread, resource string) *core.Session {
	t.Helper()
	return memtest.Session(t, core.Config{Layers: []core.AnyLayer{l}, Store: st}, core.RunOptions{RunID: "run-" + thread, ThreadID: thread, ResourceID: resource})
}

func listAll(t *testing.T, store *memory.Store) []vectorstore.Record {
	t.Helper()
	return memtest.Records(t, store, vectorstore.Filter{})
}

func recordCall(callID string, args any) core.Item {
	b, _ := json.Marshal(args)
	return core.FunctionCall(callID, "observations/record", string(b))
}

type obsArg struct {
	Text       string `json:"text"`
	Importance int    `json:"importance,omitempty"`
}

func TestExtractionThroughSession(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	l := newLayer(t, store, observations.Options{})
	s := start(t, l, nil, "thread-1", "")

	if got := memtest.Block(t, s, "observations"); got != "" {
		t.Fatalf("empty memory rendered %q", got)
	}
	if err := s.Append(ctx, core.UserMessage("Hi! I'm allergic to peanuts and I work at Acme. What should I cook?")); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, core.AssistantMessage("Noted. How about a lentil curry?")); err != nil {
		t.Fatal(err)
	}
	got := memtest.Block(t, s, "observations")
	for _, want := range []string{
		"- [5] User is allergic to peanuts (2026-11-30)",
		"- [4] User works at Acme (2026-11-30)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("recall lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "allergic") > strings.Index(got, "Acme") {
		t.Errorf("higher importance not first:\n%s", got)
	}
	recs := listAll(t, store)
	if len(recs) != 2 {
		t.Fatalf("records: %d, want 2", len(recs))
	}
	for _, r := range recs {
		if r.Layer != "observations" || r.Kind != observations.Kind || r.Scope != (vectorstore.Scope{Thread: "thread-1"}) {
			t.Errorf("record fields: %+v", r)
		}
		if !r.CreatedAt.Equal(t0) || r.Metadata[observations.MetaSources] != `["run-thread-1:0"]` || r.Metadata[observations.MetaOrigin] != observations.OriginExtractor {
			t.Errorf("record metadata: created %v, %v", r.CreatedAt, r.Metadata)
		}
	}
	st, ok := core.State[observations.State](s, "observations")
	if !ok || len(st.Observations()) != 2 {
		t.Fatalf("state observations: %v %+v", ok, st.Observations())
	}
	// Recording nothing new writes nothing and keeps the bytes.
	if err := s.Record(ctx, core.AssistantMessage("Anything else?")); err != nil {
		t.Fatal(err)
	}
	if again := memtest.Block(t, s, "observations"); again != got {
		t.Errorf("render changed without writes:\n%s\n---\n%s", got, again)
	}
}

func TestItemIDsAreSources(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	l := newLayer(t, store, observations.Options{})
	s := start(t, l, nil, "th", "")
	msg := core.UserMessage("My favourite colour is blue.")
	msg.ID = "msg_42"
	if err := s.Record(ctx, msg); err != nil {
		t.Fatal(err)
	}
	recs := listAll(t, store)
	if len(recs) != 1 || recs[0].Text != "User's favourite colour is blue" || recs[0].Metadata[observations.MetaSources] != `["msg_42"]` {
		t.Fatalf("records: %+v", recs)
	}
}

func TestRecordFunction(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	l := newLayer(t, store, observations.Options{DisableExtraction: true})
	s := start(t, l, nil, "thread-1", "")

	if tools := s.Tools(); len(tools) != 1 || tools[0].Name != "observations/record" || !strings.Contains(string(tools[0].Parameters), `"importance"`) {
		t.Fatalf("tools: %+v", tools)
	}
	call := recordCall("call-1", map[string]any{"observations": []obsArg{
		{Text: "The user prefers metric units", Importance: 4},
		{Text: "The user's project is due on Friday"},
	}})
	// The host records the model's call, which writes nothing, then routes
	// it: the write happens there and the output says what it did.
	if err := s.Record(ctx, call); err != nil {
		t.Fatal(err)
	}
	if n := len(listAll(t, store)); n != 0 {
		t.Fatalf("Record applied the call: %d records", n)
	}
	want := "Recorded 2 observation(s): 2 new, 0 merged into existing ones, 0 already known."
	out, err := s.ExecuteTool(ctx, call)
	if err != nil || out.Output != want || out.CallID != "call-1" {
		t.Fatalf("routed output %+v %v", out, err)
	}
	if err := s.Append(ctx, out); err != nil {
		t.Fatal(err)
	}
	got := memtest.Block(t, s, "observations")
	if !strings.Contains(got, "- [4] The user prefers metric units (2026-11-30)") || !strings.Contains(got, "- [3] The user's project is due on Friday") {
		t.Fatalf("recall:\n%s", got)
	}
	// A replay of the call id is answered with the first output and
	// writes nothing.
	clock.Advance(time.Hour)
	out, err = s.ExecuteTool(ctx, call)
	if err != nil || out.Output != want {
		t.Fatalf("replay output %q %v", out.Output, err)
	}
	for _, r := range listAll(t, store) {
		if r.Metadata[observations.MetaMentions] != "1" || r.Metadata[observations.MetaSources] != `["run-thread-1:call:call-1"]` ||
			r.Metadata[observations.MetaOrigin] != observations.OriginFunction || !r.CreatedAt.Equal(t0) {
			t.Errorf("applied twice or wrong source: %+v", r)
		}
	}

	// Routed first, then recorded with its output: applied once.
	call2 := recordCall("call-2", map[string]any{"observations": []obsArg{{Text: "The user has a cat named Miso", Importance: 2}}})
	out, err = s.ExecuteTool(ctx, call2)
	if err != nil || !strings.Contains(out.Output, "1 new") {
		t.Fatalf("CallFunction: %v %q", err, out.Output)
	}
	if err := s.Record(ctx, call2, out); err != nil {
		t.Fatal(err)
	}
	if n := len(listAll(t, store)); n != 3 {
		t.Fatalf("records after call-2: %d, want 3", n)
	}
	st, _ := core.State[observations.State](s, "observations")
	if !slices.Equal(st.Applied, []string{"call-1", "call-2"}) {
		t.Errorf("applied: %v", st.Applied)
	}
}

// The usual host loop: Record the model's items, ask BeforeToolCall, then
// ExecuteTool what is allowed. A denied record call leaves no observation,
// neither from the call nor from the extractor reading it.
func TestSteeringDenialLeavesObservationsUnchanged(t *testing.T) {
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	// A policy layer denies every call mentioning "password".
	deny := memtest.Deny("password", "no credentials in memory")
	rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{deny, newLayer(t, store, observations.Options{})}})
	s := memtest.Start(t, rt, core.RunOptions{RunID: "run-th", ThreadID: "th"})
	out := memtest.Turn(t, s, recordCall("c1", map[string]any{"observations": []obsArg{{Text: "User's password is hunter2", Importance: 5}}}))
	if out.Output != "Call to observations/record denied by policy: no credentials in memory" {
		t.Fatalf("denied output %q", out.Output)
	}
	if recs := listAll(t, store); len(recs) != 0 {
		t.Fatalf("denied call wrote %+v", recs)
	}
	if got := memtest.Block(t, s, "observations"); got != "" {
		t.Fatalf("denied call rendered %q", got)
	}
	st, _ := core.State[observations.State](s, "observations")
	if len(st.Applied) != 0 || len(st.Observations()) != 0 {
		t.Fatalf("state after the denied call: %+v", st)
	}
	out = memtest.Turn(t, s, recordCall("c2", map[string]any{"observations": []obsArg{{Text: "User prefers aisle seats"}}}))
	if out.Output != "Recorded 1 observation(s): 1 new, 0 merged into existing ones, 0 already known." {
		t.Fatalf("allowed output %q", out.Output)
	}
	if got := memtest.Block(t, s, "observations"); strings.Contains(got, "hunter2") || !strings.Contains(got, "User prefers aisle seats") {
		t.Fatalf("rendered %q", got)
	}
}

func TestRecordRejectsBadArguments(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	l := newLayer(t, store, observations.Options{DisableExtraction: true})
	s := start(t, l, nil, "thread-1", "")
	if _, err := s.ExecuteTool(ctx, recordCall("ok", map[string]any{"observations": []obsArg{{Text: "The user likes jazz"}}})); err != nil {
		t.Fatal(err)
	}
	before := listAll(t, store)
	stBefore, _ := core.State[observations.State](s, "observations")

	many := make([]obsArg, 101)
	for i := range many {
		many[i] = obsArg{Text: fmt.Sprintf("fact %d", i)}
	}
	cases := []struct{ name, args, want string }{
		{"invalid json", `{"observations": [`, "invalid arguments"},
		{"not an object", `[1,2]`, "invalid arguments"},
		{"wrong type", `{"observations": "the user likes jazz"}`, "invalid arguments"},
		{"wrong item type", `{"observations": [{"text": 42}]}`, "invalid arguments"},
		{"missing field", `{}`, "invalid arguments"},
		{"missing text", `{"observations": [{"importance": 3}]}`, "invalid arguments"},
		{"unknown field", `{"observations": [{"text": "x", "weight": 2}]}`, "invalid arguments"},
		{"fractional importance", `{"observations": [{"text": "x", "importance": 2.5}]}`, "invalid arguments"},
		{"empty list", `{"observations": []}`, "at least one"},
		{"too many", mustJSON(map[string]any{"observations": many}), "at most 100"},
		{"importance too high", `{"observations": [{"text": "x", "importance": 9}]}`, "importance: must be 1..5"},
		{"importance negative", `{"observations": [{"text": "x", "importance": -1}]}`, "importance: must be 1..5"},
		{"blank text", `{"observations": [{"text": "  . "}]}`, "text: empty"},
		{"long text", mustJSON(map[string]any{"observations": []obsArg{{Text: strings.Repeat("a", observations.MaxTextBytes+1)}}}), "at most 8192"},
		{"huge payload", `{"observations": [{"text": "` + strings.Repeat("x", observations.MaxArgumentBytes) + `"}]}`, "more than the 262144 allowed"},
		{"nul byte", `{"observations": [{"text": "a\u0000b"}]}`, "NUL"},
		{"trailing data", `{"observations": [{"text": "x"}]} {}`, "invalid arguments"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			call := core.FunctionCall(fmt.Sprintf("bad-%d", i), "observations/record", c.args)
			out, err := s.ExecuteTool(ctx, call)
			if err != nil {
				t.Fatalf("CallFunction error: %v", err)
			}
			if !strings.HasPrefix(out.Output, "error: ") || !strings.Contains(out.Output, c.want) {
				t.Errorf("output %q, want an error containing %q", trunc(out.Output), c.want)
			}
			// Recording it must not apply it either.
			if err := s.Record(ctx, call); err != nil && !errors.Is(err, core.ErrInvalidItem) {
				t.Fatal(err)
			}
		})
	}
	after := listAll(t, store)
	if len(after) != len(before) || after[0].Metadata[observations.MetaMentions] != before[0].Metadata[observations.MetaMentions] {
		t.Errorf("records changed: %d -> %d", len(before), len(after))
	}
	stAfter, _ := core.State[observations.State](s, "observations")
	if !slices.Equal(stAfter.Applied, stBefore.Applied) {
		t.Errorf("state changed: %v -> %v", stBefore.Applied, stAfter.Applied)
	}
	var rejected int
	for _, d := range s.Diagnostics() {
		if d.Kind == core.KindRejected {
			rejected++
		}
	}
	if rejected != len(cases) {
		t.Errorf("rejected diagnostics: %d, want %d", rejected, len(cases))
	}

	// The function itself returns a typed error.
	fn := l.Layer.Functions[0]
	_, err := fn.Call(ctx, core.CallParams[observations.State]{Run: s.Run(), Call: core.Item{Arguments: `{"observations": [{"text": "x", "importance": 7}]}`}})
	var ae *core.ArgumentError
	if !errors.As(err, &ae) || ae.Function != "observations/record" {
		t.Fatalf("want *core.ArgumentError, got %T %v", err, err)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func trunc(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

func TestNearDuplicatesMerge(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	l := newLayer(t, store, observations.Options{DisableExtraction: true})
	scope := vectorstore.Scope{Thread: "th"}

	first := "User works at Acme in the London office"
	near := "User works at Acme in the London office now"
	vecs, err := store.Embedder.Embed(ctx, []string{first, near, "User lives in Paris"})
	if err != nil {
		t.Fatal(err)
	}
	if c := embed.Cosine(vecs[0], vecs[1]); c < observations.DefaultMergeThreshold {
		t.Fatalf("test premise: near-identical texts score %.3f with the hashing embedder", c)
	}
	if c := embed.Cosine(vecs[0], vecs[2]); c >= observations.DefaultMergeThreshold {
		t.Fatalf("test premise: distinct texts score %.3f", c)
	}

	res, err := l.Put(ctx, scope, observations.Observation{Text: first, Importance: 2, Sources: []string{"m1"}})
	if err != nil || res.Added != 1 {
		t.Fatalf("Add: %+v %v", res, err)
	}
	id := res.IDs[0]

	// Exact restatement up to case, spacing and final punctuation.
	clock.Advance(time.Hour)
	res, err = l.Put(ctx, scope, observations.Observation{Text: "  user works at ACME in the London   office. ", Sources: []string{"m2"}})
	if err != nil || res.Merged != 1 || res.IDs[0] != id {
		t.Fatalf("exact restatement: %+v %v", res, err)
	}
	// Near-identical by cosine: merged, newer wording wins.
	clock.Advance(time.Hour)
	res, err = l.Put(ctx, scope, observations.Observation{Text: near, Importance: 2, Sources: []string{"m3"}})
	if err != nil || res.Merged != 1 || res.IDs[0] != id {
		t.Fatalf("near duplicate: %+v %v", res, err)
	}
	// A replay of the same source changes nothing.
	res, err = l.Put(ctx, scope, observations.Observation{Text: near, Importance: 2, Sources: []string{"m3"}})
	if err != nil || res.Unchanged != 1 {
		t.Fatalf("replay: %+v %v", res, err)
	}
	// Distinct fact: a new record.
	res, err = l.Put(ctx, scope, observations.Observation{Text: "User lives in Paris", Sources: []string{"m4"}})
	if err != nil || res.Added != 1 {
		t.Fatalf("distinct: %+v %v", res, err)
	}
	// Duplicates inside one batch merge with each other.
	res, err = l.Put(ctx, scope,
		observations.Observation{Text: "User is allergic to peanuts and tree nuts", Importance: 5, Sources: []string{"m5"}},
		observations.Observation{Text: "User is allergic to peanuts and tree nuts too", Importance: 4, Sources: []string{"m6"}})
	if err != nil || res.Added != 1 || res.Merged != 1 || res.IDs[0] != res.IDs[1] {
		t.Fatalf("in-batch: %+v %v", res, err)
	}

	obs, err := l.List(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 3 {
		t.Fatalf("observations: %+v", obs)
	}
	var acme observations.Observation
	for _, o := range obs {
		if o.ID == id {
			acme = o
		}
	}
	// Importance: 2, then max(2, 3)+1 = 4 on the restatement from m2, then
	// max(4, 2)+1 = 5 on the near duplicate from m3.
	if acme.Text != near || !acme.CreatedAt.Equal(t0) || !acme.LastSeen.Equal(t0.Add(2*time.Hour)) ||
		!slices.Equal(acme.Sources, []string{"m1", "m2", "m3"}) || acme.Importance != 5 || acme.Mentions != 3 {
		t.Fatalf("merged observation: %+v", acme)
	}

	// A threshold of 1 merges exact restatements only.
	strict := newLayer(t, store, observations.Options{Common: memory.Common{ID: "strict"}, MergeThreshold: 1, DisableExtraction: true})
	if _, err := strict.Put(ctx, scope, observations.Observation{Text: first}); err != nil {
		t.Fatal(err)
	}
	res, err = strict.Put(ctx, scope, observations.Observation{Text: near})
	if err != nil || res.Added != 1 {
		t.Fatalf("strict threshold: %+v %v", res, err)
	}
}

func TestAddRejectsInvalid(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", nil)
	l := newLayer(t, store, observations.Options{})
	if _, err := l.Put(ctx, vectorstore.Scope{Thread: "a"}, observations.Observation{Text: ""}); !errors.Is(err, observations.ErrInvalidObservation) {
		t.Errorf("empty text: %v", err)
	}
	if _, err := l.Put(ctx, vectorstore.Scope{Thread: "a"}, observations.Observation{Text: "x", Importance: 6}); !errors.Is(err, observations.ErrInvalidObservation) {
		t.Errorf("importance: %v", err)
	}
	if _, err := l.Put(ctx, vectorstore.Scope{Resource: "a"}, observations.Observation{Text: "x"}); !errors.Is(err, observations.ErrScope) {
		t.Errorf("scope: %v", err)
	}
	if n := len(listAll(t, store)); n != 0 {
		t.Errorf("records written: %d", n)
	}
}

func TestBudgetedRendering(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	l := newLayer(t, store, observations.Options{DisableExtraction: true})
	scope := vectorstore.Scope{Thread: "th"}
	topics := []string{"jazz", "chess", "sailing", "pottery", "rust", "tango", "origami", "birding", "climbing", "baking", "cycling", "poetry"}
	for i, topic := range topics {
		clock.Advance(time.Minute)
		if _, err := l.Put(ctx, scope, observations.Observation{Text: "User enjoys " + topic, Importance: 1 + i%5}); err != nil {
			t.Fatal(err)
		}
	}
	obs, err := l.List(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	tok := tokens.Estimate()
	full := observations.Render(obs, core.Unlimited, tok)
	if got := strings.Count(full, "\n- ["); got != len(topics) {
		t.Fatalf("unbounded render has %d lines:\n%s", got, full)
	}
	budget := tok.Count(full) * 2 / 3
	text := observations.Render(obs, budget, tok)
	if n := tok.Count(text) + core.ItemOverhead; n > budget {
		t.Fatalf("render %d tokens over budget %d", n, budget)
	}
	if text != observations.Render(obs, budget, tok) {
		t.Fatal("render not deterministic")
	}
	lines := strings.Split(text, "\n")
	var shown []string
	for _, ln := range lines {
		if strings.HasPrefix(ln, "- [") {
			shown = append(shown, ln)
		}
	}
	if len(shown) == 0 || len(shown) == len(topics) || !strings.Contains(text, fmt.Sprintf("(%d less important observation(s) not shown.)", len(topics)-len(shown))) {
		t.Fatalf("budgeted render:\n%s", text)
	}
	// Priority: importance descending, then most recently seen first.
	// Importance 1+i%5: rust (i=4) and baking (i=9) have 5, baking seen later.
	if !strings.HasPrefix(shown[0], "- [5] User enjoys baking") || !strings.HasPrefix(shown[1], "- [5] User enjoys rust") {
		t.Errorf("order:\n%s", text)
	}
	for i := 1; i < len(shown); i++ {
		if shown[i-1][3] < shown[i][3] {
			t.Errorf("importance not descending at %d:\n%s", i, text)
		}
	}
	if observations.Render(obs, 10, tok) != "" {
		t.Error("a budget below the frame should render nothing")
	}
	if observations.Render(nil, core.Unlimited, tok) != "" {
		t.Error("no observations should render nothing")
	}

	// Through a session with a fixed budget the block never exceeds it.
	lay := l.Layer
	lay.Budget = core.Fixed(float64(budget))
	s := memtest.Session(t, core.Config{Layers: []core.AnyLayer{lay}}, core.RunOptions{ThreadID: "th"})
	if _, err := s.Assemble(ctx); err != nil {
		t.Fatal(err)
	}
	u := s.LastUsage().Layer("observations")
	if u.Tokens == 0 || u.Tokens > budget || u.Truncated != 0 {
		t.Errorf("usage: %+v", u)
	}
}

func TestAnchoredDriftUsesRenderDelta(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	l := newLayer(t, store, observations.Options{Common: memory.Common{Placement: core.PlacementAnchor}, DisableExtraction: true})
	scope := vectorstore.Scope{Thread: "th"}
	var seed []observations.Observation
	for _, topic := range []string{"jazz", "chess", "sailing", "pottery", "tango", "origami"} {
		seed = append(seed, observations.Observation{Text: "User enjoys " + topic, Importance: 2})
	}
	if _, err := l.Put(ctx, scope, seed...); err != nil {
		t.Fatal(err)
	}
	s := start(t, l, nil, "th", "")
	v1, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pinned := v1.Band(core.BandAnchor)
	if len(pinned) != 1 || !strings.Contains(pinned[0].Text(), "User enjoys jazz") {
		t.Fatalf("anchor band: %+v", pinned)
	}
	out, err := s.ExecuteTool(ctx, recordCall("c1", map[string]any{"observations": []obsArg{{Text: "User is allergic to penicillin", Importance: 5}}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, recordCall("c1", nil), out); err != nil {
		t.Fatal(err)
	}
	v2, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := v2.Band(core.BandAnchor); len(got) != 1 || got[0].Text() != pinned[0].Text() {
		t.Fatalf("pinned bytes changed")
	}
	u := s.LastUsage().Layer("observations")
	if u.Served != core.ServedPinned || u.Update != core.ActionReplace {
		t.Fatalf("usage: %+v", u)
	}
	upd := v2.Updates()
	if len(upd) != 1 {
		t.Fatalf("updates band: %+v", upd)
	}
	txt := upd[0].Text()
	if !strings.Contains(txt, "- [5] User is allergic to penicillin") || strings.Contains(txt, "User enjoys jazz") {
		t.Fatalf("delta should carry only the new line:\n%s", txt)
	}
}

func TestDelta(t *testing.T) {
	rest := strings.Repeat("- [1] D is a long observation that takes room in the block (2026-11-01)\n", 6)
	prev := []core.Item{core.DeveloperMessage("<observations>\nhead\n- [3] A (2026-11-01)\n- [2] B (2026-11-01)\n- [2] C (2026-11-01)\n" + rest + "</observations>")}
	next := []core.Item{core.DeveloperMessage("<observations>\nhead\n- [4] A (2026-11-02)\n- [3] E (2026-11-02)\n- [2] B (2026-11-01)\n" + rest + "</observations>")}
	d, ok, err := observations.Delta(prev, next)
	if err != nil || !ok {
		t.Fatalf("Delta: %v %v", ok, err)
	}
	want := "<observations_update>\nChanges to the observations above.\nNew or updated:\n- [4] A (2026-11-02)\n- [3] E (2026-11-02)\nNo longer listed (superseded, removed or left out for space):\n- [2] C (2026-11-01)\n</observations_update>"
	if d != want {
		t.Fatalf("delta:\n%s\nwant:\n%s", d, want)
	}
	if _, ok, _ := observations.Delta(prev, prev); ok {
		t.Error("no change should decline")
	}
	small := []core.Item{core.DeveloperMessage("<observations>\n- [2] X (2026-11-01)\n</observations>")}
	if _, ok, _ := observations.Delta(prev, small); ok {
		t.Error("a delta larger than the block should decline")
	}
}

func TestSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	stateDir := t.TempDir()
	clock := &memtest.Clock{T: t0}

	st1 := memtest.StateStore(t, stateDir)
	store1 := memtest.NewStore(t, dir, clock)
	s1 := start(t, newLayer(t, store1, observations.Options{}), st1, "thread-1", "")
	if err := s1.Record(ctx, core.UserMessage("I live in Lyon.")); err != nil {
		t.Fatal(err)
	}
	call := recordCall("call-9", map[string]any{"observations": []obsArg{{Text: "User plays the cello", Importance: 2}}})
	if _, err := s1.ExecuteTool(ctx, call); err != nil {
		t.Fatal(err)
	}
	want := memtest.Block(t, s1, "observations")
	memtest.Shutdown(t, s1, store1.Records, st1)

	st2 := memtest.StateStore(t, stateDir)
	store2 := memtest.NewStore(t, dir, clock)
	s2 := start(t, newLayer(t, store2, observations.Options{}), st2, "thread-1", "")
	got := memtest.Block(t, s2, "observations")
	if got != want || !strings.Contains(got, "User lives in Lyon") || !strings.Contains(got, "User plays the cello") {
		t.Fatalf("after reopen:\n%s\nwant:\n%s", got, want)
	}
	// The applied call ids survived too: a replayed call is not applied again.
	out, err := s2.ExecuteTool(ctx, call)
	if err != nil || out.Output != "Already applied: call call-9 was applied in an earlier session; nothing was written again." {
		t.Fatalf("replayed call: %v %q", err, out.Output)
	}
}

func TestCustomExtractor(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	var seen []core.Item
	ex := observations.ExtractorFunc(func(_ context.Context, items []core.Item) ([]observations.Observation, error) {
		seen = items
		return []observations.Observation{
			{Text: "User is planning a trip to Japan", Importance: 9, From: []int{1}},
			{Text: "   "},
			{Text: "User asked about flights", Importance: 1},
		}, nil
	})
	l := newLayer(t, store, observations.Options{Extractor: ex})
	s := start(t, l, nil, "th", "")
	if err := s.Append(ctx, core.UserMessage("hello")); err != nil {
		t.Fatal(err)
	}
	call := recordCall("c1", map[string]any{"observations": []obsArg{{Text: "User wants a window seat"}}})
	if err := s.Record(ctx, core.UserMessage("We're going to Japan in spring."), call); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Fatalf("extractor saw %d items (its own calls must be hidden)", len(seen))
	}
	got := map[string]vectorstore.Record{}
	for _, r := range listAll(t, store) {
		got[r.Text] = r
	}
	if r := got["User is planning a trip to Japan"]; r.Metadata[observations.MetaImportance] != "5" || r.Metadata[observations.MetaSources] != `["run-th:1"]` {
		t.Errorf("clamped/sourced observation: %+v", r.Metadata)
	}
	if r := got["User asked about flights"]; r.Metadata[observations.MetaSources] != `["run-th:0","run-th:1"]` {
		t.Errorf("observation without From: %+v", r.Metadata)
	}
	// Recording the record call did not apply it; routing it does.
	if _, ok := got["User wants a window seat"]; ok || len(got) != 2 {
		t.Errorf("records: %v", got)
	}
	if out, err := s.ExecuteTool(ctx, call); err != nil || !strings.Contains(out.Output, "1 new") {
		t.Fatalf("routed call: %v %q", err, out.Output)
	}
	if n := len(listAll(t, store)); n != 3 {
		t.Errorf("%d records after the routed call, want 3", n)
	}

	// A failing extractor is a diagnostic; nothing is written.
	boom := errors.New("model unavailable")
	l2 := newLayer(t, store, observations.Options{
		Common: memory.Common{ID: "obs2"},
		Extractor: observations.ExtractorFunc(func(context.Context, []core.Item) ([]observations.Observation, error) {
			return nil, boom
		}),
	})
	s2 := start(t, l2, nil, "th", "")
	if err := s2.Record(ctx, core.UserMessage("I like tea")); err != nil {
		t.Fatal(err)
	}
	diags := s2.Diagnostics()
	if len(diags) != 1 || diags[0].Hook != "store" || !strings.Contains(diags[0].Message, boom.Error()) {
		t.Fatalf("diagnostics: %+v", diags)
	}
	n, _ := store.Records.Count(ctx, vectorstore.Filter{Layer: "obs2"})
	if n != 0 {
		t.Errorf("records written by a failed extraction: %d", n)
	}
}

func TestOptionsValidation(t *testing.T) {
	store := memtest.NewStore(t, "", nil)
	memtest.ConfigErrors(t, func(o observations.Options) error { _, err := observations.New(store, o); return err }, []memtest.ConfigCase[observations.Options]{
		{Opts: observations.Options{Common: memory.Common{Scope: core.ScopeGlobal}}, Field: "Scope"},
		{Opts: observations.Options{Common: memory.Common{Scope: core.ScopeExecution}}, Field: "Scope"},
		{Opts: observations.Options{MergeThreshold: 1.5}, Field: "MergeThreshold"},
		{Opts: observations.Options{MergeThreshold: -0.1}, Field: "MergeThreshold"},
		{Opts: observations.Options{MergeThreshold: math.NaN()}, Field: "MergeThreshold"},
		{Opts: observations.Options{Common: memory.Common{Placement: "sideways"}}, Field: "Placement"},
		{Opts: observations.Options{Common: memory.Common{ID: "a/b"}}, Field: "ID"},
		{Opts: observations.Options{Common: memory.Common{Budget: core.Fixed(math.NaN())}}, Field: "Budget.Tokens"},
	})
	if _, err := observations.New(nil, observations.Options{}); !errors.Is(err, memory.ErrInvalidStore) {
		t.Errorf("nil store: %v", err)
	}
	l, err := observations.New(store, observations.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec := l.Layer.Spec()
	if spec.ID != "observations" || spec.Slot != core.SlotObservations || spec.Scope != core.ScopeThread || spec.Placement != core.PlacementAuto {
		t.Errorf("defaults: %+v", spec)
	}
}

func TestDefaultPlacementPublishesNewFacts(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	l, err := observations.New(store, observations.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, l, nil, "th", "")
	if _, err := s.Assemble(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, core.UserMessage("I live in Oslo.")); err != nil {
		t.Fatal(err)
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Auto starts anchored: the first (empty) render was pinned, so the new
	// fact arrives as an "add" context update.
	upd := v.Updates()
	if len(upd) != 1 || !strings.Contains(upd[0].Text(), `<update layer="observations" action="add">`) || !strings.Contains(upd[0].Text(), "- [4] User lives in Oslo") {
		t.Fatalf("updates: %+v", upd)
	}
}

// A message holding a whitespace-only "my ... is" keeps its other facts
// and raises no diagnostic.
func TestExtractionSurvivesWhitespaceOnlySubject(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	s := start(t, newLayer(t, store, observations.Options{}), nil, "thread-1", "")
	if err := s.Record(ctx, core.UserMessage("I am allergic to peanuts. my \u00a0 is blue")); err != nil {
		t.Fatal(err)
	}
	if d := s.Diagnostics(); len(d) != 0 {
		t.Fatalf("diagnostics %+v", d)
	}
	recs := listAll(t, store)
	if len(recs) != 1 || !strings.Contains(recs[0].Text, "User is allergic to peanuts") {
		t.Fatalf("records %+v", recs)
	}
}
