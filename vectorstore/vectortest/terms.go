package vectortest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

// The term-search cases: Record.Terms round trips, and SearchTerms ranks
// exactly like driver.RankTerms, the reference, over the same records,
// whether the driver implements driver.TermSearcher or the portable layer
// ranks in process.

// termTol is the relative tolerance on BM25 scores and average lengths:
// backends may sum in another order, never in another precision.
const termTol = 1e-9

func relClose(a, b float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= termTol*math.Max(math.Abs(a), math.Abs(b))
}

// sameTerms fails unless got holds exactly want's terms with bit-identical
// weights (nil and empty are the same: no document).
func sameTerms(t *testing.T, got, want vectorstore.Terms, label string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d terms, want %d (got %v)", label, len(got), len(want), abbrevTerms(got))
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Fatalf("%s: term %q missing", label, k)
		}
		if math.Float32bits(g) != math.Float32bits(w) {
			t.Fatalf("%s: term %q weight %v, want %v (weights round trip exactly)", label, k, g, w)
		}
	}
}

func abbrevTerms(ts vectorstore.Terms) string {
	if len(ts) > 12 {
		return fmt.Sprintf("(%d terms)", len(ts))
	}
	return fmt.Sprint(map[string]float32(ts))
}

// termVocab is the vocabulary of the term fixtures: terms with dots,
// dollars, spaces and non-ASCII letters, which must index like any other.
var termVocab = []string{
	"memory", "the", "sky", "blue", "go", "user", "qdrant", "postgres",
	"3.14", "a.b", "$x", "with space", "ünïcode", "日本語", "rare", "rarest",
}

// termDataset is a deterministic mix of layers, kinds, scopes, metadata,
// times and documents; records 5 and 7 of every 8 have no document (nil,
// empty). Ids are a permutation of the creation order.
func termDataset(dim int) []vectorstore.Record {
	r := rand.New(rand.NewPCG(21, 22))
	layers := []string{"semantic", "episodic", "entity"}
	kinds := []string{"fact", "summary"}
	threads := []string{"", "t1", "t2"}
	resources := []string{"", "u1", "u2"}
	weights := []float32{1, 1, 1, 2, 0.5, 3, 1.25, 0.1}
	var out []vectorstore.Record
	for i := 0; i < 96; i++ {
		rec := vectorstore.Record{
			ID:        fmt.Sprintf("d%02d", (i*7)%96),
			Layer:     layers[i%3],
			Kind:      kinds[(i/3)%2],
			Scope:     vectorstore.Scope{Thread: threads[(i/2)%3], Resource: resources[(i/6)%3]},
			Text:      fmt.Sprintf("document %d", i),
			Vector:    randVec(r, dim),
			CreatedAt: norm(base.Add(time.Duration(i/3) * time.Minute)),
		}
		if i%4 != 0 {
			rec.Metadata = map[string]string{"lang": []string{"de", "en"}[i%2]}
		}
		switch i % 5 {
		case 1:
			rec.ValidFrom = norm(base.Add(10 * time.Minute))
		case 2:
			rec.ValidTo = norm(base.Add(10 * time.Minute))
		}
		switch i % 8 {
		case 5: // no document
		case 7:
			rec.Terms = vectorstore.Terms{} // empty: no document either
		default:
			rec.Terms = vectorstore.Terms{}
			for n := 1 + r.IntN(7); n > 0; n-- {
				idx := int(r.ExpFloat64() * 4)
				if idx >= len(termVocab) {
					idx = r.IntN(4)
				}
				rec.Terms[termVocab[idx]] += weights[r.IntN(len(weights))]
			}
		}
		out = append(out, rec)
	}
	return out
}

// refTermSearch is the reference answer to opts over data: the K best, and
// every narrowed record's score in the full ranking.
func refTermSearch(data []vectorstore.Record, opts vectorstore.TermOptions) (driver.TermResult, map[string]float64) {
	f := normFilter(opts.Filter)
	cf := driver.Filter{Layer: f.Layer, Kind: f.Kind, Thread: f.Thread, Resource: f.Resource}
	var corpus []*driver.Record
	for i := range data {
		if cf.Matches(&data[i]) {
			corpus = append(corpus, &data[i])
		}
	}
	k1, b := opts.K1, opts.B
	if k1 == 0 {
		k1 = 1.2
	}
	if b == 0 {
		b = 0.75
	}
	q := driver.TermQuery{Terms: opts.Terms, K: len(data) + 1, Filter: f, K1: k1, B: b}
	full := driver.RankTerms(corpus, q, f.Matches)
	scores := make(map[string]float64, len(full.Matches))
	for _, m := range full.Matches {
		scores[m.Record.ID] = m.Score
	}
	want := full
	if len(want.Matches) > opts.K {
		want.Matches = want.Matches[:opts.K]
	}
	return want, scores
}

// compareTermResult checks got against the reference: statistics equal
// (AvgLen within termTol), as many matches, ordered by score then id,
// each score within termTol of its reference score, and no record left
// out that scores clearly better than the worst one returned.
func compareTermResult(t *testing.T, got, want driver.TermResult, scores map[string]float64, label string) {
	t.Helper()
	if got.Docs != want.Docs {
		t.Fatalf("%s: Docs = %d, want %d", label, got.Docs, want.Docs)
	}
	if !relClose(got.AvgLen, want.AvgLen) {
		t.Fatalf("%s: AvgLen = %v, want %v", label, got.AvgLen, want.AvgLen)
	}
	if len(got.DocFreq) != len(want.DocFreq) {
		t.Fatalf("%s: DocFreq = %v, want %v (one entry per query term)", label, got.DocFreq, want.DocFreq)
	}
	for term, n := range want.DocFreq {
		if g, ok := got.DocFreq[term]; !ok || g != n {
			t.Fatalf("%s: DocFreq = %v, want %v", label, got.DocFreq, want.DocFreq)
		}
	}
	if len(got.Matches) != len(want.Matches) {
		t.Fatalf("%s: %d matches %v, want %d %v", label, len(got.Matches), ids(got.Matches, matchID), len(want.Matches), ids(want.Matches, matchID))
	}
	seen := map[string]bool{}
	for i, m := range got.Matches {
		id := m.Record.ID
		rs, ok := scores[id]
		if !ok {
			t.Fatalf("%s: match %q is not a candidate (outside the filter, or holds no query term)", label, id)
		}
		if seen[id] {
			t.Fatalf("%s: %q returned twice", label, id)
		}
		seen[id] = true
		if math.IsNaN(m.Score) || math.IsInf(m.Score, 0) || m.Score <= 0 {
			t.Fatalf("%s: %q score %v, want finite and > 0", label, id, m.Score)
		}
		if !relClose(m.Score, rs) {
			t.Fatalf("%s: %q score %v, reference %v", label, id, m.Score, rs)
		}
		if i > 0 {
			p := got.Matches[i-1]
			if p.Score < m.Score || p.Score == m.Score && p.Record.ID > id {
				t.Fatalf("%s: out of order at %d: (%s %v) before (%s %v)", label, i, p.Record.ID, p.Score, id, m.Score)
			}
		}
		if m.Record.Terms != nil {
			t.Fatalf("%s: match %q carries its Terms; matches leave them nil", label, id)
		}
	}
	if len(got.Matches) == 0 {
		return
	}
	worst := got.Matches[len(got.Matches)-1].Score
	for id, rs := range scores {
		if !seen[id] && rs > worst && !relClose(rs, worst) {
			t.Fatalf("%s: %s (score %v) left out, worse %v returned", label, id, rs, worst)
		}
	}
}

// checkTermSearch runs opts against c and compares with the reference over
// data, including the records' fields and vectors.
func checkTermSearch(t *testing.T, c *vectorstore.Collection, data []vectorstore.Record, opts vectorstore.TermOptions, label string) vectorstore.TermResult {
	t.Helper()
	got, err := c.SearchTerms(ctx, opts)
	if err != nil {
		t.Fatalf("%s: SearchTerms: %v", label, err)
	}
	want, scores := refTermSearch(data, opts)
	compareTermResult(t, got, want, scores, label)
	for _, m := range got.Matches {
		i := slices.IndexFunc(data, func(r vectorstore.Record) bool { return r.ID == m.Record.ID })
		checkRecord(t, m.Record, data[i], vectorstore.Cosine, opts.WithVectors)
		if !opts.WithVectors && m.Record.Vector != nil {
			t.Fatalf("%s: match %q has a vector without WithVectors", label, m.Record.ID)
		}
		if m.Record.Revision < 1 {
			t.Fatalf("%s: match %q has revision %d", label, m.Record.ID, m.Record.Revision)
		}
	}
	return got
}

// testTermsRoundTrip: Terms come back exactly from Get and List (with or
// without vectors), after Upsert, UpsertIf and a reopen; replacing a record
// replaces its document; Query matches carry none.
func testTermsRoundTrip(t *testing.T, s *suite) {
	c, name := s.open(t, 4)
	cfg := driver.Config{Name: name, Dimension: 4}
	r := rand.New(rand.NewPCG(23, 24))
	special := vectorstore.Terms{
		"plain": 1, "a.b.c": 2.5, "$dollar": 0.1, "with space": 1e-3, "ünïcode": 1e6, "日本語": 3,
		"quote\"d": 1e30, "1e-30": 1e-30, "tab\there": 7.25, "UPPER": 0.333,
		strings.Repeat("é", vectorstore.MaxTermBytes/2): 4, // exactly MaxTermBytes bytes
	}
	many := make(vectorstore.Terms, vectorstore.MaxTerms)
	for i := 0; i < vectorstore.MaxTerms; i++ {
		many[fmt.Sprintf("t%04d", i)] = float32(i%13+1) / 4
	}
	recs := []vectorstore.Record{
		{ID: "special", Layer: "lex", Vector: randVec(r, 4), Terms: special, CreatedAt: base},
		{ID: "many", Layer: "lex", Vector: randVec(r, 4), Terms: many, CreatedAt: base.Add(time.Second)},
		{ID: "none", Layer: "lex", Vector: randVec(r, 4), CreatedAt: base.Add(2 * time.Second)},
		{ID: "empty", Layer: "lex", Vector: randVec(r, 4), Terms: vectorstore.Terms{}, CreatedAt: base.Add(3 * time.Second)},
	}
	mustUpsert(t, c, recs...)
	check := func(c *vectorstore.Collection, recs []vectorstore.Record, label string) {
		t.Helper()
		for _, want := range recs {
			got := mustGet(t, c, want.ID)
			checkRecord(t, got, want, vectorstore.Cosine, true)
			sameTerms(t, got.Terms, want.Terms, label+": get "+want.ID)
		}
		for _, wv := range []bool{false, true} {
			all := listAll(t, c, vectorstore.ListOptions{Limit: 3, WithVectors: wv})
			if len(all) != len(recs) {
				t.Fatalf("%s: list %d records, want %d", label, len(all), len(recs))
			}
			for _, got := range all {
				i := slices.IndexFunc(recs, func(r vectorstore.Record) bool { return r.ID == got.ID })
				checkRecord(t, got, recs[i], vectorstore.Cosine, wv)
				sameTerms(t, got.Terms, recs[i].Terms, fmt.Sprintf("%s: list (vectors %v) %s", label, wv, got.ID))
			}
		}
		ms, err := c.Query(ctx, recs[0].Vector, vectorstore.QueryOptions{K: len(recs), WithVectors: true})
		if err != nil || len(ms) != len(recs) {
			t.Fatalf("%s: query: %d matches, %v", label, len(ms), err)
		}
		for _, m := range ms {
			if m.Record.Terms != nil {
				t.Fatalf("%s: Query match %s carries Terms; Query matches leave them nil", label, m.Record.ID)
			}
		}
	}
	check(c, recs, "after upsert")
	// The caller's map is the caller's: changing it after the write
	// changes nothing stored.
	special["plain"] = 99
	delete(special, "a.b.c")
	got := mustGet(t, c, "special")
	if got.Terms["plain"] != 1 || got.Terms["a.b.c"] != 2.5 {
		t.Fatalf("the stored document aliases the caller's map: %v", abbrevTerms(got.Terms))
	}
	special["plain"], special["a.b.c"] = 1, 2.5
	// UpsertIf writes the document too, and a replacement replaces it
	// whole: old terms are gone.
	rc := vectorstore.Record{ID: "cas", Layer: "lex", Vector: randVec(r, 4), Terms: vectorstore.Terms{"first": 1, "shared": 2}, CreatedAt: base.Add(4 * time.Second)}
	rev, err := c.UpsertIf(ctx, rc, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameTerms(t, mustGet(t, c, "cas").Terms, rc.Terms, "UpsertIf create")
	rc.Terms = vectorstore.Terms{"second": 0.5, "shared": 3}
	if _, err := c.UpsertIf(ctx, rc, rev); err != nil {
		t.Fatal(err)
	}
	sameTerms(t, mustGet(t, c, "cas").Terms, rc.Terms, "UpsertIf update")
	// A conflicting UpsertIf leaves the document as it was.
	stale := rc
	stale.Terms = vectorstore.Terms{"stale": 1}
	_, err = c.UpsertIf(ctx, stale, rev)
	wantConflict(t, err, "stale UpsertIf with terms")
	sameTerms(t, mustGet(t, c, "cas").Terms, rc.Terms, "after a conflict")
	// A replacement without terms removes the document; one with terms
	// gives it back.
	noTerms := recs[0]
	noTerms.Terms = nil
	mustUpsert(t, c, noTerms)
	sameTerms(t, mustGet(t, c, "special").Terms, nil, "replaced without terms")
	mustUpsert(t, c, recs[0])
	recs = append(recs, rc)
	check(c, recs, "after replacements")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := s.openCfg(t, cfg, nil)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	check(c2, recs, "after reopen")
	// The index, too, is back: the search agrees with the reference.
	for _, q := range []map[string]float64{{"plain": 1}, {"shared": 1, "second": 1, "t0042": 1}, {"t0001": 1, "ünïcode": 2}} {
		checkTermSearch(t, c2, recs, vectorstore.TermOptions{Terms: q, K: 10, Filter: vectorstore.Filter{Layer: "lex"}}, fmt.Sprintf("after reopen %v", q))
	}
}

var termQueries = []map[string]float64{
	{"memory": 1},
	{"rare": 1},
	{"absent": 1},
	{"sky": 1, "blue": 1},
	{"memory": 2, "the": 0.5, "ünïcode": 1},
	{"go": 1, "user": 1, "3.14": 1, "a.b": 1, "blue": 0.25},
	{"$x": 1, "with space": 1.5, "日本語": 1, "rarest": 3, "postgres": 1, "absent": 1},
}

// testTermSearch compares SearchTerms with the reference over corpora of
// several layers, kinds, threads and resources, queries of 1 to 6 terms,
// narrowing filters, K values and BM25 parameters.
func testTermSearch(t *testing.T, s *suite) {
	c, _ := s.open(t, 4)
	data := termDataset(4)
	mustUpsert(t, c, data[:32]...)
	mustUpsert(t, c, data[32:64]...)
	mustUpsert(t, c, data[64:]...)
	corpora := []vectorstore.Filter{
		{Layer: "semantic"},
		{Layer: "episodic", Kind: "fact"},
		{Layer: "semantic", Resource: "u1"},
		{Layer: "entity", Thread: "t2"},
		{Layer: "semantic", Kind: "summary", Thread: "t1", Resource: "u2"},
		{Layer: "none"},
	}
	var someIDs []string
	for i := 0; i < 96; i += 5 {
		someIDs = append(someIDs, fmt.Sprintf("d%02d", i))
	}
	someIDs = append(someIDs, "missing")
	narrowings := []struct {
		name string
		set  func(*vectorstore.Filter)
	}{
		{"none", func(*vectorstore.Filter) {}},
		{"ids", func(f *vectorstore.Filter) { f.IDs = someIDs }},
		{"metadata", func(f *vectorstore.Filter) { f.Metadata = map[string]string{"lang": "en"} }},
		{"created", func(f *vectorstore.Filter) {
			f.CreatedFrom, f.CreatedBefore = base.Add(8*time.Minute), base.Add(20*time.Minute)
		}},
		{"valid-at+ids", func(f *vectorstore.Filter) { f.ValidAt = base.Add(12 * time.Minute); f.IDs = someIDs }},
	}
	params := []struct{ k1, b float64 }{{0, 0}, {2, 0.3}, {0.5, 1}}
	nonEmpty := 0
	for ci, corpus := range corpora {
		for qi, q := range termQueries {
			for _, nw := range narrowings {
				ks := []int{3, vectorstore.MaxK}
				if nw.name == "none" {
					ks = []int{1, 3, 10, vectorstore.MaxK}
				}
				for _, k := range ks {
					f := corpus
					nw.set(&f)
					p := params[(ci+qi)%len(params)]
					opts := vectorstore.TermOptions{Terms: q, K: k, Filter: f, K1: p.k1, B: p.b, WithVectors: k == 3 && nw.name == "ids"}
					got := checkTermSearch(t, c, data, opts, fmt.Sprintf("corpus %s query %v narrowed by %s, K=%d, k1=%v b=%v", briefFilter(corpus), q, nw.name, k, p.k1, p.b))
					if len(got.Matches) > 0 {
						nonEmpty++
					}
				}
			}
		}
	}
	if nonEmpty < 100 {
		t.Fatalf("only %d searches found anything: the fixture does not exercise the ranking", nonEmpty)
	}
	// Narrowing never changes a score: a record's score asked for alone
	// is its score in the full ranking.
	full, err := c.SearchTerms(ctx, vectorstore.TermOptions{Terms: termQueries[4], K: vectorstore.MaxK, Filter: vectorstore.Filter{Layer: "semantic"}})
	if err != nil || len(full.Matches) < 5 {
		t.Fatalf("full ranking: %d matches, %v", len(full.Matches), err)
	}
	for _, m := range full.Matches[:5] {
		one, err := c.SearchTerms(ctx, vectorstore.TermOptions{Terms: termQueries[4], K: 1, Filter: vectorstore.Filter{Layer: "semantic", IDs: []string{m.Record.ID}}})
		if err != nil || len(one.Matches) != 1 || one.Matches[0].Record.ID != m.Record.ID {
			t.Fatalf("search narrowed to %s: %+v %v", m.Record.ID, one.Matches, err)
		}
		if !relClose(one.Matches[0].Score, m.Score) || one.Docs != full.Docs || !relClose(one.AvgLen, full.AvgLen) {
			t.Fatalf("%s narrowed: score %v, docs %d, avglen %v; in the full ranking %v, %d, %v",
				m.Record.ID, one.Matches[0].Score, one.Docs, one.AvgLen, m.Score, full.Docs, full.AvgLen)
		}
	}
}

// testTermSearchTies: equal scores are ordered by ascending id, also at
// the K boundary, whatever order the records were written in.
func testTermSearchTies(t *testing.T, s *suite) {
	c, _ := s.open(t, 2)
	var data []vectorstore.Record
	add := func(id string, terms vectorstore.Terms) {
		rec := vectorstore.Record{ID: id, Layer: "lex", Vector: []float32{1, 0}, Terms: terms, CreatedAt: norm(base)}
		mustUpsert(t, c, rec)
		data = append(data, rec)
	}
	// Identical documents, each map built in its own insertion order.
	for i, id := range []string{"e", "c", "a", "d", "b"} {
		terms := vectorstore.Terms{}
		keys := []string{"tie", "pad", "more"}
		for j := range keys {
			k := keys[(i+j)%len(keys)]
			terms[k] = map[string]float32{"tie": 1, "pad": 1.5, "more": 0.5}[k]
		}
		add(id, terms)
	}
	add("z-best", vectorstore.Terms{"tie": 2, "pad": 1})             // same length, more "tie"
	add("0-worst", vectorstore.Terms{"tie": 1, "pad": 1, "long": 9}) // longer document
	add("unrelated", vectorstore.Terms{"other": 1})
	for _, q := range []map[string]float64{{"tie": 1}, {"tie": 1, "more": 1, "pad": 0.5}} {
		for k, want := range tieOrder {
			for rep := 0; rep < 3; rep++ {
				opts := vectorstore.TermOptions{Terms: q, K: k, Filter: vectorstore.Filter{Layer: "lex"}}
				res := checkTermSearch(t, c, data, opts, fmt.Sprintf("ties %v K=%d", q, k))
				if q["more"] > 0 {
					continue // "more" changes who wins; the reference checks it
				}
				if got := ids(res.Matches, matchID); !slices.Equal(got, want) {
					t.Fatalf("query %v K=%d: %v, want %v (ties broken by id, also at the K boundary)", q, k, got, want)
				}
			}
		}
	}
	// All tied: only ids decide.
	res, err := c.SearchTerms(ctx, vectorstore.TermOptions{Terms: map[string]float64{"pad": 1, "tie": 1}, K: 2,
		Filter: vectorstore.Filter{Layer: "lex", IDs: []string{"e", "d", "c", "b", "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res.Matches, matchID); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("all-tied K=2: %v, want [a b]", got)
	}
	if res.Matches[0].Score != res.Matches[1].Score {
		t.Fatalf("identical documents score %v and %v: not a tie", res.Matches[0].Score, res.Matches[1].Score)
	}
}

// termModel is the expected content of a collection, by id.
type termModel map[string]vectorstore.Record

func (m termModel) records() []vectorstore.Record {
	out := make([]vectorstore.Record, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b vectorstore.Record) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// testTermSearchUpdates: every write is visible to the next search, with
// the corpus' statistics: replacing a document, removing it, moving the
// record to another layer, deleting it by id, revision or filter.
func testTermSearchUpdates(t *testing.T, s *suite) {
	c, _ := s.open(t, 2)
	m := termModel{}
	put := func(recs ...vectorstore.Record) {
		t.Helper()
		mustUpsert(t, c, recs...)
		for _, r := range recs {
			m[r.ID] = r
		}
	}
	doc := func(id, layer, resource string, terms vectorstore.Terms) vectorstore.Record {
		return vectorstore.Record{ID: id, Layer: layer, Scope: vectorstore.Scope{Resource: resource}, Vector: []float32{1, 1},
			Terms: terms, CreatedAt: norm(base.Add(time.Duration(len(m)) * time.Second))}
	}
	for i := 0; i < 12; i++ {
		id := fmt.Sprintf("s%02d", i)
		terms := vectorstore.Terms{"common": float32(1 + i%3), "uniq-" + id: 1}
		if i%2 == 0 {
			terms["even"] = 2
		}
		put(doc(id, "semantic", []string{"u1", "u2"}[i%2], terms))
	}
	put(doc("e00", "episodic", "u1", vectorstore.Terms{"common": 5, "even": 1}))
	queries := []map[string]float64{{"common": 1}, {"even": 1, "common": 0.5}, {"uniq-s03": 1, "new": 1}, {"uniq-s06": 1, "common": 1}}
	corpora := []vectorstore.Filter{{Layer: "semantic"}, {Layer: "semantic", Resource: "u1"}, {Layer: "episodic"}}
	checkAll := func(step string) {
		t.Helper()
		for _, f := range corpora {
			for _, q := range queries {
				checkTermSearch(t, c, m.records(), vectorstore.TermOptions{Terms: q, K: 20, Filter: f}, fmt.Sprintf("%s: corpus %s query %v", step, briefFilter(f), q))
			}
		}
	}
	docs := func(f vectorstore.Filter) int {
		t.Helper()
		res, err := c.SearchTerms(ctx, vectorstore.TermOptions{Terms: map[string]float64{"common": 1}, K: 1, Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		return res.Docs
	}
	checkAll("loaded")
	if n := docs(vectorstore.Filter{Layer: "semantic"}); n != 12 {
		t.Fatalf("semantic corpus holds %d documents, want 12", n)
	}
	// Replace a document: its old terms no longer find it.
	r := m["s03"]
	r.Terms = vectorstore.Terms{"new": 1, "common": 4, "longer": 3}
	put(r)
	checkAll("s03 replaced")
	res, err := c.SearchTerms(ctx, vectorstore.TermOptions{Terms: map[string]float64{"uniq-s03": 1}, K: 5, Filter: vectorstore.Filter{Layer: "semantic"}})
	if err != nil || len(res.Matches) != 0 || res.DocFreq["uniq-s03"] != 0 {
		t.Fatalf("replaced document still found by its old term: %+v %v", res, err)
	}
	// UpsertIf replaces it too.
	r = mustGet(t, c, "s04")
	r.Terms = vectorstore.Terms{"common": 1, "cas": 2}
	if _, err := c.UpsertIf(ctx, r, r.Revision); err != nil {
		t.Fatal(err)
	}
	r.Revision = 0
	m["s04"] = r
	checkAll("s04 replaced by UpsertIf")
	// A conflicting UpsertIf and an invalid batch change nothing.
	bad := m["s05"]
	bad.Terms = vectorstore.Terms{"common": 100}
	_, err = c.UpsertIf(ctx, bad, mustGet(t, c, "s05").Revision+1000)
	wantConflict(t, err, "UpsertIf at a wrong revision")
	invalid := doc("s99", "semantic", "u1", vectorstore.Terms{"common": float32(math.NaN())})
	err = c.Upsert(ctx, bad, invalid)
	wantCode(t, err, vectorstore.CodeInvalidRecord, vectorstore.ErrInvalidRecord, "batch with a NaN weight")
	checkAll("after refused writes")
	// Without terms a record leaves the corpus, though it stays stored.
	r = m["s05"]
	r.Terms = nil
	put(r)
	checkAll("s05 without terms")
	if n := docs(vectorstore.Filter{Layer: "semantic"}); n != 11 {
		t.Fatalf("semantic corpus holds %d documents after s05 lost its terms, want 11", n)
	}
	// Another layer: it moves between corpora.
	r = m["s06"]
	r.Layer = "episodic"
	put(r)
	checkAll("s06 moved to episodic")
	if n := docs(vectorstore.Filter{Layer: "episodic"}); n != 2 {
		t.Fatalf("episodic corpus holds %d documents, want 2", n)
	}
	// Deletes, of every kind.
	if err := c.Delete(ctx, "s07", "missing"); err != nil {
		t.Fatal(err)
	}
	delete(m, "s07")
	checkAll("s07 deleted")
	if err := c.DeleteIf(ctx, "s08", mustGet(t, c, "s08").Revision); err != nil {
		t.Fatal(err)
	}
	delete(m, "s08")
	checkAll("s08 deleted by DeleteIf")
	n, err := c.DeleteWhere(ctx, vectorstore.Filter{Layer: "semantic", Resource: "u2"})
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	for id, r := range m {
		if r.Layer == "semantic" && r.Scope.Resource == "u2" {
			delete(m, id)
			removed++
		}
	}
	if n != removed {
		t.Fatalf("DeleteWhere removed %d, want %d", n, removed)
	}
	checkAll("semantic/u2 deleted by DeleteWhere")
	if err := c.Delete(ctx, "s00", "s02", "s04", "s10"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"s00", "s02", "s04", "s10"} {
		delete(m, id)
	}
	checkAll("semantic/u1 emptied")
	res, err = c.SearchTerms(ctx, vectorstore.TermOptions{Terms: map[string]float64{"common": 1}, K: 5, Filter: vectorstore.Filter{Layer: "semantic", Resource: "u1"}})
	if err != nil || res.Docs != 0 || res.AvgLen != 0 || len(res.Matches) != 0 || res.DocFreq["common"] != 0 {
		t.Fatalf("empty corpus: %+v %v, want no documents, AvgLen 0, no matches", res, err)
	}
}

// testTermCorpusIsolation: a corpus' statistics are its own: documents of
// other layers, kinds, threads and resources, and records without terms,
// change none of them.
func testTermCorpusIsolation(t *testing.T, s *suite) {
	c, _ := s.open(t, 2)
	m := termModel{}
	put := func(id, layer, kind, thread, resource string, terms vectorstore.Terms) {
		t.Helper()
		r := vectorstore.Record{ID: id, Layer: layer, Kind: kind, Scope: vectorstore.Scope{Thread: thread, Resource: resource},
			Vector: []float32{0, 1}, Terms: terms, CreatedAt: norm(base)}
		mustUpsert(t, c, r)
		m[r.ID] = r
	}
	for i := 0; i < 8; i++ {
		terms := vectorstore.Terms{"apple": float32(1 + i%2), "pear": 1}
		if i%3 == 0 {
			terms["plum"] = 2
		}
		put(fmt.Sprintf("a%d", i), "semantic", "fact", "t1", "u1", terms)
	}
	corpus := vectorstore.Filter{Layer: "semantic", Kind: "fact", Thread: "t1", Resource: "u1"}
	queries := []map[string]float64{{"apple": 1}, {"plum": 1, "pear": 1}, {"apple": 1, "plum": 1, "kiwi": 1}}
	before := make([]vectorstore.TermResult, len(queries))
	for i, q := range queries {
		before[i] = checkTermSearch(t, c, m.records(), vectorstore.TermOptions{Terms: q, K: 20, Filter: corpus}, fmt.Sprintf("alone, query %v", q))
	}
	// The same terms, much more often and in longer documents, everywhere
	// around the corpus; and records of the corpus without a document.
	heavy := vectorstore.Terms{"apple": 9, "plum": 9, "kiwi": 9, "filler": 30}
	put("o-resource", "semantic", "fact", "t1", "u2", heavy)
	put("o-global", "semantic", "fact", "t1", "", heavy)
	put("o-layer", "episodic", "fact", "t1", "u1", heavy)
	put("o-kind", "semantic", "summary", "t1", "u1", heavy)
	put("o-thread", "semantic", "fact", "t2", "u1", heavy)
	put("o-nothread", "semantic", "fact", "", "u1", heavy)
	put("a-noterms", "semantic", "fact", "t1", "u1", nil)
	put("a-emptyterms", "semantic", "fact", "t1", "u1", vectorstore.Terms{})
	for i, q := range queries {
		label := fmt.Sprintf("among others, query %v", q)
		after := checkTermSearch(t, c, m.records(), vectorstore.TermOptions{Terms: q, K: 20, Filter: corpus}, label)
		b := before[i]
		if after.Docs != b.Docs || !relClose(after.AvgLen, b.AvgLen) || len(after.Matches) != len(b.Matches) {
			t.Fatalf("%s: docs %d, avglen %v, %d matches; alone %d, %v, %d", label, after.Docs, after.AvgLen, len(after.Matches), b.Docs, b.AvgLen, len(b.Matches))
		}
		for term, n := range b.DocFreq {
			if after.DocFreq[term] != n {
				t.Fatalf("%s: DocFreq %v, alone %v", label, after.DocFreq, b.DocFreq)
			}
		}
		for j := range b.Matches {
			if after.Matches[j].Record.ID != b.Matches[j].Record.ID || !relClose(after.Matches[j].Score, b.Matches[j].Score) {
				t.Fatalf("%s: match %d is %s %v, alone %s %v", label, j, after.Matches[j].Record.ID, after.Matches[j].Score, b.Matches[j].Record.ID, b.Matches[j].Score)
			}
		}
	}
	if before[0].Docs != 8 {
		t.Fatalf("corpus of 8 documents reports %d", before[0].Docs)
	}
	// Every neighbouring corpus sees its own documents only, and an empty
	// field spans its axis.
	for _, f := range []vectorstore.Filter{
		{Layer: "semantic", Resource: "u2"}, {Layer: "episodic"}, {Layer: "semantic", Kind: "summary"},
		{Layer: "semantic", Thread: "t2"}, {Layer: "semantic"}, {Layer: "semantic", Resource: "u1"}, {Layer: "semantic", Kind: "fact", Thread: "t1"},
	} {
		for _, q := range queries {
			checkTermSearch(t, c, m.records(), vectorstore.TermOptions{Terms: q, K: 20, Filter: f}, fmt.Sprintf("corpus %s query %v", briefFilter(f), q))
		}
	}
	res, err := c.SearchTerms(ctx, vectorstore.TermOptions{Terms: map[string]float64{"apple": 1}, K: 1, Filter: vectorstore.Filter{Layer: "semantic"}})
	if err != nil || res.Docs != 13 {
		t.Fatalf("layer corpus: %d documents (%v), want the 13 with terms", res.Docs, err)
	}
}

// testInvalidTermInput: bad documents and bad term queries are typed
// errors naming the field, and nothing is written.
func testInvalidTermInput(t *testing.T, s *suite) {
	c, _ := s.open(t, 2)
	good := vectorstore.Record{ID: "good", Layer: "lex", Vector: []float32{1, 0}, Terms: vectorstore.Terms{"ok": 1}, CreatedAt: base}
	long := strings.Repeat("x", vectorstore.MaxTermBytes+1)
	tooMany := make(vectorstore.Terms, vectorstore.MaxTerms+1)
	for i := range vectorstore.MaxTerms + 1 {
		tooMany[fmt.Sprintf("t%05d", i)] = 1
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	recCases := []struct {
		name  string
		terms vectorstore.Terms
		field string
	}{
		{"empty-term", vectorstore.Terms{"ok": 1, "": 1}, "terms"},
		{"nan-weight", vectorstore.Terms{"w": nan}, "terms.w"},
		{"zero-weight", vectorstore.Terms{"w": 0}, "terms.w"},
		{"negative-weight", vectorstore.Terms{"w": -1}, "terms.w"},
		{"inf-weight", vectorstore.Terms{"w": inf}, "terms.w"},
		{"minus-inf-weight", vectorstore.Terms{"w": -inf}, "terms.w"},
		{"oversized-term", vectorstore.Terms{long: 1}, "terms." + quoteTerm(long)},
		{"nul-in-term", vectorstore.Terms{"a\x00b": 1}, "terms." + quoteTerm("a\x00b")},
		{"bad-utf8-term", vectorstore.Terms{"\xff": 1}, "terms." + quoteTerm("\xff")},
		{"too-many-terms", tooMany, "terms"},
	}
	for _, tc := range recCases {
		bad := vectorstore.Record{ID: "bad", Layer: "lex", Vector: []float32{0, 1}, Terms: tc.terms, CreatedAt: base}
		err := c.Upsert(ctx, good, bad)
		wantCode(t, err, vectorstore.CodeInvalidRecord, vectorstore.ErrInvalidRecord, "upsert "+tc.name)
		wantField(t, err, tc.field, "upsert "+tc.name)
		var e *vectorstore.Error
		if errors.As(err, &e); e.ID != "bad" {
			t.Fatalf("upsert %s: error names id %q, want \"bad\" (%v)", tc.name, e.ID, err)
		}
		_, err = c.UpsertIf(ctx, bad, 0)
		wantCode(t, err, vectorstore.CodeInvalidRecord, vectorstore.ErrInvalidRecord, "upsert if "+tc.name)
		wantField(t, err, tc.field, "upsert if "+tc.name)
		if n := mustCount(t, c, vectorstore.Filter{}); n != 0 {
			t.Fatalf("%s: %d records written by a refused write", tc.name, n)
		}
	}
	mustUpsert(t, c, good)
	okQ := map[string]float64{"ok": 1}
	lex := vectorstore.Filter{Layer: "lex"}
	qTooMany := make(map[string]float64, vectorstore.MaxTerms+1)
	for term := range tooMany {
		qTooMany[term] = 1
	}
	qCases := []struct {
		name  string
		opts  vectorstore.TermOptions
		code  vectorstore.Code
		sent  error
		field string
	}{
		{"k-zero", vectorstore.TermOptions{Terms: okQ, K: 0, Filter: lex}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "k"},
		{"k-negative", vectorstore.TermOptions{Terms: okQ, K: -1, Filter: lex}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "k"},
		{"k-above-max", vectorstore.TermOptions{Terms: okQ, K: vectorstore.MaxK + 1, Filter: lex}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "k"},
		{"no-terms", vectorstore.TermOptions{K: 1, Filter: lex}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "terms"},
		{"empty-terms", vectorstore.TermOptions{Terms: map[string]float64{}, K: 1, Filter: lex}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "terms"},
		{"too-many-terms", vectorstore.TermOptions{Terms: qTooMany, K: 1, Filter: lex}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "terms"},
		{"empty-term", vectorstore.TermOptions{Terms: map[string]float64{"": 1}, K: 1, Filter: lex}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "terms"},
		{"oversized-term", vectorstore.TermOptions{Terms: map[string]float64{long: 1}, K: 1, Filter: lex}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "terms." + quoteTerm(long)},
		{"nul-in-term", vectorstore.TermOptions{Terms: map[string]float64{"a\x00": 1}, K: 1, Filter: lex}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "terms." + quoteTerm("a\x00")},
		{"nan-weight", vectorstore.TermOptions{Terms: map[string]float64{"ok": 1, "w": math.NaN()}, K: 1, Filter: lex}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "terms.w"},
		{"zero-weight", vectorstore.TermOptions{Terms: map[string]float64{"w": 0}, K: 1, Filter: lex}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "terms.w"},
		{"negative-weight", vectorstore.TermOptions{Terms: map[string]float64{"w": -0.5}, K: 1, Filter: lex}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "terms.w"},
		{"inf-weight", vectorstore.TermOptions{Terms: map[string]float64{"w": math.Inf(1)}, K: 1, Filter: lex}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "terms.w"},
		{"k1-negative", vectorstore.TermOptions{Terms: okQ, K: 1, Filter: lex, K1: -1}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "k1"},
		{"k1-nan", vectorstore.TermOptions{Terms: okQ, K: 1, Filter: lex, K1: math.NaN()}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "k1"},
		{"k1-inf", vectorstore.TermOptions{Terms: okQ, K: 1, Filter: lex, K1: math.Inf(1)}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "k1"},
		{"b-negative", vectorstore.TermOptions{Terms: okQ, K: 1, Filter: lex, B: -0.1}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "b"},
		{"b-above-one", vectorstore.TermOptions{Terms: okQ, K: 1, Filter: lex, B: 1.5}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "b"},
		{"b-nan", vectorstore.TermOptions{Terms: okQ, K: 1, Filter: lex, B: math.NaN()}, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "b"},
		{"no-layer", vectorstore.TermOptions{Terms: okQ, K: 1}, vectorstore.CodeInvalidFilter, vectorstore.ErrInvalidFilter, "layer"},
		{"no-layer-but-kind", vectorstore.TermOptions{Terms: okQ, K: 1, Filter: vectorstore.Filter{Kind: "fact", Resource: "u1"}}, vectorstore.CodeInvalidFilter, vectorstore.ErrInvalidFilter, "layer"},
		{"bad-filter-value", vectorstore.TermOptions{Terms: okQ, K: 1, Filter: vectorstore.Filter{Layer: "lex", Metadata: map[string]string{"k": ""}}}, vectorstore.CodeInvalidFilter, vectorstore.ErrInvalidFilter, "metadata.k"},
		{"bad-filter-key", vectorstore.TermOptions{Terms: okQ, K: 1, Filter: vectorstore.Filter{Layer: "lex", Metadata: map[string]string{"a.b": "x"}}}, vectorstore.CodeUnknownFilterField, vectorstore.ErrUnknownFilterField, "metadata"},
		{"bad-layer", vectorstore.TermOptions{Terms: okQ, K: 1, Filter: vectorstore.Filter{Layer: "a\x00"}}, vectorstore.CodeInvalidFilter, vectorstore.ErrInvalidFilter, "layer"},
	}
	for _, tc := range qCases {
		_, err := c.SearchTerms(ctx, tc.opts)
		wantCode(t, err, tc.code, tc.sent, "search "+tc.name)
		wantField(t, err, tc.field, "search "+tc.name)
	}
	// The limits themselves are fine.
	edge := strings.Repeat("é", vectorstore.MaxTermBytes/2)
	res, err := c.SearchTerms(ctx, vectorstore.TermOptions{Terms: map[string]float64{edge: 1, "ok": 1e200}, K: vectorstore.MaxK, Filter: lex, K1: 1e-6, B: 1})
	if err != nil || len(res.Matches) != 1 {
		t.Fatalf("search at the limits: %+v %v", res, err)
	}
	delete(qTooMany, "t00000")
	if _, err := c.SearchTerms(ctx, vectorstore.TermOptions{Terms: qTooMany, K: 1, Filter: lex}); err != nil {
		t.Fatalf("search with MaxTerms terms: %v", err)
	}
}

// briefFilter names a filter's set fields, for labels.
func briefFilter(f vectorstore.Filter) string {
	var parts []string
	for _, kv := range [...][2]string{{"layer", f.Layer}, {"kind", f.Kind}, {"thread", f.Thread}, {"resource", f.Resource}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	if len(f.IDs) > 0 {
		parts = append(parts, fmt.Sprintf("ids=%v", f.IDs))
	}
	if len(f.Metadata) > 0 {
		parts = append(parts, fmt.Sprintf("metadata=%v", f.Metadata))
	}
	for _, kv := range []struct {
		name string
		t    time.Time
	}{{"created_from", f.CreatedFrom}, {"created_before", f.CreatedBefore}, {"valid_at", f.ValidAt}} {
		if !kv.t.IsZero() {
			parts = append(parts, kv.name+"="+kv.t.UTC().Format(time.RFC3339Nano))
		}
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// quoteTerm is how an error's Field names a term: quoted, invalid UTF-8
// replaced, cut at 80 bytes.
func quoteTerm(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return "\"" + strings.ToValidUTF8(s, "\uFFFD") + "\""
}

func wantField(t *testing.T, err error, field, what string) {
	t.Helper()
	var e *vectorstore.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: %v is not a *vectorstore.Error", what, err)
	}
	if e.Field != field {
		t.Fatalf("%s: Field = %q, want %q (%v)", what, e.Field, field, err)
	}
}

// testTermSearchConcurrent: searches run alongside writes (run under
// -race) and each sees a consistent ranking; a corpus nobody writes keeps
// its answer throughout; the final state agrees with the reference.
func testTermSearchConcurrent(t *testing.T, s *suite) {
	c, _ := s.open(t, 2)
	m := termModel{}
	for i := 0; i < 6; i++ {
		r := vectorstore.Record{ID: fmt.Sprintf("still%d", i), Layer: "still", Vector: []float32{1, 0},
			Terms: vectorstore.Terms{"shared": float32(1 + i%3), "w0": 1}, CreatedAt: norm(base)}
		mustUpsert(t, c, r)
		m[r.ID] = r
	}
	stillOpts := vectorstore.TermOptions{Terms: map[string]float64{"shared": 1, "w0": 1}, K: 4, Filter: vectorstore.Filter{Layer: "still"}}
	still := checkTermSearch(t, c, m.records(), stillOpts, "still corpus before writes")
	const writers, ops = 2, 30
	final := make([]termModel, writers)
	var wg sync.WaitGroup
	errc := make(chan error, writers+2)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			mine := termModel{}
			final[w] = mine
			for i := 0; i < ops; i++ {
				id := fmt.Sprintf("w%d-%d", w, i%8)
				if i%5 == 4 {
					if err := c.Delete(ctx, id); err != nil {
						errc <- err
						return
					}
					delete(mine, id)
					continue
				}
				r := vectorstore.Record{ID: id, Layer: "busy", Vector: []float32{0, 1}, CreatedAt: norm(base.Add(time.Duration(i) * time.Second)),
					Terms: vectorstore.Terms{"shared": float32(1 + i%3), fmt.Sprintf("w%d", w): float32(1 + i%2)}}
				if err := c.Upsert(ctx, r); err != nil {
					errc <- err
					return
				}
				mine[id] = r
			}
		}(w)
	}
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	for rd := 0; rd < 2; rd++ {
		rwg.Add(1)
		go func(rd int) {
			defer rwg.Done()
			busy := vectorstore.TermOptions{Terms: map[string]float64{"shared": 1, "w0": 1}, K: 5, Filter: vectorstore.Filter{Layer: "busy"}}
			for n := 0; ; n++ {
				select {
				case <-stop:
					if n > 0 {
						return
					}
				default:
				}
				if rd == 1 {
					res, err := c.SearchTerms(ctx, stillOpts)
					if err != nil {
						errc <- err
						return
					}
					if res.Docs != still.Docs || !relClose(res.AvgLen, still.AvgLen) || !slices.Equal(ids(res.Matches, matchID), ids(still.Matches, matchID)) {
						errc <- fmt.Errorf("the still corpus changed under writes to another layer: %+v, was %+v", res, still)
						return
					}
					continue
				}
				res, err := c.SearchTerms(ctx, busy)
				if err != nil {
					errc <- err
					return
				}
				if err := termInvariants(res, busy, writers*8); err != nil {
					errc <- err
					return
				}
			}
		}(rd)
	}
	stopReaders(t, &wg, stop, &rwg, errc)
	for _, mine := range final {
		for id, r := range mine {
			m[id] = r
		}
	}
	for _, q := range []map[string]float64{{"shared": 1}, {"w0": 1, "w1": 2}, {"shared": 1, "w1": 1}} {
		checkTermSearch(t, c, m.records(), vectorstore.TermOptions{Terms: q, K: 10, Filter: vectorstore.Filter{Layer: "busy"}}, fmt.Sprintf("after concurrent writes, query %v", q))
	}
}

// termInvariants checks what holds of any answer, whatever the writes.
func termInvariants(res vectorstore.TermResult, opts vectorstore.TermOptions, maxDocs int) error {
	if res.Docs < 0 || res.Docs > maxDocs || res.Docs == 0 && res.AvgLen != 0 || res.Docs > 0 && !(res.AvgLen > 0) {
		return fmt.Errorf("inconsistent statistics: %d docs, avglen %v", res.Docs, res.AvgLen)
	}
	if len(res.DocFreq) != len(opts.Terms) {
		return fmt.Errorf("DocFreq %v for query %v", res.DocFreq, opts.Terms)
	}
	for term := range opts.Terms {
		if n, ok := res.DocFreq[term]; !ok || n < 0 || n > res.Docs {
			return fmt.Errorf("DocFreq %v with %d docs", res.DocFreq, res.Docs)
		}
	}
	if len(res.Matches) > opts.K || len(res.Matches) > res.Docs {
		return fmt.Errorf("%d matches, K %d, %d docs", len(res.Matches), opts.K, res.Docs)
	}
	for i, m := range res.Matches {
		if m.Record.Layer != opts.Filter.Layer || m.Record.Terms != nil || !(m.Score > 0) || math.IsInf(m.Score, 0) {
			return fmt.Errorf("match %s: layer %q, terms %v, score %v", m.Record.ID, m.Record.Layer, m.Record.Terms, m.Score)
		}
		if i > 0 && driver.CompareMatches(&res.Matches[i-1], &m) >= 0 {
			return fmt.Errorf("matches out of order at %d: %v", i, ids(res.Matches, matchID))
		}
	}
	return nil
}
