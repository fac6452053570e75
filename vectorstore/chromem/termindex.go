package chromem

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/stratamem/strata/vectorstore/driver"
)

// The term index answers SearchTerms without reading the corpus: BM25 needs
// the corpus' document count, total length and each query term's document
// frequency, and then only the documents holding a query term. A corpus is
// named by layer (always) and optionally kind, resource and thread, so the
// index keeps one group per (layer, kind, resource, thread) in use: its
// document count, its exact total length and an inverted index from term to
// the postings (document, weight) of the group. A query adds up the
// statistics of the groups its corpus spans, a handful of numbers per group,
// and scores the postings of its terms in those groups only: all of them
// for a small corpus (scoreGroups), or, for a large one, those of its
// rarer terms, when the commoner ones cannot change the top K
// (scorePruned); either way with the reference's arithmetic.
//
// Everything is built lazily, because most collections are opened and
// written far more often than they are term-searched, and a 100k-record
// store should not pay for postings at open: the first search of a layer
// registers the layer's groups (one pass over the layer's scope-index list,
// counting documents per group); the first search that needs a group
// builds its postings, from the smallest scope-index list that holds the
// group. From then on every write maintains what is built, in the same
// step as the records and the scope index.
//
// Locking. Like recs and the scope index, the term index is guarded by the
// collection's mu: writers update it holding mu exclusively, searches read
// it holding mu shared. The lazy construction is the exception: it happens
// during a search, under mu shared, so it takes termIndex.mu exclusively,
// and searches read under termIndex.mu shared. Writers need not take
// termIndex.mu: holding mu exclusively already excludes every search. The
// order is mu, then termIndex.mu.

// termIndex is a collection's lexical index; the zero value is empty and
// ready (nothing registered).
type termIndex struct {
	mu     sync.RWMutex
	dict   termDict
	layers map[string]*layerTerms // registered layers only
	// docs is the collection's table of documents (collection.docs).
	docs *docTable
}

// reset forgets the whole index (Close, and tests that measure a first
// build); the caller holds the collection's mu exclusively.
func (x *termIndex) reset() {
	x.dict = termDict{}
	x.layers = nil
}

// groupKey names a group within its layer.
type groupKey struct{ kind, resource, thread string }

func keyOf(r *driver.Record) groupKey {
	return groupKey{kind: r.Kind, resource: r.Scope.Resource, thread: r.Scope.Thread}
}

// layerTerms holds the groups of a registered layer: every group of the
// layer that holds a document is in groups, with its exact document count,
// built or not. byThread and byResource list the groups of each non-empty
// thread and resource, so that a corpus naming either visits only its own
// groups (a resource-wide search spans the resource's threads, not the
// layer's).
type layerTerms struct {
	groups     map[groupKey]*termGroup
	byThread   map[string][]*termGroup
	byResource map[string][]*termGroup
}

func newLayerTerms() *layerTerms {
	return &layerTerms{
		groups:     make(map[groupKey]*termGroup),
		byThread:   make(map[string][]*termGroup),
		byResource: make(map[string][]*termGroup),
	}
}

// add registers a new, empty group; built says whether it is maintained
// from the start (a group created by a write has nothing to build).
func (lt *layerTerms) add(k groupKey, built bool) *termGroup {
	g := &termGroup{key: k}
	if built {
		g.slots = make(map[*driver.Record]int32)
		g.built = true
	}
	lt.groups[k] = g
	if k.thread != "" {
		lt.byThread[k.thread] = append(lt.byThread[k.thread], g)
	}
	if k.resource != "" {
		lt.byResource[k.resource] = append(lt.byResource[k.resource], g)
	}
	return g
}

// drop removes g, which holds no document any more, and releases its terms.
func (lt *layerTerms) drop(g *termGroup, d *termDict) {
	if lt.groups[g.key] != g {
		return // dropped already
	}
	delete(lt.groups, g.key)
	unlist := func(m map[string][]*termGroup, v string) {
		if v == "" {
			return
		}
		l := m[v]
		if i := slices.Index(l, g); i >= 0 {
			l = slices.Delete(l, i, i+1)
		}
		if len(l) == 0 {
			delete(m, v)
		} else {
			m[v] = l
		}
	}
	unlist(lt.byThread, g.key.thread)
	unlist(lt.byResource, g.key.resource)
	if g.built {
		for i := range g.ftab {
			if id := g.ftab[i].id; id != noTerm {
				d.release(id)
			}
		}
		for id := range g.delta {
			if g.frozenIndex(id) < 0 {
				d.release(id)
			}
		}
	}
	*g = termGroup{key: g.key}
}

// termDict numbers the terms in use, so that a group stores a term as 4
// bytes and hashes an integer to find it. refs counts the
// groups referring to each term; a term nobody refers to is forgotten and
// its number reused.
type termDict struct {
	termNames
	// maxW is the largest weight posted of each term since its number was
	// given out: an upper bound of its weight in any document, which
	// bounds what the term can add to a score (scorePruned). It never
	// decreases, which keeps it a bound without any work on deletion.
	maxW []float32
}

// weigh notes that term id was posted with weight w.
func (d *termDict) weigh(id uint32, w float32) {
	if w > d.maxW[id] {
		d.maxW[id] = w
	}
}

func (d *termDict) lookup(t string) (uint32, bool) {
	id, ok := d.ids[t]
	return id, ok
}

// acquire returns t's number, creating it if needed, and counts one more
// group referring to it. A number new or reused has no weight posted yet.
func (d *termDict) acquire(t string) uint32 {
	id := d.termNames.acquire(t)
	if d.refs[id] == 1 {
		if int(id) == len(d.maxW) {
			d.maxW = append(d.maxW, 0)
		} else {
			d.maxW[id] = 0
		}
	}
	return id
}

// posting is one document of a group holding a term: its slot in the
// group and its weight of the term. Each term's postings, frozen or in the
// delta, are in ascending slot order (termSearch.exact relies on it).
type posting struct {
	slot int32
	w    float32
}

// deltaList holds the postings of one term added since the group was last
// frozen; df counts the live ones.
type deltaList struct {
	p  []posting
	df int32
}

// termGroup is the index of the documents of one (layer, kind, resource,
// thread). Documents have slots, dense indexes into docs and lens, so that
// a search accumulates scores in an array rather than a map. The postings
// are mostly frozen: one array of postings, grouped by term, and an
// open-addressing hash table from term number to its run of postings
// (16 bytes a slot, at most 3/4 full), so that a search finds each query
// term in a group with about one cache miss: a resource-wide search visits
// a thousand groups or more, and a binary search per term and group was
// what it spent most of its time waiting for. A map of lists per term
// would cost some 80 bytes a term in the many small groups of a
// thread-per-conversation layer. Writes go to a small delta (a map of
// lists) and to tombstones (a freed slot), and the group is frozen again,
// in one linear pass, once the delta or the tombstones reach a fraction of
// the frozen part: amortised O(1) per posting written, however large the
// group.
//
// A record's Terms are not copied: the postings hold the weights, the
// record (shared with recs) holds its document, and removal walks it.
type termGroup struct {
	// The fields a search reads first.
	n     int                   // documents in the group, maintained whether built or not
	total exactSum              // of the live documents' lengths
	ftab  []termSlot            // the frozen terms, hashed
	fpost []posting             // their postings, term after term
	lens  []float64             // document lengths by slot; -1 for a freed slot
	docs  []*driver.Record      // by slot; nil for a freed slot
	delta map[uint32]*deltaList // postings of the slots >= fslots

	key groupKey
	// built: the fields below and above are maintained. A registered
	// group is not built until a search needs it.
	built  bool
	fslots int32 // slots below are frozen (their postings in fpost)
	fterms int   // terms in ftab
	dpost  int   // postings in delta, live or not
	dead   int   // postings of freed slots, frozen or delta
	slots  map[*driver.Record]int32
}

// termSlot is one term of a group's frozen part; id is noTerm in an empty
// slot of the table.
type termSlot struct {
	id  uint32
	off int32 // the term's postings: fpost[off : off+n]
	n   int32
	df  int32 // live postings among them
}

const noTerm = ^uint32(0)

// hashTerm spreads term numbers (dense, in order of first use) over a
// table.
func hashTerm(id uint32) uint32 {
	h := id * 0x9e3779b1
	return h ^ h>>15
}

// frozenIndex returns the slot of term id in ftab, -1 if absent.
func (g *termGroup) frozenIndex(id uint32) int {
	if len(g.ftab) == 0 {
		return -1
	}
	mask := uint32(len(g.ftab) - 1)
	for i := hashTerm(id) & mask; ; i = (i + 1) & mask {
		switch g.ftab[i].id {
		case id:
			return int(i)
		case noTerm: // the table always has an empty slot
			return -1
		}
	}
}

// df is the number of g's documents holding term id.
func (g *termGroup) df(id uint32) int {
	n := 0
	if i := g.frozenIndex(id); i >= 0 {
		n += int(g.ftab[i].df)
	}
	if l := g.delta[id]; l != nil {
		n += int(l.df)
	}
	return n
}

// postings returns the postings of ref in g: the frozen ones, then those
// of the delta, if any.
func (g *termGroup) postings(ref *termRef) [2][]posting {
	lists := [2][]posting{g.fpost[ref.off : ref.off+ref.n]}
	if ref.dl != nil {
		lists[1] = ref.dl.p
	}
	return lists
}

// bm25 returns what posting p of g adds to its document's score, computed
// as driver.BM25 does, factor for factor, and the length normalisation in
// it; ok is false when p's slot is freed.
func (g *termGroup) bm25(p posting, w, k1, b, avg float64) (c, norm float64, ok bool) {
	dl := g.lens[p.slot]
	if dl < 0 {
		return 0, 0, false
	}
	tf := float64(p.w)
	norm = k1 * (1 - b + b*dl/avg)
	return w * tf * (k1 + 1) / (tf + norm), norm, true
}

// place gives r, whose document has length dl, the next slot of g and
// returns it.
func (g *termGroup) place(r *driver.Record, dl float64) int32 {
	slot := int32(len(g.docs))
	g.docs = append(g.docs, r)
	g.lens = append(g.lens, dl)
	g.slots[r] = slot
	g.total.add(dl)
	return slot
}

// addDoc indexes r, whose document is dc, in the built group g.
func (g *termGroup) addDoc(d *termDict, docs *docTable, r *driver.Record, dc doc) {
	slot := g.place(r, dc.length())
	if g.delta == nil {
		g.delta = make(map[uint32]*deltaList, dc.count())
	}
	for t, w := range docs.all(dc) {
		id, known := d.lookup(t)
		var l *deltaList
		if known {
			l = g.delta[id]
		}
		if l == nil {
			if !known || g.frozenIndex(id) < 0 {
				id = d.acquire(t) // g refers to the term from now on
			}
			l = &deltaList{}
			g.delta[id] = l
		}
		l.p = append(l.p, posting{slot, w})
		l.df++
		g.dpost++
		d.weigh(id, w)
	}
}

// removeDoc unindexes r from the built group g: its slot is freed, its
// postings become tombstones until the next freeze.
func (g *termGroup) removeDoc(d *termDict, docs *docTable, r *driver.Record, dc doc) {
	slot, ok := g.slots[r]
	if !ok {
		return // cannot happen: r was indexed
	}
	delete(g.slots, r)
	g.total.add(-g.lens[slot])
	g.docs[slot], g.lens[slot] = nil, -1
	for t := range docs.all(dc) {
		id, _ := d.lookup(t)
		if slot < g.fslots {
			g.ftab[g.frozenIndex(id)].df--
		} else {
			g.delta[id].df--
		}
		g.dead++
	}
}

// freezeMin is the delta or tombstone count below which a group is never
// refrozen: small groups then freeze every few writes, large ones when the
// delta reaches a quarter of the frozen postings.
const freezeMin = 64

func (g *termGroup) maybeFreeze(d *termDict) {
	if g.dpost > max(freezeMin, len(g.fpost)/4) || g.dead > max(freezeMin, (len(g.fpost)+g.dpost)/2) {
		g.freeze(d)
	}
}

// freeze merges the delta into the frozen postings and drops the
// tombstones, renumbering the live slots in order: O(postings + terms). A
// term left without postings is released.
func (g *termGroup) freeze(d *termDict) {
	remap := make([]int32, len(g.docs))
	live := 0
	for s, r := range g.docs {
		if r == nil {
			remap[s] = -1
			continue
		}
		remap[s] = int32(live)
		g.docs[live], g.lens[live] = r, g.lens[s]
		live++
	}
	if live < len(g.docs) {
		clear(g.docs[live:])
		g.docs, g.lens = slices.Clip(g.docs[:live]), slices.Clip(g.lens[:live])
		for s, r := range g.docs {
			g.slots[r] = int32(s)
		}
	}
	post := make([]posting, 0, len(g.fpost)+g.dpost-g.dead)
	ents := make([]termSlot, 0, g.fterms+len(g.delta))
	keep := func(ps []posting) {
		for _, p := range ps {
			if s := remap[p.slot]; s >= 0 {
				post = append(post, posting{s, p.w})
			}
		}
	}
	// Close the term's run of postings; a term left without any goes.
	end := func(id uint32, start int) {
		if n := len(post) - start; n > 0 {
			ents = append(ents, termSlot{id: id, off: int32(start), n: int32(n), df: int32(n)})
		} else {
			d.release(id)
		}
	}
	for i := range g.ftab {
		e := &g.ftab[i]
		if e.id == noTerm {
			continue
		}
		start := len(post)
		keep(g.fpost[e.off : e.off+e.n]) // frozen slots come first
		if l := g.delta[e.id]; l != nil {
			keep(l.p)
		}
		end(e.id, start)
	}
	for id, l := range g.delta {
		if g.frozenIndex(id) >= 0 {
			continue // merged above
		}
		start := len(post)
		keep(l.p)
		end(id, start)
	}
	g.setFrozen(ents, post)
	g.delta, g.dpost, g.dead = nil, 0, 0
}

// setFrozen installs the frozen part: the terms ents, whose runs lie in
// post, hashed into a table at most 3/4 full; every slot is frozen.
func (g *termGroup) setFrozen(ents []termSlot, post []posting) {
	g.ftab = nil
	if len(ents) > 0 {
		size := 4
		for size*3 < len(ents)*4 {
			size *= 2
		}
		g.ftab = make([]termSlot, size)
		for i := range g.ftab {
			g.ftab[i].id = noTerm
		}
		mask := uint32(size - 1)
		for _, e := range ents {
			i := hashTerm(e.id) & mask
			for g.ftab[i].id != noTerm {
				i = (i + 1) & mask
			}
			g.ftab[i] = e
		}
	}
	g.fpost, g.fterms = post, len(ents)
	g.fslots = int32(len(g.docs))
}

// build indexes the group's documents, found in members (a scope-index
// list holding all of them, among others), from scratch and straight into
// the frozen layout: the postings are counted per term, then placed (a
// counting sort, so each run is in slot order), without the delta's list
// per term. b is the builder's reusable working memory.
func (g *termGroup) build(d *termDict, b *groupBuilder, docs *docTable, layer string, members []*driver.Record) {
	g.slots = make(map[*driver.Record]int32, g.n)
	g.docs = make([]*driver.Record, 0, g.n)
	g.lens = make([]float64, 0, g.n)
	g.built = true
	if b.local == nil {
		b.local = make(map[uint32]int32)
	}
	clear(b.local)
	b.ents, b.tmp = b.ents[:0], b.tmp[:0]
	for _, r := range members {
		if r.Layer != layer || keyOf(r) != g.key {
			continue
		}
		dc := docs.get(r)
		if dc == "" {
			continue
		}
		slot := g.place(r, dc.length())
		for t, w := range docs.all(dc) {
			id, known := d.lookup(t)
			k, seen := int32(0), false
			if known {
				k, seen = b.local[id]
			}
			if !seen {
				id = d.acquire(t) // first of the group's postings of t
				k = int32(len(b.ents))
				b.local[id] = k
				b.ents = append(b.ents, termSlot{id: id})
			}
			b.ents[k].n++
			b.tmp = append(b.tmp, builderPosting{k, posting{slot, w}})
			d.weigh(id, w)
		}
	}
	var off int32
	for i := range b.ents {
		e := &b.ents[i]
		e.off, e.df = off, e.n
		off += e.n
		e.n = 0 // counts again while placing
	}
	post := make([]posting, len(b.tmp))
	for _, p := range b.tmp {
		e := &b.ents[p.term]
		post[e.off+e.n] = p.p
		e.n++
	}
	g.setFrozen(b.ents, post)
}

// groupBuilder is the working memory of build, reused across the groups
// one search builds.
type groupBuilder struct {
	local map[uint32]int32 // term number -> index in ents
	ents  []termSlot
	tmp   []builderPosting
}

type builderPosting struct {
	term int32 // index in ents
	p    posting
}

// indexed returns the document of r and the terms of its layer, or a nil
// *layerTerms when r has no document or no search has asked for its layer.
func (x *termIndex) indexed(r *driver.Record) (doc, *layerTerms) {
	dc := x.docs.get(r)
	if dc == "" {
		return "", nil
	}
	return dc, x.layers[r.Layer]
}

// update removes the records rm from the index and adds the records add,
// with the contract of scopeIndex.update: every record of rm was stored
// (and is indexed if its group is built), no record of add is, none is in
// both. The caller holds the collection's mu exclusively. Records without
// a document, and layers no search has asked for yet, cost a length test
// and a map lookup.
func (x *termIndex) update(rm, add []*driver.Record) {
	if len(x.layers) == 0 {
		return
	}
	type touch struct {
		lt *layerTerms
		g  *termGroup
	}
	var touched []touch
	for _, r := range rm {
		dc, lt := x.indexed(r)
		if lt == nil {
			continue
		}
		g := lt.groups[keyOf(r)]
		if g == nil {
			continue // cannot happen: a registered layer knows its groups
		}
		g.n--
		if g.built {
			g.removeDoc(&x.dict, x.docs, r, dc)
		}
		touched = append(touched, touch{lt, g})
	}
	for _, r := range add {
		dc, lt := x.indexed(r)
		if lt == nil {
			continue
		}
		k := keyOf(r)
		g := lt.groups[k]
		if g == nil {
			// A registered layer knows all its groups: this one is new,
			// so there is nothing to build.
			g = lt.add(k, true)
		}
		g.n++
		if g.built {
			g.addDoc(&x.dict, x.docs, r, dc)
		}
		touched = append(touched, touch{lt, g})
	}
	// Empty groups go, others refreeze when their delta has grown: once
	// per group and batch (a repeated group finds nothing left to do).
	for _, t := range touched {
		if t.g.n == 0 {
			t.lt.drop(t.g, &x.dict)
		} else if t.g.built {
			t.g.maybeFreeze(&x.dict)
		}
	}
}

// corpus returns the groups of the corpus f names, and whether they can be
// searched as they are: false when f's layer is not registered or one of
// its groups is not built. The caller holds x.mu.
func (x *termIndex) corpus(f *driver.Filter) ([]*termGroup, bool) {
	lt := x.layers[f.Layer]
	if lt == nil {
		return nil, false
	}
	in := func(g *termGroup) bool {
		return (f.Kind == "" || g.key.kind == f.Kind) &&
			(f.Resource == "" || g.key.resource == f.Resource) &&
			(f.Thread == "" || g.key.thread == f.Thread)
	}
	var gs []*termGroup
	ready := true
	take := func(g *termGroup) {
		if in(g) {
			gs = append(gs, g)
			ready = ready && g.built
		}
	}
	switch {
	case f.Thread != "":
		for _, g := range lt.byThread[f.Thread] {
			take(g)
		}
	case f.Resource != "":
		for _, g := range lt.byResource[f.Resource] {
			take(g)
		}
	default:
		for _, g := range lt.groups {
			take(g)
		}
	}
	return gs, ready
}

// prepare registers f's layer if needed and builds the groups of f's
// corpus that are not built. The caller holds c.mu shared and x.mu
// exclusively.
func (x *termIndex) prepare(c *collection, f *driver.Filter) {
	lt := x.layers[f.Layer]
	if lt == nil {
		recs := c.idx.by[fieldLayer][f.Layer]
		if len(recs) == 0 {
			return // nothing to register: the corpus is empty
		}
		lt = newLayerTerms()
		var g *termGroup
		for _, r := range recs {
			if c.docs.get(r) == "" {
				continue
			}
			// Records of one thread often follow one another in creation
			// order: comparing with the last group is cheaper than hashing.
			if k := keyOf(r); g == nil || g.key != k {
				if g = lt.groups[k]; g == nil {
					g = lt.add(k, false)
				}
			}
			g.n++
		}
		if x.layers == nil {
			x.layers = make(map[string]*layerTerms)
		}
		x.layers[f.Layer] = lt
	}
	gs, _ := x.corpus(f)
	var b groupBuilder
	for _, g := range gs {
		if g.built {
			continue
		}
		// The smallest scope-index list certain to hold the group.
		var members []*driver.Record
		switch {
		case g.key.thread != "":
			members = c.idx.by[fieldThread][g.key.thread]
		case g.key.resource != "":
			members = c.idx.by[fieldResource][g.key.resource]
		default:
			members = c.idx.by[fieldLayer][f.Layer]
		}
		g.build(&x.dict, &b, c.docs, f.Layer, members)
	}
}

// SearchTerms ranks the corpus q names by BM25 from the term index (see
// termIndex). The statistics are sums over the corpus' groups, from one
// lookup per group and term. Then only documents holding a query term are
// scored, in one of two exact ways (scoreGroups for small corpora,
// scorePruned for large ones), with driver.BM25's expression and
// summation order: AvgLen is the correctly rounded total length over the
// document count, so scores equal driver.RankTerms' bit for bit whenever
// its own summation of the lengths is exact (any weights with a modest
// spread of magnitudes), and to the last bit of the average otherwise.
//
// A filter naming ids scores those records alone, after the statistics.
// The other narrowing fields (metadata, creation time, validity) are tested
// only on documents that could enter the top K.
func (c *collection) SearchTerms(ctx context.Context, q driver.TermQuery) (driver.TermResult, error) {
	if err := ctx.Err(); err != nil {
		return driver.TermResult{}, err
	}
	res := driver.TermResult{DocFreq: make(map[string]int, len(q.Terms))}
	terms := make([]string, 0, len(q.Terms))
	for t := range q.Terms {
		res.DocFreq[t] = 0
		terms = append(terms, t)
	}
	slices.Sort(terms) // driver.BM25's summation order
	f := &q.Filter
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return res, nil
	}
	x := &c.terms
	x.mu.RLock()
	gs, ready := x.corpus(f)
	if !ready {
		x.mu.RUnlock()
		x.mu.Lock()
		x.prepare(c, f)
		x.mu.Unlock()
		x.mu.RLock()
		gs, _ = x.corpus(f)
	}
	defer x.mu.RUnlock()

	sc := termScratchPool.Get().(*termScratch)
	defer termScratchPool.Put(sc)
	nt := len(terms)
	ids := make([]uint32, nt)
	known := make([]bool, nt)
	for i, t := range terms {
		ids[i], known[i] = x.dict.lookup(t)
	}
	refs := slices.Grow(sc.refs[:0], len(gs)*nt)[:len(gs)*nt]
	defer func() { clear(refs); sc.refs = refs[:0] }()
	df := make([]int, nt)
	var total exactSum
	maxSlots, postings := 0, 0
	var sink uint32
	for gi, g := range gs {
		if gi+ahead < len(gs) {
			sink += touchTable(gs[gi+ahead], ids, known)
		}
		res.Docs += g.n
		for _, p := range g.total.partials() {
			total.add(p)
		}
		maxSlots = max(maxSlots, len(g.docs))
		for ti := range terms {
			ref := &refs[gi*nt+ti]
			*ref = termRef{}
			if !known[ti] {
				continue
			}
			if i := g.frozenIndex(ids[ti]); i >= 0 {
				e := &g.ftab[i]
				ref.off, ref.n = e.off, e.n
				df[ti] += int(e.df)
				postings += int(e.n)
			}
			if l := g.delta[ids[ti]]; l != nil {
				ref.dl = l
				df[ti] += int(l.df)
				postings += len(l.p)
			}
		}
	}
	touchSink.Store(sink)
	for ti, t := range terms {
		res.DocFreq[t] = df[ti]
	}
	if res.Docs == 0 {
		return res, nil
	}
	res.AvgLen = total.value() / float64(res.Docs)
	s := &termSearch{
		ctx: ctx, terms: terms, k1: q.K1, b: q.B, avg: res.AvgLen,
		f: f, gs: gs, refs: refs, sc: sc,
		h: &bounded[scored]{k: q.K, cmp: compareScored},
	}
	if s.avg <= 0 {
		s.avg = 1 // as driver.BM25
	}
	s.qi = make([]float64, nt) // query weight times IDF, the contribution's first factor
	for ti, t := range terms {
		s.qi[ti] = q.Terms[t] * res.IDF(t)
	}
	narrowed := *f
	narrowed.IDs, narrowed.Layer, narrowed.Kind, narrowed.Thread, narrowed.Resource = nil, "", "", "", ""
	s.narrow = !narrowed.IsZero()

	var err error
	switch {
	case len(f.IDs) > 0:
		// Score the named records alone, with the reference scorer itself.
		seen := make(map[string]bool, len(f.IDs))
		for _, id := range f.IDs {
			r := c.recs[id]
			if seen[id] || r == nil || c.docs.get(r) == "" || !f.Matches(r) {
				continue
			}
			seen[id] = true
			dc := c.docs.get(r)
			if sc := driver.BM25(q.Terms, c.docs.terms(dc), dc.length(), res.AvgLen, res.IDF, q.K1, q.B); sc > 0 {
				s.h.offer(scored{r: r, score: sc})
			}
		}
	case postings < prunedMinPostings || s.narrow && !pruneNarrowed:
		// Small corpora, and narrowing filters: the filter refusing
		// documents keeps the K-th score low, and with it the pruning,
		// which then costs more than it saves.
		err = s.scoreGroups(maxSlots)
	default:
		err = s.scorePruned(df, &x.dict, ids)
	}
	if err != nil {
		return driver.TermResult{}, err
	}
	hits := s.h.sorted()
	res.Matches = make([]driver.Match, len(hits))
	for i, h := range hits {
		r := *h.r
		r.Terms = nil
		res.Matches[i] = driver.Match{Record: c.out(&r, q.WithVectors), Score: h.score}
	}
	return res, nil
}

// prunedMinPostings is the number of postings of the query's terms in its
// corpus from which SearchTerms scores with scorePruned: below it the
// bookkeeping of pruning costs more than it saves. A search whose filter
// narrows the corpus is pruned only if pruneNarrowed. Variables for tests,
// which run every search both ways over the same data.
var (
	prunedMinPostings = 4096
	pruneNarrowed     = false
)

// termsPruned counts the searches that left postings unread, for tests.
var termsPruned atomic.Int64

// termSearch is the state of one search once the statistics are known.
type termSearch struct {
	ctx    context.Context
	terms  []string  // sorted
	qi     []float64 // by term: query weight times IDF
	k1, b  float64
	avg    float64 // average length as driver.BM25 uses it (> 0)
	f      *driver.Filter
	narrow bool // f has more than the corpus fields
	gs     []*termGroup
	refs   []termRef // by group and term
	sc     *termScratch
	h      *bounded[scored]
}

// offer proposes document slot of g with score s for the top K, testing
// the narrowing filter only if s could enter it.
func (s *termSearch) offer(g *termGroup, slot int32, score float64) {
	h := s.h
	if !(score > 0) || len(h.items) == h.k && score < h.items[0].score {
		return // cannot enter the top K: leave the record unread
	}
	cand := scored{r: g.docs[slot], score: score}
	if h.wouldKeep(cand) && (!s.narrow || s.f.Matches(cand.r)) {
		h.offer(cand)
	}
}

// scoreGroups scores group by group: each term's postings in the group
// add their contribution, computed as driver.BM25 does and in the same
// (sorted) term order, into the document's accumulator; the sums are then
// the reference scores themselves.
func (s *termSearch) scoreGroups(maxSlots int) error {
	sc, nt := s.sc, len(s.terms)
	if cap(sc.acc) < maxSlots {
		sc.acc = make([]float64, maxSlots)
	}
	acc := sc.acc[:maxSlots]
	touched := sc.touched[:0]
	defer func() { sc.touched = touched[:0] }()
	k1, b, avg := s.k1, s.b, s.avg
	for gi, g := range s.gs {
		if gi&255 == 255 {
			if err := s.ctx.Err(); err != nil {
				clear(acc) // the pool's accumulators stay zero
				return err
			}
		}
		for ti := range s.terms {
			ref := &s.refs[gi*nt+ti]
			w := s.qi[ti]
			for _, ps := range g.postings(ref) {
				for _, p := range ps {
					c, _, ok := g.bm25(p, w, k1, b, avg)
					if !ok {
						continue // freed slot
					}
					if acc[p.slot] == 0 {
						touched = append(touched, p.slot)
					}
					acc[p.slot] += c
				}
			}
		}
		for _, slot := range touched {
			score := acc[slot]
			acc[slot] = 0
			s.offer(g, slot, score)
		}
		touched = touched[:0]
	}
	return nil
}

// pruneMargin covers the rounding of the bounds scorePruned compares: the
// contributions, sums and bounds it compares are computed in float64 with
// a few operations per query term, so they differ from the exact values by
// less than (3n+10) ulps for n terms, about 1e-12 relative at the largest
// query (4096 terms); 1e-9 leaves a wide berth.
const pruneMargin = 1e-9

// scorePruned is the MaxScore idea, kept exact. A term t cannot add more
// than U(t) to any document's score: with w its largest weight ever
// posted (termDict.maxW) and dl >= tf,
//
//	qi·tf·(k1+1)/(tf + k1·(1-b+b·dl/avg)) <= qi·(k1+1) / (1 + k1·b/avg + k1·(1-b)/w)
//
// The terms are scored one at a time, across all groups, in descending U
// (rarest first), accumulating partial scores P per document. Once K
// documents passing the filter are touched, L, the K-th largest P·(1-m),
// is a lower bound of the K-th best final score; when the unscored
// terms' bounds add up to less than L, nothing they alone could score
// can enter the top K, and they are left unread. In the common case, a
// query holding a few of the corpus' commonest terms, those make most of
// the postings and little of any score, so most postings are skipped.
// The documents with the K largest P are then scored exactly (weights
// from the postings, driver.BM25's expression and summation order),
// which raises the top K's threshold to real scores; any other touched
// document is scored exactly only if its bound still reaches that
// threshold: P plus, for each unread term, the bound above with the
// document's own length in place of dl >= tf, all times (1+m).
// (m is pruneMargin.)
func (s *termSearch) scorePruned(df []int, dict *termDict, ids []uint32) error {
	sc, nt, gs := s.sc, len(s.terms), s.gs
	k1, b, avg := s.k1, s.b, s.avg
	// Document d of group gi has index base[gi] + slot in acc.
	base := slices.Grow(sc.base[:0], len(gs)+1)[:len(gs)+1]
	n := 0
	for gi, g := range gs {
		base[gi] = int32(n)
		n += len(g.docs)
	}
	base[len(gs)] = int32(n)
	sc.base = base[:0]
	if cap(sc.acc) < n {
		sc.acc = make([]float64, n)
	}
	if cap(sc.norms) < n {
		sc.norms = make([]float64, n)
	}
	acc := sc.acc[:n]
	norms := sc.norms[:n] // a touched document's length normalisation
	touched := sc.touched[:0]
	defer func() {
		for _, i := range touched {
			acc[i] = 0 // the pool's accumulators stay zero
		}
		sc.touched = touched[:0]
	}()
	locate := func(i int32) (int, int32) {
		gi := sort.Search(len(gs), func(gi int) bool { return base[gi+1] > i })
		return gi, i - base[gi]
	}
	// Terms by descending bound; rest[j] bounds what order[j:] can add.
	order := make([]int, 0, nt)
	u := make([]float64, nt)
	for ti := range s.terms {
		if df[ti] > 0 {
			order = append(order, ti)
			u[ti] = s.qi[ti] * (k1 + 1) / (1 + k1*b/avg + k1*(1-b)/float64(dict.maxW[ids[ti]]))
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(u[b], u[a]) })
	rest := make([]float64, len(order)+1)
	for j := len(order) - 1; j >= 0; j-- {
		rest[j] = rest[j+1] + u[order[j]]
	}
	// kth returns L, and leaves in sc.lower the K documents it comes from.
	// A document the filter refuses is marked for good: -Inf in acc, which
	// no later contribution changes.
	kth := func() float64 {
		lo := sc.lower[:0]
		defer func() { sc.lower = lo }()
		k := s.h.k
		for _, i := range touched {
			p := acc[i]
			if p < 0 || len(lo) == k && p <= lo[0].p {
				continue // p < 0: -Inf, refused
			}
			if s.narrow {
				if gi, slot := locate(i); !s.f.Matches(gs[gi].docs[slot]) {
					acc[i] = math.Inf(-1)
					continue
				}
			}
			lo = pushMin(lo, k, lowerEntry{p, i})
		}
		if len(lo) < k {
			return 0
		}
		return lo[0].p * (1 - pruneMargin)
	}
	left, l := 0.0, 0.0 // the bound of the terms left unread, and L
	readAtL := 0.0      // the bounds of the terms read when l was computed
	unread := order[:0:0]
	for j, ti := range order {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		w := s.qi[ti]
		for gi, g := range gs {
			ref := &s.refs[gi*nt+ti]
			if ref.n == 0 && ref.dl == nil {
				continue
			}
			at := base[gi]
			for _, ps := range g.postings(ref) {
				for _, p := range ps {
					c, norm, ok := g.bm25(p, w, k1, b, avg)
					if !ok {
						continue // freed slot
					}
					i := at + p.slot
					if acc[i] == 0 {
						touched = append(touched, i)
						norms[i] = norm
					}
					acc[i] += c
				}
			}
		}
		left = rest[j+1] // 0 after the last term
		// L grows by at most the bounds read since it was computed: ask
		// again only when that could make it exceed what is left.
		read := rest[0] - left
		if left > 0 && len(touched) >= s.h.k && left*(1+pruneMargin) < l+(read-readAtL)*(1+pruneMargin) {
			l, readAtL = kth(), read
			if left*(1+pruneMargin) < l {
				termsPruned.Add(1)
				unread = order[j+1:]
				break // the only way out with left > 0
			}
		}
	}
	if left == 0 {
		l = kth()
	}
	// The K largest P first, then whoever could still beat the K-th: a
	// document's bound is P plus, for each unread term t, what t could add
	// to a document of its own length, qi·(k1+1)·w/(w+norm) (tf <= w).
	for _, e := range sc.lower {
		gi, slot := locate(e.i)
		s.offer(gs[gi], slot, s.exact(gi, slot))
		acc[e.i] = math.Inf(-1) // done
	}
	for _, i := range touched {
		p := acc[i]
		if p < 0 {
			continue // refused or done
		}
		if len(unread) > 0 {
			for _, ti := range unread {
				w := float64(dict.maxW[ids[ti]])
				p += s.qi[ti] * (k1 + 1) * w / (w + norms[i])
			}
		}
		if ub := p * (1 + pruneMargin); ub < l || len(s.h.items) == s.h.k && ub < s.h.items[0].score {
			continue
		}
		gi, slot := locate(i)
		g := gs[gi]
		if s.narrow && !s.f.Matches(g.docs[slot]) {
			continue
		}
		s.offer(g, slot, s.exact(gi, slot))
	}
	return nil
}

// exact is driver.BM25 of the query over the document in slot of group gi,
// with the statistics of the search: the same expression, in the same
// (sorted) term order, and the weights from the group's postings (each
// term's run is in slot order: a binary search), which are a few cache
// lines where the record's own Terms map would cost a record, a map and
// its keys.
func (s *termSearch) exact(gi int, slot int32) float64 {
	g, nt := s.gs[gi], len(s.terms)
	norm := s.k1 * (1 - s.b + s.b*g.lens[slot]/s.avg)
	var score float64
	for ti := range s.terms {
		ref := &s.refs[gi*nt+ti]
		var run []posting
		if slot < g.fslots {
			run = g.fpost[ref.off : ref.off+ref.n]
		} else if ref.dl != nil {
			run = ref.dl.p
		}
		k, ok := slices.BinarySearchFunc(run, slot, func(p posting, slot int32) int { return cmp.Compare(p.slot, slot) })
		if !ok {
			continue
		}
		tf := float64(run[k].w)
		score += s.qi[ti] * tf * (s.k1 + 1) / (tf + norm)
	}
	return score
}

// lowerEntry is a document's partial score in kth's heap.
type lowerEntry struct {
	p float64
	i int32 // index in acc
}

// pushMin adds e to lo, a min-heap of at most k entries: the k largest.
func pushMin(lo []lowerEntry, k int, e lowerEntry) []lowerEntry {
	if len(lo) < k {
		lo = append(lo, e)
		for i := len(lo) - 1; i > 0; {
			parent := (i - 1) / 2
			if lo[parent].p <= lo[i].p {
				break
			}
			lo[i], lo[parent] = lo[parent], lo[i]
			i = parent
		}
		return lo
	}
	lo[0] = e
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < k && lo[l].p < lo[m].p {
			m = l
		}
		if r < k && lo[r].p < lo[m].p {
			m = r
		}
		if m == i {
			return lo
		}
		lo[i], lo[m] = lo[m], lo[i]
		i = m
	}
}

// termScratch is the per-search working memory, pooled: score accumulators
// (all zero between uses), the documents touched, and where each term's
// postings are in each group.
type termScratch struct {
	acc     []float64
	touched []int32
	refs    []termRef    // by group and term
	base    []int32      // scorePruned: each group's first index in acc
	lower   []lowerEntry // scorePruned: the heap of kth
	norms   []float64    // scorePruned: by index in acc
}

// termRef locates a query term's postings in a group, as the statistics
// pass found them: fpost[off : off+n] and the delta list, if any.
type termRef struct {
	off, n int32
	dl     *deltaList
}

var termScratchPool = sync.Pool{New: func() any { return new(termScratch) }}

// The statistics pass is bound by memory latency, not arithmetic: a
// resource-wide corpus is a thousand groups or more, each looked up once
// per term in a table that is cold in cache. Loading the slots where the
// lookups of the group ahead-th further on will start, in loads whose
// results nothing waits for, lets those misses overlap with the work on
// the current group (Go has no prefetch instruction to say so): about 5%
// faster over one user's 1,250 groups, 20% over the layer's 2,500
// (BenchmarkTermSearch, measured in CPU time).
const ahead = 8

// touchSink receives the touched values, so that the loads are not
// optimised away.
var touchSink atomic.Uint32

// touchTable loads the table slots where g's lookups of ids will start.
func touchTable(g *termGroup, ids []uint32, known []bool) uint32 {
	var s uint32
	if n := len(g.ftab); n > 0 {
		mask := uint32(n - 1)
		for ti, id := range ids {
			if known[ti] {
				s += g.ftab[hashTerm(id)&mask].id
			}
		}
	}
	return s
}

// exactSum is a sum of float64s held exactly, as non-overlapping partials
// (Shewchuk's algorithm, as in Python's math.fsum): adding and subtracting
// document lengths never drifts, and the total's value does not depend on
// the order of the writes or of the groups, so an index maintained by
// writes and one built afresh give the same average length, bit for bit.
// The values are finite and far from overflow (lengths of at most MaxTerms
// float32 weights). The partials live in the struct while they fit (one
// or two, for any but wildly mixed magnitudes), so a group's total costs
// no allocation and no cache miss of its own.
type exactSum struct {
	n     int
	inl   [2]float64
	spill []float64 // every partial, once more than len(inl) were needed
}

func (p *exactSum) partials() []float64 {
	if p.spill != nil {
		return p.spill
	}
	return p.inl[:p.n]
}

func (p *exactSum) add(x float64) {
	ps := p.partials()
	i := 0
	for _, y := range ps {
		if math.Abs(x) < math.Abs(y) {
			x, y = y, x
		}
		hi := x + y
		lo := y - (hi - x)
		if lo != 0 {
			ps[i] = lo
			i++
		}
		x = hi
	}
	ps = append(ps[:i], x) // in inl while it fits its capacity
	if p.spill == nil && len(ps) <= len(p.inl) {
		p.n = len(ps)
	} else {
		p.spill = ps
	}
}

// value is the correctly rounded sum.
func (p *exactSum) value() float64 {
	ps := p.partials()
	n := len(ps)
	if n == 0 {
		return 0
	}
	n--
	hi := ps[n]
	var lo float64
	for n > 0 {
		x := hi
		n--
		y := ps[n]
		hi = x + y
		lo = y - (hi - x)
		if lo != 0 {
			break
		}
	}
	// Half-way cases: round to even across the remaining partials.
	if n > 0 && (lo < 0 && ps[n-1] < 0 || lo > 0 && ps[n-1] > 0) {
		y := lo * 2
		x := hi + y
		if y == x-hi {
			hi = x
		}
	}
	return hi
}
