package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/stratamem/strata/tokens"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

// t0 is Monday 2026-11-30, 10:00 UTC.
var t0 = at("2026-11-30T10:00:00Z")

func start(t *testing.T, l *temporal.Layer, st storage.Store, thread, resource string) *core.Session {
	t.Helper()
	return memtest.Session(t, core.Config{Layers: []core.AnyLayer{l}, Store: st}, core.RunOptions{RunID: "run-" + thread, ThreadID: thread, ResourceID: resource})
}

type fact struct {
	Subject   string `json:"subject"`
	Predicate string `json:"predicate"`
	Value     string `json:"value"`
	When      string `json:"when,omitempty"`
}

func recordCall(callID string, facts ...fact) core.Item {
	b, _ := json.Marshal(map[string]any{"facts": facts})
	return core.FunctionCall(callID, "temporal/record", string(b))
}

func call(t *testing.T, s *core.Session, it core.Item) string {
	t.Helper()
	out, err := s.ExecuteTool(context.Background(), it)
	if err != nil {
		t.Fatalf("CallFunction %s: %v", it.Name, err)
	}
	return out.Output
}

func records(t *testing.T, store *memory.Store) map[string]vectorstore.Record {
	t.Helper()
	out := map[string]vectorstore.Record{}
	for _, r := range memtest.Records(t, store, vectorstore.Filter{}) {
		out[r.Metadata[temporal.MetaValue]] = r
	}
	return out
}

func TestRecordSupersedesAndRecalls(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	l := memtest.Layer(t, temporal.New, store, temporal.Options{Common: memory.Common{Placement: core.PlacementLive}})
	s := start(t, l, nil, "thread-1", "")
	if got := memtest.Block(t, s, "temporal"); got != "" {
		t.Fatalf("empty ledger rendered %q", got)
	}
	if tools := s.Tools(); len(tools) != 2 || tools[0].Name != "temporal/as_of" || tools[1].Name != "temporal/record" {
		t.Fatalf("tools: %+v", tools)
	}

	out := call(t, s, recordCall("c1", fact{"user", "lives in", "Paris", "2026-10-01"}, fact{"project-x", "deadline", "2026-12-15", ""}))
	if !strings.Contains(out, "Recorded 2 fact(s): 2 new") {
		t.Fatalf("output: %s", out)
	}
	out = call(t, s, recordCall("c2", fact{"User", "lives_in", "Berlin", "last Friday"}))
	c2Out := out
	if !strings.Contains(out, "1 older fact(s) superseded") || !strings.Contains(out, "superseded: user · lives in: Paris, valid 2026-10-01 to 2026-11-27") {
		t.Fatalf("output: %s", out)
	}

	recs := records(t, store)
	if len(recs) != 3 {
		t.Fatalf("records: %d (the older fact must be closed, not deleted)", len(recs))
	}
	paris, berlin, deadline := recs["Paris"], recs["Berlin"], recs["2026-12-15"]
	if !paris.ValidFrom.Equal(date("2026-10-01")) || !paris.ValidTo.Equal(date("2026-11-27")) || paris.Kind != temporal.Kind {
		t.Errorf("Paris: %v..%v %s", paris.ValidFrom, paris.ValidTo, paris.Kind)
	}
	if !berlin.ValidFrom.Equal(date("2026-11-27")) || !berlin.ValidTo.IsZero() ||
		berlin.Metadata[temporal.MetaWhen] != "last Friday" || berlin.Metadata[temporal.MetaRefersTo] != "2026-11-27T00:00:00Z" ||
		berlin.Metadata[temporal.MetaRecordedAt] != "2026-11-30T10:00:00Z" || berlin.Metadata[temporal.MetaSources] != `["run-thread-1:call:c2"]` ||
		berlin.Scope != (vectorstore.Scope{Thread: "thread-1"}) || berlin.Text != "User lives_in: Berlin" || len(berlin.Vector) != 0 {
		t.Errorf("Berlin: %+v", berlin)
	}
	if !deadline.ValidFrom.Equal(t0) || !deadline.ValidTo.IsZero() || deadline.Metadata[temporal.MetaWhen] != "" {
		t.Errorf("deadline: %+v", deadline)
	}

	got := memtest.Block(t, s, "temporal")
	want := `<temporal_facts today="2026-11-30" weekday="Monday">
Facts as they stand today, newest first. [date it became true · how long ago, in calendar days from today]. Earlier values are kept: call temporal/as_of for a past date.
- [2026-11-30 · today] project-x · deadline: 2026-12-15
- [2026-11-27 · 3 days ago] User · lives_in: Berlin (before: Paris)
</temporal_facts>`
	if got != want {
		t.Fatalf("recall:\n%s\nwant:\n%s", got, want)
	}

	// A restatement changes nothing; a replay of the same call neither.
	out = call(t, s, recordCall("c3", fact{"user", "lives in", "berlin.", ""}))
	if !strings.Contains(out, "0 new, 1 unchanged") {
		t.Errorf("restatement: %s", out)
	}
	if out := call(t, s, recordCall("c2", fact{"user", "lives in", "Berlin", "last Friday"})); out != c2Out {
		t.Errorf("replay: %s, want the first output %s", out, c2Out)
	}
	if n := len(records(t, store)); n != 3 {
		t.Errorf("records after restatement: %d", n)
	}

	// As-of answers through the provided function.
	for date, want := range map[string]string{
		"2026-11-01":  "user · lives in: Paris (from 2026-10-01 until 2026-11-27)",
		"last Friday": "User · lives_in: Berlin (from 2026-11-27, still current)",
		"2026-09-30":  "No recorded fact held then",
	} {
		out := call(t, s, core.FunctionCall("q-"+date, "temporal/as_of", fmt.Sprintf(`{"date": %q}`, date)))
		if !strings.Contains(out, want) {
			t.Errorf("as_of %s: %s", date, out)
		}
	}
	facts, err := l.AsOf(ctx, vectorstore.Scope{Thread: "thread-1"}, at("2026-11-26T23:59:59Z"))
	if err != nil || len(facts) != 1 || facts[0].Value != "Paris" {
		t.Fatalf("AsOf: %+v %v", facts, err)
	}
}

func TestChainBackfillAndCorrection(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	l := memtest.Layer(t, temporal.New, store, temporal.Options{})
	scope := vectorstore.Scope{Thread: "th"}
	rec := func(at time.Time, facts ...temporal.Input) temporal.Result {
		t.Helper()
		res, err := l.Put(ctx, scope, at, facts...)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	in := func(value, when string) temporal.Input {
		return temporal.Input{Subject: "alice", Predicate: "city", Value: value, When: when}
	}
	rec(at("2026-03-01T12:00:00Z"), in("Berlin", ""))
	// Backfill: a fact from before, recorded later, ends where Berlin starts.
	res := rec(t0, in("Lyon", "2025-09-01"))
	if res.Added != 1 || res.Closed != 0 {
		t.Fatalf("backfill: %+v", res)
	}
	// A later fact closes Berlin; a correction replaces it at the same start.
	rec(t0, in("Munich", "2026-06-01"))
	res = rec(t0, in("Hamburg", "2026-06-01"))
	if res.Corrected != 1 || len(res.Superseded) != 1 || res.Superseded[0].Value != "Munich" || res.Superseded[0].CorrectedBy != res.Facts[0].ID {
		t.Fatalf("correction: %+v", res)
	}
	// An insertion between two facts splits the interval.
	res = rec(t0, in("Bonn", "2026-04-01"))
	if res.Closed != 1 || !res.Facts[0].ValidTo.Equal(date("2026-06-01")) {
		t.Fatalf("insertion: %+v", res)
	}
	hist, err := l.List(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range hist {
		to := "open"
		if !f.ValidTo.IsZero() {
			to = f.ValidTo.Format("2006-01-02")
		}
		s := fmt.Sprintf("%s %s..%s", f.Value, f.ValidFrom.Format("2006-01-02"), to)
		if f.Corrected() {
			s += " corrected"
		}
		got = append(got, s)
	}
	want := []string{"Lyon 2025-09-01..2026-03-01", "Berlin 2026-03-01..2026-04-01", "Bonn 2026-04-01..2026-06-01",
		"Munich 2026-06-01..open corrected", "Hamburg 2026-06-01..open"}
	if !slices.Equal(got, want) {
		t.Fatalf("history:\n%q\nwant\n%q", got, want)
	}
	if r := records(t, store)["Munich"]; r.Kind != temporal.KindCorrected || r.Metadata[temporal.MetaCorrectedBy] == "" {
		t.Errorf("corrected record: %+v", r)
	}
	for day, want := range map[string]string{"2025-08-31": "", "2026-01-01": "Lyon", "2026-03-15": "Berlin", "2026-05-31": "Bonn", "2026-06-01": "Hamburg"} {
		ti, _ := temporal.AsOfInstant(day, t0, nil)
		facts, err := l.AsOf(ctx, scope, ti)
		if err != nil {
			t.Fatal(err)
		}
		var vals []string
		for _, f := range facts {
			vals = append(vals, f.Value)
		}
		if strings.Join(vals, ",") != want {
			t.Errorf("as of %s: %v, want %q", day, vals, want)
		}
	}
	if _, err := l.Put(ctx, scope, t0, temporal.Input{Subject: "a", Predicate: "b", Value: "c", When: "someday"}); !errors.Is(err, temporal.ErrInvalidFact) || !errors.Is(err, temporal.ErrUnknownTime) {
		t.Errorf("bad when: %v", err)
	}
	if _, err := l.AsOf(ctx, vectorstore.Scope{}, t0); !errors.Is(err, temporal.ErrScope) {
		t.Errorf("empty scope: %v", err)
	}
}

func TestRecordRejectsBadArguments(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	l := memtest.Layer(t, temporal.New, store, temporal.Options{})
	s := start(t, l, nil, "th", "")
	call(t, s, recordCall("ok", fact{"user", "city", "Paris", ""}))
	before := records(t, store)
	stBefore, _ := core.State[temporal.State](s, "temporal")

	many := make([]fact, 101)
	for i := range many {
		many[i] = fact{"s", fmt.Sprint("p", i), "v", ""}
	}
	manyJSON, _ := json.Marshal(map[string]any{"facts": many})
	cases := []struct{ name, fn, args, want string }{
		{"invalid json", "record", `{"facts": [`, "invalid arguments"},
		{"wrong type", "record", `{"facts": {"subject": "a"}}`, "invalid arguments"},
		{"number value", "record", `{"facts": [{"subject": "a", "predicate": "b", "value": 3}]}`, "invalid arguments"},
		{"missing value", "record", `{"facts": [{"subject": "a", "predicate": "b"}]}`, "invalid arguments"},
		{"missing facts", "record", `{}`, "invalid arguments"},
		{"unknown field", "record", `{"facts": [{"subject": "a", "predicate": "b", "value": "c", "since": "x"}]}`, "invalid arguments"},
		{"empty list", "record", `{"facts": []}`, "at least one"},
		{"too many", "record", string(manyJSON), "at most 100"},
		{"blank subject", "record", `{"facts": [{"subject": " ", "predicate": "b", "value": "c"}]}`, "facts[0].subject: empty"},
		{"long predicate", "record", `{"facts": [{"subject": "a", "predicate": "` + strings.Repeat("p", 300) + `", "value": "c"}]}`, "predicate: 300 bytes"},
		{"long value", "record", `{"facts": [{"subject": "a", "predicate": "b", "value": "` + strings.Repeat("v", temporal.MaxValueBytes+1) + `"}]}`, "value: 8193 bytes"},
		{"unknown when", "record", `{"facts": [{"subject": "a", "predicate": "b", "value": "c"}, {"subject": "a", "predicate": "b", "value": "d", "when": "eventually"}]}`, "facts[1].when"},
		// Year 0 passed the parser and failed the whole write at the
		// store; it is an argument error, and the valid first fact is not
		// written either (a call is all or nothing).
		{"year 0", "record", `{"facts": [{"subject": "user", "predicate": "lives in", "value": "Berlin"}, {"subject": "user", "predicate": "city", "value": "Rome", "when": "November 0000"}]}`, "facts[1].when: temporal: cannot resolve \"November 0000\": outside years 1..9999"},
		{"year 0 instant", "record", `{"facts": [{"subject": "a", "predicate": "b", "value": "c", "when": "0000-01-01T00:00:00Z"}]}`, "facts[0].when: temporal: cannot resolve \"0000-01-01T00:00:00Z\": outside years 1..9999"},
		{"as_of year 0", "as_of", `{"date": "0000-06-01T00:00:00Z"}`, "date: temporal: cannot resolve \"0000-06-01T00:00:00Z\": outside years 1..9999"},
		{"bare weekday", "record", `{"facts": [{"subject": "a", "predicate": "b", "value": "c", "when": "friday"}]}`, "say last, this or next"},
		{"nul byte", "record", `{"facts": [{"subject": "a\u0000", "predicate": "b", "value": "c"}]}`, "NUL"},
		{"huge payload", "record", `{"facts": [{"subject": "a", "predicate": "b", "value": "` + strings.Repeat("x", temporal.MaxArgumentBytes) + `"}]}`, "more than the 262144 allowed"},
		{"as_of no date", "as_of", `{}`, "invalid arguments"},
		{"as_of bad date", "as_of", `{"date": "the other day"}`, "date: temporal: cannot resolve"},
		{"as_of wrong type", "as_of", `{"date": 20261120}`, "invalid arguments"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it := core.FunctionCall(fmt.Sprint("bad-", i), "temporal/"+c.fn, c.args)
			out, err := s.ExecuteTool(ctx, it)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out.Output, "error: ") || !strings.Contains(out.Output, c.want) {
				t.Errorf("output %.300q, want an error containing %q", out.Output, c.want)
			}
			if err := s.Record(ctx, it); err != nil && !errors.Is(err, core.ErrInvalidItem) {
				t.Fatal(err)
			}
		})
	}
	after := records(t, store)
	if len(after) != len(before) || !after["Paris"].ValidTo.IsZero() {
		t.Errorf("records changed: %d -> %d", len(before), len(after))
	}
	stAfter, _ := core.State[temporal.State](s, "temporal")
	if !slices.Equal(stAfter.Applied, stBefore.Applied) {
		t.Errorf("state changed: %v -> %v", stBefore.Applied, stAfter.Applied)
	}
	fn := l.Layer.Functions[0]
	_, err := fn.Call(ctx, core.CallParams[temporal.State]{Run: s.Run(), Call: core.Item{Arguments: `{"facts": [{"subject": "a", "predicate": "b", "value": "c", "when": "nope"}]}`}})
	var ae *core.ArgumentError
	if !errors.As(err, &ae) || ae.Function != "temporal/record" || !errors.Is(err, temporal.ErrUnknownTime) {
		t.Fatalf("want *core.ArgumentError wrapping ErrUnknownTime, got %T %v", err, err)
	}
}

// TestAnchoredBytesStableWithinADay is the cache decision made concrete:
// relative times are rendered against the calendar date, so turns within
// one day re-send identical anchored bytes, and the day change is
// published as a one-sentence context update, not a rewrite.
func TestAnchoredBytesStableWithinADay(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: at("2026-11-30T00:05:00Z")}
	store := memtest.NewStore(t, "", clock)
	l := memtest.Layer(t, temporal.New, store, temporal.Options{}) // anchored by default
	if spec := l.Layer.Spec(); spec.Placement != core.PlacementAnchor {
		t.Fatalf("default placement %q", spec.Placement)
	}
	scope := vectorstore.Scope{Thread: "th"}
	for i, f := range []temporal.Input{
		{Subject: "user", Predicate: "lives in", Value: "Paris", When: "2026-10-01"},
		{Subject: "user", Predicate: "lives in", Value: "Berlin", When: "last Friday"},
		{Subject: "user", Predicate: "employer", Value: "Acme", When: "two weeks ago"},
		{Subject: "project-x", Predicate: "deadline", Value: "2026-12-15", When: "yesterday"},
		{Subject: "user", Predicate: "lives in", Value: "Rome", When: "next monday"},
	} {
		if _, err := l.Put(ctx, scope, time.Time{}, f); err != nil {
			t.Fatalf("fact %d: %v", i, err)
		}
	}
	s := start(t, l, nil, "th", "")
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pinned := v.Band(core.BandAnchor)
	if len(pinned) != 1 || !strings.Contains(pinned[0].Text(), "- [2026-11-27 · 3 days ago] user · lives in: Berlin (before: Paris)") ||
		!strings.Contains(pinned[0].Text(), "Scheduled:\n- [2026-12-07 · in 7 days] user · lives in: Rome") {
		t.Fatalf("first render:\n%v", pinned)
	}
	first := pinned[0].Text()
	// Through the day: every turn's anchor band and fresh render are the
	// same bytes, so nothing drifts and nothing is published.
	for turn := 1; turn <= 23; turn++ {
		clock.Advance(time.Hour)
		if err := s.Append(ctx, core.UserMessage(fmt.Sprint("turn ", turn))); err != nil {
			t.Fatal(err)
		}
		if err := s.Record(ctx, core.AssistantMessage("ok")); err != nil {
			t.Fatal(err)
		}
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Band(core.BandAnchor); len(got) != 1 || got[0].Text() != first {
			t.Fatalf("turn %d (%s): anchored bytes changed", turn, clock.T.Format(time.RFC3339))
		}
		u := s.LastUsage().Layer("temporal")
		if u.Update != "" || u.ChurnRate != 0 || len(v.Updates()) != 0 {
			t.Fatalf("turn %d: usage %+v", turn, u)
		}
		facts, _ := l.List(ctx, scope)
		if l.Render(facts, clock.T, core.Unlimited, tokens.Estimate()) != first {
			t.Fatalf("turn %d: fresh render differs", turn)
		}
	}
	// Past midnight: the pin holds; the update is one sentence about the
	// date, since no fact changed.
	clock.T = at("2026-12-01T00:30:00Z")
	v, err = s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Band(core.BandAnchor); got[0].Text() != first {
		t.Fatal("pin not held across midnight")
	}
	upd := v.Updates()
	if len(upd) != 1 {
		t.Fatalf("updates: %+v", upd)
	}
	txt := upd[0].Text()
	if !strings.Contains(txt, `<temporal_update today="2026-12-01" weekday="Tuesday">`) ||
		!strings.Contains(txt, "Today is now 2026-12-01 (Tuesday). The relative times in the facts above were counted from 2026-11-30, so each is 1 day older") ||
		strings.Contains(txt, "Berlin") {
		t.Fatalf("date-change update:\n%s", txt)
	}
	// A new fact the same day: only its line and the line it displaces.
	clock.Advance(time.Hour)
	if out := call(t, s, recordCall("c1", fact{"user", "employer", "Globex", "today"})); !strings.Contains(out, "1 new") {
		t.Fatal(out)
	}
	v, err = s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	txt = v.Updates()[0].Text()
	if !strings.Contains(txt, "New or changed:\n- [2026-12-01 · today] user · employer: Globex (before: Acme)") ||
		!strings.Contains(txt, "No longer current:\n- [2026-11-16] user · employer: Acme") || strings.Contains(txt, "Berlin") {
		t.Fatalf("fact update:\n%s", txt)
	}
}

func TestDelta(t *testing.T) {
	block := func(today, wd string, lines ...string) []core.Item {
		return []core.Item{core.DeveloperMessage(`<temporal_facts today="` + today + `" weekday="` + wd + `">` + "\nheader\n" + strings.Join(lines, "\n") + "\n</temporal_facts>")}
	}
	long := "- [2026-01-01 · 11 months ago] user · biography: " + strings.Repeat("word ", 40)
	prev := block("2026-11-30", "Monday", "- [2026-11-27 · 3 days ago] user · city: Berlin", long, "Scheduled:", "- [2026-12-07 · in 7 days] user · city: Rome")
	next := block("2026-12-02", "Wednesday", "- [2026-11-27 · 5 days ago] user · city: Berlin", strings.Replace(long, "11 months", "11 months", 1), "Scheduled:", "- [2026-12-07 · in 5 days] user · city: Rome")
	d, ok, err := temporal.Delta(prev, next)
	if err != nil || !ok {
		t.Fatalf("Delta: %v %v", ok, err)
	}
	want := `<temporal_update today="2026-12-02" weekday="Wednesday">
Today is now 2026-12-02 (Wednesday). The relative times in the facts above were counted from 2026-11-30, so each is 2 days older; their dates are exact.
</temporal_update>`
	if d != want {
		t.Fatalf("delta:\n%s\nwant:\n%s", d, want)
	}
	// A scheduled fact that became current is a change.
	next2 := block("2026-12-07", "Monday", "- [2026-12-07 · today] user · city: Rome (before: Berlin)", long)
	d, ok, _ = temporal.Delta(prev, next2)
	if !ok || !strings.Contains(d, "New or changed:\n- [2026-12-07 · today] user · city: Rome (before: Berlin)") ||
		!strings.Contains(d, "No longer current:\n- [2026-11-27] user · city: Berlin\n- [2026-12-07] user · city: Rome") {
		t.Fatalf("delta:\n%s", d)
	}
	if _, ok, _ := temporal.Delta(prev, prev); ok {
		t.Error("no change should decline")
	}
}

// The usual host loop: Record the model's items, ask BeforeToolCall, then
// ExecuteTool what is allowed. Recording a record call writes nothing; a
// denied one is never written.
func TestSteeringDenialLeavesFactsUnchanged(t *testing.T) {
	ctx := context.Background()
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	l := memtest.Layer(t, temporal.New, store, temporal.Options{Common: memory.Common{Placement: core.PlacementLive}, Extractor: temporal.Patterns{}})
	// A policy layer denies every call mentioning "salary".
	rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{memtest.Deny("salary", "pay is private"), l}})
	s := memtest.Start(t, rt, core.RunOptions{RunID: "run-th", ThreadID: "th"})
	turn := func(c core.Item) core.Item {
		t.Helper()
		before := len(records(t, store))
		if err := s.Record(ctx, c); err != nil {
			t.Fatal(err)
		}
		if n := len(records(t, store)); n != before {
			t.Fatalf("Record applied the call: %d records, was %d", n, before)
		}
		return memtest.Route(t, s, c)
	}
	out := turn(recordCall("c1", fact{"user", "salary", "90k", ""}))
	if out.Output != "Call to temporal/record denied by policy: pay is private" {
		t.Fatalf("denied output %q", out.Output)
	}
	if recs := records(t, store); len(recs) != 0 {
		t.Fatalf("denied call wrote %v", recs)
	}
	st, _ := core.State[temporal.State](s, "temporal")
	if len(st.Applied) != 0 || len(st.Facts()) != 0 {
		t.Fatalf("state after the denied call: %+v", st.Facts())
	}
	if got := memtest.Block(t, s, "temporal"); got != "" {
		t.Fatalf("denied call rendered %q", got)
	}
	out = turn(recordCall("c2", fact{"user", "city", "Lisbon", ""}))
	if !strings.Contains(out.Output, "Recorded 1 fact(s): 1 new") {
		t.Fatalf("allowed output %q", out.Output)
	}
	if recs := records(t, store); len(recs) != 1 || recs["Lisbon"].Metadata[temporal.MetaOrigin] != temporal.OriginFunction {
		t.Fatalf("records %v", recs)
	}
}

func TestMessageTimestampResolvesRelativePhrases(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: at("2026-11-30T23:30:00Z")} // Monday night
	store := memtest.NewStore(t, "", clock)
	l := memtest.Layer(t, temporal.New, store, temporal.Options{Common: memory.Common{Placement: core.PlacementLive}, Extractor: temporal.Patterns{}})
	s := start(t, l, nil, "th", "")
	if err := s.Append(ctx, core.UserMessage("Big news: I moved to Berlin yesterday! And my manager is now Dana.")); err != nil {
		t.Fatal(err)
	}
	// The model answers after midnight; "yesterday" is still Sunday.
	clock.T = at("2026-12-01T00:20:00Z")
	call := recordCall("c1", fact{"user", "phone", "555-0100", "yesterday"})
	if err := s.Record(ctx, core.AssistantMessage("Congratulations!"), call); err != nil {
		t.Fatal(err)
	}
	if _, ok := records(t, store)["555-0100"]; ok {
		t.Fatal("Record applied the record call")
	}
	// The host routes the call as soon as the answer is recorded.
	if out, err := s.ExecuteTool(ctx, call); err != nil || !strings.Contains(out.Output, "1 new") {
		t.Fatalf("routed call: %v %q", err, out.Output)
	}
	recs := records(t, store)
	if r := recs["Berlin"]; !r.ValidFrom.Equal(date("2026-11-29")) || r.Metadata[temporal.MetaSources] != `["run-th:0"]` ||
		r.Metadata[temporal.MetaOrigin] != temporal.OriginExtractor || r.Metadata[temporal.MetaRecordedAt] != "2026-11-30T23:30:00Z" {
		t.Errorf("Berlin: %v %v", r.ValidFrom, r.Metadata)
	}
	if r := recs["Dana"]; r.Metadata[temporal.MetaPredicate] != "manager" || !r.ValidFrom.Equal(at("2026-11-30T23:30:00Z")) {
		t.Errorf("Dana: %v %v", r.ValidFrom, r.Metadata)
	}
	// The record call was made after midnight: its "yesterday" is Monday.
	if r := recs["555-0100"]; !r.ValidFrom.Equal(date("2026-11-30")) || r.Metadata[temporal.MetaOrigin] != temporal.OriginFunction {
		t.Errorf("phone: %v %v", r.ValidFrom, r.Metadata)
	}
	if len(recs) != 3 {
		t.Errorf("records: %v", recs)
	}
}

func TestPatterns(t *testing.T) {
	cases := []struct {
		in   string
		want []string // "predicate=value@when"
	}{
		{"I moved to Berlin last Friday.", []string{"lives in=Berlin@last Friday"}},
		{"I just moved to New York yesterday and I started at Globex two weeks ago", []string{"lives in=New York@yesterday", "works at=Globex@two weeks ago"}},
		{"I live in Lyon", []string{"lives in=Lyon@"}},
		{"Actually, I'm working at Acme since Nov. 20", []string{"works at=Acme@since Nov. 20"}},
		// A bare weekday is refused by ParseWhen, so it stays in the value.
		{"My phone number is 555-0100. My deadline changed to 2026-12-15 on Monday", []string{"phone number=555-0100@", "deadline=2026-12-15 on Monday@"}},
		{"my deadline changed to 2026-12-15 last monday", []string{"deadline=2026-12-15@last monday"}},
		{"I got married on June 6", []string{"marital status=married@on June 6"}},
		{"I moved to Rome in the spring", []string{"lives in=Rome in the spring@"}},
		{"I joined Initech", []string{"works at=Initech@"}},
		{"Where do I live? My question is simple.", nil},
	}
	for _, c := range cases {
		got, err := temporal.Patterns{}.Extract(context.Background(), []core.Item{core.UserMessage(c.in)})
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, f := range got {
			if f.Subject != "user" || !slices.Equal(f.From, []int{0}) {
				t.Errorf("%q: %+v", c.in, f)
			}
			s = append(s, f.Predicate+"="+f.Value+"@"+f.When)
		}
		if !slices.Equal(s, c.want) {
			t.Errorf("%q:\n got %q\nwant %q", c.in, s, c.want)
		}
	}
	got, _ := temporal.Patterns{Subject: "Sam"}.Extract(context.Background(), []core.Item{core.AssistantMessage("I live in Paris"), core.UserMessage("I live in Oslo")})
	if len(got) != 1 || got[0].Subject != "Sam" || got[0].Value != "Oslo" || !slices.Equal(got[0].From, []int{1}) {
		t.Errorf("roles: %+v", got)
	}
}

func TestRenderBudget(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: t0}
	store := memtest.NewStore(t, "", clock)
	l := memtest.Layer(t, temporal.New, store, temporal.Options{})
	scope := vectorstore.Scope{Thread: "th"}
	for i := 0; i < 20; i++ {
		if _, err := l.Put(ctx, scope, t0, temporal.Input{Subject: "user", Predicate: fmt.Sprint("attribute ", i), Value: "value", When: fmt.Sprintf("%d days ago", i)}); err != nil {
			t.Fatal(err)
		}
	}
	facts, _ := l.List(ctx, scope)
	full := l.Render(facts, t0, core.Unlimited, tokens.Estimate())
	if strings.Count(full, "\n- [") != 20 {
		t.Fatalf("full:\n%s", full)
	}
	budget := len(full) / 4 / 2
	text := l.Render(facts, t0, budget, tokens.Estimate())
	if n := (len([]rune(text))+3)/4 + core.ItemOverhead; n > budget {
		t.Fatalf("%d tokens over budget %d", n, budget)
	}
	lines := strings.Count(text, "\n- [")
	if lines == 0 || lines == 20 || !strings.Contains(text, fmt.Sprintf("(%d more fact(s) not shown.)", 20-lines)) ||
		!strings.Contains(text, "- [2026-11-30 · today] user · attribute 0: value") || strings.Contains(text, "attribute 19:") {
		t.Fatalf("budgeted (newest first):\n%s", text)
	}
	if l.Render(facts, t0, 20, tokens.Estimate()) != "" {
		t.Error("a budget below the frame should render nothing")
	}
}

func TestSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	dir, stateDir := t.TempDir(), t.TempDir()
	clock := &memtest.Clock{T: t0}
	st1 := memtest.StateStore(t, stateDir)
	store1 := memtest.NewStore(t, dir, clock)
	s1 := start(t, memtest.Layer(t, temporal.New, store1, temporal.Options{Common: memory.Common{Placement: core.PlacementLive}}), st1, "thread-1", "")
	c := recordCall("c1", fact{"user", "city", "Paris", "2026-10-01"}, fact{"user", "city", "Berlin", "last friday"})
	call(t, s1, c)
	want := memtest.Block(t, s1, "temporal")
	memtest.Shutdown(t, s1, store1.Records, st1)

	st2 := memtest.StateStore(t, stateDir)
	store2 := memtest.NewStore(t, dir, clock)
	l2 := memtest.Layer(t, temporal.New, store2, temporal.Options{Common: memory.Common{Placement: core.PlacementLive}})
	s2 := start(t, l2, st2, "thread-1", "")
	if got := memtest.Block(t, s2, "temporal"); got != want || !strings.Contains(got, "Berlin (before: Paris)") {
		t.Fatalf("after reopen:\n%s\nwant:\n%s", got, want)
	}
	if out := call(t, s2, c); out != "Already applied: call c1 was applied in an earlier session; nothing was written again." {
		t.Errorf("replayed call: %s", out)
	}
	facts, err := l2.AsOf(ctx, vectorstore.Scope{Thread: "thread-1"}, at("2026-11-01T00:00:00Z"))
	if err != nil || len(facts) != 1 || facts[0].Value != "Paris" {
		t.Errorf("as-of after reopen: %+v %v", facts, err)
	}
}

func TestOptionsValidation(t *testing.T) {
	store := memtest.NewStore(t, "", nil)
	memtest.ConfigErrors(t, func(o temporal.Options) error { _, err := temporal.New(store, o); return err }, []memtest.ConfigCase[temporal.Options]{
		{Opts: temporal.Options{Common: memory.Common{Scope: core.ScopeGlobal}}, Field: "Scope"},
		{Opts: temporal.Options{Common: memory.Common{Placement: "middle"}}, Field: "Placement"},
		{Opts: temporal.Options{Common: memory.Common{ID: "x/y"}}, Field: "ID"},
		{Opts: temporal.Options{Common: memory.Common{Budget: core.Range(10, math.NaN())}}, Field: "Budget.Max"},
	})
	if _, err := temporal.New(&memory.Store{}, temporal.Options{}); !errors.Is(err, memory.ErrInvalidStore) {
		t.Errorf("empty store: %v", err)
	}
	auto, err := temporal.New(store, temporal.Options{Common: memory.Common{Placement: memory.PlacementAuto}})
	if err != nil || auto.Layer.Spec().Placement != core.PlacementAuto {
		t.Errorf("auto placement: %v", err)
	}
	l, err := temporal.New(store, temporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec := l.Layer.Spec()
	if spec.ID != "temporal" || spec.Slot != temporal.DefaultSlot || spec.Scope != core.ScopeThread || spec.Placement != core.PlacementAnchor {
		t.Errorf("defaults: %+v", spec)
	}
}

// A "my ... is" whose subject is only spaces the pattern's \s does not take
// is no fact; it panicked, and in a session the panic dropped the turn's
// other facts with it.
func TestPatternsWhitespaceOnlySubject(t *testing.T) {
	for _, in := range []string{"my \u00a0 is blue", "my    is blue", "my \u2003 changed to red"} {
		got, err := temporal.Patterns{}.Extract(context.Background(), []core.Item{core.UserMessage(in)})
		if err != nil || len(got) != 0 {
			t.Errorf("%q: %+v, %v", in, got, err)
		}
	}
	ctx := context.Background()
	store := memtest.NewStore(t, "", &memtest.Clock{T: t0})
	l := memtest.Layer(t, temporal.New, store, temporal.Options{Extractor: temporal.Patterns{}})
	s := start(t, l, nil, "th", "")
	if err := s.Record(ctx, core.UserMessage("I moved to Berlin. my \u00a0 is blue")); err != nil {
		t.Fatal(err)
	}
	if d := s.Diagnostics(); len(d) != 0 {
		t.Fatalf("diagnostics %+v", d)
	}
	if recs := records(t, store); len(recs) != 1 || recs["Berlin"].Metadata[temporal.MetaPredicate] != "lives in" {
		t.Fatalf("records %v", recs)
	}
}

// Patterns splits "on February 29" off as a time, but said in 2026 it has
// no date: the fact is kept, valid from the message, with the phrase back
// in its value (it was dropped silently). In a leap year it resolves.
func TestUnresolvableExtractedWhenIsFoldedIntoTheValue(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		clock, value string
		from         time.Time
	}{
		{"2026-06-01T09:00:00Z", "Berlin on February 29", at("2026-06-01T09:00:00Z")},
		{"2028-03-10T09:00:00Z", "Berlin", date("2028-02-29")},
	} {
		clock := &memtest.Clock{T: at(c.clock)}
		store := memtest.NewStore(t, "", clock)
		l := memtest.Layer(t, temporal.New, store, temporal.Options{Extractor: temporal.Patterns{}})
		s := start(t, l, nil, "th", "")
		if err := s.Record(ctx, core.UserMessage("I moved to Berlin on February 29")); err != nil {
			t.Fatal(err)
		}
		if d := s.Diagnostics(); len(d) != 0 {
			t.Fatalf("%s: diagnostics %+v", c.clock, d)
		}
		recs := records(t, store)
		r, ok := recs[c.value]
		if len(recs) != 1 || !ok || !r.ValidFrom.Equal(c.from) || r.Metadata[temporal.MetaPredicate] != "lives in" {
			t.Fatalf("%s: records %v", c.clock, recs)
		}
	}
}

// "Current" is decided by the calendar day in Options.Location: a fact
// that becomes true at 15:00 is today's from the day's first turn, so the
// block is the same bytes at 10:00 and at 16:00. AsOf stays exact.
func TestRenderSameBytesAllDayWithMidDayInstant(t *testing.T) {
	ctx := context.Background()
	clock := &memtest.Clock{T: at("2026-11-30T09:00:00Z")}
	store := memtest.NewStore(t, "", clock)
	l := memtest.Layer(t, temporal.New, store, temporal.Options{})
	s := start(t, l, nil, "th", "")
	call(t, s, recordCall("c1", fact{"user", "lives in", "Paris", ""}, fact{"user", "lives in", "Berlin", "2026-11-30T15:00:00Z"}))
	st, _ := core.State[temporal.State](s, "temporal")
	morning := l.Render(st.Facts(), at("2026-11-30T10:00:00Z"), core.Unlimited, tokens.Estimate())
	afternoon := l.Render(st.Facts(), at("2026-11-30T16:00:00Z"), core.Unlimited, tokens.Estimate())
	if morning != afternoon {
		t.Fatalf("10:00:\n%s\n16:00:\n%s", morning, afternoon)
	}
	if !strings.Contains(morning, "- [2026-11-30 · today] user · lives in: Berlin (before: Paris)\n</temporal_facts>") ||
		strings.Contains(morning, "Scheduled:") {
		t.Fatalf("render:\n%s", morning)
	}
	for when, want := range map[string]string{"2026-11-30T10:00:00Z": "Paris", "2026-11-30T16:00:00Z": "Berlin"} {
		facts, err := l.AsOf(ctx, vectorstore.Scope{Thread: "th"}, at(when))
		if err != nil || len(facts) != 1 || facts[0].Value != want {
			t.Fatalf("AsOf %s: %+v %v, want %s", when, facts, err, want)
		}
	}

	// The day is Options.Location's: 23:00 UTC is the next day at UTC+2.
	l2 := memtest.Layer(t, temporal.New, store, temporal.Options{Common: memory.Common{ID: "t2"}, Location: time.FixedZone("UTC+2", 2*3600)})
	if _, err := l2.Put(ctx, vectorstore.Scope{Thread: "th"}, time.Time{},
		temporal.Input{Subject: "user", Predicate: "employer", Value: "Acme", When: "2026-11-30T23:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	facts, _ := l2.List(ctx, vectorstore.Scope{Thread: "th"})
	if got := l2.Render(facts, at("2026-11-30T21:00:00Z"), core.Unlimited, tokens.Estimate()); !strings.Contains(got, "Scheduled:\n- [2026-12-01 · tomorrow] user · employer: Acme") {
		t.Fatalf("23:00 local, before its day:\n%s", got)
	}
	early, late := l2.Render(facts, at("2026-11-30T22:30:00Z"), core.Unlimited, tokens.Estimate()), l2.Render(facts, at("2026-12-01T21:00:00Z"), core.Unlimited, tokens.Estimate())
	if early != late || !strings.Contains(early, "- [2026-12-01 · today] user · employer: Acme\n") {
		t.Fatalf("00:30 local:\n%s\n23:00 local:\n%s", early, late)
	}
}
