package main_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/memory/semantic"
)

var conversation = []string{
	"Hello there", "Hi, how can I help?",
	"My bank PIN is 4711, please remember it", "Noted.",
	"My favourite colour is teal", "A fine colour.",
	"Many thanks", "You're welcome",
}

// semanticSession runs a real session of the semantic layer on thread t1
// of the embedded directory dir, appending msgs (user and assistant in
// turn), and completes it.
func semanticSession(t *testing.T, dir string, msgs ...string) {
	t.Helper()
	ctx := context.Background()
	env, err := embedded.Open(ctx, dir, embedded.Options{Embedder: hashing.New(64)})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	l, err := semantic.New(env.Memory, semantic.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}, Store: env.State})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "t1", ResourceID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		if i%2 == 0 {
			err = s.Append(ctx, core.UserMessage(m))
		} else {
			err = s.Record(ctx, core.AssistantMessage(m))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
}

// semanticRecords lists the store's records by kind, and those whose text
// contains any of the words (case-insensitive).
func semanticRecords(t *testing.T, e *env, store string, words ...string) (kinds map[string]int, holding []record) {
	t.Helper()
	kinds = map[string]int{}
	for _, r := range jsonLines(t, e.ok("--store", store, "ls", "--all", "--json").stdout) {
		kinds[r.Kind]++
		for _, w := range words {
			if strings.Contains(strings.ToLower(r.Text), strings.ToLower(w)) {
				holding = append(holding, r)
				break
			}
		}
	}
	return kinds, holding
}

func messageID(t *testing.T, e *env, store, text string) string {
	t.Helper()
	recs := jsonLines(t, e.ok("--store", store, "ls", "--all", "--json", "--kind", "message", "--match", text).stdout)
	if len(recs) != 1 {
		t.Fatalf("messages matching %q: %d", text, len(recs))
	}
	return recs[0].ID
}

// Deleting or rewriting a semantic message takes along the context
// records that quote it (its own and its neighbours'), and the layer
// writes the neighbours' again from what is left.
func TestSemanticMessageQuotes(t *testing.T) {
	e := newEnv(t)
	store := e.dir + "/data"
	semanticSession(t, store, conversation...)
	if kinds, _ := semanticRecords(t, e, store); kinds["message"] != 8 || kinds["context"] != 8 {
		t.Fatalf("seeded %v, want 8 messages and 8 contexts", kinds)
	}

	// rm ID: the dry run lists the message and the three contexts quoting
	// it; the deletion needs no --yes for them.
	pin := messageID(t, e, store, "4711")
	dry := jsonLines(t, e.ok("--store", store, "rm", pin, "--dry-run", "--json").stdout)
	var dryIDs []string
	for _, r := range dry {
		if r.ID == "" {
			continue // a state key line
		}
		dryIDs = append(dryIDs, r.ID)
		if !strings.Contains(r.Text, "4711") {
			t.Errorf("dry run lists %s, which does not quote the message: %q", r.ID, r.Text)
		}
	}
	if len(dryIDs) != 4 || !slices.Contains(dryIDs, pin) || !slices.Contains(dryIDs, pin+"/context") {
		t.Fatalf("dry run lists %v, want the message, its context and its neighbours' contexts", dryIDs)
	}
	var res struct {
		Deleted  int      `json:"deleted"`
		IDs      []string `json:"ids"`
		Contexts int      `json:"contexts_deleted"`
	}
	decodeJSON(t, e.ok("--store", store, "rm", pin, "--json").stdout, &res)
	slices.Sort(res.IDs)
	slices.Sort(dryIDs)
	if res.Deleted != 4 || res.Contexts != 3 || !slices.Equal(res.IDs, dryIDs) {
		t.Fatalf("rm --json = %+v, want the 4 records of the dry run, 3 of them contexts", res)
	}
	if _, left := semanticRecords(t, e, store, "4711"); len(left) > 0 {
		t.Fatalf("the deleted message's text survives in %d record(s): %s %q", len(left), left[0].ID, left[0].Text)
	}
	for _, h := range jsonLines(t, e.ok("--store", store, "search", "bank PIN 4711", "--json", "-n", "20").stdout) {
		if strings.Contains(h.Text, "4711") {
			t.Fatalf("search still finds the deleted text: %+v", h)
		}
	}

	// edit --text: the old text leaves the contexts too.
	teal := messageID(t, e, store, "colour is teal")
	r := e.ok("--store", store, "edit", teal, "--text", "My favourite colour is green")
	if !strings.Contains(r.stderr, "context records") {
		t.Errorf("edit does not say it deleted the contexts: %q", r.stderr)
	}
	if _, left := semanticRecords(t, e, store, "colour is teal"); len(left) > 0 {
		t.Fatalf("the old text survives the edit in %d record(s): %s %q", len(left), left[0].ID, left[0].Text)
	}

	// A filter rm of messages takes their contexts along as well.
	e.ok("--store", store, "rm", "--thread", "t1", "--kind", "message", "--match", "many thanks", "--yes")
	if _, left := semanticRecords(t, e, store, "many thanks"); len(left) > 0 {
		t.Fatalf("the deleted message's text survives a filter rm in %d record(s): %s %q", len(left), left[0].ID, left[0].Text)
	}

	// memctl rebuilt the thread's lexical documents and contexts from the
	// messages that are left; the layer's next run on the thread adds to
	// them.
	semanticSession(t, store)
	kinds, left := semanticRecords(t, e, store, "4711", "colour is teal", "many thanks")
	if len(left) > 0 || kinds["message"] != 6 || kinds["context"] != 6 {
		t.Fatalf("after the next run: %v and %d record(s) with deleted text, want 6 messages and 6 contexts and none", kinds, len(left))
	}
	if _, green := semanticRecords(t, e, store, "colour is green"); len(green) < 2 {
		t.Fatalf("the edited text is in %d record(s), want its message and the rebuilt contexts", len(green))
	}
}
