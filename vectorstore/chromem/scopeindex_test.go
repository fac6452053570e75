package chromem

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore/driver"
)

// checkIndex verifies the scope index of c against its records: every
// record with a non-empty layer, thread or resource is in that value's list
// exactly once, as the very pointer stored in recs; every list is strictly
// in (CreatedAt, ID) order, non-empty and holds nothing else.
func checkIndex(t *testing.T, c *collection) {
	t.Helper()
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.idx.built() {
		t.Fatal("scope index not built")
	}
	for fi := range c.idx.by {
		want := 0
		for _, r := range c.recs {
			if fieldOf(r, fi) != "" {
				want++
			}
		}
		got := 0
		for v, l := range c.idx.by[fi] {
			if len(l) == 0 {
				t.Fatalf("field %d: empty list for %q kept", fi, v)
			}
			for i, r := range l {
				if c.recs[r.ID] != r {
					t.Fatalf("field %d, %q: %s is not the stored record (stale entry)", fi, v, r.ID)
				}
				if fieldOf(r, fi) != v {
					t.Fatalf("field %d: %s holds %q, indexed under %q", fi, r.ID, fieldOf(r, fi), v)
				}
				if i > 0 && driver.CompareRecords(l[i-1], r) >= 0 {
					t.Fatalf("field %d, %q: %s before %s, out of order", fi, v, l[i-1].ID, r.ID)
				}
			}
			got += len(l)
		}
		if got != want {
			t.Fatalf("field %d: %d index entries, %d records with the field set", fi, got, want)
		}
	}
}

func openScoped(t *testing.T, dir string, dist driver.Distance, dim int) *collection {
	t.Helper()
	d, err := openDriver(context.Background(), dir, driver.Config{Name: "s", Dimension: dim, Distance: dist})
	if err != nil {
		t.Fatal(err)
	}
	return d.(*collection)
}

var scopeT0 = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

func srec(id, layer, thread, resource string, sec int) driver.Record {
	return driver.Record{ID: id, Layer: layer, Kind: "fact", Scope: driver.Scope{Thread: thread, Resource: resource},
		Vector: []float32{1, 0, 0, 0}, CreatedAt: scopeT0.Add(time.Duration(sec) * time.Second)}
}

// scopeView describes what each read path returns for f: the ids of
// Count, List (ascending) and Query (k=100), which must agree.
func scopeView(t *testing.T, c *collection, f driver.Filter) string {
	t.Helper()
	ctx := context.Background()
	n, err := c.Count(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := c.List(ctx, driver.ListQuery{Filter: f, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	ms, err := c.Query(ctx, driver.VectorQuery{Vector: []float32{1, 0, 0, 0}, K: 100, Filter: f})
	if err != nil {
		t.Fatal(err)
	}
	var qids []string
	for _, m := range ms {
		qids = append(qids, m.Record.ID)
	}
	slices.Sort(qids)
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	if n != len(ids) || !slices.Equal(sorted, qids) {
		t.Fatalf("filter %+v: count %d, list %v, query %v disagree", f, n, ids, qids)
	}
	return strings.Join(ids, ",")
}

// sf is the scope part of a filter, comparable: the zero sf is the zero
// filter.
type sf struct{ Layer, Thread, Resource string }

// TestScopeIndexMaintenance moves records between scopes, deletes them one
// by one and by filter, and checks after each step, and after a reopen
// (replay), a compaction and the reopen of the compacted log, that each
// scope returns exactly its records.
func TestScopeIndexMaintenance(t *testing.T) {
	ctx := context.Background()
	for _, dist := range []driver.Distance{driver.DistanceCosine, driver.DistanceEuclidean} {
		t.Run(string(dist), func(t *testing.T) {
			dir := t.TempDir()
			c := openScoped(t, dir, dist, 4)
			defer func() { c.Close() }()
			expect := func(step string, want map[sf]string) {
				t.Helper()
				checkIndex(t, c)
				for k, ids := range want {
					f := driver.Filter{Layer: k.Layer, Thread: k.Thread, Resource: k.Resource}
					if got := scopeView(t, c, f); got != ids {
						t.Fatalf("%s: filter %+v returns %q, want %q", step, f, got, ids)
					}
				}
			}
			u1, u2, u3 := sf{Resource: "u1"}, sf{Resource: "u2"}, sf{Resource: "u3"}
			t1, t2 := sf{Thread: "t1"}, sf{Thread: "t2"}
			sem, epi := sf{Layer: "semantic"}, sf{Layer: "episodic"}
			u1sem := sf{Resource: "u1", Layer: "semantic"}
			if err := c.Upsert(ctx, []driver.Record{
				srec("a", "semantic", "t1", "u1", 1), srec("b", "semantic", "t1", "u1", 2),
				srec("c", "episodic", "t2", "u2", 3), srec("g", "", "", "", 4),
			}); err != nil {
				t.Fatal(err)
			}
			expect("initial", map[sf]string{u1: "a,b", u2: "c", u3: "", t1: "a,b", t2: "c", sem: "a,b", epi: "c", u1sem: "a,b"})

			// a moves to u2 (and thread t2, layer episodic), keeping its time.
			if err := c.Upsert(ctx, []driver.Record{srec("a", "episodic", "t2", "u2", 1)}); err != nil {
				t.Fatal(err)
			}
			expect("move a", map[sf]string{u1: "b", u2: "a,c", t1: "b", t2: "a,c", sem: "b", epi: "a,c", u1sem: "b"})

			// b is rewritten in its scope with a later time: it moves in
			// List order, once.
			if err := c.Upsert(ctx, []driver.Record{srec("b", "semantic", "t1", "u1", 10), srec("d", "semantic", "t1", "u1", 5)}); err != nil {
				t.Fatal(err)
			}
			expect("rewrite b", map[sf]string{u1: "d,b", u1sem: "d,b", sem: "d,b"})

			// One batch writing c twice, through u3: only the last write counts
			// (a driver-level batch may repeat an id).
			if err := c.Upsert(ctx, []driver.Record{srec("c", "semantic", "t1", "u3", 6), srec("c", "semantic", "t1", "u1", 7)}); err != nil {
				t.Fatal(err)
			}
			expect("batch moves c twice", map[sf]string{u1: "d,c,b", u2: "a", u3: "", t1: "d,c,b", t2: "a", epi: "a"})

			if err := c.Delete(ctx, []string{"d", "nope"}); err != nil {
				t.Fatal(err)
			}
			expect("delete d", map[sf]string{u1: "c,b", t1: "c,b", sem: "c,b"})

			// A batch large enough for the merge path (more than pointOps
			// changes to one list), out of creation order.
			var batch []driver.Record
			for i := 0; i < 3*pointOps; i++ {
				batch = append(batch, srec(fmt.Sprintf("m%02d", i), "semantic", "t2", "u2", 100-i))
			}
			if err := c.Upsert(ctx, batch); err != nil {
				t.Fatal(err)
			}
			checkIndex(t, c)
			n, err := c.DeleteWhere(ctx, driver.Filter{Resource: "u2", Layer: "semantic"})
			if err != nil || n != 3*pointOps {
				t.Fatalf("delete where: %d, %v", n, err)
			}
			expect("delete where u2 semantic", map[sf]string{u2: "a", t2: "a", sem: "c,b"})

			n, err = c.DeleteWhere(ctx, driver.Filter{Thread: "t1"})
			if err != nil || n != 2 {
				t.Fatalf("delete where: %d, %v", n, err)
			}
			final := map[sf]string{u1: "", u2: "a", u3: "", t1: "", t2: "a", sem: "", epi: "a", u1sem: "", {}: "a,g"}
			expect("delete where t1", final)

			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			c = openScoped(t, dir, "", 0)
			expect("reopen", final)

			c.wmu.Lock()
			err = c.compact()
			c.wmu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			expect("compacted", final)
			if err := c.Upsert(ctx, []driver.Record{srec("a", "semantic", "t1", "u1", 1)}); err != nil {
				t.Fatal(err)
			}
			final = map[sf]string{u1: "a", u2: "", t1: "a", t2: "", sem: "a", epi: "", {}: "a,g"}
			expect("move a back after compaction", final)
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			c = openScoped(t, dir, "", 0)
			expect("reopen compacted log", final)
		})
	}
}

// TestScopeIndexAutoCompaction churns one scope until the log compacts on
// its own (a write path), then reopens: every step keeps the index exact.
func TestScopeIndexAutoCompaction(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := openScoped(t, dir, driver.DistanceCosine, 256)
	defer func() { c.Close() }()
	vec := make([]float32, 256)
	vec[0] = 1
	last := 0
	for round := 0; c.compacted == 0; round++ {
		if round == 2000 {
			t.Fatal("no compaction")
		}
		var batch []driver.Record
		for i := 0; i < 10; i++ {
			r := srec(fmt.Sprint("id", i), "semantic", fmt.Sprint("t", round%3), fmt.Sprint("u", round%4), round)
			r.Vector = vec
			batch = append(batch, r)
		}
		if err := c.Upsert(ctx, batch); err != nil {
			t.Fatal(err)
		}
		last = round
	}
	for reopen := range 2 {
		checkIndex(t, c)
		for u := range 4 {
			want := 0
			if u == last%4 {
				want = 10
			}
			if n, err := c.Count(ctx, driver.Filter{Resource: fmt.Sprint("u", u)}); err != nil || n != want {
				t.Fatalf("reopened %d: count of u%d = %d, %v; want %d", reopen, u, n, err, want)
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		c = openScoped(t, dir, "", 0)
	}
}

// TestScopeIndexRandom applies random writes (batches repeating ids, moves
// between scopes, deletes, deletes by filter, conditional writes, reopens,
// compactions) and compares Count, List (random cursors, both orders,
// random limits) and Query (random K, many ties) for random filters with a
// brute force: Filter.Matches over a model of the records, kept by the test.
func TestScopeIndexRandom(t *testing.T) {
	for _, dist := range []driver.Distance{driver.DistanceCosine, driver.DistanceEuclidean} {
		t.Run(string(dist), func(t *testing.T) { randomScopeOps(t, dist) })
	}
}

func randomScopeOps(t *testing.T, dist driver.Distance) {
	ctx := context.Background()
	const dim = 4
	r := rand.New(rand.NewPCG(11, uint64(len(dist))))
	// Few unit vectors, so that many scores tie exactly, with components
	// whose products and sums are exact in float32: chromem-go (cosine
	// filters the index does not serve) and the driver then score alike
	// in any summation order, with or without fused multiply-adds.
	pool := [][]float32{
		{1, 0, 0, 0}, {0, -1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1},
		{.5, .5, .5, .5}, {.5, -.5, .5, -.5}, {-.5, -.5, .5, .5}, {.5, .5, -.5, .5},
	}
	pick := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	layers := []string{"", "semantic", "episodic", "procedural"}
	threads := []string{"", "t0", "t1", "t2", "t3", "t4", "t5"}
	resources := []string{"", "u0", "u1", "u2", "u3", "u4"}
	randID := func() string { return fmt.Sprintf("id%02d", r.IntN(60)) }
	randTime := func() time.Time { return scopeT0.Add(time.Duration(r.IntN(40)) * time.Second) }
	randRec := func() driver.Record {
		rec := driver.Record{ID: randID(), Layer: pick(layers...), Kind: pick("", "fact", "summary"),
			Scope:  driver.Scope{Thread: pick(threads...), Resource: pick(resources...)},
			Vector: slices.Clone(pool[r.IntN(len(pool))]), CreatedAt: randTime()}
		if r.IntN(3) == 0 {
			rec.Metadata = map[string]string{"lang": pick("en", "fr")}
		}
		if r.IntN(4) == 0 {
			rec.ValidFrom = randTime()
		}
		if r.IntN(4) == 0 {
			rec.ValidTo = randTime().Add(time.Second)
		}
		return rec
	}
	randFilter := func() driver.Filter {
		var f driver.Filter
		// Mostly scoped filters, the index's business; sometimes others.
		if r.IntN(4) != 0 {
			f.Resource = pick(resources[1:]...)
		}
		if r.IntN(3) == 0 {
			f.Thread = pick(threads[1:]...)
		}
		if r.IntN(3) == 0 {
			f.Layer = pick(append(layers[1:], "none")...)
		}
		if r.IntN(4) == 0 {
			f.Kind = pick("fact", "summary")
		}
		if r.IntN(6) == 0 {
			f.Metadata = map[string]string{"lang": pick("en", "fr")}
		}
		if r.IntN(8) == 0 {
			f.CreatedFrom = randTime()
		}
		if r.IntN(8) == 0 {
			f.CreatedBefore = randTime()
		}
		if r.IntN(8) == 0 {
			f.ValidAt = randTime()
		}
		if r.IntN(10) == 0 {
			for range 1 + r.IntN(5) {
				f.IDs = append(f.IDs, randID())
			}
			slices.Sort(f.IDs)
			f.IDs = slices.Compact(f.IDs)
		}
		return f
	}

	dir := t.TempDir()
	c := openScoped(t, dir, dist, dim)
	defer func() { c.Close() }()
	model := map[string]driver.Record{}
	matching := func(f *driver.Filter) []driver.Record {
		var out []driver.Record
		for _, rec := range model {
			if f.Matches(&rec) {
				out = append(out, rec)
			}
		}
		return out
	}
	compare := func(step int, f driver.Filter) {
		t.Helper()
		want := matching(&f)
		n, err := c.Count(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(want) {
			t.Fatalf("step %d: count %+v = %d, brute force %d", step, f, n, len(want))
		}
		// List: a random cursor (a stored position or any other), order
		// and limit.
		desc := r.IntN(2) == 0
		q := driver.ListQuery{Filter: f, Limit: 1 + r.IntN(12), Desc: desc}
		switch r.IntN(4) {
		case 1:
			q.After = &driver.Cursor{CreatedAt: randTime(), ID: randID()}
		case 2:
			q.After = &driver.Cursor{CreatedAt: randTime(), ID: "id" + fmt.Sprint(r.IntN(60)) + "x"}
		case 3: // a matching record's position, as paging gives
			if len(want) > 0 {
				w := want[r.IntN(len(want))]
				q.After = &driver.Cursor{CreatedAt: w.CreatedAt, ID: w.ID}
			}
		}
		slices.SortFunc(want, func(a, b driver.Record) int {
			if desc {
				return driver.CompareRecords(&b, &a)
			}
			return driver.CompareRecords(&a, &b)
		})
		var wantPage []string
		for i := range want {
			if (q.After == nil || driver.ComesAfter(&want[i], q.After, desc)) && len(wantPage) < q.Limit {
				wantPage = append(wantPage, want[i].ID)
			}
		}
		recs, err := c.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i := range recs {
			got = append(got, recs[i].ID)
			if m := model[recs[i].ID]; !recs[i].CreatedAt.Equal(m.CreatedAt) || recs[i].Scope != m.Scope || recs[i].Layer != m.Layer {
				t.Fatalf("step %d: list returns %+v, model %+v", step, recs[i], m)
			}
		}
		if !slices.Equal(got, wantPage) {
			t.Fatalf("step %d: list %+v after %v desc %v limit %d = %v, brute force %v", step, f, q.After, desc, q.Limit, got, wantPage)
		}
		// Query: score with the driver's function, order by CompareMatches.
		qv := pool[r.IntN(len(pool))]
		k := 1 + r.IntN(15)
		wantM := make([]driver.Match, len(want))
		for i := range want {
			wantM[i] = driver.Match{Record: want[i], Score: score(dist, qv, want[i].Vector)}
		}
		slices.SortFunc(wantM, func(a, b driver.Match) int { return driver.CompareMatches(&a, &b) })
		wantM = wantM[:min(k, len(wantM))]
		ms, err := c.Query(ctx, driver.VectorQuery{Vector: qv, K: k, Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != len(wantM) {
			t.Fatalf("step %d: query %+v k=%d: %d matches, brute force %d", step, f, k, len(ms), len(wantM))
		}
		for i := range ms {
			if ms[i].Record.ID != wantM[i].Record.ID || ms[i].Score != wantM[i].Score {
				t.Fatalf("step %d: query %+v k=%d: match %d is %s %v, brute force %s %v", step, f, k, i, ms[i].Record.ID, ms[i].Score, wantM[i].Record.ID, wantM[i].Score)
			}
		}
	}

	steps := 400
	if testing.Short() {
		steps = 100
	}
	for step := range steps {
		switch op := r.IntN(20); {
		case op < 9: // upsert a batch, small or large, repeating ids
			n := 1 + r.IntN(4)
			if r.IntN(4) == 0 {
				n = 10 + r.IntN(40)
			}
			batch := make([]driver.Record, n)
			for i := range batch {
				batch[i] = randRec()
			}
			if err := c.Upsert(ctx, batch); err != nil {
				t.Fatal(err)
			}
			for _, rec := range batch {
				model[rec.ID] = rec
			}
		case op < 12: // delete some ids, present or not
			var ids []string
			for range 1 + r.IntN(8) {
				ids = append(ids, randID())
			}
			if err := c.Delete(ctx, ids); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				delete(model, id)
			}
		case op < 14: // delete where
			f := randFilter()
			if f.IsZero() {
				f.Resource = "u0"
			}
			want := matching(&f)
			n, err := c.DeleteWhere(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(want) {
				t.Fatalf("step %d: delete where %+v removed %d, brute force %d", step, f, n, len(want))
			}
			for _, rec := range want {
				delete(model, rec.ID)
			}
		case op < 16: // conditional writes
			id := randID()
			cur, ok, _ := c.Get(ctx, id)
			if ok && r.IntN(2) == 0 {
				if err := c.DeleteIf(ctx, id, cur.Revision); err != nil {
					t.Fatal(err)
				}
				delete(model, id)
			} else {
				rec := randRec()
				rec.ID = id
				if _, err := c.UpsertIf(ctx, rec, cur.Revision); err != nil {
					t.Fatal(err)
				}
				model[id] = rec
			}
		case op < 17: // compaction
			c.wmu.Lock()
			err := c.compact()
			c.wmu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
		case op < 18: // reopen: replay
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			c = openScoped(t, dir, "", 0)
		default: // reads only
		}
		checkIndex(t, c)
		for range 6 {
			compare(step, randFilter())
		}
	}
}

// BenchmarkScopeIndexMemory reports the heap the scope index takes per
// record in a collection of 100k records (500 per resource, 100 per thread,
// two layers): built at open ("bulk", exact sizes) and grown by one write
// at a time ("incremental", append slack included).
func BenchmarkScopeIndexMemory(b *testing.B) {
	const n = 100_000
	recs := make(map[string]*driver.Record, n)
	var order []*driver.Record
	r := rand.New(rand.NewPCG(1, 1))
	for i := range n {
		rec := scopeRecord(r, i, n)
		rec.Vector = nil
		recs[rec.ID] = &rec
		order = append(order, &rec)
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var bulk, incr float64
	for b.Loop() {
		before := heap()
		var x scopeIndex
		x.build(recs)
		bulk = float64(heap()-before) / n
		runtime.KeepAlive(&x)

		before = heap()
		var y scopeIndex
		y.build(nil)
		for _, rec := range order {
			y.update(nil, []*driver.Record{rec})
		}
		incr = float64(heap()-before) / n
		runtime.KeepAlive(&y)
	}
	b.ReportMetric(bulk, "B/rec-bulk")
	b.ReportMetric(incr, "B/rec-incremental")
}
