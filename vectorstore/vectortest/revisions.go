package vectortest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

func mustGet(t *testing.T, c *vectorstore.Collection, id string) vectorstore.Record {
	t.Helper()
	r, err := c.Get(ctx, id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return r
}

func wantConflict(t *testing.T, err error, what string) {
	t.Helper()
	wantCode(t, err, vectorstore.CodeConflict, vectorstore.ErrConflict, what)
}

// revisionsSeen returns the revision of id as Get, List (with and without
// vectors) and Query report it, failing when they disagree.
func revisionsSeen(t *testing.T, c *vectorstore.Collection, id string) int64 {
	t.Helper()
	got := mustGet(t, c, id)
	rev := got.Revision
	if rev < 1 {
		t.Fatalf("Get(%s).Revision = %d, want >= 1", id, rev)
	}
	f := vectorstore.Filter{IDs: []string{id}}
	for _, wv := range []bool{false, true} {
		recs, _, err := c.List(ctx, vectorstore.ListOptions{Filter: f, WithVectors: wv})
		if err != nil || len(recs) != 1 {
			t.Fatalf("list %s: %v %v", id, recs, err)
		}
		if recs[0].Revision != rev {
			t.Fatalf("List(%s, vectors %v).Revision = %d, Get says %d", id, wv, recs[0].Revision, rev)
		}
	}
	ms, err := c.Query(ctx, got.Vector, vectorstore.QueryOptions{K: 1, Filter: f})
	if err != nil || len(ms) != 1 {
		t.Fatalf("query %s: %v %v", id, ms, err)
	}
	if ms[0].Record.Revision != rev {
		t.Fatalf("Query(%s).Revision = %d, Get says %d", id, ms[0].Record.Revision, rev)
	}
	return rev
}

// testRevisions: every write stores a new, greater revision; reads agree
// on it; a revision given to Upsert is ignored.
func testRevisions(t *testing.T, s *suite) {
	c, _ := s.open(t, 4)
	mustUpsert(t, c, vectorstore.Record{ID: "a", Text: "v1", Vector: []float32{1, 0, 0, 0}, CreatedAt: base})
	r1 := revisionsSeen(t, c, "a")
	mustUpsert(t, c, vectorstore.Record{ID: "a", Text: "v2", Vector: []float32{1, 1, 0, 0}, CreatedAt: base})
	r2 := revisionsSeen(t, c, "a")
	if r2 <= r1 {
		t.Fatalf("re-upsert: revision %d after %d, want greater", r2, r1)
	}
	// An identical re-upsert is a write too.
	mustUpsert(t, c, vectorstore.Record{ID: "a", Text: "v2", Vector: []float32{1, 1, 0, 0}, CreatedAt: base})
	r3 := revisionsSeen(t, c, "a")
	if r3 <= r2 {
		t.Fatalf("identical re-upsert: revision %d after %d, want greater", r3, r2)
	}
	// The revision is the store's: a caller's value is ignored.
	forged := int64(math.MaxInt64 - 1)
	mustUpsert(t, c, vectorstore.Record{ID: "a", Text: "v3", Vector: []float32{1, 1, 1, 0}, CreatedAt: base, Revision: forged})
	r4 := revisionsSeen(t, c, "a")
	if r4 <= r3 || r4 == forged {
		t.Fatalf("upsert with Revision %d: stored revision %d (previous %d)", forged, r4, r3)
	}
	// Every record of a batch gets its own revision; other records keep
	// theirs.
	mustUpsert(t, c,
		vectorstore.Record{ID: "b", Vector: []float32{0, 1, 0, 0}, CreatedAt: base},
		vectorstore.Record{ID: "c", Vector: []float32{0, 0, 1, 0}, CreatedAt: base})
	rb, rc := revisionsSeen(t, c, "b"), revisionsSeen(t, c, "c")
	if rb == rc {
		t.Fatalf("b and c share revision %d", rb)
	}
	if got := revisionsSeen(t, c, "a"); got != r4 {
		t.Fatalf("writing b and c changed a's revision from %d to %d", r4, got)
	}
	// A delete does not give a revision back: the id written again has a
	// greater one than it ever had.
	if err := c.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	mustUpsert(t, c, vectorstore.Record{ID: "a", Text: "again", Vector: []float32{1, 0, 0, 0}, CreatedAt: base})
	if r5 := revisionsSeen(t, c, "a"); r5 <= r4 {
		t.Fatalf("after delete and re-create: revision %d, the deleted record had %d", r5, r4)
	}
}

// testConditionalWrites: UpsertIf writes only at the expected revision,
// creates only what does not exist, and writes nothing on a conflict.
func testConditionalWrites(t *testing.T, s *suite) {
	c, _ := s.open(t, 4)
	v1, v2, v3 := []float32{1, 0, 0, 0}, []float32{0, 1, 0, 0}, []float32{0, 0, 1, 0}
	rec := func(text string, v []float32) vectorstore.Record {
		return vectorstore.Record{ID: "a", Text: text, Vector: v, Metadata: map[string]string{"step": text}, CreatedAt: base}
	}
	// Create: expected 0.
	r1, err := c.UpsertIf(ctx, rec("one", v1), 0)
	if err != nil {
		t.Fatalf("create with expected 0: %v", err)
	}
	if got := revisionsSeen(t, c, "a"); got != r1 || r1 < 1 {
		t.Fatalf("UpsertIf returned %d, the record is at %d", r1, got)
	}
	checkRecord(t, mustGet(t, c, "a"), rec("one", v1), vectorstore.Cosine, true)
	// Create again: the record exists.
	_, err = c.UpsertIf(ctx, rec("dup", v2), 0)
	wantConflict(t, err, "expected 0 on an existing record")
	checkRecord(t, mustGet(t, c, "a"), rec("one", v1), vectorstore.Cosine, true)
	// Update at the current revision.
	r2, err := c.UpsertIf(ctx, rec("two", v2), r1)
	if err != nil {
		t.Fatalf("update at the current revision: %v", err)
	}
	if r2 <= r1 {
		t.Fatalf("UpsertIf stored revision %d after %d, want greater", r2, r1)
	}
	if got := revisionsSeen(t, c, "a"); got != r2 {
		t.Fatalf("UpsertIf returned %d, the record is at %d", r2, got)
	}
	checkRecord(t, mustGet(t, c, "a"), rec("two", v2), vectorstore.Cosine, true)
	// Stale: the revision that was just replaced.
	_, err = c.UpsertIf(ctx, rec("stale", v3), r1)
	wantConflict(t, err, "stale revision")
	if e := (*vectorstore.Error)(nil); !errors.As(err, &e) || e.ID != "a" {
		t.Fatalf("conflict error %v does not name id a", err)
	}
	got := mustGet(t, c, "a")
	checkRecord(t, got, rec("two", v2), vectorstore.Cosine, true)
	if got.Revision != r2 {
		t.Fatalf("a conflicting write moved the revision from %d to %d", r2, got.Revision)
	}
	if n := mustCount(t, c, vectorstore.Filter{Metadata: map[string]string{"step": "stale"}}); n != 0 {
		t.Fatalf("a conflicting write is visible to filters (%d records)", n)
	}
	ms, err := c.Query(ctx, v3, vectorstore.QueryOptions{K: 1})
	if err != nil || len(ms) != 1 || ms[0].Record.Text != "two" {
		t.Fatalf("query after a conflict: %+v %v", ms, err)
	}
	// A revision that never existed, and one from the future.
	for _, bad := range []int64{r2 + 1000, 1} {
		_, err = c.UpsertIf(ctx, rec("bad", v3), bad)
		wantConflict(t, err, fmt.Sprintf("revision %d (stored %d)", bad, r2))
	}
	// A plain Upsert moves the revision on: the holder of r2 is now stale.
	mustUpsert(t, c, rec("plain", v3))
	r3 := revisionsSeen(t, c, "a")
	if r3 <= r2 {
		t.Fatalf("plain upsert after UpsertIf: revision %d, want > %d", r3, r2)
	}
	_, err = c.UpsertIf(ctx, rec("lost", v1), r2)
	wantConflict(t, err, "revision replaced by a plain upsert")
	checkRecord(t, mustGet(t, c, "a"), rec("plain", v3), vectorstore.Cosine, true)
	// A missing record: only expected 0 creates it.
	_, err = c.UpsertIf(ctx, vectorstore.Record{ID: "missing", Vector: v1, CreatedAt: base}, 5)
	wantConflict(t, err, "expected revision on a missing record")
	if _, err := c.Get(ctx, "missing"); !errors.Is(err, vectorstore.ErrNotFound) {
		t.Fatalf("a conflicting UpsertIf created the record: %v", err)
	}
	// After a delete, the old revision is stale and the id can be created.
	if err := c.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	_, err = c.UpsertIf(ctx, rec("zombie", v1), r3)
	wantConflict(t, err, "revision of a deleted record")
	if _, err := c.Get(ctx, "a"); !errors.Is(err, vectorstore.ErrNotFound) {
		t.Fatalf("UpsertIf at a deleted record's revision re-created it: %v", err)
	}
	r4, err := c.UpsertIf(ctx, rec("reborn", v2), 0)
	if err != nil {
		t.Fatalf("re-create after delete: %v", err)
	}
	if r4 <= r3 {
		t.Fatalf("re-created record has revision %d, the deleted one had %d", r4, r3)
	}
	// Input is validated like Upsert's; nothing is written.
	_, err = c.UpsertIf(ctx, vectorstore.Record{ID: "a", Vector: []float32{1, 2}}, r4)
	wantCode(t, err, vectorstore.CodeDimensionMismatch, vectorstore.ErrDimensionMismatch, "UpsertIf with a wrong dimension")
	_, err = c.UpsertIf(ctx, vectorstore.Record{Vector: v1}, 0)
	wantCode(t, err, vectorstore.CodeInvalidRecord, vectorstore.ErrInvalidRecord, "UpsertIf with an empty id")
	_, err = c.UpsertIf(ctx, rec("neg", v1), -1)
	wantCode(t, err, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "UpsertIf with a negative revision")
	if got := mustGet(t, c, "a"); got.Revision != r4 || got.Text != "reborn" {
		t.Fatalf("refused UpsertIf calls changed the record: %s rev %d", brief(got), got.Revision)
	}
	// CreatedAt zero is stamped, as by Upsert.
	rz, err := c.UpsertIf(ctx, vectorstore.Record{ID: "z", Vector: v1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if z := mustGet(t, c, "z"); z.CreatedAt.IsZero() || z.Revision != rz {
		t.Fatalf("UpsertIf of a record without CreatedAt: %s rev %d, returned %d", brief(z), z.Revision, rz)
	}
}

// testConditionalDelete: DeleteIf removes a record only at the expected
// revision.
func testConditionalDelete(t *testing.T, s *suite) {
	c, _ := s.open(t, 2)
	mustUpsert(t, c, vectorstore.Record{ID: "a", Text: "one", Vector: []float32{1, 0}, CreatedAt: base})
	r1 := mustGet(t, c, "a").Revision
	mustUpsert(t, c, vectorstore.Record{ID: "a", Text: "two", Vector: []float32{1, 0}, CreatedAt: base})
	r2 := mustGet(t, c, "a").Revision
	wantConflict(t, c.DeleteIf(ctx, "a", r1), "DeleteIf at a stale revision")
	if got := mustGet(t, c, "a"); got.Revision != r2 || got.Text != "two" {
		t.Fatalf("a conflicting DeleteIf changed the record: %s rev %d", brief(got), got.Revision)
	}
	wantCode(t, c.DeleteIf(ctx, "a", 0), vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "DeleteIf with revision 0")
	wantCode(t, c.DeleteIf(ctx, "", r2), vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "DeleteIf with an empty id")
	if err := c.DeleteIf(ctx, "a", r2); err != nil {
		t.Fatalf("DeleteIf at the current revision: %v", err)
	}
	if _, err := c.Get(ctx, "a"); !errors.Is(err, vectorstore.ErrNotFound) {
		t.Fatalf("after DeleteIf: %v, want ErrNotFound", err)
	}
	wantConflict(t, c.DeleteIf(ctx, "a", r2), "DeleteIf of a missing record")
	if n := mustCount(t, c, vectorstore.Filter{}); n != 0 {
		t.Fatalf("count %d after DeleteIf", n)
	}
}

// testConcurrentConditionalWrites: writers doing read, modify, UpsertIf,
// retry on conflict, on one record, lose no update; of writers racing to
// create one id with expected 0, exactly one wins.
func testConcurrentConditionalWrites(t *testing.T, s *suite) {
	c, _ := s.open(t, 4)
	const writers, perWriter = 6, 15
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		created   int
		conflicts int
	)
	errc := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 5))
			// Everybody tries to create the counter; one succeeds.
			_, err := c.UpsertIf(ctx, vectorstore.Record{ID: "counter", Vector: randVec(r, 4), Metadata: map[string]string{"n": "0"}, CreatedAt: base}, 0)
			switch {
			case err == nil:
				mu.Lock()
				created++
				mu.Unlock()
			case !errors.Is(err, vectorstore.ErrConflict):
				errc <- fmt.Errorf("writer %d: create: %w", w, err)
				return
			}
			for i := 0; i < perWriter; i++ {
				for attempt := 0; ; attempt++ {
					if attempt > 10000 {
						errc <- fmt.Errorf("writer %d: no progress after %d conflicts", w, attempt)
						return
					}
					cur, err := c.Get(ctx, "counter")
					if err != nil {
						errc <- fmt.Errorf("writer %d: get: %w", w, err)
						return
					}
					n, err := strconv.Atoi(cur.Metadata["n"])
					if err != nil {
						errc <- fmt.Errorf("writer %d: counter %q: %w", w, cur.Metadata["n"], err)
						return
					}
					cur.Metadata["n"] = strconv.Itoa(n + 1)
					cur.Text = fmt.Sprintf("writer %d step %d", w, i)
					cur.Vector = randVec(r, 4)
					rev, err := c.UpsertIf(ctx, cur, cur.Revision)
					if errors.Is(err, vectorstore.ErrConflict) {
						mu.Lock()
						conflicts++
						mu.Unlock()
						continue
					}
					if err != nil {
						errc <- fmt.Errorf("writer %d: upsert if: %w", w, err)
						return
					}
					if rev <= cur.Revision {
						errc <- fmt.Errorf("writer %d: UpsertIf stored revision %d over %d", w, rev, cur.Revision)
						return
					}
					break
				}
			}
		}(w)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if created != 1 {
		t.Fatalf("%d writers created the counter with expected 0, want exactly 1", created)
	}
	got := mustGet(t, c, "counter")
	if got.Metadata["n"] != strconv.Itoa(writers*perWriter) {
		t.Fatalf("counter = %s after %d increments by %d writers (%d conflicts retried): updates were lost",
			got.Metadata["n"], writers*perWriter, writers, conflicts)
	}
	t.Logf("%d increments, %d conflicts retried", writers*perWriter, conflicts)
}

// testRevisionsSurviveReopen: revisions are stored, not derived per
// process: after a reopen every record has the revision it had, a
// conditional write at that revision succeeds, and new revisions stay above
// every one handed out before, also those of deleted records.
func testRevisionsSurviveReopen(t *testing.T, s *suite) {
	c, name := s.open(t, 2)
	cfg := driver.Config{Name: name, Dimension: 2}
	mustUpsert(t, c, vectorstore.Record{ID: "a", Vector: []float32{1, 0}, CreatedAt: base})
	ra, err := c.UpsertIf(ctx, vectorstore.Record{ID: "a", Text: "cas", Vector: []float32{1, 1}, CreatedAt: base}, mustGet(t, c, "a").Revision)
	if err != nil {
		t.Fatal(err)
	}
	mustUpsert(t, c, vectorstore.Record{ID: "gone", Vector: []float32{0, 1}, CreatedAt: base})
	rGone := mustGet(t, c, "gone").Revision
	if err := c.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := s.openCfg(t, cfg, nil)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if got := revisionsSeen(t, c2, "a"); got != ra {
		t.Fatalf("after reopen a is at revision %d, was %d", got, ra)
	}
	_, err = c2.UpsertIf(ctx, vectorstore.Record{ID: "a", Vector: []float32{1, 0}, CreatedAt: base}, ra-1)
	wantConflict(t, err, "stale revision after reopen")
	ra2, err := c2.UpsertIf(ctx, vectorstore.Record{ID: "a", Text: "after", Vector: []float32{1, 0}, CreatedAt: base}, ra)
	if err != nil {
		t.Fatalf("UpsertIf at the revision read before the reopen: %v", err)
	}
	if ra2 <= ra {
		t.Fatalf("revision %d after reopen, %d before", ra2, ra)
	}
	rg, err := c2.UpsertIf(ctx, vectorstore.Record{ID: "gone", Vector: []float32{0, 1}, CreatedAt: base}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rg <= rGone {
		t.Fatalf("deleted id re-created after reopen with revision %d, it had %d before", rg, rGone)
	}
}
