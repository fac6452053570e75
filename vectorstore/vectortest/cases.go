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

func testOpenConfig(t *testing.T, s *suite) {
	name := newName(t)
	if _, err := s.h.Open(ctx, t, driver.Config{Name: name, Dimension: 0, Distance: driver.DistanceCosine}); err == nil {
		t.Fatal("opening a new collection with dimension 0 succeeded, want CodeInvalidArgument")
	} else {
		wantCode(t, err, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "new collection, dimension 0")
	}
	c, err := s.openCfg(t, driver.Config{Name: name, Dimension: 6}, nil)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	info := c.Info()
	if info.Name != name || info.Dimension != 6 || info.Distance != vectorstore.Cosine || info.Driver == "" {
		t.Fatalf("Info() = %+v, want name %s, dimension 6, cosine, a driver name", info, name)
	}
	r := rand.New(rand.NewPCG(1, 2))
	mustUpsert(t, c, vectorstore.Record{ID: "a", Vector: randVec(r, 6), CreatedAt: base})
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	// Dimension 0 reopens with the stored dimension.
	c2, err := s.openCfg(t, driver.Config{Name: name}, nil)
	if err != nil {
		t.Fatalf("reopen with dimension 0: %v", err)
	}
	if got := c2.Info(); got.Dimension != 6 || got.Distance != vectorstore.Cosine {
		t.Fatalf("reopened Info() = %+v, want dimension 6 cosine", got)
	}
	if n := mustCount(t, c2, vectorstore.Filter{}); n != 1 {
		t.Fatalf("reopened count = %d, want 1", n)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = s.h.Open(ctx, t, driver.Config{Name: name, Dimension: 7, Distance: driver.DistanceCosine})
	wantCode(t, err, vectorstore.CodeConfigMismatch, vectorstore.ErrConfigMismatch, "reopen with another dimension")
	_, err = s.h.Open(ctx, t, driver.Config{Name: name, Dimension: 6, Distance: driver.DistanceEuclidean})
	wantCode(t, err, vectorstore.CodeConfigMismatch, vectorstore.ErrConfigMismatch, "reopen with another distance")
	// An empty distance reopens with the stored one.
	dot := newName(t)
	cd, err := s.openCfg(t, driver.Config{Name: dot, Dimension: 3, Distance: driver.DistanceDot}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cd.Close(); err != nil {
		t.Fatal(err)
	}
	cd, err = s.openCfg(t, driver.Config{Name: dot}, nil)
	if err != nil {
		t.Fatalf("reopen a dot collection with no distance: %v", err)
	}
	if got := cd.Info(); got.Distance != vectorstore.Dot || got.Dimension != 3 {
		t.Fatalf("reopened Info() = %+v, want dimension 3, dot", got)
	}
	_ = cd.Close()
	_, err = s.h.Open(ctx, t, driver.Config{Name: dot, Distance: driver.DistanceCosine})
	wantCode(t, err, vectorstore.CodeConfigMismatch, vectorstore.ErrConfigMismatch, "reopen dot as cosine")
}

func fullRecord(id string, r *rand.Rand, dim int) vectorstore.Record {
	return vectorstore.Record{
		ID: id, Layer: "semantic", Kind: "fact", Scope: vectorstore.Scope{Thread: "t1", Resource: "user-1"},
		Text: "the sky is blue " + id, Vector: randVec(r, dim),
		Metadata:  map[string]string{"lang": "en", "source": "chat"},
		CreatedAt: base.Add(time.Duration(len(id)) * time.Second), ValidFrom: base.Add(-time.Hour), ValidTo: base.Add(48 * time.Hour),
	}
}

func testCRUD(t *testing.T, s *suite) {
	c, _ := s.open(t, 8)
	r := rand.New(rand.NewPCG(3, 4))
	if n := mustCount(t, c, vectorstore.Filter{}); n != 0 {
		t.Fatalf("new collection count = %d", n)
	}
	a, b := fullRecord("a", r, 8), fullRecord("bb", r, 8)
	b.Scope = vectorstore.Scope{}
	b.Metadata = nil
	b.ValidTo = time.Time{}
	mustUpsert(t, c, a, b)
	if n := mustCount(t, c, vectorstore.Filter{}); n != 2 {
		t.Fatalf("count = %d, want 2", n)
	}
	for _, want := range []vectorstore.Record{a, b} {
		got, err := c.Get(ctx, want.ID)
		if err != nil {
			t.Fatalf("get %s: %v", want.ID, err)
		}
		checkRecord(t, got, want, vectorstore.Cosine, true)
	}
	_, err := c.Get(ctx, "missing")
	wantCode(t, err, vectorstore.CodeNotFound, vectorstore.ErrNotFound, "get missing")
	if err := c.Delete(ctx, "a", "missing"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err = c.Get(ctx, "a")
	wantCode(t, err, vectorstore.CodeNotFound, vectorstore.ErrNotFound, "get deleted")
	if err := c.Delete(ctx, "a"); err != nil {
		t.Fatalf("delete again (idempotent): %v", err)
	}
	if n := mustCount(t, c, vectorstore.Filter{}); n != 1 {
		t.Fatalf("count after delete = %d, want 1", n)
	}
	// CreatedAt zero is stamped by Options.Now.
	now := time.Date(2030, 1, 2, 3, 4, 5, 6789, time.UTC)
	c2, err := s.openCfg(t, driver.Config{Name: newName(t), Dimension: 8}, &vectorstore.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	mustUpsert(t, c2, vectorstore.Record{ID: "x", Vector: randVec(r, 8)})
	got, err := c2.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(norm(now)) {
		t.Fatalf("stamped CreatedAt = %v, want %v", got.CreatedAt, norm(now))
	}
}

func testUpsertReplaces(t *testing.T, s *suite) {
	c, _ := s.open(t, 4)
	r := rand.New(rand.NewPCG(5, 6))
	a := fullRecord("a", r, 4)
	mustUpsert(t, c, a, fullRecord("b", r, 4))
	a2 := vectorstore.Record{ID: "a", Layer: "episodic", Kind: "summary", Text: "replaced", Vector: randVec(r, 4),
		Metadata: map[string]string{"only": "this"}, CreatedAt: base.Add(time.Minute)}
	for i := 0; i < 3; i++ {
		mustUpsert(t, c, a2)
	}
	if n := mustCount(t, c, vectorstore.Filter{}); n != 2 {
		t.Fatalf("count after re-upserts = %d, want 2", n)
	}
	got, err := c.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	checkRecord(t, got, a2, vectorstore.Cosine, true)
	if n := mustCount(t, c, vectorstore.Filter{Metadata: map[string]string{"lang": "en"}}); n != 1 {
		t.Fatalf("old metadata still matches: count = %d, want 1", n)
	}
	if n := mustCount(t, c, vectorstore.Filter{Thread: "t1"}); n != 1 {
		t.Fatalf("old scope still matches: count = %d, want 1", n)
	}
}

func testUpsertBatchLastWins(t *testing.T, s *suite) {
	c, _ := s.open(t, 4)
	mustUpsert(t, c,
		vectorstore.Record{ID: "a", Text: "first", Vector: []float32{1, 0, 0, 0}, CreatedAt: base},
		vectorstore.Record{ID: "b", Text: "b", Vector: []float32{0, 1, 0, 0}, CreatedAt: base},
		vectorstore.Record{ID: "a", Text: "second", Vector: []float32{0, 0, 1, 0}, CreatedAt: base},
	)
	if n := mustCount(t, c, vectorstore.Filter{}); n != 2 {
		t.Fatalf("count = %d, want 2", n)
	}
	got, err := c.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "second" || got.Vector[2] != 1 {
		t.Fatalf("got %s, want the last occurrence", brief(got))
	}
}

func testInvalidInput(t *testing.T, s *suite) {
	c, _ := s.open(t, 4)
	good := vectorstore.Record{ID: "good", Vector: []float32{1, 2, 3, 4}, CreatedAt: base}
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := []struct {
		name     string
		rec      vectorstore.Record
		code     vectorstore.Code
		sentinel error
		field    string
	}{
		{"dimension", vectorstore.Record{ID: "x", Vector: []float32{1, 2, 3}}, vectorstore.CodeDimensionMismatch, vectorstore.ErrDimensionMismatch, "vector"},
		{"dimension-long", vectorstore.Record{ID: "x", Vector: []float32{1, 2, 3, 4, 5}}, vectorstore.CodeDimensionMismatch, vectorstore.ErrDimensionMismatch, "vector"},
		{"empty-vector", vectorstore.Record{ID: "x"}, vectorstore.CodeInvalidVector, vectorstore.ErrInvalidVector, "vector"},
		{"nan", vectorstore.Record{ID: "x", Vector: []float32{1, nan, 3, 4}}, vectorstore.CodeInvalidVector, vectorstore.ErrInvalidVector, "vector[1]"},
		{"inf", vectorstore.Record{ID: "x", Vector: []float32{1, 2, 3, -inf}}, vectorstore.CodeInvalidVector, vectorstore.ErrInvalidVector, "vector[3]"},
		{"zero-vector-cosine", vectorstore.Record{ID: "x", Vector: []float32{0, 0, 0, 0}}, vectorstore.CodeInvalidVector, vectorstore.ErrInvalidVector, "vector"},
		{"empty-id", vectorstore.Record{Vector: []float32{1, 2, 3, 4}}, vectorstore.CodeInvalidRecord, vectorstore.ErrInvalidRecord, "id"},
		{"nul-in-text", vectorstore.Record{ID: "x", Text: "a\x00b", Vector: []float32{1, 2, 3, 4}}, vectorstore.CodeInvalidRecord, vectorstore.ErrInvalidRecord, "text"},
		{"bad-utf8-layer", vectorstore.Record{ID: "x", Layer: "\xff", Vector: []float32{1, 2, 3, 4}}, vectorstore.CodeInvalidRecord, vectorstore.ErrInvalidRecord, "layer"},
		{"bad-metadata-key", vectorstore.Record{ID: "x", Metadata: map[string]string{"a.b": "v"}, Vector: []float32{1, 2, 3, 4}}, vectorstore.CodeInvalidRecord, vectorstore.ErrInvalidRecord, "metadata"},
		{"empty-metadata-key", vectorstore.Record{ID: "x", Metadata: map[string]string{"": "v"}, Vector: []float32{1, 2, 3, 4}}, vectorstore.CodeInvalidRecord, vectorstore.ErrInvalidRecord, "metadata"},
		{"nul-metadata-value", vectorstore.Record{ID: "x", Metadata: map[string]string{"k": "\x00"}, Vector: []float32{1, 2, 3, 4}}, vectorstore.CodeInvalidRecord, vectorstore.ErrInvalidRecord, "metadata.k"},
		{"valid-to-before-from", vectorstore.Record{ID: "x", ValidFrom: base, ValidTo: base.Add(-time.Second), Vector: []float32{1, 2, 3, 4}}, vectorstore.CodeInvalidRecord, vectorstore.ErrInvalidRecord, "valid_to"},
		{"time-out-of-range", vectorstore.Record{ID: "x", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Vector: []float32{1, 2, 3, 4}}, vectorstore.CodeInvalidRecord, vectorstore.ErrInvalidRecord, "created_at"},
	}
	for _, tc := range cases {
		// The bad record rides in a batch with a good one: nothing at all
		// may be written.
		err := c.Upsert(ctx, good, tc.rec)
		wantCode(t, err, tc.code, tc.sentinel, tc.name)
		var e *vectorstore.Error
		errors.As(err, &e)
		if e.Field != tc.field {
			t.Fatalf("%s: Field = %q, want %q (%v)", tc.name, e.Field, tc.field, err)
		}
		if n := mustCount(t, c, vectorstore.Filter{}); n != 0 {
			t.Fatalf("%s: %d records written by a failed batch", tc.name, n)
		}
	}
	// Dot and Euclidean collections accept the zero vector.
	for _, d := range []vectorstore.Distance{vectorstore.Dot, vectorstore.Euclidean} {
		cd, err := s.openCfg(t, driver.Config{Name: newName(t), Dimension: 2, Distance: d}, nil)
		if err != nil {
			t.Fatal(err)
		}
		mustUpsert(t, cd, vectorstore.Record{ID: "z", Vector: []float32{0, 0}, CreatedAt: base})
		got, err := cd.Get(ctx, "z")
		if err != nil || got.Vector[0] != 0 || got.Vector[1] != 0 {
			t.Fatalf("%s zero vector: %v %v", d, got.Vector, err)
		}
		// Finite but huge vectors: their scores would overflow float32
		// (+Inf, or NaN from Inf-Inf) and break the ordering. Rejected,
		// also as a query; large but safe ones are kept.
		huge := []float32{3e19, -3e19}
		err = cd.Upsert(ctx, vectorstore.Record{ID: "ok", Vector: []float32{1, 1}, CreatedAt: base},
			vectorstore.Record{ID: "huge", Vector: huge, CreatedAt: base})
		wantCode(t, err, vectorstore.CodeInvalidVector, vectorstore.ErrInvalidVector, string(d)+" huge vector")
		if n := mustCount(t, cd, vectorstore.Filter{}); n != 1 {
			t.Fatalf("%s: %d records after a batch with a huge vector, want 1", d, n)
		}
		_, err = cd.Query(ctx, huge, vectorstore.QueryOptions{K: 1})
		wantCode(t, err, vectorstore.CodeInvalidVector, vectorstore.ErrInvalidVector, string(d)+" huge query")
		big := []float32{4e18, -4e18}
		mustUpsert(t, cd, vectorstore.Record{ID: "big", Vector: big, CreatedAt: base})
		ms, err := cd.Query(ctx, big, vectorstore.QueryOptions{K: 2})
		if err != nil || len(ms) != 2 || ms[0].Record.ID != "big" {
			t.Fatalf("%s: query with a large vector: %v %v", d, ms, err)
		}
		for _, m := range ms {
			if math.IsNaN(m.Score) || math.IsInf(m.Score, 0) {
				t.Fatalf("%s: score %v of %s with large vectors", d, m.Score, m.Record.ID)
			}
		}
	}
}

func testInvalidQueries(t *testing.T, s *suite) {
	c, _ := s.open(t, 4)
	mustUpsert(t, c, vectorstore.Record{ID: "a", Vector: []float32{1, 0, 0, 0}, CreatedAt: base})
	q := []float32{1, 0, 0, 0}
	for _, k := range []int{0, -1, vectorstore.MaxK + 1} {
		_, err := c.Query(ctx, q, vectorstore.QueryOptions{K: k})
		wantCode(t, err, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, fmt.Sprintf("K=%d", k))
	}
	_, err := c.Query(ctx, []float32{1, 0}, vectorstore.QueryOptions{K: 1})
	wantCode(t, err, vectorstore.CodeDimensionMismatch, vectorstore.ErrDimensionMismatch, "query dimension")
	_, err = c.Query(ctx, []float32{1, float32(math.NaN()), 0, 0}, vectorstore.QueryOptions{K: 1})
	wantCode(t, err, vectorstore.CodeInvalidVector, vectorstore.ErrInvalidVector, "query NaN")
	_, err = c.Query(ctx, nil, vectorstore.QueryOptions{K: 1})
	wantCode(t, err, vectorstore.CodeInvalidVector, vectorstore.ErrInvalidVector, "query empty")
	_, err = c.Query(ctx, []float32{0, 0, 0, 0}, vectorstore.QueryOptions{K: 1})
	wantCode(t, err, vectorstore.CodeInvalidVector, vectorstore.ErrInvalidVector, "query zero (cosine)")
	_, err = c.Query(ctx, q, vectorstore.QueryOptions{K: 1, Filter: vectorstore.Filter{Metadata: map[string]string{"k": ""}}})
	wantCode(t, err, vectorstore.CodeInvalidFilter, vectorstore.ErrInvalidFilter, "empty filter value")
	_, err = c.Count(ctx, vectorstore.Filter{Metadata: map[string]string{"no.dots": "x"}})
	wantCode(t, err, vectorstore.CodeUnknownFilterField, vectorstore.ErrUnknownFilterField, "invalid filter key")
	_, err = c.Count(ctx, vectorstore.Filter{IDs: []string{""}})
	wantCode(t, err, vectorstore.CodeInvalidFilter, vectorstore.ErrInvalidFilter, "empty id in filter")
	_, err = c.Get(ctx, "")
	wantCode(t, err, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "get empty id")
	_, _, err = c.List(ctx, vectorstore.ListOptions{Limit: -1})
	wantCode(t, err, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "negative limit")
	_, _, err = c.List(ctx, vectorstore.ListOptions{PageToken: "not-a-token"})
	wantCode(t, err, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "malformed page token")
	_, err = c.DeleteWhere(ctx, vectorstore.Filter{})
	wantCode(t, err, vectorstore.CodeInvalidFilter, vectorstore.ErrInvalidFilter, "delete where with empty filter")
	if n := mustCount(t, c, vectorstore.Filter{}); n != 1 {
		t.Fatalf("count = %d after refused calls, want 1", n)
	}
}

func testMetadataKeys(t *testing.T, s *suite) {
	c, err := s.openCfg(t, driver.Config{Name: newName(t), Dimension: 2, MetadataKeys: []string{"lang", "source"}},
		&vectorstore.Options{MetadataKeys: []string{"lang", "source"}})
	if err != nil {
		t.Fatal(err)
	}
	mustUpsert(t, c, vectorstore.Record{ID: "a", Vector: []float32{1, 0}, Metadata: map[string]string{"lang": "en"}, CreatedAt: base})
	err = c.Upsert(ctx, vectorstore.Record{ID: "b", Vector: []float32{1, 0}, Metadata: map[string]string{"color": "red"}})
	wantCode(t, err, vectorstore.CodeInvalidRecord, vectorstore.ErrInvalidRecord, "undeclared metadata key")
	_, err = c.Query(ctx, []float32{1, 0}, vectorstore.QueryOptions{K: 1, Filter: vectorstore.Filter{Metadata: map[string]string{"color": "red"}}})
	wantCode(t, err, vectorstore.CodeUnknownFilterField, vectorstore.ErrUnknownFilterField, "filter on undeclared key")
	var e *vectorstore.Error
	errors.As(err, &e)
	if e.Field != "metadata.color" {
		t.Fatalf("Field = %q, want metadata.color", e.Field)
	}
	if n := mustCount(t, c, vectorstore.Filter{Metadata: map[string]string{"lang": "en"}}); n != 1 {
		t.Fatalf("count lang=en = %d, want 1", n)
	}
}

// dataset is a deterministic mix of layers, kinds, scopes, metadata and
// times used by the filter tests.
func dataset(dim int) []vectorstore.Record {
	r := rand.New(rand.NewPCG(7, 8))
	layers := []string{"semantic", "episodic", "entity"}
	kinds := []string{"fact", "summary"}
	threads := []string{"", "t1", "t2"}
	resources := []string{"", "u1", "u2"}
	var out []vectorstore.Record
	for i := 0; i < 60; i++ {
		rec := vectorstore.Record{
			ID:        fmt.Sprintf("r%02d", i),
			Layer:     layers[i%3],
			Kind:      kinds[(i/3)%2],
			Scope:     vectorstore.Scope{Thread: threads[(i/2)%3], Resource: resources[(i/5)%3]},
			Text:      fmt.Sprintf("record %d", i),
			Vector:    randVec(r, dim),
			CreatedAt: norm(base.Add(time.Duration(i/4) * time.Hour)), // groups of 4 share a time
		}
		if i%4 != 0 {
			rec.Metadata = map[string]string{"lang": []string{"en", "de", "fr"}[i%3]}
			if i%5 == 0 {
				rec.Metadata["source"] = "import"
			}
		}
		switch i % 6 {
		case 1:
			rec.ValidFrom = norm(base.Add(5 * time.Hour))
		case 2:
			rec.ValidTo = norm(base.Add(5 * time.Hour))
		case 3:
			rec.ValidFrom = norm(base.Add(2 * time.Hour))
			rec.ValidTo = norm(base.Add(8 * time.Hour))
		}
		out = append(out, rec)
	}
	return out
}

func expect(data []vectorstore.Record, f vectorstore.Filter) []string {
	var out []string
	for i := range data {
		if f.Matches(&data[i]) {
			out = append(out, data[i].ID)
		}
	}
	slices.Sort(out)
	return out
}

// checkFilter compares Count, List (all pages) and Query (K > n) with the
// reference semantics of driver.Filter.Matches.
func checkFilter(t *testing.T, c *vectorstore.Collection, data []vectorstore.Record, f vectorstore.Filter, label string) {
	t.Helper()
	want := expect(data, normFilter(f))
	if n := mustCount(t, c, f); n != len(want) {
		t.Fatalf("%s: Count = %d, want %d", label, n, len(want))
	}
	got := ids(listAll(t, c, vectorstore.ListOptions{Filter: f, Limit: 7}), recID)
	if !slices.Equal(sortedIDs(got), want) {
		t.Fatalf("%s: List ids %v, want %v", label, sortedIDs(got), want)
	}
	ms, err := c.Query(ctx, data[0].Vector, vectorstore.QueryOptions{K: len(data) + 5, Filter: f})
	if err != nil {
		t.Fatalf("%s: Query: %v", label, err)
	}
	if gotQ := sortedIDs(ids(ms, matchID)); !slices.Equal(gotQ, want) {
		t.Fatalf("%s: Query ids %v, want %v", label, gotQ, want)
	}
}

func normFilter(f vectorstore.Filter) vectorstore.Filter {
	f.CreatedFrom, f.CreatedBefore, f.ValidAt = norm(f.CreatedFrom), norm(f.CreatedBefore), norm(f.ValidAt)
	return f
}

func loadDataset(t *testing.T, s *suite) (*vectorstore.Collection, []vectorstore.Record) {
	c, _ := s.open(t, 8)
	data := dataset(8)
	// Two batches, to exercise multi-call loading as well.
	mustUpsert(t, c, data[:25]...)
	mustUpsert(t, c, data[25:]...)
	return c, data
}

func testFilters(t *testing.T, s *suite) {
	c, data := loadDataset(t, s)
	filters := map[string]vectorstore.Filter{
		"none":               {},
		"layer":              {Layer: "semantic"},
		"kind":               {Kind: "summary"},
		"thread":             {Thread: "t1"},
		"resource":           {Resource: "u2"},
		"thread+resource":    {Thread: "t2", Resource: "u1"},
		"metadata":           {Metadata: map[string]string{"lang": "de"}},
		"metadata-2-keys":    {Metadata: map[string]string{"lang": "en", "source": "import"}},
		"metadata-absent":    {Metadata: map[string]string{"nope": "x"}},
		"ids":                {IDs: []string{"r01", "r07", "r33", "missing"}},
		"ids+layer":          {IDs: []string{"r00", "r01", "r02", "r03"}, Layer: "episodic"},
		"layer+kind+meta":    {Layer: "entity", Kind: "fact", Metadata: map[string]string{"lang": "fr"}},
		"no-match-layer":     {Layer: "nope"},
		"case-sensitive":     {Layer: "Semantic"},
		"everything-at-once": {Layer: "semantic", Kind: "fact", Thread: "t1", CreatedFrom: base, ValidAt: base.Add(3 * time.Hour)},
	}
	for label, f := range filters {
		checkFilter(t, c, data, f, label)
	}
}

func testTimeRanges(t *testing.T, s *suite) {
	c, data := loadDataset(t, s)
	cases := map[string]vectorstore.Filter{
		"from-inclusive":   {CreatedFrom: base.Add(3 * time.Hour)},
		"before-exclusive": {CreatedBefore: base.Add(3 * time.Hour)},
		"window":           {CreatedFrom: base.Add(2 * time.Hour), CreatedBefore: base.Add(5 * time.Hour)},
		"empty-window":     {CreatedFrom: base.Add(5 * time.Hour), CreatedBefore: base.Add(2 * time.Hour)},
		"sub-microsecond":  {CreatedFrom: base.Add(2*time.Hour + 500*time.Nanosecond)},
		"one-microsecond":  {CreatedFrom: base.Add(2*time.Hour + time.Microsecond)},
		"window+thread":    {CreatedFrom: base.Add(time.Hour), CreatedBefore: base.Add(10 * time.Hour), Thread: "t2"},
		"before-all":       {CreatedBefore: base.Add(-time.Hour)},
		"from-far-future":  {CreatedFrom: base.Add(1000 * time.Hour)},
		"from-other-zone":  {CreatedFrom: base.Add(4 * time.Hour).In(time.FixedZone("X", -7*3600))},
	}
	for label, f := range cases {
		checkFilter(t, c, data, f, label)
	}
	// Spot-check the boundary semantics independently of the reference.
	n := mustCount(t, c, vectorstore.Filter{CreatedFrom: base.Add(3 * time.Hour), CreatedBefore: base.Add(4 * time.Hour)})
	if n != 4 {
		t.Fatalf("one-hour window holds %d records, want the 4 created at base+3h", n)
	}
}

func testValidAt(t *testing.T, s *suite) {
	c, data := loadDataset(t, s)
	for _, at := range []time.Duration{-2 * time.Hour, 0, 2 * time.Hour, 5 * time.Hour, 6 * time.Hour, 8 * time.Hour, 100 * time.Hour} {
		checkFilter(t, c, data, vectorstore.Filter{ValidAt: base.Add(at)}, fmt.Sprintf("valid at base%+v", at))
	}
	checkFilter(t, c, data, vectorstore.Filter{ValidAt: base.Add(3 * time.Hour), Layer: "episodic"}, "valid+layer")
	// Boundaries: ValidFrom inclusive, ValidTo exclusive.
	c2, _ := s.open(t, 2)
	mustUpsert(t, c2, vectorstore.Record{ID: "w", Vector: []float32{1, 1}, CreatedAt: base, ValidFrom: base, ValidTo: base.Add(time.Hour)})
	for _, tc := range []struct {
		at   time.Time
		want int
	}{{base.Add(-time.Microsecond), 0}, {base, 1}, {base.Add(time.Hour - time.Microsecond), 1}, {base.Add(time.Hour), 0}} {
		if n := mustCount(t, c2, vectorstore.Filter{ValidAt: tc.at}); n != tc.want {
			t.Fatalf("ValidAt %v: count %d, want %d", tc.at, n, tc.want)
		}
	}
}

func testScopeIsolation(t *testing.T, s *suite) {
	c, _ := s.open(t, 8)
	r := rand.New(rand.NewPCG(9, 10))
	shared := randVec(r, 8) // identical vectors: only the filter separates them
	var recs []vectorstore.Record
	for _, th := range []string{"A", "B"} {
		for i := 0; i < 10; i++ {
			recs = append(recs, vectorstore.Record{ID: fmt.Sprintf("%s-%d", th, i), Scope: vectorstore.Scope{Thread: th, Resource: "res-" + th},
				Vector: shared, CreatedAt: base, Text: th})
		}
	}
	mustUpsert(t, c, recs...)
	for _, th := range []string{"A", "B"} {
		for _, f := range []vectorstore.Filter{{Thread: th}, {Resource: "res-" + th}} {
			ms, err := c.Query(ctx, shared, vectorstore.QueryOptions{K: 50, Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != 10 {
				t.Fatalf("thread %s: %d matches, want 10", th, len(ms))
			}
			for _, m := range ms {
				if m.Record.Scope.Thread != th || m.Record.Text != th {
					t.Fatalf("thread %s query returned %s", th, brief(m.Record))
				}
			}
			recs, _, err := c.List(ctx, vectorstore.ListOptions{Filter: f, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range recs {
				if rec.Scope.Thread != th {
					t.Fatalf("thread %s list returned %s", th, brief(rec))
				}
			}
		}
	}
	n, err := c.DeleteWhere(ctx, vectorstore.Filter{Thread: "A"})
	if err != nil || n != 10 {
		t.Fatalf("DeleteWhere thread A = %d, %v; want 10", n, err)
	}
	if n := mustCount(t, c, vectorstore.Filter{Thread: "B"}); n != 10 {
		t.Fatalf("deleting thread A removed thread B records: %d left, want 10", n)
	}
}

func testDeleteWhere(t *testing.T, s *suite) {
	c, data := loadDataset(t, s)
	f := vectorstore.Filter{Layer: "episodic", Metadata: map[string]string{"lang": "de"}}
	want := expect(data, f)
	n, err := c.DeleteWhere(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(want) || n == 0 {
		t.Fatalf("DeleteWhere removed %d, want %d (> 0)", n, len(want))
	}
	if left := mustCount(t, c, vectorstore.Filter{}); left != len(data)-n {
		t.Fatalf("count after DeleteWhere = %d, want %d", left, len(data)-n)
	}
	for _, id := range want {
		if _, err := c.Get(ctx, id); !errors.Is(err, vectorstore.ErrNotFound) {
			t.Fatalf("deleted %s still readable: %v", id, err)
		}
	}
	n, err = c.DeleteWhere(ctx, f)
	if err != nil || n != 0 {
		t.Fatalf("second DeleteWhere = %d, %v; want 0, nil", n, err)
	}
	tw := vectorstore.Filter{CreatedFrom: base.Add(10 * time.Hour)}
	rest := make([]vectorstore.Record, 0)
	for _, r := range data {
		if !slices.Contains(want, r.ID) {
			rest = append(rest, r)
		}
	}
	wantTW := expect(rest, normFilter(tw))
	n, err = c.DeleteWhere(ctx, tw)
	if err != nil || n != len(wantTW) {
		t.Fatalf("DeleteWhere by time = %d, %v; want %d", n, err, len(wantTW))
	}
}

func testPagination(t *testing.T, s *suite) {
	c, data := loadDataset(t, s)
	ref := slices.Clone(data)
	slices.SortFunc(ref, func(a, b vectorstore.Record) int { return driver.CompareRecords(&a, &b) })
	wantAsc := ids(ref, recID)
	wantDesc := slices.Clone(wantAsc)
	slices.Reverse(wantDesc)
	for _, limit := range []int{1, 4, 7, 59, 60, 61, 1000} {
		asc := listAll(t, c, vectorstore.ListOptions{Limit: limit})
		if got := ids(asc, recID); !slices.Equal(got, wantAsc) {
			t.Fatalf("limit %d ascending: %v\nwant %v", limit, got, wantAsc)
		}
		desc := listAll(t, c, vectorstore.ListOptions{Limit: limit, Order: vectorstore.Descending})
		if got := ids(desc, recID); !slices.Equal(got, wantDesc) {
			t.Fatalf("limit %d descending: %v\nwant %v", limit, got, wantDesc)
		}
	}
	// Exact pages: 60 records at limit 20 are three full pages, no empty fourth.
	pages := 0
	opts := vectorstore.ListOptions{Limit: 20}
	for {
		recs, next, err := c.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(recs) != 20 {
			t.Fatalf("page %d has %d records, want 20", pages, len(recs))
		}
		if next == "" {
			break
		}
		opts.PageToken = next
	}
	if pages != 3 {
		t.Fatalf("%d pages, want 3", pages)
	}
	// Default limit and the zero-value options.
	recs, _, err := c.List(ctx, vectorstore.ListOptions{})
	if err != nil || len(recs) != 60 {
		t.Fatalf("List zero options: %d records, %v", len(recs), err)
	}
	for _, r := range recs {
		if r.Vector != nil {
			t.Fatal("List without WithVectors returned a vector")
		}
	}
	// Filtered paging.
	f := vectorstore.Filter{Layer: "semantic"}
	got := ids(listAll(t, c, vectorstore.ListOptions{Limit: 3, Filter: f}), recID)
	var want []string
	for _, r := range ref {
		if r.Layer == "semantic" {
			want = append(want, r.ID)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("filtered paging %v, want %v", got, want)
	}
	// A token is bound to its filter and order.
	_, next, err := c.List(ctx, vectorstore.ListOptions{Limit: 2, Filter: f})
	if err != nil || next == "" {
		t.Fatalf("first page: %v, next %q", err, next)
	}
	_, _, err = c.List(ctx, vectorstore.ListOptions{Limit: 2, PageToken: next})
	wantCode(t, err, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "token with another filter")
	_, _, err = c.List(ctx, vectorstore.ListOptions{Limit: 2, PageToken: next, Filter: f, Order: vectorstore.Descending})
	wantCode(t, err, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "token with another order")
	// All iterates over everything.
	var all []string
	for r, err := range c.All(ctx, vectorstore.ListOptions{Limit: 9}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, r.ID)
	}
	if !slices.Equal(all, wantAsc) {
		t.Fatalf("All = %v", all)
	}
}

func testPaginationConcurrentInsert(t *testing.T, s *suite) {
	c, _ := s.open(t, 2)
	for i := 0; i < 20; i++ {
		mustUpsert(t, c, vectorstore.Record{ID: fmt.Sprintf("k%02d", i), Vector: []float32{1, float32(i)}, CreatedAt: base.Add(time.Duration(i) * time.Minute)})
	}
	recs, next, err := c.List(ctx, vectorstore.ListOptions{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	// Inserting before the cursor must not shift later pages (keyset paging).
	mustUpsert(t, c, vectorstore.Record{ID: "early", Vector: []float32{1, 0}, CreatedAt: base.Add(-time.Hour)})
	seen := ids(recs, recID)
	for next != "" {
		recs, next, err = c.List(ctx, vectorstore.ListOptions{Limit: 5, PageToken: next})
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ids(recs, recID)...)
	}
	var want []string
	for i := 0; i < 20; i++ {
		want = append(want, fmt.Sprintf("k%02d", i))
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("paging across an insert saw %v, want %v", seen, want)
	}
}

// checkTopK verifies ms against brute force over data: sorted by score desc
// then id, scores close to the reference, and nothing left out that scores
// clearly better than the worst returned match.
func checkTopK(t *testing.T, ms []vectorstore.Match, data []vectorstore.Record, q []float32, k int, dist vectorstore.Distance, label string) {
	t.Helper()
	ref := make(map[string]float64, len(data))
	qq := q
	if dist == vectorstore.Cosine {
		qq = unit(q)
	}
	for _, r := range data {
		v := r.Vector
		if dist == vectorstore.Cosine {
			v = unit(v)
		}
		ref[r.ID] = driver.Score(dist, qq, v)
	}
	want := min(k, len(data))
	if len(ms) != want {
		t.Fatalf("%s: %d matches, want %d", label, len(ms), want)
	}
	const tol = 1e-4
	seen := map[string]bool{}
	for i, m := range ms {
		rs, ok := ref[m.Record.ID]
		if !ok {
			t.Fatalf("%s: unknown id %q", label, m.Record.ID)
		}
		if seen[m.Record.ID] {
			t.Fatalf("%s: id %q returned twice", label, m.Record.ID)
		}
		seen[m.Record.ID] = true
		if math.Abs(rs-m.Score) > tol*math.Max(1, math.Abs(rs)) {
			t.Fatalf("%s: %s score %v, reference %v", label, m.Record.ID, m.Score, rs)
		}
		if i > 0 {
			p := ms[i-1]
			if p.Score < m.Score || p.Score == m.Score && p.Record.ID > m.Record.ID {
				t.Fatalf("%s: out of order at %d: (%s %v) before (%s %v)", label, i, p.Record.ID, p.Score, m.Record.ID, m.Score)
			}
		}
	}
	if len(ms) == 0 {
		return
	}
	worst := ms[len(ms)-1].Score
	for id, rs := range ref {
		if !seen[id] && rs > worst+tol*math.Max(1, math.Abs(rs)) {
			t.Fatalf("%s: %s (score %v) left out, worse %v returned", label, id, rs, worst)
		}
	}
}

func testTopKOrder(t *testing.T, s *suite) {
	c, data := loadDataset(t, s)
	r := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 10; i++ {
		q := randVec(r, 8)
		for _, k := range []int{1, 3, 10} {
			ms, err := c.Query(ctx, q, vectorstore.QueryOptions{K: k})
			if err != nil {
				t.Fatal(err)
			}
			checkTopK(t, ms, data, q, k, vectorstore.Cosine, fmt.Sprintf("query %d k %d", i, k))
		}
	}
	// The record's own vector is its best match, with cosine 1.
	ms, err := c.Query(ctx, data[17].Vector, vectorstore.QueryOptions{K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].Record.ID != data[17].ID || math.Abs(ms[0].Score-1) > 1e-5 {
		t.Fatalf("self query: %s %v, want %s 1", ms[0].Record.ID, ms[0].Score, data[17].ID)
	}
	checkRecord(t, ms[0].Record, data[17], vectorstore.Cosine, false)
}

func testTopKTies(t *testing.T, s *suite) {
	c, _ := s.open(t, 4)
	tied := []float32{0.5, 0.5, 0.5, 0.5}
	// Written in scrambled order so insertion order cannot explain the result.
	for _, id := range []string{"e", "c", "a", "d", "b"} {
		mustUpsert(t, c, vectorstore.Record{ID: id, Vector: tied, CreatedAt: base})
	}
	mustUpsert(t, c, vectorstore.Record{ID: "z-best", Vector: []float32{1, 0, 0, 0}, CreatedAt: base})
	mustUpsert(t, c, vectorstore.Record{ID: "0-worst", Vector: []float32{-1, 0, 0, 0}, CreatedAt: base})
	q := []float32{1, 0.2, 0.2, 0.2}
	for k, want := range tieOrder {
		for rep := 0; rep < 3; rep++ {
			ms, err := c.Query(ctx, q, vectorstore.QueryOptions{K: k})
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(ms, matchID); !slices.Equal(got, want) {
				t.Fatalf("K=%d: %v, want %v (ties broken by id, also at the K boundary)", k, got, want)
			}
		}
	}
	// Pure ties across the whole result.
	ms, err := c.Query(ctx, tied, vectorstore.QueryOptions{K: 2, Filter: vectorstore.Filter{IDs: []string{"e", "d", "c", "b", "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(ms, matchID); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("all-tied K=2: %v, want [a b]", got)
	}
}

func testKLarger(t *testing.T, s *suite) {
	c, _ := s.open(t, 3)
	q := []float32{1, 2, 3}
	ms, err := c.Query(ctx, q, vectorstore.QueryOptions{K: 10})
	if err != nil || len(ms) != 0 {
		t.Fatalf("empty collection: %d matches, %v; want 0, nil", len(ms), err)
	}
	for i := 0; i < 5; i++ {
		mustUpsert(t, c, vectorstore.Record{ID: fmt.Sprint(i), Layer: []string{"x", "y"}[i%2], Vector: []float32{1, float32(i), 1}, CreatedAt: base})
	}
	for _, k := range []int{5, 6, 100, vectorstore.MaxK} {
		ms, err := c.Query(ctx, q, vectorstore.QueryOptions{K: k})
		if err != nil || len(ms) != 5 {
			t.Fatalf("K=%d: %d matches, %v; want 5", k, len(ms), err)
		}
	}
	ms, err = c.Query(ctx, q, vectorstore.QueryOptions{K: 100, Filter: vectorstore.Filter{Layer: "y"}})
	if err != nil || len(ms) != 2 {
		t.Fatalf("filtered K=100: %d matches, %v; want 2", len(ms), err)
	}
	ms, err = c.Query(ctx, q, vectorstore.QueryOptions{K: 100, Filter: vectorstore.Filter{Layer: "none"}})
	if err != nil || len(ms) != 0 {
		t.Fatalf("filter matching nothing: %d matches, %v; want 0, nil", len(ms), err)
	}
}

func testFilteredTopK(t *testing.T, s *suite) {
	c, data := loadDataset(t, s)
	r := rand.New(rand.NewPCG(13, 14))
	for _, f := range []vectorstore.Filter{
		{Thread: "t1"}, {Layer: "entity", Kind: "summary"}, {Metadata: map[string]string{"lang": "fr"}},
		{CreatedFrom: base.Add(4 * time.Hour), CreatedBefore: base.Add(9 * time.Hour)}, {ValidAt: base.Add(6 * time.Hour)},
	} {
		var sub []vectorstore.Record
		nf := normFilter(f)
		for i := range data {
			if nf.Matches(&data[i]) {
				sub = append(sub, data[i])
			}
		}
		q := randVec(r, 8)
		// A selective filter still yields K matches when K exist: pre-filtering.
		ms, err := c.Query(ctx, q, vectorstore.QueryOptions{K: 3, Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		checkTopK(t, ms, sub, q, 3, vectorstore.Cosine, fmt.Sprintf("filter %+v", f))
	}
}

func testDistances(t *testing.T, s *suite) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, d := range []vectorstore.Distance{vectorstore.Dot, vectorstore.Euclidean} {
		c, err := s.openCfg(t, driver.Config{Name: newName(t), Dimension: 5, Distance: d}, nil)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if c.Info().Distance != d {
			t.Fatalf("Info().Distance = %s, want %s", c.Info().Distance, d)
		}
		var data []vectorstore.Record
		for i := 0; i < 30; i++ {
			v := randVec(r, 5)
			for j := range v {
				v[j] *= float32(1 + i%4) // varied norms: dot and L2 differ from cosine
			}
			data = append(data, vectorstore.Record{ID: fmt.Sprintf("d%02d", i), Vector: v, CreatedAt: base})
		}
		mustUpsert(t, c, data...)
		got, err := c.Get(ctx, "d03")
		if err != nil {
			t.Fatal(err)
		}
		checkRecord(t, got, data[3], d, true) // not normalised
		for i := 0; i < 5; i++ {
			q := randVec(r, 5)
			ms, err := c.Query(ctx, q, vectorstore.QueryOptions{K: 7})
			if err != nil {
				t.Fatal(err)
			}
			checkTopK(t, ms, data, q, 7, d, fmt.Sprintf("%s query %d", d, i))
		}
	}
}

// testDistanceAliases opens collections with the spellings ParseDistance
// accepts besides the canonical names. Each must behave as its canonical
// distance (stored, reported and scored as such) and reopen under any
// spelling of the same distance.
func testDistanceAliases(t *testing.T, s *suite) {
	// For q, the best match differs per distance: a by dot product, b by
	// cosine, d by Euclidean distance.
	q := []float32{1, 0}
	data := []vectorstore.Record{
		{ID: "a", Vector: []float32{10, 10}, CreatedAt: base},
		{ID: "b", Vector: []float32{0.5, 0}, CreatedAt: base},
		{ID: "d", Vector: []float32{1.1, 0.05}, CreatedAt: base},
	}
	for _, tc := range []struct {
		alias, again string
		want         vectorstore.Distance
		top          string
		score        float64
	}{
		{"l2", "Euclid", vectorstore.Euclidean, "d", -math.Hypot(0.1, 0.05)},
		{"EUCLIDEAN", "l2", vectorstore.Euclidean, "d", -math.Hypot(0.1, 0.05)},
		{"ip", "inner_product", vectorstore.Dot, "a", 10},
		{" Dot ", "IP", vectorstore.Dot, "a", 10},
		{"Cosine", "cos", vectorstore.Cosine, "b", 1},
	} {
		name := newName(t)
		c, err := s.openCfg(t, driver.Config{Name: name, Dimension: 2, Distance: driver.Distance(tc.alias)}, nil)
		if err != nil {
			t.Fatalf("open with distance %q: %v", tc.alias, err)
		}
		if got := c.Info().Distance; got != tc.want {
			t.Fatalf("distance %q: Info().Distance = %q, want %q", tc.alias, got, tc.want)
		}
		mustUpsert(t, c, data...)
		ms, err := c.Query(ctx, q, vectorstore.QueryOptions{K: 3})
		if err != nil {
			t.Fatal(err)
		}
		checkTopK(t, ms, data, q, 3, tc.want, "distance "+tc.alias)
		if ms[0].Record.ID != tc.top || math.Abs(ms[0].Score-tc.score) > 1e-4 {
			t.Fatalf("distance %q: top match %s score %v, want %s score %v", tc.alias, ms[0].Record.ID, ms[0].Score, tc.top, tc.score)
		}
		if tc.want == vectorstore.Cosine {
			got, err := c.Get(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			checkRecord(t, got, data[0], vectorstore.Cosine, true) // stored unit length
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{string(tc.want), tc.again, ""} {
			c, err := s.openCfg(t, driver.Config{Name: name, Distance: driver.Distance(d)}, nil)
			if err != nil {
				t.Fatalf("created as %q, reopened as %q: %v", tc.alias, d, err)
			}
			if got := c.Info().Distance; got != tc.want {
				t.Fatalf("created as %q, reopened as %q: Info().Distance = %q, want %q", tc.alias, d, got, tc.want)
			}
			if n := mustCount(t, c, vectorstore.Filter{}); n != len(data) {
				t.Fatalf("reopened count %d, want %d", n, len(data))
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
		other := driver.DistanceCosine
		if tc.want == vectorstore.Cosine {
			other = driver.DistanceDot
		}
		_, err = s.h.Open(ctx, t, driver.Config{Name: name, Distance: other})
		wantCode(t, err, vectorstore.CodeConfigMismatch, vectorstore.ErrConfigMismatch, "reopen "+tc.alias+" as "+string(other))
	}
	_, err := s.h.Open(ctx, t, driver.Config{Name: newName(t), Dimension: 2, Distance: "manhattan"})
	wantCode(t, err, vectorstore.CodeInvalidArgument, vectorstore.ErrInvalidArgument, "unknown distance")
}

func testWithVectors(t *testing.T, s *suite) {
	c, data := loadDataset(t, s)
	ms, err := c.Query(ctx, data[0].Vector, vectorstore.QueryOptions{K: 3, WithVectors: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		i := slices.IndexFunc(data, func(r vectorstore.Record) bool { return r.ID == m.Record.ID })
		checkRecord(t, m.Record, data[i], vectorstore.Cosine, true)
	}
	ms, err = c.Query(ctx, data[0].Vector, vectorstore.QueryOptions{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Record.Vector != nil {
			t.Fatal("Query without WithVectors returned a vector")
		}
	}
	recs, _, err := c.List(ctx, vectorstore.ListOptions{Limit: 5, WithVectors: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range recs {
		i := slices.IndexFunc(data, func(r vectorstore.Record) bool { return r.ID == got.ID })
		checkRecord(t, got, data[i], vectorstore.Cosine, true)
	}
}

func testMetadataRoundTrip(t *testing.T, s *suite) {
	c, _ := s.open(t, 2)
	md := map[string]string{
		"empty":   "",
		"unicode": "héllo — 世界 🌍",
		"quotes":  `"it's" \ back\slash`,
		"json":    `{"a":[1,2]}`,
		"spaces":  "  padded  ",
		"newline": "a\nb\tc",
		"_under":  "x",
		"dash-ed": "y",
		"Upper":   "Z",
		"num":     "42",
		"long":    strings.Repeat("long value ", 200),
	}
	recs := []vectorstore.Record{
		{ID: "m1", Vector: []float32{1, 0}, Metadata: md, CreatedAt: base, Text: "tëxt with ünïcode\nand lines"},
		{ID: "m2 with spaces/and:punct", Vector: []float32{0, 1}, Metadata: map[string]string{}, CreatedAt: base},
		{ID: "ü-id-🌍", Layer: "läyer", Kind: "kïnd", Scope: vectorstore.Scope{Thread: "thréad", Resource: "rés/1"}, Vector: []float32{1, 1}, CreatedAt: base},
	}
	mustUpsert(t, c, recs...)
	for _, want := range recs {
		got, err := c.Get(ctx, want.ID)
		if err != nil {
			t.Fatalf("get %q: %v", want.ID, err)
		}
		checkRecord(t, got, want, vectorstore.Cosine, true)
	}
	for k, v := range md {
		if v == "" {
			continue
		}
		if n := mustCount(t, c, vectorstore.Filter{Metadata: map[string]string{k: v}}); n != 1 {
			t.Fatalf("filter %s=%q: count %d, want 1", k, v, n)
		}
	}
	if n := mustCount(t, c, vectorstore.Filter{Metadata: map[string]string{"unicode": "héllo"}}); n != 0 {
		t.Fatalf("metadata filter is not exact: prefix matched %d", n)
	}
	if n := mustCount(t, c, vectorstore.Filter{Thread: "thréad", Resource: "rés/1", Layer: "läyer", Kind: "kïnd"}); n != 1 {
		t.Fatalf("unicode scope filter count %d, want 1", n)
	}
}

func testTimestampRoundTrip(t *testing.T, s *suite) {
	c, _ := s.open(t, 2)
	zones := []*time.Location{time.UTC, time.FixedZone("A", 5*3600+1800), time.FixedZone("B", -11*3600)}
	var recs []vectorstore.Record
	times := []time.Time{
		base,
		time.Date(1970, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2262, 4, 11, 23, 47, 16, 854775999, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC),
		time.Date(2024, 2, 29, 12, 30, 45, 999999, zones[1]),
	}
	for i, tm := range times {
		rec := vectorstore.Record{ID: fmt.Sprintf("t%d", i), Vector: []float32{1, float32(i)}, CreatedAt: tm.In(zones[i%3])}
		if i%2 == 0 {
			rec.ValidFrom = tm.Add(-time.Nanosecond * 1500)
		}
		if i%3 == 0 && i < 4 {
			rec.ValidTo = tm.Add(time.Hour + 1234*time.Nanosecond)
		}
		recs = append(recs, rec)
	}
	mustUpsert(t, c, recs...)
	for _, want := range recs {
		got, err := c.Get(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		checkRecord(t, got, want, vectorstore.Cosine, false)
		// Exact-instant filters hit the stored microsecond.
		win := vectorstore.Filter{IDs: []string{want.ID}, CreatedFrom: got.CreatedAt, CreatedBefore: got.CreatedAt.Add(time.Microsecond)}
		if win.CreatedBefore.Year() > 9999 {
			win.CreatedBefore = time.Time{} // the last representable microsecond
		}
		if n := mustCount(t, c, win); n != 1 {
			t.Fatalf("%s: [created, created+1µs) window count %d, want 1", want.ID, n)
		}
	}
	all := listAll(t, c, vectorstore.ListOptions{Limit: 2})
	for i := 1; i < len(all); i++ {
		if driver.CompareRecords(&all[i-1], &all[i]) >= 0 {
			t.Fatalf("list order broken at %d: %v then %v", i, all[i-1].CreatedAt, all[i].CreatedAt)
		}
	}
}

func testConcurrency(t *testing.T, s *suite) {
	c, _ := s.open(t, 16)
	const writers, readers, perWriter = 4, 4, 40
	var wg sync.WaitGroup
	errc := make(chan error, writers+readers)
	stop := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 99))
			for i := 0; i < perWriter; i++ {
				rec := vectorstore.Record{ID: fmt.Sprintf("w%d-%03d", w, i), Layer: fmt.Sprint(w), Vector: randVec(r, 16),
					CreatedAt: base.Add(time.Duration(i) * time.Second), Scope: vectorstore.Scope{Thread: fmt.Sprint("t", w)}}
				if err := c.Upsert(ctx, rec); err != nil {
					errc <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				// Re-upsert a shared id from every writer: last write wins, no tearing.
				if i%10 == 0 {
					if err := c.Upsert(ctx, vectorstore.Record{ID: "shared", Text: fmt.Sprint(w), Vector: randVec(r, 16), CreatedAt: base}); err != nil {
						errc <- err
						return
					}
				}
				if i%7 == 3 {
					if err := c.Delete(ctx, fmt.Sprintf("w%d-%03d", w, i-1)); err != nil {
						errc <- err
						return
					}
				}
			}
		}(w)
	}
	var rwg sync.WaitGroup
	for rd := 0; rd < readers; rd++ {
		rwg.Add(1)
		go func(rd int) {
			defer rwg.Done()
			r := rand.New(rand.NewPCG(uint64(rd), 77))
			for {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch rd % 4 {
				case 0:
					var ms []vectorstore.Match
					ms, err = c.Query(ctx, randVec(r, 16), vectorstore.QueryOptions{K: 5, Filter: vectorstore.Filter{Thread: "t1"}})
					for _, m := range ms {
						if m.Record.Scope.Thread != "t1" {
							err = fmt.Errorf("reader saw thread %q", m.Record.Scope.Thread)
						}
					}
				case 1:
					_, _, err = c.List(ctx, vectorstore.ListOptions{Limit: 10, Order: vectorstore.Descending})
				case 2:
					_, err = c.Count(ctx, vectorstore.Filter{Layer: "2"})
				case 3:
					_, err = c.Get(ctx, "shared")
					if errors.Is(err, vectorstore.ErrNotFound) {
						err = nil
					}
				}
				if err != nil {
					errc <- fmt.Errorf("reader %d: %w", rd, err)
					return
				}
			}
		}(rd)
	}
	stopReaders(t, &wg, stop, &rwg, errc)
	perLeft := 0
	for i := 0; i < perWriter; i++ {
		// Index i-1 was deleted when i%7 == 3.
		if !(i%7 == 2 && i+1 < perWriter) {
			perLeft++
		}
	}
	want := 1 + perLeft*writers // + "shared"
	if n := mustCount(t, c, vectorstore.Filter{}); n != want {
		t.Fatalf("count after concurrent writes = %d, want %d", n, want)
	}
	for w := 0; w < writers; w++ {
		if n := mustCount(t, c, vectorstore.Filter{Layer: fmt.Sprint(w)}); n != perLeft {
			t.Fatalf("writer %d: %d records, want %d", w, n, perLeft)
		}
	}
}

func testReopen(t *testing.T, s *suite) {
	c, name := s.open(t, 8)
	cfg := driver.Config{Name: name, Dimension: 8}
	data := dataset(8)
	for i := 0; i < len(data); i += 7 {
		mustUpsert(t, c, data[i:min(i+7, len(data))]...)
	}
	// Replace some, delete some: the reopened state must reflect the last
	// acknowledged write of every id.
	data[5].Text = "replaced"
	data[5].Metadata = map[string]string{"new": "yes"}
	mustUpsert(t, c, data[5])
	if err := c.Delete(ctx, data[6].ID, data[7].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteWhere(ctx, vectorstore.Filter{IDs: []string{data[8].ID}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for round := 0; round < 2; round++ {
		c2, err := s.openCfg(t, cfg, nil)
		if err != nil {
			t.Fatalf("reopen %d: %v", round, err)
		}
		if n := mustCount(t, c2, vectorstore.Filter{}); n != len(data)-3 {
			t.Fatalf("reopen %d: count %d, want %d", round, n, len(data)-3)
		}
		for i, want := range data {
			got, err := c2.Get(ctx, want.ID)
			if i >= 6 && i <= 8 {
				if !errors.Is(err, vectorstore.ErrNotFound) {
					t.Fatalf("reopen %d: deleted %s is back: %v", round, want.ID, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("reopen %d: %s lost: %v", round, want.ID, err)
			}
			checkRecord(t, got, want, vectorstore.Cosine, true)
		}
		// The reopened collection still writes and queries.
		extra := vectorstore.Record{ID: fmt.Sprintf("after-reopen-%d", round), Vector: data[0].Vector, CreatedAt: base}
		mustUpsert(t, c2, extra)
		data = append(data, extra)
		ms, err := c2.Query(ctx, data[0].Vector, vectorstore.QueryOptions{K: 1, Filter: vectorstore.Filter{IDs: []string{extra.ID}}})
		if err != nil || len(ms) != 1 {
			t.Fatalf("reopen %d: query %v %v", round, ms, err)
		}
		if err := c2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func testClosed(t *testing.T, s *suite) {
	c, _ := s.open(t, 2)
	mustUpsert(t, c, vectorstore.Record{ID: "a", Vector: []float32{1, 0}, CreatedAt: base})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close = %v, want nil", err)
	}
	err := c.Upsert(ctx, vectorstore.Record{ID: "b", Vector: []float32{1, 0}})
	wantCode(t, err, vectorstore.CodeClosed, vectorstore.ErrClosed, "upsert after close")
	_, err = c.Get(ctx, "a")
	wantCode(t, err, vectorstore.CodeClosed, vectorstore.ErrClosed, "get after close")
	_, err = c.Query(ctx, []float32{1, 0}, vectorstore.QueryOptions{K: 1})
	wantCode(t, err, vectorstore.CodeClosed, vectorstore.ErrClosed, "query after close")
	_, _, err = c.List(ctx, vectorstore.ListOptions{})
	wantCode(t, err, vectorstore.CodeClosed, vectorstore.ErrClosed, "list after close")
	_, err = c.Count(ctx, vectorstore.Filter{})
	wantCode(t, err, vectorstore.CodeClosed, vectorstore.ErrClosed, "count after close")
	err = c.Delete(ctx, "a")
	wantCode(t, err, vectorstore.CodeClosed, vectorstore.ErrClosed, "delete after close")
	_, err = c.UpsertIf(ctx, vectorstore.Record{ID: "b", Vector: []float32{1, 0}}, 0)
	wantCode(t, err, vectorstore.CodeClosed, vectorstore.ErrClosed, "upsert if after close")
	err = c.DeleteIf(ctx, "a", 1)
	wantCode(t, err, vectorstore.CodeClosed, vectorstore.ErrClosed, "delete if after close")
	_, err = c.SearchTerms(ctx, vectorstore.TermOptions{Terms: map[string]float64{"a": 1}, K: 1, Filter: vectorstore.Filter{Layer: "l"}})
	wantCode(t, err, vectorstore.CodeClosed, vectorstore.ErrClosed, "search terms after close")
}
