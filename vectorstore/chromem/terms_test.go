package chromem

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

// termModel is what the collection should hold: the reference the index is
// checked against, through driver.RankTerms.
type termModel map[string]driver.Record

// rank is the reference answer to q over the model.
func (m termModel) rank(q driver.TermQuery) driver.TermResult {
	cf := driver.Filter{Layer: q.Filter.Layer, Kind: q.Filter.Kind, Thread: q.Filter.Thread, Resource: q.Filter.Resource}
	var corpus []*driver.Record
	for _, id := range slices.Sorted(maps.Keys(m)) {
		r := m[id]
		if cf.Matches(&r) {
			corpus = append(corpus, &r)
		}
	}
	return driver.RankTerms(corpus, q, q.Filter.Matches)
}

// sameResult fails unless got equals want exactly: statistics, match ids,
// scores bit for bit, and matches without Terms (and without vectors
// unless asked for).
func sameResult(t *testing.T, got, want driver.TermResult, q driver.TermQuery, label string) {
	t.Helper()
	if got.Docs != want.Docs || got.AvgLen != want.AvgLen {
		t.Fatalf("%s: docs %d avglen %v, want %d %v", label, got.Docs, got.AvgLen, want.Docs, want.AvgLen)
	}
	if !maps.Equal(got.DocFreq, want.DocFreq) {
		t.Fatalf("%s: DocFreq %v, want %v", label, got.DocFreq, want.DocFreq)
	}
	gids, wids := matchIDs(got.Matches), matchIDs(want.Matches)
	if !slices.Equal(gids, wids) {
		t.Fatalf("%s: matches %v, want %v", label, gids, wids)
	}
	for i, m := range got.Matches {
		if m.Score != want.Matches[i].Score {
			t.Fatalf("%s: %s scores %v, reference %v (diff %g)", label, m.Record.ID, m.Score, want.Matches[i].Score, m.Score-want.Matches[i].Score)
		}
		if m.Record.Terms != nil {
			t.Fatalf("%s: match %s carries its Terms", label, m.Record.ID)
		}
		if (m.Record.Vector != nil) != q.WithVectors {
			t.Fatalf("%s: match %s vector %v with WithVectors %v", label, m.Record.ID, m.Record.Vector, q.WithVectors)
		}
		w := want.Matches[i].Record
		if m.Record.Revision != w.Revision || m.Record.Layer != w.Layer || m.Record.Text != w.Text || !maps.Equal(m.Record.Metadata, w.Metadata) {
			t.Fatalf("%s: match %s is %+v, stored %+v", label, m.Record.ID, m.Record, w)
		}
	}
}

// closeResult is sameResult up to rounding (1e-12 relative), for weights
// whose sums are inexact: statistics equal but AvgLen, and the matches the
// same but for documents within rounding of each other.
func closeResult(t *testing.T, got, want driver.TermResult, label string) {
	t.Helper()
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b)) }
	if got.Docs != want.Docs || !near(got.AvgLen, want.AvgLen) || !maps.Equal(got.DocFreq, want.DocFreq) || len(got.Matches) != len(want.Matches) {
		t.Fatalf("%s: docs %d avglen %v df %v, %d matches; want %d %v %v, %d", label, got.Docs, got.AvgLen, got.DocFreq, len(got.Matches),
			want.Docs, want.AvgLen, want.DocFreq, len(want.Matches))
	}
	for i, m := range got.Matches {
		w := want.Matches[i]
		if !near(m.Score, w.Score) { // ids may differ between near ties
			t.Fatalf("%s: match %d is %s %v, want %s %v", label, i, m.Record.ID, m.Score, w.Record.ID, w.Score)
		}
	}
}

func matchIDs(ms []driver.Match) []string {
	out := make([]string, len(ms))
	for i := range ms {
		out[i] = ms[i].Record.ID
	}
	return out
}

// searchBoth runs q with both scorers, scoreGroups and scorePruned,
// requires the same answer bit for bit, and returns it.
func searchBoth(t *testing.T, c *collection, q driver.TermQuery) driver.TermResult {
	t.Helper()
	defer func(v int) { prunedMinPostings = v }(prunedMinPostings)
	prunedMinPostings = math.MaxInt
	byGroups := searchT(t, c, q)
	prunedMinPostings = 0
	pruned := searchT(t, c, q)
	sameResult(t, pruned, byGroups, q, fmt.Sprintf("pruned vs by groups, %+v", q))
	return pruned
}

func searchT(t *testing.T, c *collection, q driver.TermQuery) driver.TermResult {
	t.Helper()
	res, err := c.SearchTerms(context.Background(), q)
	if err != nil {
		t.Fatalf("SearchTerms %+v: %v", q, err)
	}
	return res
}

// termGen draws records over several layers, kinds, resources and threads,
// documents of Zipf-distributed terms with weights 1, 0.5 and 0.25.
type termGen struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	vocab int
	n     int
}

func newTermGen(seed uint64, vocab int) *termGen {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &termGen{r: r, zipf: rand.NewZipf(r, 1.2, 2, uint64(vocab-1)), vocab: vocab}
}

var genWeights = []float32{1, 0.5, 0.25}

func (g *termGen) term() string { return fmt.Sprintf("w%d", g.zipf.Uint64()) }

func (g *termGen) doc(n int) driver.Terms {
	d := driver.Terms{}
	for i := 0; i < n; i++ {
		d[g.term()] += genWeights[g.r.IntN(len(genWeights))]
	}
	return d
}

func (g *termGen) record(id string) driver.Record {
	r := g.r
	g.n++
	rec := driver.Record{
		ID:        id,
		Layer:     []string{"la", "lb", "lc"}[r.IntN(3)],
		Kind:      []string{"fact", "note"}[r.IntN(2)],
		Scope:     driver.Scope{Resource: []string{"", "u1", "u2", "u3"}[r.IntN(4)], Thread: []string{"", "t1", "t2", "t3", "t4"}[r.IntN(5)]},
		Text:      "text " + id,
		Vector:    []float32{1, float32(r.IntN(5)), 0, 0},
		CreatedAt: scopeT0.Add(time.Duration(g.n) * time.Second),
	}
	if r.IntN(3) > 0 {
		rec.Metadata = map[string]string{"lang": []string{"en", "de"}[r.IntN(2)]}
	}
	switch r.IntN(5) {
	case 0:
		rec.ValidTo = scopeT0.Add(time.Duration(r.IntN(400)) * time.Second)
	case 1:
		rec.ValidFrom = scopeT0.Add(time.Duration(r.IntN(400)) * time.Second)
	}
	if r.IntN(8) > 0 { // some records hold no document
		rec.Terms = g.doc(1 + r.IntN(14))
	}
	return rec
}

// query draws a query of 1 to 8 terms and a filter: a corpus (layer, with
// or without kind, resource, thread), narrowed or not by ids, metadata and
// times.
func (g *termGen) query(ids []string) driver.TermQuery {
	r := g.r
	q := driver.TermQuery{Terms: map[string]float64{}, K: []int{1, 3, 10, 50}[r.IntN(4)], K1: 1.2, B: 0.75}
	for n := 1 + r.IntN(8); len(q.Terms) < n; {
		t := g.term()
		if r.IntN(10) == 0 {
			t = "absent" + t
		}
		q.Terms[t] = []float64{1, 2, 0.5, 1.5}[r.IntN(4)]
	}
	if r.IntN(4) == 0 {
		q.K1, q.B = 0.5+r.Float64()*2, r.Float64()
	}
	f := &q.Filter
	f.Layer = []string{"la", "lb", "lc", "ld"}[r.IntN(4)]
	if r.IntN(3) == 0 {
		f.Kind = []string{"fact", "note"}[r.IntN(2)]
	}
	if r.IntN(2) == 0 {
		f.Resource = []string{"u1", "u2", "u3"}[r.IntN(3)]
	}
	if r.IntN(3) == 0 {
		f.Thread = []string{"t1", "t2", "t3", "t4"}[r.IntN(4)]
	}
	switch r.IntN(6) {
	case 0:
		for i := 0; i < 1+r.IntN(30) && len(ids) > 0; i++ {
			f.IDs = append(f.IDs, ids[r.IntN(len(ids))])
		}
		f.IDs = append(f.IDs, "nosuchid")
	case 1:
		f.Metadata = map[string]string{"lang": "en"}
	case 2:
		f.CreatedFrom = scopeT0.Add(time.Duration(r.IntN(200)) * time.Second)
		f.ValidAt = scopeT0.Add(time.Duration(r.IntN(400)) * time.Second)
	}
	q.WithVectors = r.IntN(4) == 0
	return q
}

func openTerms(t *testing.T, dir string) *collection {
	t.Helper()
	d, err := openDriver(context.Background(), dir, driver.Config{Name: "t", Dimension: 4})
	if err != nil {
		t.Fatal(err)
	}
	return d.(*collection)
}

// TestTermSearchRandom interleaves writes of every kind (upserts that add,
// replace and move records between groups, batches writing an id twice,
// UpsertIf, deletes, DeleteIf, DeleteWhere) with searches, and requires
// every search to equal the reference exactly. Layers are first searched
// at different points, so some groups are built lazily late, after many
// writes, and others maintained from early on; at the end, and after a
// reopen, the maintained index must equal a fresh build, group for group.
func TestTermSearchRandom(t *testing.T) {
	ctx := context.Background()
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			dir := t.TempDir()
			c := openTerms(t, dir)
			defer func() { c.Close() }()
			g := newTermGen(seed, 80)
			m := termModel{}
			var ids []string
			newID := func() string {
				id := fmt.Sprintf("r%04d", len(ids))
				ids = append(ids, id)
				return id
			}
			pick := func() string { return ids[g.r.IntN(len(ids))] }
			searches, ranked := 0, 0
			pruned0 := termsPruned.Load()
			for step := 0; step < 240; step++ {
				switch op := g.r.IntN(10); {
				case op < 4 || len(ids) < 10:
					var batch []driver.Record
					for i := 0; i < 1+g.r.IntN(12); i++ {
						id := newID()
						if g.r.IntN(3) == 0 && len(ids) > 1 {
							id = pick() // a replacement, maybe into another group
						}
						batch = append(batch, g.record(id))
					}
					if g.r.IntN(4) == 0 {
						// The same id twice in one batch: the last one wins.
						again := g.record(batch[0].ID)
						batch = append(batch, again)
					}
					if err := c.Upsert(ctx, batch); err != nil {
						t.Fatal(err)
					}
					for _, r := range batch {
						got, _, _ := c.Get(ctx, r.ID)
						r.Revision = got.Revision
						m[r.ID] = r
					}
				case op == 4:
					id := pick()
					r := g.record(id)
					rev, err := c.UpsertIf(ctx, r, m[id].Revision)
					if err != nil {
						t.Fatal(err)
					}
					r.Revision = rev
					m[id] = r
				case op == 5:
					var del []string
					for i := 0; i < 1+g.r.IntN(6); i++ {
						del = append(del, pick())
					}
					if err := c.Delete(ctx, del); err != nil {
						t.Fatal(err)
					}
					for _, id := range del {
						delete(m, id)
					}
				case op == 6:
					id := pick()
					if old, ok := m[id]; ok {
						if err := c.DeleteIf(ctx, id, old.Revision); err != nil {
							t.Fatal(err)
						}
						delete(m, id)
					}
				case op == 7 && step%3 == 0:
					f := driver.Filter{Layer: []string{"la", "lb", "lc"}[g.r.IntN(3)], Thread: []string{"t1", "t2", "t3", "t4"}[g.r.IntN(4)], Resource: []string{"u1", "u2"}[g.r.IntN(2)]}
					if _, err := c.DeleteWhere(ctx, f); err != nil {
						t.Fatal(err)
					}
					for id, r := range m {
						if f.Matches(&r) {
							delete(m, id)
						}
					}
				default:
					for i := 0; i < 4; i++ {
						q := g.query(ids)
						if step < 80 && q.Filter.Layer == "lc" {
							q.Filter.Layer = "la" // lc is first searched late
						}
						got := searchBoth(t, c, q)
						sameResult(t, got, m.rank(q), q, fmt.Sprintf("step %d: %+v", step, q))
						searches++
						if len(got.Matches) > 1 {
							ranked++
						}
					}
				}
				if step%40 == 39 {
					checkTermIndex(t, c)
				}
			}
			if searches < 100 || ranked < searches/5 || termsPruned.Load() == pruned0 {
				t.Fatalf("%d searches, %d with several matches: the test exercises too little", searches, ranked)
			}
			t.Logf("%d searches, %d with several matches, %d pruned, %d records", searches, ranked, termsPruned.Load()-pruned0, len(m))
			checkTermIndex(t, c)
			// The same answers from an index built afresh.
			qs := make([]driver.TermQuery, 60)
			before := make([]driver.TermResult, len(qs))
			for i := range qs {
				qs[i] = g.query(ids)
				before[i] = searchT(t, c, qs[i])
			}
			c.mu.Lock()
			c.terms.reset()
			c.mu.Unlock()
			for i, q := range qs {
				sameResult(t, searchBoth(t, c, q), before[i], q, fmt.Sprintf("fresh index, %+v", q))
			}
			// And after a reopen (replay) and a compaction.
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			c = openTerms(t, dir)
			for i, q := range qs {
				sameResult(t, searchBoth(t, c, q), before[i], q, fmt.Sprintf("reopened, %+v", q))
			}
			c.wmu.Lock()
			err := c.compact()
			c.wmu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			c = openTerms(t, dir)
			for i, q := range qs {
				sameResult(t, searchT(t, c, q), before[i], q, fmt.Sprintf("compacted and reopened, %+v", q))
			}
		})
	}
}

// groupView is a built group as the terms and weights of its live
// documents, by term name and record id.
type groupView struct {
	n     int
	total float64
	post  map[string]map[string]float32
}

func viewGroup(t *testing.T, d *termDict, docs *docTable, g *termGroup) groupView {
	t.Helper()
	v := groupView{n: g.n, total: g.total.value(), post: map[string]map[string]float32{}}
	live := 0
	for s, r := range g.docs {
		if r == nil {
			if g.lens[s] != -1 {
				t.Fatalf("group %+v: freed slot %d has length %v", g.key, s, g.lens[s])
			}
			continue
		}
		live++
		if got, ok := g.slots[r]; !ok || got != int32(s) {
			t.Fatalf("group %+v: %s in slot %d, slots map says %d", g.key, r.ID, s, got)
		}
		if g.lens[s] != docs.terms(docs.get(r)).Len() {
			t.Fatalf("group %+v: %s length %v, want %v", g.key, r.ID, g.lens[s], docs.terms(docs.get(r)).Len())
		}
	}
	if live != g.n || len(g.slots) != g.n {
		t.Fatalf("group %+v: %d live slots, %d in the slots map, n = %d", g.key, live, len(g.slots), g.n)
	}
	add := func(id uint32, ps []posting, wantDF int) {
		name := d.names[id]
		if d.ids[name] != id || d.refs[id] <= 0 {
			t.Fatalf("group %+v: term %d (%q) not in the dictionary", g.key, id, name)
		}
		n := 0
		for _, p := range ps {
			r := g.docs[p.slot]
			if r == nil {
				continue
			}
			n++
			if w := docs.terms(docs.get(r))[name]; w != p.w {
				t.Fatalf("group %+v: posting %s/%q weight %v, document %v", g.key, r.ID, name, p.w, w)
			}
			if v.post[name] == nil {
				v.post[name] = map[string]float32{}
			}
			if _, dup := v.post[name][r.ID]; dup {
				t.Fatalf("group %+v: %s twice under %q", g.key, r.ID, name)
			}
			v.post[name][r.ID] = p.w
		}
		if n != wantDF {
			t.Fatalf("group %+v: %q counts %d live postings, %d found", g.key, name, wantDF, n)
		}
	}
	used, covered := 0, 0
	for i, e := range g.ftab {
		if e.id == noTerm {
			continue
		}
		used++
		covered += int(e.n)
		if g.frozenIndex(e.id) != i {
			t.Fatalf("group %+v: term %d in table slot %d, found at %d", g.key, e.id, i, g.frozenIndex(e.id))
		}
		add(e.id, g.fpost[e.off:e.off+e.n], int(e.df))
	}
	if used != g.fterms || covered != len(g.fpost) || len(g.ftab) > 0 && used*4 > len(g.ftab)*3 {
		t.Fatalf("group %+v: table of %d slots holds %d terms (%d counted), covering %d of %d postings", g.key, len(g.ftab), used, g.fterms, covered, len(g.fpost))
	}
	for id, l := range g.delta {
		add(id, l.p, int(l.df))
	}
	for name, docs := range v.post {
		id := d.ids[name]
		if df := g.df(id); df != len(docs) {
			t.Fatalf("group %+v: df(%q) = %d, %d live postings", g.key, name, df, len(docs))
		}
	}
	// Every document's every term is posted.
	for _, r := range g.docs {
		if r == nil {
			continue
		}
		for name, w := range docs.all(docs.get(r)) {
			if v.post[name][r.ID] != w {
				t.Fatalf("group %+v: %s/%q not posted", g.key, r.ID, name)
			}
		}
	}
	return v
}

// checkTermIndex checks the maintained index against the records and
// against an index built afresh from them: the same registered groups with
// the same document counts and, for built groups, the same postings, the
// same total length (bit for bit), consistent dictionary references.
func checkTermIndex(t *testing.T, c *collection) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	x := &c.terms
	fresh := &termIndex{docs: c.docs}
	refs := map[uint32]int32{}
	for layer, lt := range x.layers {
		want := map[groupKey]int{}
		for _, r := range c.recs {
			if r.Layer == layer && c.docs.get(r) != "" {
				want[keyOf(r)]++
			}
		}
		got := map[groupKey]int{}
		for k, g := range lt.groups {
			if g.key != k {
				t.Fatalf("layer %s: group %+v under key %+v", layer, g.key, k)
			}
			got[k] = g.n
		}
		if !maps.Equal(got, want) {
			t.Fatalf("layer %s: groups %v, records say %v", layer, got, want)
		}
		for th, l := range lt.byThread {
			for _, g := range l {
				if g.key.thread != th || lt.groups[g.key] != g {
					t.Fatalf("layer %s: byThread[%s] holds %+v", layer, th, g.key)
				}
			}
		}
		nlisted := 0
		for res, l := range lt.byResource {
			nlisted += len(l)
			for _, g := range l {
				if g.key.resource != res || lt.groups[g.key] != g {
					t.Fatalf("layer %s: byResource[%s] holds %+v", layer, res, g.key)
				}
			}
		}
		nres := 0
		for k := range lt.groups {
			if k.resource != "" {
				nres++
			}
		}
		if nres != nlisted {
			t.Fatalf("layer %s: %d groups with a resource, %d listed", layer, nres, nlisted)
		}
		fresh.prepare(c, &driver.Filter{Layer: layer})
		flt := fresh.layers[layer]
		for k, g := range lt.groups {
			if !g.built {
				continue
			}
			for _, e := range g.ftab {
				if e.id != noTerm {
					refs[e.id]++
				}
			}
			for id := range g.delta {
				if g.frozenIndex(id) < 0 {
					refs[id]++
				}
			}
			gv := viewGroup(t, &x.dict, c.docs, g)
			fv := viewGroup(t, &fresh.dict, c.docs, flt.groups[k])
			if gv.n != fv.n || gv.total != fv.total || !maps.EqualFunc(gv.post, fv.post, func(a, b map[string]float32) bool { return maps.Equal(a, b) }) {
				t.Fatalf("layer %s group %+v: maintained n %d total %v, fresh n %d total %v (postings equal: %v)", layer, k, gv.n, gv.total, fv.n, fv.total,
					maps.EqualFunc(gv.post, fv.post, func(a, b map[string]float32) bool { return maps.Equal(a, b) }))
			}
		}
	}
	for id, name := range x.dict.names {
		if name == "" {
			if x.dict.refs[id] != 0 || !slices.Contains(x.dict.free, uint32(id)) {
				t.Fatalf("dictionary: freed number %d has %d references", id, x.dict.refs[id])
			}
			continue
		}
		if x.dict.refs[id] != refs[uint32(id)] {
			t.Fatalf("dictionary: %q has %d references, %d groups refer to it", name, x.dict.refs[id], refs[uint32(id)])
		}
	}
	if len(x.dict.ids)+len(x.dict.free) != len(x.dict.names) {
		t.Fatalf("dictionary: %d names, %d in use, %d free", len(x.dict.names), len(x.dict.ids), len(x.dict.free))
	}
}

// TestTermsPersist: documents survive reopen (replay of the WAL), the
// checkpointed reopen after more writes, compaction and salvage, and come
// back exactly from Get and List; a replacement without a document and a
// deletion stay so.
func TestTermsPersist(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var cc *collection
	open := func(opts *vectorstore.Options) *vectorstore.Collection {
		t.Helper()
		d, err := openDriver(ctx, dir, driver.Config{Name: "c", Dimension: 4})
		if err != nil {
			t.Fatal(err)
		}
		c, err := vectorstore.NewCollection(d, opts)
		if err != nil {
			t.Fatal(err)
		}
		cc = d.(*collection)
		return c
	}
	c := open(nil)
	docs := map[string]driver.Terms{
		"a": {"alpha": 1, "beta": 0.5, "with space": 0.25},
		"b": {"beta": 2, "日本語": 1e-30, "huge": 1e30},
		"c": {"gamma": 0.1},
		"d": nil,
	}
	put := func(id string, terms driver.Terms, sec int) {
		t.Helper()
		r := rec(id, 4, 0.5)
		r.Layer, r.Terms, r.CreatedAt = "lex", terms, time.Unix(int64(1700000000+sec), 0)
		if err := c.Upsert(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []string{"a", "b", "c", "d"} {
		put(id, docs[id], i)
	}
	check := func(label string) {
		t.Helper()
		for id, want := range docs {
			got, err := c.Get(ctx, id)
			if err != nil {
				t.Fatalf("%s: get %s: %v", label, id, err)
			}
			if !maps.Equal(got.Terms, want) || (want == nil) != (got.Terms == nil) {
				t.Fatalf("%s: %s has terms %v, want %v", label, id, got.Terms, want)
			}
		}
		recs, _, err := c.List(ctx, vectorstore.ListOptions{Limit: 10})
		if err != nil || len(recs) != len(docs) {
			t.Fatalf("%s: list %d, %v", label, len(recs), err)
		}
		for _, r := range recs {
			if !maps.Equal(r.Terms, docs[r.ID]) {
				t.Fatalf("%s: list %s has terms %v, want %v", label, r.ID, r.Terms, docs[r.ID])
			}
		}
		res, err := c.SearchTerms(ctx, vectorstore.TermOptions{Terms: map[string]float64{"beta": 1, "gamma": 1}, K: 10, Filter: vectorstore.Filter{Layer: "lex"}})
		if err != nil {
			t.Fatal(err)
		}
		var withDocs int
		for _, d := range docs {
			if len(d) > 0 {
				withDocs++
			}
		}
		if res.Docs != withDocs {
			t.Fatalf("%s: search sees %d documents, want %d", label, res.Docs, withDocs)
		}
	}
	reopen := func() {
		t.Helper()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		c = open(nil)
	}
	check("written")
	reopen()
	check("reopened")
	// More writes on the checkpointed log: a replacement that drops the
	// document, one that changes it, a deletion.
	put("c", nil, 10)
	docs["c"] = nil
	put("a", driver.Terms{"alpha": 3, "delta": 0.75}, 11)
	docs["a"] = driver.Terms{"alpha": 3, "delta": 0.75}
	put("e", driver.Terms{"epsilon": 1}, 12)
	docs["e"] = driver.Terms{"epsilon": 1}
	if err := c.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	delete(docs, "b")
	check("rewritten")
	reopen()
	check("rewritten and reopened")
	if _, err := os.Stat(collDir(dir) + "/records.ckpt"); err != nil {
		t.Fatalf("no checkpoint: %v", err)
	}
	// Compaction rewrites every live record.
	cc.wmu.Lock()
	err := cc.compact()
	cc.wmu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	check("compacted")
	reopen()
	check("compacted and reopened")
	// Salvage after damage to a last frame keeps the documents of the
	// frames before it.
	put("f", driver.Terms{"phi": 1}, 13)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	log := readLog(t, dir)
	log[len(log)-3] ^= 0x10
	writeLog(t, dir, log)
	if _, err := Salvage(ctx, dir, "c", SalvageOptions{}); err != nil {
		t.Fatal(err)
	}
	c = open(nil)
	defer c.Close()
	check("salvaged")
}

// TestTermsWAL: the document round-trips through the log encoding
// byte-identically (sorted terms); a record without one encodes as before
// the field existed; a frame with unknown flags or an invalid document is
// refused.
func TestTermsWAL(t *testing.T) {
	base := driver.Record{ID: "x", Layer: "l", Vector: []float32{1, 2}, CreatedAt: time.UnixMicro(5).UTC()}
	with := base
	with.Terms = driver.Terms{"b": 0.5, "a": 1, "ünï": 1e-30}
	e, err := decodePayload(encodeUpsert([]driver.Record{with})[frameHeader:])
	if err != nil || len(e.recs) != 1 || !maps.Equal(e.recs[0].Terms, with.Terms) {
		t.Fatalf("round trip: %+v, %v", e.recs, err)
	}
	if string(encodeUpsert([]driver.Record{with})) != string(encodeUpsert([]driver.Record{with.Clone()})) {
		t.Fatal("the encoding depends on map order")
	}
	plain := encodeUpsert([]driver.Record{base})
	enc := encoder{}
	enc.b = append(enc.b, opUpsert)
	enc.uvarint(1)
	enc.record(&base, nil)
	if string(plain[frameHeader:]) != string(enc.b) {
		t.Fatal("a record without terms encodes differently")
	}
	// The flags byte sits just before the vector's length (2) and data.
	flagsAt := len(enc.b) - 1 - 8 - 1
	if enc.b[flagsAt] != 0 {
		t.Fatalf("flags byte not where expected: %x", enc.b)
	}
	bad := slices.Clone(enc.b)
	bad[flagsAt] = 0x80
	if _, err := decodePayload(bad); err == nil || !strings.Contains(err.Error(), "unknown flags") {
		t.Fatalf("unknown flags: %v", err)
	}
	for _, terms := range []driver.Terms{{"a": 0}, {"a": float32(math.Inf(1))}, {"a": float32(math.NaN())}, {"": 1}, {"a": -1}} {
		r := base
		r.Terms = terms
		if _, err := decodePayload(encodeUpsert([]driver.Record{r})[frameHeader:]); err == nil {
			t.Fatalf("document %v decoded", terms)
		}
	}
	// A document claiming more terms than the payload can hold.
	r := base
	r.Terms = driver.Terms{"a": 1}
	p := encodeUpsert([]driver.Record{r})[frameHeader:]
	p[len(p)-1-4-1-1] = 0x7f // the term count
	if _, err := decodePayload(p); err == nil {
		t.Fatal("oversized term count decoded")
	}
}

// TestTermSearchTiesAtK: documents scoring exactly alike are ordered by id,
// also across the K boundary and across groups.
func TestTermSearchTiesAtK(t *testing.T) {
	ctx := context.Background()
	c := openTerms(t, t.TempDir())
	defer c.Close()
	var batch []driver.Record
	m := termModel{}
	for i := 0; i < 30; i++ {
		// Ids in an order unlike creation and group order.
		r := driver.Record{ID: fmt.Sprintf("id%02d", (i*7)%30), Layer: "l", Kind: "k", Vector: []float32{1, 0, 0, 0},
			Scope:     driver.Scope{Resource: "u", Thread: fmt.Sprint("t", i%4)},
			Terms:     driver.Terms{"same": 1, "pad": 0.5},
			CreatedAt: scopeT0.Add(time.Duration(i) * time.Second)}
		if i%5 == 0 {
			r.Terms = driver.Terms{"same": 1, "pad": 0.25, "other": 0.25}
		}
		batch = append(batch, r)
	}
	if err := c.Upsert(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for _, r := range batch {
		got, _, _ := c.Get(ctx, r.ID)
		m[r.ID] = got
	}
	for k := 1; k <= 31; k++ {
		q := driver.TermQuery{Terms: map[string]float64{"same": 1}, K: k, K1: 1.2, B: 0.75, Filter: driver.Filter{Layer: "l", Resource: "u"}}
		res := searchBoth(t, c, q)
		sameResult(t, res, m.rank(q), q, fmt.Sprint("K=", k))
		if k == 10 && (res.Matches[8].Score != res.Matches[9].Score || !slices.IsSorted(matchIDs(res.Matches[6:]))) {
			t.Fatalf("K=10: no tie at the boundary: %v", matchIDs(res.Matches))
		}
	}
}

// TestTermCorpusStatistics: the statistics are the corpus' own: documents
// of another resource, layer, kind or thread, however many and however
// long, change no score; a deleted record never matches; a replaced
// record's old terms no longer match.
func TestTermCorpusStatistics(t *testing.T) {
	ctx := context.Background()
	c := openTerms(t, t.TempDir())
	defer c.Close()
	put := func(recs ...driver.Record) {
		t.Helper()
		if err := c.Upsert(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(id, layer, kind, res, thread string, terms driver.Terms) driver.Record {
		return driver.Record{ID: id, Layer: layer, Kind: kind, Scope: driver.Scope{Resource: res, Thread: thread},
			Vector: []float32{1, 0, 0, 0}, Terms: terms, CreatedAt: scopeT0}
	}
	put(mk("a", "l", "k", "u1", "t1", driver.Terms{"apple": 1, "pear": 0.5}),
		mk("b", "l", "k", "u1", "t2", driver.Terms{"apple": 0.25, "plum": 1}),
		mk("c", "l", "k", "u1", "", driver.Terms{"pear": 1, "kiwi": 1, "fig": 0.5}))
	corpus := driver.Filter{Layer: "l", Resource: "u1"}
	queries := []map[string]float64{{"apple": 1}, {"pear": 1, "plum": 1}, {"apple": 1, "kiwi": 2, "fig": 1}}
	before := make([]driver.TermResult, len(queries))
	for i, terms := range queries {
		before[i] = searchT(t, c, driver.TermQuery{Terms: terms, K: 10, K1: 1.2, B: 0.75, Filter: corpus})
	}
	heavy := driver.Terms{"apple": 7, "pear": 7, "plum": 7, "kiwi": 7, "fig": 7, "filler": 40}
	for i := 0; i < 20; i++ {
		put(mk(fmt.Sprint("o-res", i), "l", "k", "u2", "t1", heavy),
			mk(fmt.Sprint("o-layer", i), "m", "k", "u1", "t1", heavy),
			mk(fmt.Sprint("o-global", i), "l", "k", "", "t1", heavy))
	}
	for i, terms := range queries {
		after := searchT(t, c, driver.TermQuery{Terms: terms, K: 10, K1: 1.2, B: 0.75, Filter: corpus})
		q := driver.TermQuery{Terms: terms, K: 10}
		sameResult(t, after, before[i], q, fmt.Sprint("with other corpora around, ", terms))
	}
	// Another kind and another thread in the resource do count for the
	// resource, not for a corpus naming the kind or thread.
	put(mk("d", "l", "other", "u1", "t1", driver.Terms{"apple": 1}))
	if res := searchT(t, c, driver.TermQuery{Terms: queries[0], K: 10, K1: 1.2, B: 0.75, Filter: driver.Filter{Layer: "l", Resource: "u1", Kind: "k"}}); res.Docs != 3 {
		t.Fatalf("kind corpus: %d docs", res.Docs)
	}
	if res := searchT(t, c, driver.TermQuery{Terms: queries[0], K: 10, K1: 1.2, B: 0.75, Filter: corpus}); res.Docs != 4 || res.DocFreq["apple"] != 3 {
		t.Fatalf("resource corpus: %d docs, df %v", res.Docs, res.DocFreq)
	}
	// Deleted and replaced.
	if err := c.Delete(ctx, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	put(mk("b", "l", "k", "u1", "t2", driver.Terms{"cherry": 1}))
	for _, terms := range []map[string]float64{{"apple": 1}, {"plum": 1}, {"pear": 1, "apple": 1, "plum": 1}} {
		res := searchT(t, c, driver.TermQuery{Terms: terms, K: 10, K1: 1.2, B: 0.75, Filter: corpus})
		for _, m := range res.Matches {
			if m.Record.ID == "a" || m.Record.ID == "b" {
				t.Fatalf("%v matches %s: deleted or replaced", terms, m.Record.ID)
			}
		}
		if res.Docs != 3 {
			t.Fatalf("%v: %d docs after a delete and a replacement, want 3", terms, res.Docs)
		}
	}
	if res := searchT(t, c, driver.TermQuery{Terms: map[string]float64{"cherry": 1}, K: 10, K1: 1.2, B: 0.75, Filter: corpus}); len(res.Matches) != 1 || res.Matches[0].Record.ID != "b" {
		t.Fatalf("replacement's new terms: %v", matchIDs(res.Matches))
	}
	checkTermIndex(t, c)
}

// TestTermGroupFreeze drives one large group through many freezes (adds,
// replacements and deletions in batches) and compares it with a fresh
// build after each batch.
func TestTermGroupFreeze(t *testing.T) {
	ctx := context.Background()
	c := openTerms(t, t.TempDir())
	defer c.Close()
	g := newTermGen(9, 300)
	m := termModel{}
	q := driver.TermQuery{Terms: map[string]float64{"w2": 1, "w3": 1, "w10": 1}, K: 20, K1: 1.2, B: 0.75, Filter: driver.Filter{Layer: "big"}}
	for round := 0; round < 30; round++ {
		var batch []driver.Record
		for i := 0; i < 40; i++ {
			id := fmt.Sprintf("r%03d", g.r.IntN(400))
			r := driver.Record{ID: id, Layer: "big", Vector: []float32{1, 0, 0, 0}, Terms: g.doc(1 + g.r.IntN(20)), CreatedAt: scopeT0}
			batch = append(batch, r)
		}
		if err := c.Upsert(ctx, batch); err != nil {
			t.Fatal(err)
		}
		for _, r := range batch {
			m[r.ID] = r
		}
		var del []string
		for i := 0; i < g.r.IntN(30); i++ {
			del = append(del, fmt.Sprintf("r%03d", g.r.IntN(400)))
		}
		if err := c.Delete(ctx, del); err != nil {
			t.Fatal(err)
		}
		for _, id := range del {
			delete(m, id)
		}
		for id := range m {
			r := m[id]
			got, _, _ := c.Get(ctx, id)
			r.Revision = got.Revision
			m[id] = r
		}
		sameResult(t, searchBoth(t, c, q), m.rank(q), q, fmt.Sprint("round ", round))
		checkTermIndex(t, c)
	}
}

// TestTermSearchConcurrentBuilds: many searches build groups of the same
// and of different layers at once, while writers write; run with -race.
// Afterwards the index equals a fresh build and the searches the
// reference.
func TestTermSearchConcurrentBuilds(t *testing.T) {
	ctx := context.Background()
	c := openTerms(t, t.TempDir())
	defer c.Close()
	g := newTermGen(5, 60)
	var batch []driver.Record
	for i := 0; i < 300; i++ {
		batch = append(batch, g.record(fmt.Sprintf("r%03d", i)))
	}
	if err := c.Upsert(ctx, batch); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			gw := newTermGen(uint64(100+w), 60)
			for i := 0; i < 40; i++ {
				id := fmt.Sprintf("r%03d", gw.r.IntN(330))
				var err error
				if i%4 == 3 {
					err = c.Delete(ctx, []string{id})
				} else {
					err = c.Upsert(ctx, []driver.Record{gw.record(id)})
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}(w)
	}
	for s := 0; s < 6; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			gs := newTermGen(uint64(200+s), 60)
			for i := 0; i < 40; i++ {
				q := gs.query(nil)
				res, err := c.SearchTerms(ctx, q)
				if err != nil {
					errc <- err
					return
				}
				if len(res.Matches) > q.K || len(res.DocFreq) != len(q.Terms) {
					errc <- fmt.Errorf("inconsistent answer %+v to %+v", res, q)
					return
				}
				for _, m := range res.Matches {
					if m.Record.Layer != q.Filter.Layer || !(m.Score > 0) {
						errc <- fmt.Errorf("match %+v for %+v", m, q)
						return
					}
				}
			}
		}(s)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	checkTermIndex(t, c)
	recs, err := c.List(ctx, driver.ListQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	m := termModel{}
	for _, r := range recs {
		m[r.ID] = r
	}
	for i := 0; i < 40; i++ {
		q := g.query(nil)
		q.WithVectors = true
		sameResult(t, searchBoth(t, c, q), m.rank(q), q, fmt.Sprintf("after the concurrent phase, %+v", q))
	}
}

// TestTermSearchCancelled: a cancelled context is an error, not an empty
// answer.
func TestTermSearchCancelled(t *testing.T) {
	c := openTerms(t, t.TempDir())
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.SearchTerms(ctx, driver.TermQuery{Terms: map[string]float64{"a": 1}, K: 1, K1: 1.2, B: 0.75, Filter: driver.Filter{Layer: "l"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled search: %v", err)
	}
}

// TestDocLen: a doc's length is Terms.Len bit for bit, it holds the same
// terms, logs the same way, comes the same from the log, and its terms are
// forgotten with the last document holding them.
func TestDocLen(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	tab := newDocTable()
	var kept []doc
	for i := 0; i < 3000; i++ {
		d := driver.Terms{}
		spread := []float64{0, 2, 10, 40, 80}[i%5]
		for n := 1 + r.IntN(40); n > 0; n-- {
			w := float32(math.Exp2(r.Float64()*spread-spread/2) * (0.5 + r.Float64()))
			if i%3 == 0 {
				w = float32(1 + r.IntN(300)) // integers, some of one byte
			}
			d[fmt.Sprint("t", r.IntN(1000))] = w
		}
		dc := tab.fromTerms(d)
		if got, want := dc.length(), d.Len(); got != want {
			t.Fatalf("length %v, Len %v for %v", got, want, d)
		}
		if !maps.Equal(tab.terms(dc), d) || dc.count() != len(d) {
			t.Fatalf("doc holds %v, want %v", tab.terms(dc), d)
		}
		base := driver.Record{ID: "x", Layer: "l", Vector: []float32{1, 2}, CreatedAt: time.UnixMicro(5).UTC()}
		withMap := base
		withMap.Terms = d
		if string(encodeUpsert([]driver.Record{withMap})) != string(encodeUpsertDocs([]driver.Record{base}, [][]byte{tab.logged(dc)})) {
			t.Fatal("a doc logs differently from its map")
		}
		var in map[string]string
		e, err := decodeStored(encodeUpsert([]driver.Record{withMap})[frameHeader:], &in, &replaySink{docs: tab})
		if err != nil || len(e.docs) != 1 || e.docs[0] != dc || e.recs[0].Terms != nil {
			t.Fatalf("stored decoding: %v, %q, want %q", err, e.docs, dc)
		}
		tab.release(e.docs[0])
		if i%2 == 0 {
			kept = append(kept, dc)
		} else {
			tab.release(dc)
		}
	}
	for _, dc := range kept {
		tab.release(dc)
	}
	if len(tab.names.ids) != 0 {
		t.Fatalf("%d terms left without documents", len(tab.names.ids))
	}
	if tab.fromTerms(nil) != "" || doc("").length() != 0 || tab.terms("") != nil {
		t.Fatal("empty document has a length")
	}
}

// TestExactSum: the sum is the correctly rounded exact sum, whatever the
// order, and subtracting what was added gives back the earlier value.
func TestExactSum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	spilled := 0
	defer func() {
		if spilled == 0 {
			t.Error("no sum needed more partials than fit inline")
		}
	}()
	for i := 0; i < 500; i++ {
		var xs []float64
		for n := 1 + r.IntN(60); n > 0; n-- {
			xs = append(xs, math.Ldexp(r.Float64(), r.IntN(120)-60))
		}
		exact := new(big.Float).SetPrec(4000)
		var s exactSum
		for _, x := range xs {
			exact.Add(exact, new(big.Float).SetFloat64(x))
			s.add(x)
		}
		if s.spill != nil {
			spilled++
		}
		want, _ := exact.Float64()
		if got := s.value(); got != want {
			t.Fatalf("sum %v, exact %v", got, want)
		}
		var p exactSum
		for _, j := range r.Perm(len(xs)) {
			p.add(xs[j])
		}
		if p.value() != want {
			t.Fatalf("permuted sum %v, exact %v", p.value(), want)
		}
		// Remove half, in another order: the rest's exact sum.
		rest := new(big.Float).SetPrec(4000)
		for j, x := range xs {
			if j%2 == 0 {
				s.add(-x)
			} else {
				rest.Add(rest, new(big.Float).SetFloat64(x))
			}
		}
		want, _ = rest.Float64()
		if got := s.value(); got != want {
			t.Fatalf("after removals %v, exact %v", got, want)
		}
	}
	// Half-way cases round to even across partials.
	var s exactSum
	for _, x := range []float64{1, math.Ldexp(1, -53), math.Ldexp(1, -106)} {
		s.add(x)
	}
	if want := 1 + math.Ldexp(1, -52); s.value() != want {
		t.Fatalf("half-way sum %v, want %v", s.value(), want)
	}
}

// TestTermSearchPruneBoundary aims at the bound of scorePruned: documents
// holding only the commonest terms, at weights large enough that their
// score nears the bound those terms can add, compete with the documents of
// the rare terms, under all kinds of k1, b and K. Pruning one term too
// many, or a bound too loose, changes some answer.
func TestTermSearchPruneBoundary(t *testing.T) {
	for _, dyadic := range []bool{true, false} {
		t.Run(fmt.Sprint("dyadic=", dyadic), func(t *testing.T) { pruneBoundary(t, dyadic) })
	}
}

// pruneBoundary runs TestTermSearchPruneBoundary with weights whose sums
// are exact (dyadic: the answers must be the reference's bit for bit) or
// not (then the reference sums lengths in another order than the index, so
// the two scorers must agree bit for bit and the reference within 1e-12).
func pruneBoundary(t *testing.T, dyadic bool) {
	ctx := context.Background()
	c := openTerms(t, t.TempDir())
	defer c.Close()
	r := rand.New(rand.NewPCG(31, 32))
	weights := []float32{0.25, 0.5, 1, 2, 4, 8, 16, 32}
	if !dyadic {
		for i := range weights {
			weights[i] *= 1.1 + 0.7*r.Float32()
		}
	}
	m := termModel{}
	var batch []driver.Record
	for i := 0; i < 600; i++ {
		d := driver.Terms{}
		if i%8 == 0 { // a spike: common terms only, heavily weighted
			for j := 0; j < 1+r.IntN(2); j++ {
				d[fmt.Sprint("c", r.IntN(4))] = float32(32 + r.IntN(33))
			}
		} else {
			for j, p := range []float64{0.9, 0.7, 0.5, 0.3} {
				if r.Float64() < p {
					d[fmt.Sprint("c", j)] = weights[r.IntN(len(weights))]
				}
			}
			for j := 0; j < r.IntN(4); j++ {
				d[fmt.Sprint("r", r.IntN(20))] = weights[r.IntN(len(weights))]
			}
			if len(d) == 0 {
				d["c0"] = 1
			}
		}
		rec := driver.Record{ID: fmt.Sprintf("d%03d", i), Layer: "l", Kind: "k", Vector: []float32{1, 0, 0, 0},
			Scope: driver.Scope{Resource: fmt.Sprint("u", i%2), Thread: fmt.Sprint("t", i%30)}, Terms: d, CreatedAt: scopeT0,
			Metadata: map[string]string{"lang": []string{"en", "de"}[i%3%2]}}
		batch = append(batch, rec)
	}
	if err := c.Upsert(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for _, rec := range batch {
		got, _, _ := c.Get(ctx, rec.ID)
		m[rec.ID] = got
	}
	pruned0 := termsPruned.Load()
	for i := 0; i < 600; i++ {
		q := driver.TermQuery{Terms: map[string]float64{}, K: []int{1, 2, 3, 5, 10, 20}[r.IntN(6)], K1: 0.1 + 3*r.Float64(), B: r.Float64()}
		for n := 2 + r.IntN(3); len(q.Terms) < n; {
			if r.IntN(2) == 0 {
				q.Terms[fmt.Sprint("c", r.IntN(4))] = []float64{1, 0.5, 2}[r.IntN(3)]
			} else {
				q.Terms[fmt.Sprint("r", r.IntN(20))] = []float64{1, 0.5, 2}[r.IntN(3)]
			}
		}
		q.Filter.Layer = "l"
		switch r.IntN(4) {
		case 0:
			q.Filter.Resource = "u1"
		case 1:
			q.Filter.Metadata = map[string]string{"lang": "de"}
		}
		got, want := searchBoth(t, c, q), m.rank(q)
		if dyadic {
			sameResult(t, got, want, q, fmt.Sprintf("query %d: %+v", i, q))
		} else {
			closeResult(t, got, want, fmt.Sprintf("query %d: %+v", i, q))
		}
	}
	if n := termsPruned.Load() - pruned0; n < 100 {
		t.Fatalf("only %d of 600 searches pruned", n)
	}
}
