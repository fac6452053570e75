package memory_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stratamem/strata/memory"
)

func TestCallLog(t *testing.T) {
	var log memory.CallLog
	if _, ok := log.Replay("c1"); ok {
		t.Fatal("empty log replays c1")
	}
	a := log.With("c1", "one")
	b := a.With("c2", "two")
	if out, ok := b.Replay("c1"); !ok || out != "one" {
		t.Fatalf("replay c1: %q %v", out, ok)
	}
	// A value: the older log is unchanged.
	if _, ok := a.Replay("c2"); ok || len(a.Outputs) != 1 {
		t.Fatalf("With changed its receiver: %+v", a)
	}
	if _, ok := b.With("", "x").Replay(""); ok {
		t.Fatal("a call without an id was logged")
	}
	// Persisted ids without outputs (an earlier session) are still replays.
	earlier := memory.CallLog{IDs: []string{"old"}}
	if out, ok := earlier.Replay("old"); !ok || out != "Already applied: call old was applied in an earlier session; nothing was written again." {
		t.Fatalf("replay old: %q %v", out, ok)
	}

	for i := range 5 {
		b = b.With(fmt.Sprint("k", i), "")
	}
	kept := b.Trim(3)
	if !slices.Equal(kept.IDs, []string{"k2", "k3", "k4"}) || len(kept.Outputs) != 3 || len(b.Outputs) != 7 {
		t.Fatalf("Trim(3): %+v (from %+v)", kept, b)
	}
	if _, ok := kept.Replay("c1"); ok {
		t.Fatal("a trimmed call is still a replay")
	}

	if got := memory.MergeCallIDs([]string{"a", "b"}, []string{"b", "c", "d"}, 3); !slices.Equal(got, []string{"b", "c", "d"}) {
		t.Fatalf("MergeCallIDs: %v", got)
	}
}
