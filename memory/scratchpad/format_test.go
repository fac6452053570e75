package scratchpad_test

import (
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/layertest"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/vectorstore"
)

// TestFormatIsTheLayers checks that Format describes what the layer
// writes and that what the Go API writes is what the layer reads back.
func TestFormatIsTheLayers(t *testing.T) {
	store := memtest.NewStore(t, "", nil)
	l := memtest.Layer(t, scratchpad.New, store, scratchpad.Options{})
	cfg := core.Config{Layers: []core.AnyLayer{l}, Cache: core.CacheConfig{Disabled: true}}
	run := core.RunOptions{ThreadID: "t1", ResourceID: "alice"}
	s := memtest.Session(t, cfg, run)
	memtest.Turn(t, s, core.FunctionCall("c1", "scratchpad/update", `{"set":{"plan":"ship v2"}}`))
	layertest.Written(t, store, scratchpad.Format)

	// The Go API writes what the model's call writes.
	ctx := t.Context()
	sc := vectorstore.Scope{Thread: "t1", Resource: "alice"}
	if out, err := l.Put(ctx, sc, map[string]string{"plan": "ship v2"}); err != nil || !strings.Contains(out, `unchanged "plan"`) {
		t.Errorf("same value: %q, %v", out, err)
	}
	if _, err := l.Put(ctx, sc, map[string]string{" goal ": "ship v3"}); err != nil {
		t.Fatal(err)
	}
	var r vectorstore.Record
	for _, rec := range memtest.Records(t, store, vectorstore.Filter{Layer: "scratchpad"}) {
		if rec.Metadata[scratchpad.MetaKey] == "goal" {
			r = rec
		}
	}
	if r.Text != "goal: ship v3" || scratchpad.Format.RecordID(&r) != r.ID {
		t.Fatalf("set: %+v", r)
	}
	if err := scratchpad.Format.Validate(&r); err != nil {
		t.Error(err)
	}
	s2 := memtest.Session(t, cfg, run)
	st, ok := core.State[scratchpad.State](s2, "scratchpad")
	if !ok {
		t.Fatal("no scratchpad state")
	}
	if v, ok := st.Get("goal"); !ok || v != "ship v3" {
		t.Errorf("the layer read %q, %v", v, ok)
	}
	if _, err := l.Put(ctx, sc, map[string]string{"": "x"}); err == nil {
		t.Error("empty key accepted")
	}
}

func TestFormatPrepare(t *testing.T) {
	old := vectorstore.Record{Layer: "scratchpad", Kind: "note", Text: "plan: ship", Metadata: map[string]string{"key": "plan", "scope": "global"}}
	r := old.Clone()
	r.Metadata[scratchpad.MetaKey] = "goal"
	scratchpad.Format.Prepare(&r, &old)
	if r.Text != "goal: ship" {
		t.Errorf("rename: %q", r.Text)
	}
	r = old.Clone()
	r.Text = "ship v2"
	scratchpad.Format.Prepare(&r, &old)
	if r.Text != "plan: ship v2" {
		t.Errorf("value: %q", r.Text)
	}
	if err := scratchpad.Format.Validate(&r); err != nil {
		t.Error(err)
	}
}
