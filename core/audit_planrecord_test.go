package core_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/storage"
)

// With TailTrim and Compaction on, every plan record tells what its view
// did: ClearedOutputs are the view's Usage.Cleared, Compaction names the
// boundary the view folded through and the log event holding its summary,
// Usage.Resident is recorded, and the anchor band's digest stays the same
// across the records of one cache epoch.
func TestAuditPlanRecordsTrimAndCompaction(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemory()
	// Trimming clears before compaction folds (its threshold is lower),
	// so the session does both.
	rt := residentRuntime(t, core.Config{Store: store, RecordAssemblies: true,
		Compaction: &core.CompactionConfig{Window: 4000, Keep: 6},
		TailTrim:   &core.TailTrimConfig{Threshold: 0.5, Horizon: 800}})
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "audit"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Activate(ctx, core.Content{Kind: core.ContentMemory, Key: "index", Text: "memory index"}); err != nil {
		t.Fatal(err)
	}
	var views []*core.View
	for n := 0; n < 80; n++ {
		toolTurn(t, s, n, 400)
		if n == 3 {
			if err := s.Activate(ctx, core.Content{Kind: core.ContentSkills, Key: "review", Text: "How to review code."}); err != nil {
				t.Fatal(err)
			}
		}
		v, err := s.Assemble(ctx)
		if err != nil {
			t.Fatalf("turn %d: %v", n, err)
		}
		views = append(views, v)
	}
	items := s.Items()
	cleared, compacted, both := 0, 0, 0
	anchors := map[string]string{} // epoch id: anchor digest
	epochRecords := map[string]int{}
	for turn, v := range views {
		rec, err := inspect.ReadAssembly(ctx, store, "", "audit", turn)
		if err != nil {
			t.Fatalf("record %d: %v", turn, err)
		}
		if rec.RunTurn != v.Usage.Turn {
			t.Fatalf("record %d is of run turn %d, the view of %d", turn, rec.RunTurn, v.Usage.Turn)
		}
		if !sameCleared(rec.ClearedOutputs, v.Usage.Cleared) || !sameCleared(rec.Usage.Cleared, v.Usage.Cleared) {
			t.Fatalf("record %d: cleared %+v (usage %+v), the view cleared %+v", turn, rec.ClearedOutputs, rec.Usage.Cleared, v.Usage.Cleared)
		}
		if len(v.Usage.Cleared) > 0 {
			cleared++
		}
		if folded := v.Usage.Compaction.Folded; folded == 0 {
			if rec.Compaction != nil {
				t.Fatalf("record %d: compaction %+v, the view folded nothing", turn, rec.Compaction)
			}
		} else {
			compacted++
			if len(v.Usage.Cleared) > 0 {
				both++
			}
			if rec.Compaction == nil || rec.Compaction.Boundary != folded {
				t.Fatalf("record %d: compaction %+v, the view folded through %d", turn, rec.Compaction, folded)
			}
			var idx int
			if _, err := fmt.Sscanf(rec.Compaction.Event, "log:%d", &idx); err != nil || idx >= len(items) {
				t.Fatalf("record %d: event %q", turn, rec.Compaction.Event)
			}
			if ev := items[idx]; ev.Type != core.TypeCompaction || ev.Compaction.Through != folded {
				t.Fatalf("record %d: event %s is %s %+v, not the compaction through %d", turn, rec.Compaction.Event, ev.Type, ev.Compaction, folded)
			}
		}
		if len(v.Usage.Resident) == 0 || !reflect.DeepEqual(rec.Usage.Resident, v.Usage.Resident) {
			t.Fatalf("record %d: resident %+v, the view showed %+v", turn, rec.Usage.Resident, v.Usage.Resident)
		}
		if rec.Hashes.Anchor == "" {
			t.Fatalf("record %d: no anchor digest", turn)
		}
		id := v.Usage.Epoch.ID
		if prev, ok := anchors[id]; ok && prev != rec.Hashes.Anchor {
			t.Fatalf("record %d: anchor digest %s within epoch %s, was %s", turn, rec.Hashes.Anchor[:12], id, prev[:12])
		}
		anchors[id] = rec.Hashes.Anchor
		epochRecords[id]++
	}
	if cleared == 0 || compacted == 0 || both == 0 {
		t.Fatalf("%d views cleared, %d compacted, %d both: the session does not exercise the records", cleared, compacted, both)
	}
	long := 0
	for _, n := range epochRecords {
		long = max(long, n)
	}
	if long < 2 {
		t.Fatalf("no epoch spans two records (%v)", epochRecords)
	}
	t.Logf("%d records: %d cleared, %d compacted, %d epochs", len(views), cleared, compacted, len(epochRecords))
}

func sameCleared(a, b []core.ClearedOutput) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
