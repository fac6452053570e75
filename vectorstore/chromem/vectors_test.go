package chromem

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stratamem/strata/internal/vecmath"
	"github.com/stratamem/strata/vectorstore/driver"
)

// checkVecs verifies the vector store of c against its records: every
// record with a resource has its vector in a live slot of that resource's
// chain (the very memory its Vector points to), no chain holds anything
// else or is empty, and no chain is left mostly dead.
func checkVecs(t *testing.T, c *collection) {
	t.Helper()
	c.mu.RLock()
	defer c.mu.RUnlock()
	v := &c.vecs
	if !v.built() {
		t.Fatal("vector store not built")
	}
	live := map[string]int{}
	for _, r := range c.recs {
		if r.Scope.Resource == "" {
			if _, ok := v.pos[r]; ok {
				t.Fatalf("%s has no resource but a slot", r.ID)
			}
			continue
		}
		live[r.Scope.Resource]++
		ch := v.by[r.Scope.Resource]
		i, ok := v.pos[r]
		if ch == nil || !ok || int(i) >= len(ch.recs) || ch.recs[i] != r {
			t.Fatalf("%s (resource %s) is not in its chain", r.ID, r.Scope.Resource)
		}
		if slot := ch.vector(v.dim, int(i)); unsafe.SliceData(slot) != unsafe.SliceData(r.Vector) || len(r.Vector) != v.dim || cap(r.Vector) != v.dim {
			t.Fatalf("%s: Vector is not its slot", r.ID)
		}
	}
	n := 0
	for res, ch := range v.by {
		dead := 0
		for _, r := range ch.recs {
			if r == nil {
				dead++
			} else if r.Scope.Resource != res || c.recs[r.ID] != r {
				t.Fatalf("chain %s holds %s (resource %s), not a stored record of it", res, r.ID, r.Scope.Resource)
			}
		}
		if dead != ch.dead || len(ch.recs)-dead != live[res] || live[res] == 0 {
			t.Fatalf("chain %s: %d slots, %d dead (counted %d), %d records", res, len(ch.recs), dead, ch.dead, live[res])
		}
		if dead >= minRepack && dead > live[res] {
			t.Fatalf("chain %s: %d dead slots, %d live, not repacked", res, dead, live[res])
		}
		slots := 0
		for _, s := range ch.slabs {
			if len(s)%v.dim != 0 {
				t.Fatalf("chain %s: slab of %d floats", res, len(s))
			}
			slots += len(s) / v.dim
		}
		if slots != len(ch.recs) {
			t.Fatalf("chain %s: %d vectors in slabs, %d slots", res, slots, len(ch.recs))
		}
		n += len(ch.recs) - dead
	}
	if n != len(v.pos) || len(live) != len(v.by) {
		t.Fatalf("%d slots for %d chained records, %d chains for %d resources", len(v.pos), n, len(v.by), len(live))
	}
}

// vector returns the vector of slot i of ch.
func (ch *chain) vector(dim, i int) []float32 {
	for _, s := range ch.slabs {
		if n := len(s) / dim; i >= n {
			i -= n
			continue
		}
		return s[i*dim : (i+1)*dim]
	}
	return nil
}

// TestVecStoreRandom runs random writes, deletes, compactions and reopens
// against a model, with chains large enough to be repacked, and checks
// after each step the store's invariants, every stored vector, and vector
// queries of every kind (a resource's chain, a thread's list, the whole
// collection; filters most records pass and filters few do) against brute
// force scored with the driver's score function.
func TestVecStoreRandom(t *testing.T) {
	for _, dist := range []driver.Distance{driver.DistanceCosine, driver.DistanceDot, driver.DistanceEuclidean} {
		t.Run(string(dist), func(t *testing.T) { randomVecOps(t, dist) })
	}
}

func randomVecOps(t *testing.T, dist driver.Distance) {
	ctx := context.Background()
	const dim = 24 // a SIMD block and a tail
	r := rand.New(rand.NewPCG(21, uint64(len(dist))))
	pick := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	randID := func() string { return fmt.Sprintf("id%03d", r.IntN(300)) }
	// Some records share vectors, so that scores tie exactly.
	shared := [][]float32{randUnit(r, dim), randUnit(r, dim), randUnit(r, dim)}
	randRec := func() driver.Record {
		res := pick("", "u0", "u0", "u0", "u1", "u2")
		if r.IntN(40) == 0 {
			res = "u3" // rare: emptied by deletes now and then
		}
		rec := driver.Record{ID: randID(), Layer: pick("semantic", "semantic", "episodic"), Kind: "message",
			Scope: driver.Scope{Resource: res, Thread: res + "-" + pick("t0", "t1")}, Vector: randUnit(r, dim),
			CreatedAt: scopeT0.Add(time.Duration(r.IntN(1000)) * time.Second),
			Metadata:  map[string]string{"embedding": pick("m", "m", "m", "m", "old"), "role": pick("user", "assistant")}}
		if r.IntN(30) == 0 {
			rec.Metadata["rare"] = "x"
		}
		if r.IntN(8) == 0 {
			rec.Vector = slices.Clone(shared[r.IntN(len(shared))])
		}
		return rec
	}
	filters := []driver.Filter{
		{Resource: "u0"},
		{Resource: "u0", Layer: "semantic", Metadata: map[string]string{"embedding": "m"}},
		{Resource: "u0", Metadata: map[string]string{"rare": "x"}}, // selective: the fallback
		{Resource: "u0", Thread: "u0-t1", Metadata: map[string]string{"embedding": "m"}},
		{Resource: "u1", Layer: "episodic"},
		{Resource: "u2", Metadata: map[string]string{"embedding": "none"}},
		{Resource: "u3"},
		{Resource: "nobody"},
		{Layer: "semantic", Metadata: map[string]string{"embedding": "m"}},
		{Metadata: map[string]string{"role": "user"}}, // chromem-go for cosine
	}
	dir := t.TempDir()
	c := openScoped(t, dir, dist, dim)
	defer func() { c.Close() }()
	model := map[string]driver.Record{}
	check := func(step int) {
		t.Helper()
		checkIndex(t, c)
		checkVecs(t, c)
		for id, want := range model {
			got, ok, err := c.Get(ctx, id)
			if err != nil || !ok || !slices.Equal(got.Vector, want.Vector) {
				t.Fatalf("step %d: %s has vector %v (%v, %v), wrote %v", step, id, got.Vector, ok, err, want.Vector)
			}
		}
		qv := randUnit(r, dim)
		if r.IntN(3) == 0 {
			qv = shared[r.IntN(len(shared))]
		}
		for _, f := range filters {
			k := 1 + r.IntN(40)
			var want []driver.Match
			for _, rec := range model {
				if f.Matches(&rec) {
					want = append(want, driver.Match{Record: rec, Score: score(dist, qv, rec.Vector)})
				}
			}
			slices.SortFunc(want, func(a, b driver.Match) int { return driver.CompareMatches(&a, &b) })
			want = want[:min(k, len(want))]
			ms, err := c.Query(ctx, driver.VectorQuery{Vector: qv, K: k, Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != len(want) {
				t.Fatalf("step %d: query %+v k=%d: %d matches, brute force %d", step, f, k, len(ms), len(want))
			}
			// chromem-go sums in its own order.
			tol := 0.0
			if _, _, indexed := c.idx.candidates(&f); dist == driver.DistanceCosine && !indexed {
				tol = 1e-5
			}
			for i := range ms {
				if ms[i].Record.ID != want[i].Record.ID || math.Abs(ms[i].Score-want[i].Score) > tol {
					t.Fatalf("step %d: query %+v k=%d: match %d is %s %v, brute force %s %v", step, f, k, i, ms[i].Record.ID, ms[i].Score, want[i].Record.ID, want[i].Score)
				}
			}
		}
	}
	steps := 300
	if testing.Short() {
		steps = 100
	}
	repacks := 0
	for step := range steps {
		switch op := r.IntN(20); {
		case op < 12:
			batch := make([]driver.Record, 1+r.IntN(30))
			for i := range batch {
				batch[i] = randRec()
			}
			if err := c.Upsert(ctx, batch); err != nil {
				t.Fatal(err)
			}
			for _, rec := range batch {
				model[rec.ID] = rec
			}
		case op < 17:
			var ids []string
			for range 1 + r.IntN(20) {
				ids = append(ids, randID())
			}
			if err := c.Delete(ctx, ids); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				delete(model, id)
			}
		case op < 19:
			c.wmu.Lock()
			err := c.compact()
			c.wmu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
		default:
			// Reopen: the chains are rebuilt from the replayed records, in
			// another order; queries must not change by a bit.
			qv := randUnit(r, dim)
			before := make([][]driver.Match, len(filters))
			for i, f := range filters {
				before[i], _ = c.Query(ctx, driver.VectorQuery{Vector: qv, K: 25, Filter: f})
			}
			repacks += c.vecs.repacks
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			c = openScoped(t, dir, "", 0)
			for i, f := range filters {
				after, _ := c.Query(ctx, driver.VectorQuery{Vector: qv, K: 25, Filter: f})
				if !reflect.DeepEqual(before[i], after) {
					t.Fatalf("step %d: query %+v changed across a reopen", step, f)
				}
			}
		}
		check(step)
	}
	if repacks+c.vecs.repacks == 0 && !testing.Short() {
		t.Error("no chain was repacked: the test misses that path")
	}
}

// TestVecStoreConcurrent has a writer churn one resource (repacking its
// chain over and over) while readers query and read it; run under -race.
func TestVecStoreConcurrent(t *testing.T) {
	ctx := context.Background()
	const dim = 32
	c := openScoped(t, t.TempDir(), driver.DistanceCosine, dim)
	defer c.Close()
	r := rand.New(rand.NewPCG(1, 1))
	vecs := make([][]float32, 40)
	for i := range vecs {
		vecs[i] = randUnit(r, dim)
	}
	rec := func(i int) driver.Record {
		return driver.Record{ID: fmt.Sprint("r", i%40), Scope: driver.Scope{Resource: "u"}, Vector: vecs[i%40],
			CreatedAt: scopeT0.Add(time.Duration(i) * time.Second)}
	}
	var batch []driver.Record
	for i := range 40 {
		batch = append(batch, rec(i))
	}
	if err := c.Upsert(ctx, batch); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				q := vecs[(i+g)%40]
				ms, err := c.Query(ctx, driver.VectorQuery{Vector: q, K: 5, Filter: driver.Filter{Resource: "u"}})
				if err != nil || len(ms) == 0 || ms[0].Score < 0.999 {
					t.Errorf("query: %d matches, %v", len(ms), err)
					return
				}
				if _, _, err := c.Get(ctx, ms[0].Record.ID); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 40; i < 40+400; i++ {
		if err := c.Upsert(ctx, []driver.Record{rec(i)}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if c.vecs.repacks == 0 {
		t.Error("no repack")
	}
	checkVecs(t, c)
}

// TestVecStorePruned checks queries served from the codes (prunedTopK)
// and those it leaves to the full scan against brute force, over chains
// large enough to be pruned: filters most records pass, filters refusing
// most of the candidates, and a block of identical vectors whose tied
// scores no bound can separate.
func TestVecStorePruned(t *testing.T) {
	for _, dist := range []driver.Distance{driver.DistanceCosine, driver.DistanceDot, driver.DistanceEuclidean} {
		for _, dim := range []int{48, 64} { // a code tail, and whole 32-blocks
			t.Run(fmt.Sprintf("%s/%d", dist, dim), func(t *testing.T) { prunedOps(t, dist, dim) })
		}
	}
}

func prunedOps(t *testing.T, dist driver.Distance, dim int) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(31, uint64(dim)))
	var answered, gaveUp, ranOut int
	pruneTrace = func(outcome int) {
		switch outcome {
		case pruneAnswered:
			answered++
		case pruneGaveUp:
			gaveUp++
		case pruneRanOut:
			ranOut++
		}
	}
	defer func() { pruneTrace = nil }()
	c := openScoped(t, t.TempDir(), dist, dim)
	defer c.Close()
	same := randUnit(r, dim)
	model := map[string]driver.Record{}
	rec := func(i int) driver.Record {
		v := randUnit(r, dim)
		if dist == driver.DistanceDot {
			s := float32(0.5 + 1.5*r.Float64())
			for j := range v {
				v[j] *= s
			}
		}
		if i%10 == 0 {
			v = slices.Clone(same) // 300 identical vectors, more than some k's candidates
		}
		layer := "a"
		if r.IntN(10) < 3 {
			layer = "b"
		}
		md := "x"
		if r.IntN(30) == 0 {
			md = "y"
		}
		res := "u"
		if i%7 == 0 {
			res = "v"
		}
		return driver.Record{ID: fmt.Sprintf("r%05d", r.IntN(4000)), Layer: layer, Scope: driver.Scope{Resource: res},
			Vector: v, Metadata: map[string]string{"m": md}, CreatedAt: scopeT0.Add(time.Duration(i) * time.Second)}
	}
	write := func(from, to int) {
		batch := make([]driver.Record, 0, to-from)
		for i := from; i < to; i++ {
			batch = append(batch, rec(i))
		}
		if err := c.Upsert(ctx, batch); err != nil {
			t.Fatal(err)
		}
		for _, rec := range batch {
			model[rec.ID] = rec
		}
	}
	write(0, 3000)
	filters := []driver.Filter{
		{Resource: "u"},
		{Resource: "u", Layer: "a", Metadata: map[string]string{"m": "x"}},
		{Resource: "u", Layer: "b"},
		{Resource: "u", Metadata: map[string]string{"m": "y"}}, // refuses most candidates
	}
	for round := range 12 {
		if round%4 == 3 { // rewrite and delete some: dead slots
			write(3000*round, 3000*round+400)
			var ids []string
			for range 200 {
				ids = append(ids, fmt.Sprintf("r%05d", r.IntN(4000)))
			}
			if err := c.Delete(ctx, ids); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				delete(model, id)
			}
			checkVecs(t, c)
		}
		qv := randUnit(r, dim)
		if round%3 == 2 {
			qv = same // the tied block scores best
		}
		for _, f := range filters {
			for _, k := range []int{1, 5, 20, 60} {
				var want []driver.Match
				for _, rec := range model {
					if f.Matches(&rec) {
						want = append(want, driver.Match{Record: rec, Score: score(dist, qv, rec.Vector)})
					}
				}
				slices.SortFunc(want, func(a, b driver.Match) int { return driver.CompareMatches(&a, &b) })
				want = want[:min(k, len(want))]
				ms, err := c.Query(ctx, driver.VectorQuery{Vector: qv, K: k, Filter: f})
				if err != nil {
					t.Fatal(err)
				}
				if len(ms) != len(want) {
					t.Fatalf("round %d: query %+v k=%d: %d matches, brute force %d", round, f, k, len(ms), len(want))
				}
				for i := range ms {
					if ms[i].Record.ID != want[i].Record.ID || ms[i].Score != want[i].Score {
						t.Fatalf("round %d: query %+v k=%d: match %d is %s %v, brute force %s %v", round, f, k, i, ms[i].Record.ID, ms[i].Score, want[i].Record.ID, want[i].Score)
					}
				}
			}
		}
	}
	if dist != driver.DistanceEuclidean && (answered == 0 || gaveUp == 0 || ranOut == 0) {
		t.Errorf("pruning answered %d queries, gave up %d, ran out of candidates for %d: the test misses a path", answered, gaveUp, ranOut)
	}
	t.Logf("pruning answered %d queries, gave up %d, ran out of candidates for %d", answered, gaveUp, ranOut)
}

func TestSelectTop(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for range 2000 {
		n := 2 + r.IntN(60)
		a := make([]bounded1, n)
		for i := range a {
			a[i] = bounded1{u: float64(r.IntN(8)), slot: int32(i)} // many ties
			if r.IntN(20) == 0 {
				a[i].u = math.Inf(1)
			}
		}
		m := 1 + r.IntN(n-1)
		us := make([]float64, n)
		for i := range a {
			us[i] = a[i].u
		}
		slices.Sort(us)
		selectTop(a, m)
		kth := us[n-m] // the m-th highest
		seen := map[int32]bool{}
		for i, c := range a {
			if i < m && c.u < kth || i >= m && c.u > kth {
				t.Fatalf("n=%d m=%d: a[%d].u = %v, m-th highest %v", n, m, i, c.u, kth)
			}
			seen[c.slot] = true
		}
		if len(seen) != n {
			t.Fatal("selectTop lost elements")
		}
	}
}

// TestQuantizeBound: the bound of quantize holds for random and extreme
// vectors, exactly as prunedTopK uses it.
func TestQuantizeBound(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for _, dim := range []int{1, 3, 31, 32, 48, 512, 1536} {
		codes := make([]int8, dim)
		for range 300 {
			x := randUnit(r, dim)
			switch r.IntN(5) {
			case 0: // one dominant component
				x[r.IntN(dim)] = 40
			case 1: // tiny values
				for i := range x {
					x[i] *= 1e-30
				}
			case 2:
				clear(x)
			}
			scale, slack := quantize(codes, x)
			q := randUnit(r, dim)
			if r.IntN(2) == 0 {
				for i := range q {
					q[i] *= float32(r.Float64() * 100)
				}
			}
			var qn float64
			for _, v := range q {
				qn += float64(v) * float64(v)
			}
			qn = math.Sqrt(qn) * (1 + 1e-9)
			u := float64(vecmath.DotInt8(q, codes))*float64(scale) + qn*float64(slack)
			if s := score(driver.DistanceDot, q, x); s > u {
				t.Fatalf("dim %d: score %v above its bound %v (scale %v slack %v)", dim, s, u, scale, slack)
			}
		}
	}
	if _, slack := quantize(make([]int8, 2), []float32{float32(math.Inf(1)), 0}); !math.IsInf(float64(slack), 1) {
		t.Errorf("slack of an infinite vector %v", slack)
	}
}
