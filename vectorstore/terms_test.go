package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore/driver"
)

// memDriver is a small in-memory driver without a term index: the
// portable layer ranks its corpus in process. It records its List calls.
type memDriver struct {
	mu      sync.Mutex
	recs    map[string]driver.Record
	rev     int64
	lists   []driver.ListQuery
	listErr error
}

func newMem() *memDriver { return &memDriver{recs: map[string]driver.Record{}} }

func (m *memDriver) Info() driver.Info {
	return driver.Info{Name: "mem", Dimension: 2, Distance: driver.DistanceDot, Driver: "mem"}
}

func (m *memDriver) Upsert(_ context.Context, recs []driver.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range recs {
		m.rev++
		r = r.Clone()
		r.Revision = m.rev
		m.recs[r.ID] = r
	}
	return nil
}

func (m *memDriver) UpsertIf(ctx context.Context, r driver.Record, expected int64) (int64, error) {
	m.mu.Lock()
	if cur := m.recs[r.ID].Revision; cur != expected {
		m.mu.Unlock()
		return 0, driver.Conflict("upsert if", r.ID, expected, cur)
	}
	m.mu.Unlock()
	if err := m.Upsert(ctx, []driver.Record{r}); err != nil {
		return 0, err
	}
	return m.rev, nil
}

func (m *memDriver) Get(_ context.Context, id string) (driver.Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[id]
	return r.Clone(), ok, nil
}

func (m *memDriver) Delete(_ context.Context, ids []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		delete(m.recs, id)
	}
	return nil
}

func (m *memDriver) DeleteIf(_ context.Context, id string, expected int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.recs[id].Revision; cur != expected {
		return driver.Conflict("delete if", id, expected, cur)
	}
	delete(m.recs, id)
	return nil
}

func (m *memDriver) DeleteWhere(_ context.Context, f driver.Filter) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, r := range m.recs {
		if f.Matches(&r) {
			delete(m.recs, id)
			n++
		}
	}
	return n, nil
}

func (m *memDriver) Count(_ context.Context, f driver.Filter) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.recs {
		if f.Matches(&r) {
			n++
		}
	}
	return n, nil
}

func (m *memDriver) sorted() []driver.Record {
	out := make([]driver.Record, 0, len(m.recs))
	for _, r := range m.recs {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b driver.Record) int { return driver.CompareRecords(&a, &b) })
	return out
}

func (m *memDriver) List(_ context.Context, q driver.ListQuery) ([]driver.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lists = append(m.lists, q)
	if m.listErr != nil {
		return nil, m.listErr
	}
	all := m.sorted()
	if q.Desc {
		slices.Reverse(all)
	}
	var out []driver.Record
	for i := range all {
		r := &all[i]
		if !q.Filter.Matches(r) || q.After != nil && !driver.ComesAfter(r, q.After, q.Desc) {
			continue
		}
		c := r.Clone()
		if !q.WithVectors {
			c.Vector = nil
		}
		out = append(out, c)
		if len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

func (m *memDriver) Query(_ context.Context, q driver.VectorQuery) ([]driver.Match, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []driver.Match
	for _, r := range m.sorted() {
		if q.Filter.Matches(&r) {
			out = append(out, driver.Match{Record: r, Score: driver.Score(driver.DistanceDot, q.Vector, r.Vector)})
		}
	}
	slices.SortFunc(out, func(a, b driver.Match) int { return driver.CompareMatches(&a, &b) })
	return out[:min(len(out), q.K)], nil
}

func (m *memDriver) Close() error { return nil }

// nativeDriver has a term index: it records the queries it gets and gives
// a canned answer.
type nativeDriver struct {
	*memDriver
	queries []driver.TermQuery
	answer  driver.TermResult
	err     error
}

func (n *nativeDriver) SearchTerms(_ context.Context, q driver.TermQuery) (driver.TermResult, error) {
	n.queries = append(n.queries, q)
	return n.answer, n.err
}

func newTermColl(t *testing.T, d driver.Collection) *Collection {
	t.Helper()
	c, err := NewCollection(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var tctx = context.Background()

func TestSearchTermsDefaultsAndQuery(t *testing.T) {
	n := &nativeDriver{memDriver: newMem()}
	c := newTermColl(t, n)
	zone := time.FixedZone("X", 3600)
	from := time.Date(2024, 1, 2, 3, 4, 5, 678901234, zone)
	opts := TermOptions{Terms: map[string]float64{"a": 1, "b": 0.5}, K: 7, WithVectors: true,
		Filter: Filter{Layer: "l", Kind: "k", IDs: []string{"x", "y", "x"}, CreatedFrom: from}}
	if _, err := c.SearchTerms(tctx, opts); err != nil {
		t.Fatal(err)
	}
	q := n.queries[0]
	if q.K1 != 1.2 || q.B != 0.75 {
		t.Fatalf("defaults: k1 %v b %v, want 1.2 and 0.75", q.K1, q.B)
	}
	if q.K != 7 || !q.WithVectors || len(q.Terms) != 2 || q.Terms["a"] != 1 || q.Terms["b"] != 0.5 {
		t.Fatalf("query %+v does not carry the options", q)
	}
	if q.Filter.Layer != "l" || q.Filter.Kind != "k" || !slices.Equal(q.Filter.IDs, []string{"x", "y"}) ||
		!q.Filter.CreatedFrom.Equal(from.Truncate(time.Microsecond)) || q.Filter.CreatedFrom.Location() != time.UTC || q.Filter.CreatedFrom.Nanosecond()%1000 != 0 {
		t.Fatalf("filter %+v not normalised (ids deduplicated, times UTC microseconds)", q.Filter)
	}
	// The driver gets its own copy of the terms.
	opts.Terms["a"] = 99
	if q.Terms["a"] != 1 {
		t.Fatal("the query aliases the caller's terms")
	}
	for _, p := range []struct{ k1, b, wantK1, wantB float64 }{
		{2, 0.5, 2, 0.5}, {0.3, 1, 0.3, 1}, {0, 0.2, 1.2, 0.2}, {5, 0, 5, 0.75},
	} {
		if _, err := c.SearchTerms(tctx, TermOptions{Terms: map[string]float64{"a": 1}, K: 1, Filter: Filter{Layer: "l"}, K1: p.k1, B: p.b}); err != nil {
			t.Fatal(err)
		}
		q := n.queries[len(n.queries)-1]
		if q.K1 != p.wantK1 || q.B != p.wantB {
			t.Fatalf("k1 %v b %v reached the driver as %v %v, want %v %v", p.k1, p.b, q.K1, q.B, p.wantK1, p.wantB)
		}
	}
}

func TestSearchTermsValidation(t *testing.T) {
	n := &nativeDriver{memDriver: newMem()}
	c := newTermColl(t, n)
	ok := map[string]float64{"a": 1}
	l := Filter{Layer: "l"}
	long := strings.Repeat("x", MaxTermBytes+1)
	many := map[string]float64{}
	for i := 0; i <= MaxTerms; i++ {
		many[fmt.Sprint("t", i)] = 1
	}
	for _, tc := range []struct {
		name  string
		opts  TermOptions
		code  Code
		field string
	}{
		{"k 0", TermOptions{Terms: ok, Filter: l}, CodeInvalidArgument, "k"},
		{"k above", TermOptions{Terms: ok, K: MaxK + 1, Filter: l}, CodeInvalidArgument, "k"},
		{"no terms", TermOptions{K: 1, Filter: l}, CodeInvalidArgument, "terms"},
		{"too many terms", TermOptions{Terms: many, K: 1, Filter: l}, CodeInvalidArgument, "terms"},
		{"empty term", TermOptions{Terms: map[string]float64{"": 1}, K: 1, Filter: l}, CodeInvalidArgument, "terms"},
		{"long term", TermOptions{Terms: map[string]float64{long: 1}, K: 1, Filter: l}, CodeInvalidArgument, "terms." + quote(long)},
		{"nan", TermOptions{Terms: map[string]float64{"w": math.NaN()}, K: 1, Filter: l}, CodeInvalidArgument, "terms.w"},
		{"zero", TermOptions{Terms: map[string]float64{"w": 0}, K: 1, Filter: l}, CodeInvalidArgument, "terms.w"},
		{"negative", TermOptions{Terms: map[string]float64{"w": -2}, K: 1, Filter: l}, CodeInvalidArgument, "terms.w"},
		{"inf", TermOptions{Terms: map[string]float64{"w": math.Inf(-1)}, K: 1, Filter: l}, CodeInvalidArgument, "terms.w"},
		{"k1", TermOptions{Terms: ok, K: 1, Filter: l, K1: -1}, CodeInvalidArgument, "k1"},
		{"k1 inf", TermOptions{Terms: ok, K: 1, Filter: l, K1: math.Inf(1)}, CodeInvalidArgument, "k1"},
		{"b", TermOptions{Terms: ok, K: 1, Filter: l, B: 1.01}, CodeInvalidArgument, "b"},
		{"b nan", TermOptions{Terms: ok, K: 1, Filter: l, B: math.NaN()}, CodeInvalidArgument, "b"},
		{"no layer", TermOptions{Terms: ok, K: 1, Filter: Filter{Resource: "u"}}, CodeInvalidFilter, "layer"},
		{"bad filter", TermOptions{Terms: ok, K: 1, Filter: Filter{Layer: "l", IDs: []string{""}}}, CodeInvalidFilter, "ids"},
	} {
		_, err := c.SearchTerms(tctx, tc.opts)
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code || e.Field != tc.field || e.Op != "search_terms" {
			t.Errorf("%s: %v, want %s on %q", tc.name, err, tc.code, tc.field)
		}
	}
	if len(n.queries) != 0 {
		t.Fatalf("%d invalid queries reached the driver", len(n.queries))
	}
	cctx, cancel := context.WithCancel(tctx)
	cancel()
	if _, err := c.SearchTerms(cctx, TermOptions{Terms: ok, K: 1, Filter: l}); !errors.Is(err, context.Canceled) || len(n.queries) != 0 {
		t.Fatalf("cancelled context: %v, %d driver calls", err, len(n.queries))
	}
	c.Close()
	if _, err := c.SearchTerms(tctx, TermOptions{Terms: ok, K: 1, Filter: l}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

func TestRecordTermsValidation(t *testing.T) {
	c := newTermColl(t, newMem())
	rec := func(terms Terms) Record { return Record{ID: "r", Vector: []float32{1, 0}, Terms: terms} }
	long := strings.Repeat("é", MaxTermBytes/2) + "x"
	many := Terms{}
	for i := 0; i <= MaxTerms; i++ {
		many[fmt.Sprint("t", i)] = 1
	}
	for _, tc := range []struct {
		name  string
		terms Terms
		field string
	}{
		{"empty term", Terms{"": 1}, "terms"},
		{"long term", Terms{long: 1}, "terms." + quote(long)},
		{"nul", Terms{"a\x00": 1}, "terms." + quote("a\x00")},
		{"nan", Terms{"w": float32(math.NaN())}, "terms.w"},
		{"zero", Terms{"w": 0}, "terms.w"},
		{"negative", Terms{"w": -1}, "terms.w"},
		{"inf", Terms{"w": float32(math.Inf(1))}, "terms.w"},
		{"too many", many, "terms"},
	} {
		err := c.Upsert(tctx, rec(tc.terms))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidRecord || e.Field != tc.field || e.ID != "r" {
			t.Errorf("%s: %v, want CodeInvalidRecord on %q of r", tc.name, err, tc.field)
		}
	}
	if n, _ := c.Count(tctx, Filter{}); n != 0 {
		t.Fatalf("%d invalid records written", n)
	}
	// The driver gets a copy; an empty document is none.
	terms := Terms{strings.Repeat("é", MaxTermBytes/2): 2}
	if err := c.Upsert(tctx, rec(terms), Record{ID: "e", Vector: []float32{1, 0}, Terms: Terms{}}); err != nil {
		t.Fatal(err)
	}
	terms["other"] = 1
	got, _ := c.Get(tctx, "r")
	if len(got.Terms) != 1 {
		t.Fatalf("stored terms %v alias the caller's map", got.Terms)
	}
	if e, _ := c.Get(tctx, "e"); e.Terms != nil {
		t.Fatalf("an empty document reached the driver as %v, want nil", e.Terms)
	}
}

// The portable layer orders, cuts and cleans a driver's answer.
func TestSearchTermsNativeAnswerCleaned(t *testing.T) {
	n := &nativeDriver{memDriver: newMem()}
	c := newTermColl(t, n)
	m := func(id string, s float64) driver.Match {
		return driver.Match{Record: driver.Record{ID: id, Vector: []float32{1, 2}, Terms: driver.Terms{"x": 1}}, Score: s}
	}
	n.answer = driver.TermResult{Docs: 9, AvgLen: 2.5, DocFreq: map[string]int{"x": 4},
		Matches: []driver.Match{m("c", 1), m("b", 2), m("a", 1), m("d", 0.5)}}
	for _, wv := range []bool{false, true} {
		res, err := c.SearchTerms(tctx, TermOptions{Terms: map[string]float64{"x": 1, "y": 2}, K: 3, Filter: Filter{Layer: "l"}, WithVectors: wv})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, mt := range res.Matches {
			got = append(got, mt.Record.ID)
			if mt.Record.Terms != nil {
				t.Fatalf("match %s carries terms", mt.Record.ID)
			}
			if (mt.Record.Vector != nil) != wv {
				t.Fatalf("WithVectors %v: match %s vector %v", wv, mt.Record.ID, mt.Record.Vector)
			}
		}
		if !slices.Equal(got, []string{"b", "a", "c"}) {
			t.Fatalf("matches %v, want [b a c]: score descending, ties by id, cut at K", got)
		}
		if res.Docs != 9 || res.AvgLen != 2.5 || len(res.DocFreq) != 2 || res.DocFreq["x"] != 4 || res.DocFreq["y"] != 0 {
			t.Fatalf("statistics %+v, want the driver's with every query term in DocFreq", res)
		}
		// Restore what the previous round cleaned, for the next one.
		n.answer.Matches = []driver.Match{m("c", 1), m("b", 2), m("a", 1), m("d", 0.5)}
	}
	n.answer = driver.TermResult{} // nil DocFreq
	res, err := c.SearchTerms(tctx, TermOptions{Terms: map[string]float64{"x": 1}, K: 3, Filter: Filter{Layer: "l"}})
	if err != nil || len(res.DocFreq) != 1 || res.DocFreq["x"] != 0 {
		t.Fatalf("nil DocFreq: %+v %v", res.DocFreq, err)
	}
	cause := errors.New("backend down")
	n.err = cause
	_, err = c.SearchTerms(tctx, TermOptions{Terms: map[string]float64{"x": 1}, K: 3, Filter: Filter{Layer: "l"}})
	if !errors.Is(err, cause) || !strings.Contains(err.Error(), "search_terms") {
		t.Fatalf("driver error: %v, want it wrapped with the operation", err)
	}
}

// The fallback ranks by the formula, with statistics over the whole
// corpus: the narrowing filter fields choose what is returned only.
func TestSearchTermsFallbackBM25(t *testing.T) {
	mem := newMem()
	c := newTermColl(t, mem)
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := []Record{
		{ID: "A", Layer: "l", Vector: []float32{1, 0}, Terms: Terms{"x": 2, "y": 1}, CreatedAt: at, Metadata: map[string]string{"k": "v"}},
		{ID: "B", Layer: "l", Vector: []float32{0, 1}, Terms: Terms{"x": 1}, CreatedAt: at.Add(time.Hour)},
		{ID: "C", Layer: "l", Vector: []float32{1, 1}, Terms: Terms{"z": 4}, CreatedAt: at.Add(2 * time.Hour)},
		{ID: "D", Layer: "l", Vector: []float32{1, 1}, CreatedAt: at},                                      // no document
		{ID: "E", Layer: "m", Vector: []float32{1, 1}, Terms: Terms{"x": 1, "w": 100}, CreatedAt: at},      // another corpus
		{ID: "F", Layer: "l", Kind: "other", Vector: []float32{1, 1}, Terms: Terms{"q": 1}, CreatedAt: at}, // same layer, other kind
	}
	if err := c.Upsert(tctx, recs...); err != nil {
		t.Fatal(err)
	}
	// Corpus {Layer l}: A (len 3), B (1), C (4), F (1); avgdl 9/4; x in 2.
	avg := 9.0 / 4
	idf := math.Log(1 + (4-2+0.5)/(2+0.5))
	bm := func(tf, dl float64) float64 { return idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*dl/avg)) }
	wantA, wantB := bm(2, 3), bm(1, 1)
	for _, tc := range []struct {
		name string
		f    Filter
		want []string
	}{
		{"all", Filter{Layer: "l"}, []string{"B", "A"}}, // B's shorter document wins
		{"ids", Filter{Layer: "l", IDs: []string{"B", "C", "E"}}, []string{"B"}},
		{"metadata", Filter{Layer: "l", Metadata: map[string]string{"k": "v"}}, []string{"A"}},
		{"time", Filter{Layer: "l", CreatedFrom: at.Add(time.Minute)}, []string{"B"}},
	} {
		res, err := c.SearchTerms(tctx, TermOptions{Terms: map[string]float64{"x": 1}, K: 10, Filter: tc.f})
		if err != nil {
			t.Fatal(err)
		}
		if res.Docs != 4 || math.Abs(res.AvgLen-avg) > 1e-12 || res.DocFreq["x"] != 2 {
			t.Fatalf("%s: docs %d avglen %v df %v, want the whole corpus' 4, %v, 2", tc.name, res.Docs, res.AvgLen, res.DocFreq, avg)
		}
		var got []string
		for _, m := range res.Matches {
			got = append(got, m.Record.ID)
			want := map[string]float64{"A": wantA, "B": wantB}[m.Record.ID]
			if math.Abs(m.Score-want) > 1e-12*want {
				t.Fatalf("%s: %s scores %v, want %v", tc.name, m.Record.ID, m.Score, want)
			}
			if m.Record.Terms != nil || m.Record.Vector != nil {
				t.Fatalf("%s: match %s carries terms %v / vector %v", tc.name, m.Record.ID, m.Record.Terms, m.Record.Vector)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Fatalf("%s: matches %v, want %v", tc.name, got, tc.want)
		}
	}
	// The corpus is read with its own fields only: narrowing is the
	// portable layer's, after the statistics.
	for _, q := range mem.lists {
		f := q.Filter
		if f.Layer != "l" || f.Kind != "" || f.IDs != nil || f.Metadata != nil || !f.CreatedFrom.IsZero() || !f.CreatedBefore.IsZero() || !f.ValidAt.IsZero() {
			t.Fatalf("fallback listed with %+v, want the corpus fields only", f)
		}
	}
	res, err := c.SearchTerms(tctx, TermOptions{Terms: map[string]float64{"x": 1}, K: 1, Filter: Filter{Layer: "l"}, WithVectors: true})
	if err != nil || len(res.Matches) != 1 || !slices.Equal(res.Matches[0].Record.Vector, []float32{0, 1}) || res.Matches[0].Record.Terms != nil {
		t.Fatalf("WithVectors: %+v %v", res.Matches, err)
	}
	if q := mem.lists[len(mem.lists)-1]; !q.WithVectors {
		t.Fatal("fallback did not ask List for vectors")
	}
	// An empty corpus.
	res, err = c.SearchTerms(tctx, TermOptions{Terms: map[string]float64{"x": 1, "y": 1}, K: 1, Filter: Filter{Layer: "none"}})
	if err != nil || res.Docs != 0 || res.AvgLen != 0 || len(res.Matches) != 0 || len(res.DocFreq) != 2 {
		t.Fatalf("empty corpus: %+v %v", res, err)
	}
	// A failing List fails the search, wrapped.
	cause := errors.New("list failed")
	mem.listErr = cause
	if _, err := c.SearchTerms(tctx, TermOptions{Terms: map[string]float64{"x": 1}, K: 1, Filter: Filter{Layer: "l"}}); !errors.Is(err, cause) {
		t.Fatalf("list error: %v", err)
	}
}

// The fallback reads a corpus of more than one List page whole, resuming
// inside a group of equal creation times.
func TestSearchTermsFallbackPaging(t *testing.T) {
	mem := newMem()
	c := newTermColl(t, mem)
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	n := 2*MaxListLimit + 3
	recs := make([]Record, 0, n+1)
	for i := 0; i < n; i++ {
		recs = append(recs, Record{ID: fmt.Sprintf("r%06d", i), Layer: "l", Vector: []float32{1, 0},
			Terms: Terms{"w": float32(1 + i%4), "pad": float32(1 + i%3)}, CreatedAt: at.Add(time.Duration(i/7) * time.Second)})
	}
	recs[n-1].Terms = Terms{"w": 40, "rare": 1} // on the last page
	recs[0].Terms = Terms{"rare": 2}            // on the first
	recs = append(recs, Record{ID: "other", Layer: "m", Vector: []float32{1, 0}, Terms: Terms{"w": 1}, CreatedAt: at})
	if err := c.Upsert(tctx, recs...); err != nil {
		t.Fatal(err)
	}
	mem.lists = nil
	res, err := c.SearchTerms(tctx, TermOptions{Terms: map[string]float64{"w": 1, "rare": 1}, K: 3, Filter: Filter{Layer: "l"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(mem.lists) != 3 {
		t.Fatalf("%d List calls, want 3 pages of %d", len(mem.lists), MaxListLimit)
	}
	for i, q := range mem.lists {
		if q.Limit != MaxListLimit || (i == 0) != (q.After == nil) || q.Desc {
			t.Fatalf("List call %d: %+v", i, q)
		}
	}
	var corpus []*driver.Record
	for i := range recs[:n] {
		corpus = append(corpus, &recs[i])
	}
	want := driver.RankTerms(corpus, driver.TermQuery{Terms: map[string]float64{"w": 1, "rare": 1}, K: 3, Filter: driver.Filter{Layer: "l"}, K1: 1.2, B: 0.75}, nil)
	if res.Docs != n || res.DocFreq["w"] != n-1 || res.DocFreq["rare"] != 2 || res.Docs != want.Docs || res.AvgLen != want.AvgLen {
		t.Fatalf("docs %d df %v avglen %v, want %d, w %d rare 2, %v", res.Docs, res.DocFreq, res.AvgLen, n, n-1, want.AvgLen)
	}
	// The two "rare" documents lead: one from the first page, one from
	// the last.
	if len(res.Matches) != 3 || res.Matches[0].Record.ID != recs[0].ID || res.Matches[1].Record.ID != recs[n-1].ID {
		t.Fatalf("matches %v, want %s and %s first", res.Matches, recs[0].ID, recs[n-1].ID)
	}
	for i := range want.Matches {
		if res.Matches[i].Record.ID != want.Matches[i].Record.ID || res.Matches[i].Score != want.Matches[i].Score {
			t.Fatalf("match %d: %s %v, want %s %v", i, res.Matches[i].Record.ID, res.Matches[i].Score, want.Matches[i].Record.ID, want.Matches[i].Score)
		}
	}
}
