package semantic_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
)

// CompareMessages is the order tools see a thread in: creation time, then
// seq (messages written in the same instant), then id.
func TestCompareMessages(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	msg := func(id string, d time.Duration, seq string) vectorstore.Record {
		return vectorstore.Record{ID: id, Kind: semantic.KindMessage, CreatedAt: at.Add(d),
			Metadata: map[string]string{semantic.MetaRole: "user", semantic.MetaSeq: seq}}
	}
	recs := []vectorstore.Record{msg("z", 0, "2"), msg("a", time.Second, "0"), msg("y", 0, "10"), msg("b", 0, "2")}
	slices.SortFunc(recs, semantic.CompareMessages)
	var got []string
	for _, r := range recs {
		got = append(got, r.ID)
	}
	if want := []string{"b", "z", "y", "a"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if !semantic.IsMessage(recs[0]) || semantic.IsMessage(vectorstore.Record{Kind: semantic.KindContext}) {
		t.Fatal("IsMessage")
	}
	if semantic.ContextID("m1") != "m1/context" {
		t.Fatal(semantic.ContextID("m1"))
	}
}
