package main_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/storage"
)

// assemblyKeyForTest is where core records the last assembly of a thread
// of resource ("" for none).
func assemblyKeyForTest(resource, thread string) storage.Key {
	return storage.Key{Scope: "thread", ScopeID: storage.ThreadScopeID(resource, thread), Layer: "_strata", Name: "last_assembly"}
}

// bindingKeyForTest is where core keeps the resource a thread belongs to.
func bindingKeyForTest(thread string) storage.Key {
	return storage.Key{Scope: "thread", ScopeID: thread, Layer: "_strata", Name: "resource"}
}

// recordTurn runs two turns of a real session on thread with
// RecordAssemblies on, so the runtime records the last one in st.
func recordTurn(t *testing.T, st storage.Store, thread string) {
	t.Helper()
	ctx := context.Background()
	instr := core.Layer[struct{}]{
		ID: "instructions", Slot: 50, Scope: core.ScopeExecution, Placement: core.PlacementAnchor,
		Hooks: core.Hooks[struct{}]{Recall: func(context.Context, core.RecallParams[struct{}]) (core.Recall[struct{}], error) {
			return core.Text[struct{}]("<instructions>Answer in one sentence.</instructions>")
		}},
	}
	clock := core.Layer[struct{}]{
		ID: "clock", Slot: core.SlotReminder, Scope: core.ScopeExecution, Placement: core.PlacementLive, Budget: core.Fixed(16),
		Hooks: core.Hooks[struct{}]{Recall: func(_ context.Context, p core.RecallParams[struct{}]) (core.Recall[struct{}], error) {
			return core.Text[struct{}]("<clock>turn " + string(rune('0'+p.Turn)) + "</clock>")
		}},
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{instr, clock}, Store: st, RecordAssemblies: true, AssemblyRetention: 50,
		System: []core.Item{core.SystemMessage("You are a careful assistant.")}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: thread, ResourceID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"Hello", "What did I say?"} {
		if err := s.Append(ctx, core.UserMessage(msg)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Assemble(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Record(ctx, core.AssistantMessage("Noted: "+msg)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
}

func TestInspect(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	ctx := context.Background()
	env, err := embedded.Open(ctx, store, embedded.Options{Embedder: hashing.New(64)})
	if err != nil {
		t.Fatal(err)
	}
	recordTurn(t, env.State, "t1")
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}

	out := e.ok("--store", store, "inspect", "t1").stdout
	for _, want := range []string{"Thread t1 of resource alice: turn", "[system]", "[anchor]", "[history]", "[live]", "instructions", "clock",
		"Pinned (served the epoch's bytes): instructions", "Superseded by context updates:", "Epoch:", "What did I say?", "LAYER", "SERVED"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect lacks %q:\n%s", want, out)
		}
	}
	var rec inspect.AssemblyRecord
	if err := json.Unmarshal([]byte(e.ok("--store", store, "inspect", "t1", "--json").stdout), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.ThreadID != "t1" || rec.Usage == nil || rec.Usage.Layer("clock") == nil || len(rec.Bands) < 3 {
		t.Errorf("inspect --json: %+v", rec)
	}
	e.fails(3, "no recorded assembly", "--store", store, "inspect", "t2")

	// Every turn is kept: --list lists them, --turn N shows one.
	list := e.ok("--store", store, "inspect", "t1", "--list").stdout
	for _, want := range []string{"TURN", "RUN TURN", "PREFIX", "\n0 ", "\n1 "} {
		if !strings.Contains(list, want) {
			t.Errorf("inspect --list lacks %q:\n%s", want, list)
		}
	}
	var sums []inspect.AssemblySummary
	if err := json.Unmarshal([]byte(e.ok("--store", store, "inspect", "t1", "--list", "--json").stdout), &sums); err != nil || len(sums) != 2 {
		t.Fatalf("inspect --list --json: %v %+v", err, sums)
	}
	first := e.ok("--store", store, "inspect", "t1", "--turn", "0").stdout
	for _, want := range []string{"turn 0 (turn 0 of run", "Prefix hash:", "Dynamic hash:", "History plan: log items 0-0 of 1 shown", "[history]", "Hello", "LAYER"} {
		if !strings.Contains(first, want) {
			t.Errorf("inspect --turn 0 lacks %q:\n%s", want, first)
		}
	}
	if strings.Contains(first, "What did I say?") {
		t.Errorf("turn 0 shows the second question:\n%s", first)
	}
	var plan inspect.Plan
	if err := json.Unmarshal([]byte(e.ok("--store", store, "inspect", "t1", "--turn", "1", "--json").stdout), &plan); err != nil || plan.Turn != 1 || plan.Usage == nil {
		t.Fatalf("inspect --turn 1 --json: %v %+v", err, plan)
	}
	e.fails(3, "no record of turn 7", "--store", store, "inspect", "t1", "--turn", "7")
	e.fails(3, "no recorded turns", "--store", store, "inspect", "t2", "--list")
	e.fails(2, "exclude", "--store", store, "inspect", "t1", "--list", "--turn", "0")
	e.fails(3, "no state store", "--store", filepath.Join(e.dir, "none"), "inspect", "t1")
	e.fails(2, "--state", "--store", "qdrant://127.0.0.1:1", "inspect", "t1")
	// rm --resource also forgets what the agent saw on the resource's
	// threads.
	e.ok("--store", store, "--embedder", "hash:64", "add", "-l", "semantic", "-t", "t1", "-r", "alice", "hi")
	r := e.ok("--store", store, "rm", "--resource", "alice", "--yes")
	// (every key of the thread's recorded assemblies, and the thread's
	// binding to alice)
	if !strings.Contains(r.stdout, "deleted 1 memory and ") || !strings.Contains(r.stdout, " state keys") {
		t.Errorf("rm --resource: %s %s", r.stdout, r.stderr)
	}
	e.fails(3, "no recorded assembly", "--store", store, "inspect", "t1")
}
