package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/storage"
)

// trimmedSession runs a session of tool turns with large outputs on a
// small window, with TailTrim clearing before Compaction folds, and
// every assembly recorded; it returns the run's log.
func trimmedSession(t *testing.T, st storage.Store, resource, thread string, turns int) []core.Item {
	t.Helper()
	ctx := context.Background()
	rt, err := core.NewRuntime(core.Config{Store: st, RecordAssemblies: true, AssemblyRetention: -1,
		System:     []core.Item{core.SystemMessage("be brief")},
		Compaction: &core.CompactionConfig{Window: 4000, Threshold: 0.3, Keep: 4},
		TailTrim:   &core.TailTrimConfig{Threshold: 0.2, Horizon: 400, MinTokens: 32}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{RunID: "run-" + thread, ThreadID: thread, ResourceID: resource})
	if err != nil {
		t.Fatal(err)
	}
	for n := range turns {
		id := fmt.Sprintf("c%d", n)
		if err := s.Append(ctx, core.UserMessage(fmt.Sprintf("step %d: read the next file", n))); err != nil {
			t.Fatal(err)
		}
		if err := s.Record(ctx, core.FunctionCall(id, "read", fmt.Sprintf(`{"path":"f%d.go"}`, n))); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, core.FunctionCallOutput(id, fmt.Sprintf("body of file %d: ", n)+strings.Repeat(fmt.Sprintf("line %d of f%d.go\n", n, n), 60))); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Assemble(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Record(ctx, core.AssistantMessage(fmt.Sprintf("File %d read.", n))); err != nil {
			t.Fatal(err)
		}
	}
	return append([]core.Item(nil), s.Items()...)
}

// A record's cleared references and compaction event read back, from the
// stored log alone, the items the run logged: the full output bodies the
// view showed as markers, and the compaction's summary.
func TestReadLogItemsReadsClearedAndFoldedBack(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	log := trimmedSession(t, st, "u1", "t1", 24)
	list, err := inspect.ListAssemblies(ctx, st, "u1", "t1")
	if err != nil {
		t.Fatal(err)
	}
	var cleared, folded int
	for _, l := range list {
		rec, err := inspect.ReadAssembly(ctx, st, "u1", "t1", l.Turn)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rec.ClearedOutputs {
			idx, err := inspect.ParseLogRef(c.Ref)
			if err != nil {
				t.Fatal(err)
			}
			items, err := inspect.ReadLogItems(ctx, st, "u1", "t1", rec, idx, idx+1)
			if err != nil {
				t.Fatalf("turn %d, %s: %v", rec.Turn, c.Ref, err)
			}
			if len(items) != 1 || items[0].Type != core.TypeFunctionCallOutput || items[0].CallID != c.CallID ||
				items[0].Output != log[idx].Output || strings.HasPrefix(items[0].Output, core.ClearedMarker) {
				t.Fatalf("turn %d, %s: read back %+v, want the body of %s", rec.Turn, c.Ref, items, c.CallID)
			}
			// The view itself showed the marker, not the body.
			if !bandHasMarker(rec, c.CallID) {
				t.Fatalf("turn %d: %s is listed cleared but the view shows its body", rec.Turn, c.CallID)
			}
			cleared++
		}
		if c := rec.Compaction; c != nil {
			idx, err := inspect.ParseLogRef(c.Event)
			if err != nil {
				t.Fatalf("turn %d: compaction event %q: %v", rec.Turn, c.Event, err)
			}
			items, err := inspect.ReadLogItems(ctx, st, "u1", "t1", rec, idx, idx+1)
			if err != nil {
				t.Fatal(err)
			}
			if ev := items[0]; ev.Type != core.TypeCompaction || ev.Compaction == nil || ev.Compaction.Through != c.Boundary ||
				len(ev.Content) != 1 || !strings.Contains(ev.Content[0].Text, "step 0") {
				t.Fatalf("turn %d: compaction event (boundary %d) read back as %+v", rec.Turn, c.Boundary, ev)
			}
			folded++
		}
		// The whole log as the record saw it is the run's log then.
		n := rec.Stored.Log.Len
		all, err := inspect.ReadLogItems(ctx, st, "u1", "t1", rec, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != n {
			t.Fatalf("turn %d: %d items read back, want %d", rec.Turn, len(all), n)
		}
		for i := range all {
			if all[i].Type != log[i].Type || all[i].CallID != log[i].CallID || all[i].Output != log[i].Output || !slices.Equal(all[i].Content, log[i].Content) {
				t.Fatalf("turn %d: log item %d read back as %+v, want %+v", rec.Turn, i, all[i], log[i])
			}
		}
		var re *inspect.LogRangeError
		if _, err := inspect.ReadLogItems(ctx, st, "u1", "t1", rec, n-1, n+1); !errors.As(err, &re) || re.Len != n || re.To != n+1 {
			t.Fatalf("turn %d: a range past the record's log: %v", rec.Turn, err)
		}
	}
	if cleared == 0 || folded == 0 {
		t.Fatalf("%d cleared outputs and %d compactions recorded: the session must do both", cleared, folded)
	}
	rec, err := inspect.LatestAssembly(ctx, st, "u1", "t1")
	if err != nil {
		t.Fatal(err)
	}
	var re *inspect.LogRangeError
	for _, r := range [][2]int{{-1, 2}, {5, 3}} {
		if _, err := inspect.ReadLogItems(ctx, st, "u1", "t1", rec, r[0], r[1]); !errors.As(err, &re) {
			t.Errorf("range %v: %v, want a *LogRangeError", r, err)
		}
	}
	if items, err := inspect.ReadLogItems(ctx, st, "u1", "t1", rec, 3, 3); err != nil || len(items) != 0 {
		t.Errorf("an empty range: %v %v", items, err)
	}
	// Keyed by the thread it was read from: another resource's thread of
	// the same id holds no such chunks.
	if _, err := inspect.ReadLogItems(ctx, st, "u2", "t1", rec, 0, 1); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("another resource's thread: %v", err)
	}
	if _, err := inspect.ReadLogItems(ctx, st, "u1", "t1", &core.AssemblyRecord{}, 0, 1); !errors.Is(err, inspect.ErrNoStoredLog) || !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("a record without a stored log: %v", err)
	}
	for _, bad := range []string{"", "log:", "log:-1", "log:01", "log:x", "3"} {
		if _, err := inspect.ParseLogRef(bad); err == nil {
			t.Errorf("ParseLogRef(%q) accepted", bad)
		}
	}
}

func bandHasMarker(rec *inspect.Plan, callID string) bool {
	for _, b := range rec.Bands {
		for _, it := range b.Items {
			if it.Type == core.TypeFunctionCallOutput && it.CallID == callID && strings.HasPrefix(it.Output, core.ClearedMarker) {
				return true
			}
		}
	}
	return false
}
