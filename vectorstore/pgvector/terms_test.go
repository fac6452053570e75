package pgvector

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

func relClose(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// termCorpus is a random corpus over several layers, kinds, resources and
// threads: Zipf-distributed words (a few in most documents, most in few),
// weights 1, 0.5 and 0.25, some records without a document, and pairs of
// identical documents in one corpus so that scores tie exactly.
func termCorpus(r *rand.Rand, n int) []vectorstore.Record {
	z := rand.NewZipf(r, 1.1, 1, 299)
	layers := []string{"semantic", "episodic"}
	kinds := []string{"message", "summary"}
	resources := []string{"u1", "u2", ""}
	weights := []float32{1, 0.5, 0.25}
	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	out := make([]vectorstore.Record, 0, n)
	for i := 0; i < n; i++ {
		res := resources[r.IntN(len(resources))]
		th := ""
		if res != "" && r.IntN(4) > 0 {
			th = fmt.Sprintf("%s-t%d", res, r.IntN(4))
		}
		rec := vectorstore.Record{
			ID: fmt.Sprintf("r%04d", r.IntN(100000)*10+i%10), Layer: layers[r.IntN(2)], Kind: kinds[r.IntN(2)],
			Scope:     vectorstore.Scope{Thread: th, Resource: res},
			Vector:    []float32{r.Float32() + 0.1, r.Float32()},
			Metadata:  map[string]string{"lang": []string{"en", "de"}[r.IntN(2)]},
			CreatedAt: base.Add(time.Duration(i) * time.Minute),
		}
		if r.IntN(10) > 0 {
			rec.Terms = vectorstore.Terms{}
			for k := 3 + r.IntN(25); k > 0; k-- {
				rec.Terms[fmt.Sprintf("w%03d", z.Uint64())] += weights[r.IntN(3)]
			}
		}
		if i > 0 && r.IntN(8) == 0 {
			// The previous record's twin: same corpus, same document.
			p := out[len(out)-1]
			rec.Layer, rec.Kind, rec.Scope, rec.Terms = p.Layer, p.Kind, p.Scope, maps.Clone(p.Terms)
		}
		out = append(out, rec)
	}
	// Unique ids.
	seen := map[string]bool{}
	for i := range out {
		for seen[out[i].ID] {
			out[i].ID += "x"
		}
		seen[out[i].ID] = true
	}
	return out
}

// refSearch is the reference answer to opts over the records.
func refSearch(recs []vectorstore.Record, opts vectorstore.TermOptions) driver.TermResult {
	f := opts.Filter
	cf := driver.Filter{Layer: f.Layer, Kind: f.Kind, Thread: f.Thread, Resource: f.Resource}
	var corpus []*driver.Record
	for i := range recs {
		if cf.Matches(&recs[i]) {
			corpus = append(corpus, &recs[i])
		}
	}
	k1, b := opts.K1, opts.B
	if k1 == 0 {
		k1 = 1.2
	}
	if b == 0 {
		b = 0.75
	}
	return driver.RankTerms(corpus, driver.TermQuery{Terms: opts.Terms, K: opts.K, Filter: f, K1: k1, B: b}, f.Matches)
}

// sameResult compares a SearchTerms answer with the reference: statistics,
// the same ids in the same order, scores within 1e-9.
func sameResult(t *testing.T, got, want driver.TermResult, label string) {
	t.Helper()
	if got.Docs != want.Docs || !relClose(got.AvgLen, want.AvgLen) {
		t.Fatalf("%s: Docs %d AvgLen %v, want %d %v", label, got.Docs, got.AvgLen, want.Docs, want.AvgLen)
	}
	for term, df := range want.DocFreq {
		if got.DocFreq[term] != df {
			t.Fatalf("%s: DocFreq[%q] = %d, want %d", label, term, got.DocFreq[term], df)
		}
	}
	if len(got.Matches) != len(want.Matches) {
		t.Fatalf("%s: %d matches %v, want %d %v", label, len(got.Matches), matchIDs(got.Matches), len(want.Matches), matchIDs(want.Matches))
	}
	for i := range want.Matches {
		g, w := got.Matches[i], want.Matches[i]
		if g.Record.ID != w.Record.ID || !relClose(g.Score, w.Score) {
			t.Fatalf("%s: match %d is %s %v, want %s %v\n got %v\nwant %v", label, i, g.Record.ID, g.Score, w.Record.ID, w.Score,
				matchIDs(got.Matches), matchIDs(want.Matches))
		}
		if g.Record.Terms != nil {
			t.Fatalf("%s: match %s carries its terms", label, g.Record.ID)
		}
	}
}

func matchIDs(ms []driver.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%s:%.6g", m.Record.ID, m.Score)
	}
	return out
}

func openTermColl(t *testing.T, pool *pgxpool.Pool, prefix string, opts *Options) (*vectorstore.Collection, string) {
	t.Helper()
	name := fmt.Sprintf("%s_%08x", prefix, rand.Uint32())
	t.Cleanup(func() { dropCollection(t, pool, name) })
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Dimension = 2
	c, err := OpenCollection(ctx, pool, name, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, name
}

// randomQueries checks SearchTerms against the reference for random
// queries over every kind of corpus: a layer, with a kind, a resource, a
// thread, or all of them; narrowed by ids or metadata or not; K small
// (ties and pruning at the K boundary) or larger than the corpus.
func randomQueries(t *testing.T, c *vectorstore.Collection, recs []vectorstore.Record, r *rand.Rand, n int) {
	t.Helper()
	z := rand.NewZipf(r, 1.1, 1, 320)
	for i := 0; i < n; i++ {
		f := vectorstore.Filter{Layer: []string{"semantic", "episodic"}[r.IntN(2)]}
		switch r.IntN(5) {
		case 1:
			f.Kind = "message"
		case 2:
			f.Resource = "u1"
		case 3:
			f.Resource, f.Thread = "u2", fmt.Sprintf("u2-t%d", r.IntN(4))
		case 4:
			f.Kind, f.Resource = "summary", "u1"
		}
		switch r.IntN(4) {
		case 1:
			f.Metadata = map[string]string{"lang": "de"}
		case 2:
			for j := 0; j < 30; j++ {
				f.IDs = append(f.IDs, recs[r.IntN(len(recs))].ID)
			}
			f.IDs = append(f.IDs, "missing")
		}
		q := map[string]float64{}
		nterms := 1 + r.IntN(8)
		if i%25 == 24 {
			nterms = 2 * maxPrunedTerms // ranked exhaustively whatever the corpus
		}
		for j := nterms; j > 0; j-- {
			q[fmt.Sprintf("w%03d", z.Uint64())] = []float64{1, 0.5, 2}[r.IntN(3)]
		}
		opts := vectorstore.TermOptions{Terms: q, K: []int{1, 3, 10, 50, 1000}[r.IntN(5)], Filter: f, WithVectors: r.IntN(2) == 0}
		if r.IntN(3) == 0 {
			opts.K1, opts.B = 0.9, 0.4
		}
		got, err := c.SearchTerms(ctx, opts)
		if err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		label := fmt.Sprintf("query %d (filter %+v, terms %v, K %d)", i, f, q, opts.K)
		sameResult(t, got, refSearch(recs, opts), label)
		for _, m := range got.Matches {
			if opts.WithVectors != (m.Record.Vector != nil) {
				t.Fatalf("%s: match %s vector %v with WithVectors %v", label, m.Record.ID, m.Record.Vector, opts.WithVectors)
			}
		}
	}
}

// TestSearchTermsReference: SearchTerms ranks exactly like
// driver.RankTerms over a random corpus, through every path (ids,
// pruned, exhaustive), before and after the corpus changes.
func TestSearchTermsReference(t *testing.T) {
	pool := testPool(t, testDSN(t))
	c, _ := openTermColl(t, pool, "terms_ref", nil)
	r := rand.New(rand.NewPCG(1, 2))
	recs := termCorpus(r, 1500)
	if err := c.Upsert(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	checkTermIndex(t, c)
	// Every path: pruning always (no exhaustive ranking), and the default
	// (these corpora are small enough to be ranked exhaustively).
	forPaths(t, func() { randomQueries(t, c, recs, r, 200) })

	// Replace a third (new documents, moved scopes, documents dropped),
	// delete some, and ask again.
	fresh := termCorpus(rand.New(rand.NewPCG(3, 4)), 600)
	for i := range fresh {
		if i%3 == 0 {
			fresh[i].ID = recs[r.IntN(len(recs))].ID
		}
	}
	byID := map[string]vectorstore.Record{}
	for _, rec := range recs {
		byID[rec.ID] = rec
	}
	for _, rec := range fresh {
		if _, dup := byID[rec.ID]; dup && rec.ID != "" {
			byID[rec.ID] = rec
		}
	}
	var batch []vectorstore.Record
	seen := map[string]bool{}
	for _, rec := range fresh {
		if _, ok := byID[rec.ID]; ok && !seen[rec.ID] {
			seen[rec.ID] = true
			batch = append(batch, byID[rec.ID])
		}
	}
	if err := c.Upsert(ctx, batch...); err != nil {
		t.Fatal(err)
	}
	var gone []string
	for id := range byID {
		if r.IntN(10) == 0 {
			gone = append(gone, id)
		}
	}
	if err := c.Delete(ctx, gone...); err != nil {
		t.Fatal(err)
	}
	for _, id := range gone {
		delete(byID, id)
	}
	recs = recs[:0]
	for _, rec := range byID {
		recs = append(recs, rec)
	}
	checkTermIndex(t, c)
	forPaths(t, func() { randomQueries(t, c, recs, r, 150) })
}

// forPaths runs fn with the rankings pruned whatever the corpus, then with
// the default choice.
func forPaths(t *testing.T, fn func()) {
	t.Helper()
	old, oldDirect := exhaustiveMax, directMax
	defer func() { exhaustiveMax, directMax = old, oldDirect }()
	exhaustiveMax, directMax = 0, 0
	fn()
	exhaustiveMax = old
	fn()
	directMax = oldDirect
	fn()
}

// TestSearchTermsTiesAtK: identical documents tie exactly and are cut at
// K by id, whichever order they were written in.
func TestSearchTermsTiesAtK(t *testing.T) {
	pool := testPool(t, testDSN(t))
	c, _ := openTermColl(t, pool, "terms_ties", nil)
	var recs []vectorstore.Record
	for i := 39; i >= 0; i-- {
		terms := vectorstore.Terms{"common": 1, "tie": 0.5, fmt.Sprintf("own%02d", i): 1}
		if i%10 == 0 {
			terms["tie"] = 1 // a few score above the tied ones
		}
		recs = append(recs, vectorstore.Record{ID: fmt.Sprintf("id%02d", i), Layer: "l", Scope: vectorstore.Scope{Resource: "u"},
			Vector: []float32{1, 0}, Terms: terms})
	}
	if err := c.Upsert(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	old := exhaustiveMax
	defer func() { exhaustiveMax = old }()
	for i, k := range []int{1, 3, 4, 5, 7, 40, 1, 3, 4, 5, 7, 40} {
		exhaustiveMax = []int{0, old}[i/6]
		opts := vectorstore.TermOptions{Terms: map[string]float64{"tie": 1, "common": 0.5}, K: k, Filter: vectorstore.Filter{Layer: "l", Resource: "u"}}
		got, err := c.SearchTerms(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		sameResult(t, got, refSearch(recs, opts), fmt.Sprintf("K=%d", k))
		for i := 1; i < len(got.Matches); i++ {
			a, b := got.Matches[i-1], got.Matches[i]
			if a.Score == b.Score && a.Record.ID > b.Record.ID || a.Score < b.Score {
				t.Fatalf("K=%d: %v", k, matchIDs(got.Matches))
			}
		}
		if k >= 7 && (got.Matches[4].Score != got.Matches[5].Score || got.Matches[5].Score != got.Matches[6].Score) {
			t.Fatalf("K=%d: the tied documents do not tie exactly: %v", k, matchIDs(got.Matches))
		}
	}
}

// termIndexRow is one statistics row.
type termIndexRow struct {
	n            int64
	len          float64
	maxtf, mindl float64
}

// checkTermIndex compares the postings and statistics tables with what
// the records hold: every posting is a term of its record with the
// record's fields, length and sketch, every record's term has its posting,
// and every statistics row is the count (and length) of its group, with
// bounds that hold; no row is left at zero.
func checkTermIndex(t *testing.T, c *vectorstore.Collection) {
	t.Helper()
	checkTermIndexZeros(t, c, false)
}

// checkTermIndexZeros is checkTermIndex, tolerating rows at zero if
// zeros: the sweep skips rows that concurrent writers hold.
func checkTermIndexZeros(t *testing.T, c *vectorstore.Collection, zeros bool) {
	t.Helper()
	drv := driverOf(c)
	var recs []vectorstore.Record
	for rec, err := range c.All(ctx, vectorstore.ListOptions{Limit: 1000}) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	type pkey struct{ id, term string }
	type posting struct {
		tf                            float32
		dl                            float64
		sketch                        string
		layer, kind, resource, thread string
	}
	wantP := map[pkey]posting{}
	type skey struct{ layer, term, resource, thread, kind string }
	wantS := map[skey]*termIndexRow{}
	add := func(k skey, dl float64, tf float32, doc bool) {
		for _, th := range []string{"", k.thread} {
			if th == "" && k.thread != "" && th == k.thread {
				continue
			}
			kk := k
			kk.thread = th
			row := wantS[kk]
			if row == nil {
				row = &termIndexRow{maxtf: math.Inf(-1), mindl: math.Inf(1)}
				wantS[kk] = row
			}
			row.n++
			if doc {
				row.len += dl
			} else {
				row.maxtf, row.mindl = math.Max(row.maxtf, float64(tf)), math.Min(row.mindl, dl)
			}
			if k.thread == "" {
				break
			}
		}
	}
	for _, rec := range recs {
		if len(rec.Terms) == 0 {
			continue
		}
		dl := rec.Terms.Len()
		g := skey{rec.Layer, "", rec.Scope.Resource, rec.Scope.Thread, rec.Kind}
		add(g, dl, 0, true)
		for term, tf := range rec.Terms {
			wantP[pkey{rec.ID, term}] = posting{tf, dl, string(termSketch(rec.Terms)), rec.Layer, rec.Kind, rec.Scope.Resource, rec.Scope.Thread}
			g.term = term
			add(g, dl, tf, false)
		}
	}
	err := drv.withConn(ctx, true, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, drv.n.expand("SELECT id, term, tf, dl, sketch, layer, kind, resource, thread FROM {terms}"))
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			var k pkey
			var p posting
			var sk []byte
			if err := rows.Scan(&k.id, &k.term, &p.tf, &p.dl, &sk, &p.layer, &p.kind, &p.resource, &p.thread); err != nil {
				return err
			}
			p.sketch = string(sk)
			n++
			if w, ok := wantP[k]; !ok || w != p {
				return fmt.Errorf("posting %v = %+v, want %+v (present %v)", k, p, w, ok)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if n != len(wantP) {
			return fmt.Errorf("%d postings, want %d", n, len(wantP))
		}
		rows, err = conn.Query(ctx, drv.n.expand("SELECT layer, term, resource, thread, kind, n, len::float8, coalesce(maxtf, 'NaN'), coalesce(mindl, 'NaN') FROM {tstats}"))
		if err != nil {
			return err
		}
		n = 0
		for rows.Next() {
			var k skey
			var row termIndexRow
			var maxtf float32
			if err := rows.Scan(&k.layer, &k.term, &k.resource, &k.thread, &k.kind, &row.n, &row.len, &maxtf, &row.mindl); err != nil {
				return err
			}
			row.maxtf = float64(maxtf)
			w := wantS[k]
			if w == nil && zeros && row.n == 0 && row.len == 0 {
				continue
			}
			n++
			if w == nil {
				return fmt.Errorf("statistics row %+v = %+v, none expected (rows at zero must be swept)", k, row)
			}
			if row.n != w.n || !relClose(row.len, w.len) {
				return fmt.Errorf("statistics row %+v: n %d len %v, want %d %v", k, row.n, row.len, w.n, w.len)
			}
			if k.term != "" && !(row.maxtf >= w.maxtf && row.mindl <= w.mindl) {
				return fmt.Errorf("statistics row %+v: bounds maxtf %v mindl %v do not hold (max tf %v, min length %v)", k, row.maxtf, row.mindl, w.maxtf, w.mindl)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if n != len(wantS) {
			return fmt.Errorf("%d statistics rows (not at zero), want %d", n, len(wantS))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTermIndexMaintenance: the index follows every kind of write:
// replacement with another document, scope or kind, replacement without a
// document, the same document again, UpsertIf (created, replaced,
// conflicting), DeleteIf (matching, conflicting), Delete and DeleteWhere,
// and the COPY path.
func TestTermIndexMaintenance(t *testing.T) {
	for _, copyThreshold := range []int{0, 2} {
		t.Run(fmt.Sprintf("copy_threshold=%d", copyThreshold), func(t *testing.T) {
			pool := testPool(t, testDSN(t))
			c, _ := openTermColl(t, pool, "terms_maint", &Options{CopyThreshold: copyThreshold})
			r := rand.New(rand.NewPCG(5, uint64(copyThreshold)))
			recs := termCorpus(r, 300)
			if err := c.Upsert(ctx, recs...); err != nil {
				t.Fatal(err)
			}
			checkTermIndex(t, c)
			query := func(label string) {
				t.Helper()
				var all []vectorstore.Record
				for rec, err := range c.All(ctx, vectorstore.ListOptions{Limit: 1000}) {
					if err != nil {
						t.Fatal(err)
					}
					all = append(all, rec)
				}
				for _, f := range []vectorstore.Filter{{Layer: "semantic"}, {Layer: "episodic", Resource: "u1"}, {Layer: "semantic", Resource: "u2", Thread: "u2-t1"}} {
					opts := vectorstore.TermOptions{Terms: map[string]float64{"w001": 1, "w002": 1, "w007": 0.5, "w030": 2}, K: 20, Filter: f}
					got, err := c.SearchTerms(ctx, opts)
					if err != nil {
						t.Fatal(err)
					}
					sameResult(t, got, refSearch(all, opts), label)
				}
			}
			forPaths(t, func() { query("loaded") })

			// The same records again: nothing changes.
			if err := c.Upsert(ctx, recs[:50]...); err != nil {
				t.Fatal(err)
			}
			checkTermIndex(t, c)
			// Replacements: another document, another scope or kind, no
			// document, a document for a record that had none.
			var repl []vectorstore.Record
			for i := 0; i < 120; i++ {
				rec := recs[i].Clone()
				switch i % 4 {
				case 0:
					rec.Terms = vectorstore.Terms{"w001": 2, fmt.Sprintf("new%d", i): 1}
				case 1:
					rec.Scope = vectorstore.Scope{Resource: "u1", Thread: "u1-t9"}
					rec.Kind = "summary"
				case 2:
					rec.Terms = nil
				case 3:
					rec.Terms = vectorstore.Terms{"w002": 0.25, "w007": 3}
					rec.Layer = "episodic"
				}
				repl = append(repl, rec)
			}
			if err := c.Upsert(ctx, repl...); err != nil {
				t.Fatal(err)
			}
			checkTermIndex(t, c)
			forPaths(t, func() { query("replaced") })

			// UpsertIf: create, replace, conflict (nothing changes).
			rev, err := c.UpsertIf(ctx, vectorstore.Record{ID: "cas", Layer: "semantic", Scope: vectorstore.Scope{Resource: "u2", Thread: "u2-t1"},
				Vector: []float32{1, 0}, Terms: vectorstore.Terms{"w001": 1, "cas": 1}}, 0)
			if err != nil {
				t.Fatal(err)
			}
			checkTermIndex(t, c)
			if _, err := c.UpsertIf(ctx, vectorstore.Record{ID: "cas", Layer: "semantic", Vector: []float32{1, 0}, Terms: vectorstore.Terms{"other": 1}}, rev+1000); !errors.Is(err, vectorstore.ErrConflict) {
				t.Fatalf("stale UpsertIf: %v", err)
			}
			if _, err := c.UpsertIf(ctx, vectorstore.Record{ID: "cas", Layer: "semantic", Vector: []float32{1, 0}, Terms: vectorstore.Terms{"other": 1}}, 0); !errors.Is(err, vectorstore.ErrConflict) {
				t.Fatalf("UpsertIf create of an existing id: %v", err)
			}
			checkTermIndex(t, c)
			rev, err = c.UpsertIf(ctx, vectorstore.Record{ID: "cas", Layer: "episodic", Scope: vectorstore.Scope{Resource: "u1"},
				Vector: []float32{1, 0}, Terms: vectorstore.Terms{"w002": 1, "cas": 0.5}}, rev)
			if err != nil {
				t.Fatal(err)
			}
			checkTermIndex(t, c)
			forPaths(t, func() { query("upsert if") })
			// DeleteIf: conflict, then match.
			if err := c.DeleteIf(ctx, "cas", rev+1); !errors.Is(err, vectorstore.ErrConflict) {
				t.Fatalf("stale DeleteIf: %v", err)
			}
			checkTermIndex(t, c)
			if err := c.DeleteIf(ctx, "cas", rev); err != nil {
				t.Fatal(err)
			}
			checkTermIndex(t, c)
			// Delete (with a missing id and a duplicate) and DeleteWhere
			// (a thread, a metadata value).
			if err := c.Delete(ctx, recs[200].ID, recs[201].ID, recs[200].ID, "missing"); err != nil {
				t.Fatal(err)
			}
			checkTermIndex(t, c)
			if _, err := c.DeleteWhere(ctx, vectorstore.Filter{Layer: "semantic", Resource: "u2", Thread: "u2-t1"}); err != nil {
				t.Fatal(err)
			}
			checkTermIndex(t, c)
			if _, err := c.DeleteWhere(ctx, vectorstore.Filter{Metadata: map[string]string{"lang": "de"}}); err != nil {
				t.Fatal(err)
			}
			checkTermIndex(t, c)
			forPaths(t, func() { query("deleted") })
			if _, err := c.DeleteWhere(ctx, vectorstore.Filter{Layer: "semantic"}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.DeleteWhere(ctx, vectorstore.Filter{Layer: "episodic"}); err != nil {
				t.Fatal(err)
			}
			checkTermIndex(t, c)
			res, err := c.SearchTerms(ctx, vectorstore.TermOptions{Terms: map[string]float64{"w001": 1}, K: 5, Filter: vectorstore.Filter{Layer: "semantic"}})
			if err != nil || res.Docs != 0 || len(res.Matches) != 0 || res.AvgLen != 0 || res.DocFreq["w001"] != 0 {
				t.Fatalf("empty corpus: %+v %v", res, err)
			}
		})
	}
}

// TestTermIndexConcurrentWriters: writers replacing and deleting records
// of one resource at once, sharing most statistics rows, neither deadlock
// nor leave the statistics wrong.
func TestTermIndexConcurrentWriters(t *testing.T) {
	pool := testPool(t, testDSN(t))
	c, _ := openTermColl(t, pool, "terms_conc", nil)
	const writers, rounds = 6, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 99))
			for i := 0; i < rounds; i++ {
				// Overlapping ids between writers, in random order.
				var batch []vectorstore.Record
				for j := 0; j < 8; j++ {
					rec := termCorpus(r, 1)[0]
					rec.ID = fmt.Sprintf("c%02d", r.IntN(40))
					rec.Layer, rec.Scope = "semantic", vectorstore.Scope{Resource: "u1", Thread: fmt.Sprintf("t%d", r.IntN(3))}
					if slices.ContainsFunc(batch, func(x vectorstore.Record) bool { return x.ID == rec.ID }) {
						continue
					}
					batch = append(batch, rec)
				}
				var err error
				switch i % 4 {
				case 0, 1:
					err = c.Upsert(ctx, batch...)
				case 2:
					err = c.Delete(ctx, batch[0].ID, batch[1].ID)
				case 3:
					var got vectorstore.Record
					if got, err = c.Get(ctx, batch[0].ID); err == nil {
						got.Terms = vectorstore.Terms{"cas": 1, "w001": 0.5}
						_, err = c.UpsertIf(ctx, got, got.Revision)
					}
					if errors.Is(err, vectorstore.ErrNotFound) || errors.Is(err, vectorstore.ErrConflict) {
						err = nil
					}
					if err == nil {
						_, err = c.DeleteWhere(ctx, vectorstore.Filter{Layer: "semantic", Thread: fmt.Sprintf("t%d", r.IntN(3)), IDs: []string{batch[1].ID, batch[2].ID}})
					}
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d round %d: %w", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkTermIndexZeros(t, c, true)
}

// TestTermIndexMigration: a collection of schema version 2 (before the
// term index) migrates on open; its records read back without terms, and
// new documents are indexed and searched.
func TestTermIndexMigration(t *testing.T) {
	pool := testPool(t, testDSN(t))
	c, name := openTermColl(t, pool, "terms_premig", nil)
	if err := c.Upsert(ctx, vectorstore.Record{ID: "old", Layer: "l", Text: "before", Vector: []float32{1, 0}}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	table := tableFor(name)
	for _, sql := range []string{
		"ALTER TABLE " + pgx.Identifier{table}.Sanitize() + " DROP COLUMN terms, DROP COLUMN term_sketch",
		"DROP TABLE " + pgx.Identifier{table + "_terms"}.Sanitize() + ", " + pgx.Identifier{table + "_tstats"}.Sanitize(),
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, "DELETE FROM strata_schema_migrations WHERE component = $1 AND version >= 3", "vectorstore/pgvector:"+table); err != nil {
		t.Fatal(err)
	}
	c, err := OpenCollection(ctx, pool, name, nil)
	if err != nil {
		t.Fatalf("open of a version 2 collection: %v", err)
	}
	defer c.Close()
	got, err := c.Get(ctx, "old")
	if err != nil || got.Text != "before" || got.Terms != nil || got.Revision < 1 {
		t.Fatalf("record written before the migration: %+v %v", got, err)
	}
	recs := []vectorstore.Record{
		got,
		{ID: "new", Layer: "l", Vector: []float32{0, 1}, Terms: vectorstore.Terms{"hello": 1, "world": 0.5}},
		{ID: "new2", Layer: "l", Vector: []float32{0, 1}, Terms: vectorstore.Terms{"world": 1}},
	}
	if err := c.Upsert(ctx, recs[1:]...); err != nil {
		t.Fatal(err)
	}
	opts := vectorstore.TermOptions{Terms: map[string]float64{"world": 1}, K: 5, Filter: vectorstore.Filter{Layer: "l"}}
	res, err := c.SearchTerms(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	sameResult(t, res, refSearch(recs, opts), "after migration")
	checkTermIndex(t, c)
	var version int
	if err := pool.QueryRow(ctx, "SELECT max(version) FROM strata_schema_migrations WHERE component = $1", "vectorstore/pgvector:"+table).Scan(&version); err != nil || version != latest(collectionSteps) {
		t.Fatalf("schema version %d (%v), want %d", version, err, latest(collectionSteps))
	}
}

// TestTermSketchMigration: a collection of schema version 3 (term index
// without sketches) migrates on open; its postings have no sketch, which
// the pruned rankings bound by the corpus' maxtf (same answers), and
// records written again gain theirs.
func TestTermSketchMigration(t *testing.T) {
	pool := testPool(t, testDSN(t))
	c, name := openTermColl(t, pool, "terms_presketch", nil)
	recs := termCorpus(rand.New(rand.NewPCG(14, 15)), 800)
	if err := c.Upsert(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	c.Close()
	table := tableFor(name)
	for _, sql := range []string{
		"DROP INDEX " + pgx.Identifier{table + "_tix"}.Sanitize(),
		"ALTER TABLE " + pgx.Identifier{table}.Sanitize() + " DROP COLUMN term_sketch",
		"ALTER TABLE " + pgx.Identifier{table + "_terms"}.Sanitize() + " DROP COLUMN sketch",
		"CREATE INDEX " + pgx.Identifier{table + "_tix"}.Sanitize() + " ON " + pgx.Identifier{table + "_terms"}.Sanitize() + " (layer, term, resource, thread, kind) INCLUDE (id, tf, dl)",
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, "DELETE FROM strata_schema_migrations WHERE component = $1 AND version >= 4", "vectorstore/pgvector:"+table); err != nil {
		t.Fatal(err)
	}
	c, err := OpenCollection(ctx, pool, name, nil)
	if err != nil {
		t.Fatalf("open of a version 3 collection: %v", err)
	}
	defer c.Close()
	var missing int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{table + "_terms"}.Sanitize()+" WHERE sketch IS NULL").Scan(&missing); err != nil || missing == 0 {
		t.Fatalf("%d postings without sketch after the migration (%v)", missing, err)
	}
	forPaths(t, func() { randomQueries(t, c, recs, rand.New(rand.NewPCG(16, 17)), 60) })
	// Written again: sketches everywhere.
	if err := c.Upsert(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	checkTermIndex(t, c)
	forPaths(t, func() { randomQueries(t, c, recs, rand.New(rand.NewPCG(18, 19)), 60) })
}

// TestTermTablesDropped: term tables dropped outside strata are rebuilt
// from the records on the next open; a records table dropped outside
// strata takes its term index with it.
func TestTermTablesDropped(t *testing.T) {
	pool := testPool(t, testDSN(t))
	c, name := openTermColl(t, pool, "terms_dropped", nil)
	recs := termCorpus(rand.New(rand.NewPCG(8, 9)), 200)
	if err := c.Upsert(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	table := tableFor(name)
	if _, err := pool.Exec(ctx, "DROP TABLE "+pgx.Identifier{table + "_tstats"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	c2, err := OpenCollection(ctx, pool, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	checkTermIndex(t, c2)
	forPaths(t, func() { randomQueries(t, c2, recs, rand.New(rand.NewPCG(10, 11)), 40) })

	if _, err := pool.Exec(ctx, "DROP TABLE "+pgx.Identifier{table}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	c3, err := OpenCollection(ctx, pool, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	checkTermIndex(t, c3)
	var n int
	if err := pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM "+pgx.Identifier{table + "_terms"}.Sanitize()+") + (SELECT count(*) FROM "+pgx.Identifier{table + "_tstats"}.Sanitize()+")").Scan(&n); err != nil || n != 0 {
		t.Fatalf("term index of a re-created table: %d rows, %v", n, err)
	}
}

// TestSearchTermsPlan: over a resource, every ranking statement reads the
// postings through their indexes (index only) and never scans a table.
func TestSearchTermsPlan(t *testing.T) {
	pool := testPool(t, testDSN(t))
	c, name := openTermColl(t, pool, "terms_plan", nil)
	recs := termCorpus(rand.New(rand.NewPCG(12, 13)), 3000)
	if err := c.Upsert(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	table := tableFor(name)
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE "+pgx.Identifier{table + "_terms"}.Sanitize()+", "+pgx.Identifier{table}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	drv := driverOf(c)
	q := driver.TermQuery{Terms: map[string]float64{"w001": 1, "w040": 1, "w150": 1}, K: 10, K1: 1.2, B: 0.75,
		Filter: driver.Filter{Layer: "semantic", Resource: "u1"}}
	qs := []qterm{{term: "w001", wi: 0.1, ub: 0.3, maxtf: 2, df: 900}, {term: "w040", wi: 2, ub: 5, maxtf: 1, df: 40}, {term: "w150", wi: 3, ub: 9, maxtf: 1, df: 5}}
	r := &termRanker{c: drv, q: &q, qs: qs, avg: 10}
	for _, st := range []struct {
		name string
		sql  func() (string, []any)
	}{
		{"exhaustive", r.exhaustiveSQL},
		{"direct", r.directSQL},
		{"pruned", func() (string, []any) { return r.prunedSQL([]qterm{qs[2], qs[1], qs[0]}, 1) }},
		{"ids", func() (string, []any) {
			q.Filter.IDs = []string{recs[0].ID, recs[1].ID}
			defer func() { q.Filter.IDs = nil }()
			return r.idsSQL()
		}},
	} {
		sql, args := st.sql()
		var plan []string
		err := drv.withConn(ctx, true, func(conn *pgx.Conn) error {
			rows, err := conn.Query(ctx, "EXPLAIN "+sql, args...)
			if err != nil {
				return err
			}
			plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		text := strings.Join(plan, "\n")
		// The direct ranking reads the postings index only.
		if strings.Contains(text, "Seq Scan on "+table) || st.name != "direct" && !strings.Contains(text, table+"_tpk") {
			t.Fatalf("%s: the plan scans a table or misses the postings' primary key:\n%s", st.name, text)
		}
		if st.name != "ids" && !strings.Contains(text, table+"_tix") {
			t.Fatalf("%s: the plan misses the postings index:\n%s", st.name, text)
		}
	}
}

// TestSnapshotEnds: the two-round-trip transaction of SearchTerms leaves
// its connection idle whichever way it ends (committed with or without
// its last statement, rolled back after an error in a statement or in the
// caller), and runs in one REPEATABLE READ read-only snapshot.
func TestSnapshotEnds(t *testing.T) {
	pool := testPool(t, testDSN(t))
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	c := conn.Conn()
	idle := func(label string) {
		t.Helper()
		if st := c.PgConn().TxStatus(); st != 'I' {
			t.Fatalf("%s: transaction status %q, want idle", label, st)
		}
	}
	var iso, ro string
	s := &snapshot{conn: c}
	if err := s.first(ctx, "SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only')", nil, &iso, &ro); err != nil {
		t.Fatal(err)
	}
	if iso != "repeatable read" || ro != "on" {
		t.Fatalf("isolation %q, read only %q", iso, ro)
	}
	var n int
	err = s.end(ctx, s.last(ctx, "SELECT 1", nil, func(rows pgx.Rows) error {
		for rows.Next() {
			if err := rows.Scan(&n); err != nil {
				return err
			}
		}
		return rows.Err()
	}))
	if err != nil || n != 1 {
		t.Fatalf("last: n %d, err %v", n, err)
	}
	idle("commit with last")

	s = &snapshot{conn: c}
	if err := s.end(ctx, s.first(ctx, "SELECT 1", nil, &n)); err != nil {
		t.Fatal(err)
	}
	idle("commit without last")

	s = &snapshot{conn: c}
	if err := s.end(ctx, s.first(ctx, "SELECT 1/0", nil, &n)); err == nil {
		t.Fatal("division by zero: no error")
	}
	idle("error in first")

	s = &snapshot{conn: c}
	err = s.first(ctx, "SELECT 1", nil, &n)
	if err == nil {
		err = s.last(ctx, "SELECT 1/0", nil, func(rows pgx.Rows) error { rows.Close(); return rows.Err() })
	}
	if err = s.end(ctx, err); err == nil {
		t.Fatal("division by zero in last: no error")
	}
	idle("error in last")

	s = &snapshot{conn: c}
	err = s.first(ctx, "SELECT 1", nil, &n)
	if err == nil {
		err = errors.New("caller")
	}
	if err = s.end(ctx, err); err == nil || err.Error() != "caller" {
		t.Fatalf("caller's error: %v", err)
	}
	idle("caller's error")
}
