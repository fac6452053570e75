package chromem

import (
	"cmp"
	"math"
	"slices"
	"sync"

	"github.com/stratamem/strata/internal/vecmath"
	"github.com/stratamem/strata/vectorstore/driver"
)

// vecStore keeps the vectors of each resource's records together: for every
// resource in use, a chain of slabs holding the vectors one after another,
// which the stored records' Vector slices point into (the values are
// stored once, not copied). A query scoped to a resource then reads its
// vectors sequentially, at memory bandwidth, instead of one scattered
// 2 KiB heap object per record (about 3x slower for 512-d vectors at
// 50,000 records). Records without a resource keep their own vector.
//
// For cosine and dot collections a chain also keeps each vector as int8
// codes with a scale and an error bound (quantize): a query first reads
// those, a quarter of the bytes, for an upper bound of every score, then
// computes the exact scores of the few records whose bound can still
// reach the top K (chain.prunedTopK). The results are exact: the codes
// only decide which records need their exact score.
//
// Slabs are append-only: a slot, once written, never changes, so a Vector
// slice handed out earlier (to chromem-go's document, or a copy of the
// record taken under the read lock, as compaction does) always reads the
// values it was given. A replaced or deleted record's slot is dead until
// its chain is repacked, which happens when the dead slots outnumber the
// live ones: the live vectors are then copied to new slabs and their
// records' Vector moved there (same values, so no reader can tell), and
// the old slabs become garbage once nothing refers to them (or, for a
// slab in the slab file, are unmapped: the caller holds mu exclusively and
// every earlier reader has finished with them). Memory is therefore at
// most about twice the live vectors (and codes), plus one partly filled
// slab per resource.
//
// A full slab of at least sealMinBytes moves to the slab file when one is
// open (slabfile_mmap.go): its vectors are then read from a read-only
// file mapping, paged in on demand, and only the codes, which every
// pruned query reads, stay resident. The pruned queries read the vectors
// of their few hundred candidates only.
//
// Like scopeIndex, the store is guarded by the collection's mu (writers
// exclusively) and is built once the replay at open is done; before that
// (and after Close) it is empty and add and remove do nothing.
type vecStore struct {
	dim   int
	quant bool                     // keep int8 codes (cosine and dot)
	by    map[string]*chain        // resource → its chain
	pos   map[*driver.Record]int32 // a chained record → its slot in its chain
	// file, when set, takes every full slab of at least sealMinBytes off
	// the heap (slabfile_mmap.go): the slab's records then read their
	// vectors from a read-only mapping of it, while its codes stay here.
	file *slabFile
	// repacks counts the chains repacked, for tests.
	repacks int
}

// chain is the vectors of one resource. Slot i is recs[i], nil once the
// slot is dead; its vector is the i-th run of dim floats of the slabs
// taken in order (every slab holds whole vectors), and, in a quantised
// store, its codes the i-th run of dim codes of codes (codes[j] holding
// the codes of slabs[j]), with scale[i] and slack[i] (see quantize).
type chain struct {
	slabs [][]float32
	codes [][]int8
	scale []float32
	slack []float32
	recs  []*driver.Record
	dead  int
}

const (
	// minSlab is the capacity in vectors of a resource's first slab; each
	// later one holds as many as all before it (geometric growth, so a
	// small resource wastes little), up to maxSlabBytes.
	minSlab      = 4
	maxSlabBytes = 2 << 20
	// minRepack dead slots are needed before a repack, so that small chains
	// are not copied over and over.
	minRepack = 64
)

// sealMinBytes is the smallest full slab moved to the slab file; smaller
// ones (the first slabs of a small resource) stay on the heap, where they
// waste no page. A variable for tests.
var sealMinBytes = 64 << 10

func (v *vecStore) built() bool { return v.by != nil }

// build makes the store from scratch from the resource lists of a built
// scope index, each chain in list order (CreatedAt, ID): the records of a
// thread, a subset of its resource's, are then in address order too.
func (v *vecStore) build(dim int, d driver.Distance, byResource map[string][]*driver.Record) {
	v.dim = dim
	v.quant = d == driver.DistanceCosine || d == driver.DistanceDot
	v.by = make(map[string]*chain, len(byResource))
	n := 0
	for _, l := range byResource {
		n += len(l)
	}
	v.pos = make(map[*driver.Record]int32, n)
	for res, l := range byResource {
		ch := &chain{}
		ch.fill(v, l)
		v.by[res] = ch
	}
}

// maxSlab is the largest slab, in vectors.
func (v *vecStore) maxSlab() int { return max(1, maxSlabBytes/(4*v.dim)) }

// fill appends the vectors of recs, all live, to ch in slabs of the
// largest size, and points the records' Vector at them.
func (ch *chain) fill(v *vecStore, recs []*driver.Record) {
	per := v.maxSlab()
	for i := 0; i < len(recs); i += per {
		part := recs[i:min(i+per, len(recs))]
		ch.grow(v, len(part))
		for _, r := range part {
			ch.put(v, r)
		}
	}
}

// grow adds an empty slab for size vectors.
func (ch *chain) grow(v *vecStore, size int) {
	ch.slabs = append(ch.slabs, make([]float32, 0, size*v.dim))
	if v.quant {
		ch.codes = append(ch.codes, make([]int8, 0, size*v.dim))
	}
}

// full reports whether the last slab has no room for another vector.
func (ch *chain) full(v *vecStore) bool {
	k := len(ch.slabs) - 1
	return k < 0 || len(ch.slabs[k])+v.dim > cap(ch.slabs[k])
}

// put appends r's vector to the last slab, which has room for it, makes
// r's Vector the copy and r the chain's next slot. When that fills the
// slab and the store has a slab file, the slab moves there (seal) and put
// returns the records whose Vector moved with it, r included.
func (ch *chain) put(v *vecStore, r *driver.Record) []*driver.Record {
	k := len(ch.slabs) - 1
	slab := ch.slabs[k]
	n := len(slab)
	slab = append(slab, r.Vector...)
	ch.slabs[k] = slab
	r.Vector = slab[n : n+v.dim : n+v.dim]
	if v.quant {
		codes := ch.codes[k][:n+v.dim]
		scale, slack := quantize(codes[n:], r.Vector)
		ch.codes[k] = codes
		ch.scale = append(ch.scale, scale)
		ch.slack = append(ch.slack, slack)
	}
	v.pos[r] = int32(len(ch.recs))
	ch.recs = append(ch.recs, r)
	if v.file != nil && len(slab) == cap(slab) && 4*len(slab) >= sealMinBytes {
		return ch.seal(v, k)
	}
	return nil
}

// seal moves slab k, the last and full, to the slab file and points the
// Vector of its live records at the copy, which holds the same values;
// it returns those records (nil if the slab stays on the heap).
func (ch *chain) seal(v *vecStore, k int) []*driver.Record {
	slab := ch.slabs[k]
	m := v.file.seal(slab)
	if m == nil {
		return nil
	}
	ch.slabs[k] = m
	first := len(ch.recs) - len(slab)/v.dim
	var moved []*driver.Record
	for j, r := range ch.recs[first:] {
		if r != nil {
			o := j * v.dim
			r.Vector = m[o : o+v.dim : o+v.dim]
			moved = append(moved, r)
		}
	}
	return moved
}

// release gives back the slabs of ch, which no record refers to any more
// (the caller holds mu exclusively): the mapped ones are unmapped.
func (ch *chain) release(v *vecStore) {
	for _, s := range ch.slabs {
		v.file.release(s)
	}
}

// close releases what the store holds outside the heap; the store must
// not be used afterwards.
func (v *vecStore) close() {
	v.file.close()
	v.file = nil
}

// add moves the vector of r, a record being stored, into its resource's
// chain. r must not be visible to readers yet, or the caller holds mu
// exclusively. It returns the records whose Vector moved besides (see
// put), nil if none did.
func (v *vecStore) add(r *driver.Record) []*driver.Record {
	res := r.Scope.Resource
	if !v.built() || res == "" || len(r.Vector) != v.dim {
		return nil
	}
	ch := v.by[res]
	if ch == nil {
		ch = &chain{}
		v.by[res] = ch
	}
	if ch.full(v) {
		ch.grow(v, min(max(minSlab, len(ch.recs)), v.maxSlab()))
	}
	return ch.put(v, r)
}

// remove kills the slot of r, a record being replaced or deleted. When that
// leaves the chain mostly dead, the chain is repacked and remove returns its
// records, whose Vector moved; otherwise it returns nil. The caller holds
// mu exclusively.
func (v *vecStore) remove(r *driver.Record) []*driver.Record {
	i, ok := v.pos[r]
	if !ok {
		return nil
	}
	delete(v.pos, r)
	res := r.Scope.Resource
	ch := v.by[res]
	ch.recs[i] = nil
	ch.dead++
	live := len(ch.recs) - ch.dead
	switch {
	case live == 0:
		delete(v.by, res)
		ch.release(v)
	case ch.dead >= minRepack && ch.dead > live:
		recs := make([]*driver.Record, 0, live)
		for _, r := range ch.recs {
			if r != nil {
				recs = append(recs, r)
			}
		}
		old := *ch
		*ch = chain{}
		ch.fill(v, recs)
		old.release(v)
		v.repacks++
		return recs
	}
	return nil
}

// chain returns the chain of resource res, nil if it has no records.
func (v *vecStore) chain(res string) *chain { return v.by[res] }

// slots is the number of slots of ch, live and dead: the cost of a scan.
func (ch *chain) slots() int { return len(ch.recs) }

// quantize sets codes to x in int8 (x[i] ≈ codes[i]·scale, scale =
// max|x[i]|/127) and returns scale and slack, a bound making prunedTopK
// exact: for any query q, with the score s the driver computes for x (a
// float32 dot product, rounding included) and the approximation
// a = float64(vecmath.DotInt8(q, codes))·scale,
//
//	s <= a + ‖q‖·slack.
//
// Proof: with x' = codes·scale, |q·x - q·x'| <= ‖q‖·‖x-x'‖ (Cauchy-Schwarz);
// a float32 dot product of n terms is within γ·Σ|q[i]·y[i]| <= γ·‖q‖·‖y‖
// of the exact one, for y = x (s) and y = x' (a: the products by codes,
// then the exact scaling, in float64, by scale), where γ = (n+4)·2⁻²³ is
// twice the classical bound of about n·2⁻²⁴. So slack = ‖x-x'‖ +
// γ·(‖x‖+‖x'‖), computed in float64 with a relative margin and rounded up
// to float32. A vector that is not finite gets an infinite slack: never
// pruned.
func quantize(codes []int8, x []float32) (scale, slack float32) {
	var m, n2 float64
	for _, v := range x {
		a := math.Abs(float64(v))
		if a > m {
			m = a
		}
		n2 += a * a
	}
	clear(codes)
	if math.IsInf(n2, 0) || math.IsNaN(n2) { // not finite (float32 squares cannot overflow float64)
		return 0, float32(math.Inf(1))
	}
	scale = float32(m / 127)
	s, inv := float64(scale), 0.0
	if s > 0 {
		inv = 1 / s // finite: s is at least the least float32
	}
	var e2, t2 float64
	for i, v := range x {
		// Any code is sound (the bound measures the error made); the
		// nearest is the best. f+128.5 is positive: the conversion
		// truncates it to its floor, without a branch on the sign.
		c := min(127, max(-127, int32(float64(v)*inv+128.5)-128))
		codes[i] = int8(c)
		t := float64(c) * s
		e := float64(v) - t
		e2 += e * e
		t2 += t * t
	}
	g := float64(len(x)+4) * 0x1p-23
	b := (math.Sqrt(e2) + g*(math.Sqrt(n2)+math.Sqrt(t2))) * (1 + 1e-6)
	return scale, math.Nextafter32(float32(b), float32(math.Inf(1)))
}

// chainScratch is the per-query memory of a chain's top-K, pooled: a score
// per slot and the live slots' heap (topK), or the candidates of the
// pruning pass (prunedTopK).
type chainScratch struct {
	scores []float64
	heap   []int32
	cands  []bounded1
	approx []float32
	vec    []float32 // a candidate's vector, read from the slab file
}

// bounded1 is a candidate of prunedTopK: a slot and its score bound.
type bounded1 struct {
	u    float64
	slot int32
}

var chainScratchPool = sync.Pool{New: func() any { return new(chainScratch) }}

// topK returns, best first, the k best records of ch (by compareScored)
// that pass f, scored against q with distance d; every record of ch is
// taken to pass whatever f does not ask.
//
// A quantised chain large enough is served by prunedTopK. When that gives
// up, most of the best candidates failed the filter: the filter is
// selective, and the chain is scanned testing it first (filterFirst), so
// that only the records it passes are scored. When its candidates run out
// (and for Euclidean chains, small ones, zero queries), topK works in two
// passes. The first scores every live slot,
// reading the slabs in address order and no record at all. The second
// visits the slots best first (a heap of them) and tests the filter on
// each until k pass: when most records pass, that is about k tests, each
// of which may miss the cache several times (the record, its metadata map,
// the strings), where a single pass keeping a top-k heap tests every
// record that enters the heap, k·(1+ln(n/k)) of them. A selective filter
// would make the second pass pop most of the heap; after n/4 tests without
// k matches it tests the rest in heap order, which is no order, keeping
// the best in a bounded heap.
func (ch *chain) topK(v *vecStore, d driver.Distance, q []float32, k int, f *driver.Filter) []scored {
	sc := chainScratchPool.Get().(*chainScratch)
	defer chainScratchPool.Put(sc)
	if v.quant {
		switch res, out := ch.prunedTopK(sc, v, d, q, k, f); out {
		case pruneAnswered:
			return res
		case pruneGaveUp:
			return ch.filterFirst(v.dim, d, q, k, f)
		}
	}
	dim := v.dim
	n := len(ch.recs)
	if cap(sc.scores) < n {
		sc.scores = make([]float64, n)
		sc.heap = make([]int32, 0, n)
	}
	scores, hp := sc.scores[:n], sc.heap[:0]
	slot := 0
	for _, slab := range ch.slabs {
		for o := 0; o+dim <= len(slab); o += dim {
			if ch.recs[slot] != nil {
				scores[slot] = score(d, q, slab[o:o+dim:o+dim])
				hp = append(hp, int32(slot))
			}
			slot++
		}
	}
	// before reports whether slot a comes before slot b: compareScored.
	before := func(a, b int32) bool {
		if scores[a] != scores[b] {
			return scores[a] > scores[b]
		}
		return ch.recs[a].ID < ch.recs[b].ID
	}
	down := func(i, n int) {
		for {
			l, r, w := 2*i+1, 2*i+2, i
			if l < n && before(hp[l], hp[w]) {
				w = l
			}
			if r < n && before(hp[r], hp[w]) {
				w = r
			}
			if w == i {
				return
			}
			hp[i], hp[w] = hp[w], hp[i]
			i = w
		}
	}
	for i := len(hp)/2 - 1; i >= 0; i-- {
		down(i, len(hp))
	}
	res := make([]scored, 0, min(k, len(hp)))
	for budget := max(n/4, 4*k); len(hp) > 0 && len(res) < k; budget-- {
		if budget == 0 {
			// Everything left comes after res; keep its best matches.
			h := &bounded[scored]{k: k - len(res), cmp: compareScored}
			for _, s := range hp {
				if r := ch.recs[s]; f.Matches(r) {
					h.offer(scored{r: r, score: scores[s]})
				}
			}
			return append(res, h.sorted()...)
		}
		s := hp[0]
		last := len(hp) - 1
		hp[0] = hp[last]
		hp = hp[:last]
		down(0, last)
		if r := ch.recs[s]; f.Matches(r) {
			res = append(res, scored{r: r, score: scores[s]})
		}
	}
	return res
}

// filterFirst is topK for a selective filter: one pass over the slots in
// address order, scoring only the records f passes.
func (ch *chain) filterFirst(dim int, d driver.Distance, q []float32, k int, f *driver.Filter) []scored {
	h := bounded[scored]{k: k, cmp: compareScored}
	slot := 0
	for _, slab := range ch.slabs {
		for o := 0; o+dim <= len(slab); o += dim {
			if r := ch.recs[slot]; r != nil && f.Matches(r) {
				h.offer(scored{r: r, score: score(d, q, slab[o:o+dim:o+dim])})
			}
			slot++
		}
	}
	return h.sorted()
}

// The outcomes of prunedTopK.
const (
	pruneAnswered = iota // the results are exact
	pruneUnfit           // not tried: a small chain, or a query no bound fits
	pruneGaveUp          // the filter refused too many of the best candidates
	pruneRanOut          // the candidates ran out before the k-th score was settled
)

// pruneCands is the number of candidates prunedTopK keeps for k results.
func pruneCands(k int) int { return 8*k + 64 }

// pruneTrace, when set (by tests), is called with the outcome of every
// prunedTopK that was tried.
var pruneTrace func(outcome int)

// prunedTopK is topK from the codes (cosine and dot). The first pass reads
// the codes of every live slot for an upper bound u of its score (see
// quantize) and keeps at least the m = pruneCands(k) slots of highest
// bound (a buffer of up to 2m, cut back to the best m, by selection,
// whenever it fills; then only bounds above the lowest kept can enter).
// The second pass visits those by decreasing bound and offers each record
// that passes the filter, with its exact score (computed from its vector),
// to a top-k heap (once k are kept, the filter is tested only on records
// whose score would enter it), and stops at the first slot whose bound is
// below the k-th score kept: neither it nor any slot after it, or left out
// by the first pass, can then score as high. It gives up when the filter
// refuses most of the candidates tested while fewer than k are kept, and
// reports when the candidates run out first (bounds too loose for the
// spread of the scores, many tied vectors); topK then scans every vector.
//
// For 512-d unit vectors the bounds are within about 0.01 of the scores,
// so the second pass computes a few hundred exact scores for k = 280
// (BenchmarkQueryResource).
func (ch *chain) prunedTopK(sc *chainScratch, v *vecStore, d driver.Distance, q []float32, k int, f *driver.Filter) (res []scored, outcome int) {
	dim := v.dim
	m := pruneCands(k)
	if len(ch.recs)-ch.dead <= 2*m {
		return nil, pruneUnfit // small: a full scan costs as much
	}
	var qn float64
	for _, x := range q {
		qn += float64(x) * float64(x)
	}
	qn = math.Sqrt(qn) * (1 + 1e-9)
	if !(qn > 0 && qn <= math.MaxFloat64) {
		return nil, pruneUnfit // zero or not finite: no useful bound
	}
	if pruneTrace != nil {
		defer func() { pruneTrace(outcome) }()
	}
	if cap(sc.cands) < 2*m {
		sc.cands = make([]bounded1, 0, 2*m)
	}
	buf, thr := sc.cands[:0], math.Inf(-1)
	slot := 0
	for _, codes := range ch.codes {
		if len(sc.approx) < len(codes)/dim {
			sc.approx = make([]float32, len(codes)/dim)
		}
		rows := vecmath.DotInt8Rows(q, codes, sc.approx)
		for j, a := range sc.approx[:rows] {
			i := slot + j
			if ch.recs[i] == nil {
				continue
			}
			u := float64(a)*float64(ch.scale[i]) + qn*float64(ch.slack[i])
			if math.IsInf(u, 0) || math.IsNaN(u) {
				u = math.Inf(1) // overflow: no bound, never pruned
			}
			if u <= thr {
				continue
			}
			buf = append(buf, bounded1{u, int32(i)})
			if len(buf) == 2*m {
				selectTop(buf, m)
				buf = buf[:m]
				thr = buf[0].u
				for _, c := range buf[1:] {
					thr = min(thr, c.u)
				}
			}
		}
		slot += rows
	}
	// Every slot left out has a bound <= thr <= every bound in buf.
	slices.SortFunc(buf, func(a, b bounded1) int { return cmp.Or(cmp.Compare(b.u, a.u), cmp.Compare(a.slot, b.slot)) })
	top := bounded[scored]{k: k, cmp: compareScored}
	refused := 0
	if cap(sc.vec) < dim {
		sc.vec = make([]float32, dim)
	}
	// The candidates' vectors, scattered over the chain, are copied from
	// the slab file (see slabFile.readFloats), not read in place.
	vec := func(r *driver.Record) []float32 { return v.file.readFloats(sc.vec[:dim], r.Vector) }
	for _, c := range buf {
		if len(top.items) == k && c.u < top.items[0].score {
			return top.sorted(), pruneAnswered
		}
		r := ch.recs[c.slot]
		if len(top.items) < k {
			if !f.Matches(r) {
				if refused++; refused > 4*k+64 && refused > 3*len(top.items) {
					return nil, pruneGaveUp
				}
				continue
			}
			top.offer(scored{r: r, score: score(d, q, vec(r))})
		} else if s := (scored{r: r, score: score(d, q, vec(r))}); top.wouldKeep(s) && f.Matches(r) {
			top.offer(s)
		}
	}
	return nil, pruneRanOut
}

// selectTop reorders a so that a[:m] holds m elements of highest u (of
// equal ones, any), 0 < m < len(a): quickselect, median-of-three pivots.
func selectTop(a []bounded1, m int) {
	lo, hi := 0, len(a)-1
	for lo < hi {
		x, y, z := a[lo].u, a[lo+(hi-lo)/2].u, a[hi].u
		p := max(min(x, y), min(max(x, y), z)) // the median
		i, j := lo, hi
		for i <= j {
			for a[i].u > p {
				i++
			}
			for a[j].u < p {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		// a[lo:j+1] >= p >= a[i:hi+1], and what lies between equals p.
		switch {
		case m-1 <= j:
			hi = j
		case m-1 >= i:
			lo = i
		default:
			return
		}
	}
}
