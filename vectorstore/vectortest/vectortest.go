// Package vectortest is the conformance suite every vectorstore driver runs.
//
// A driver's test calls Run with a Harness that opens collections in a real
// backend:
//
//	func TestConformance(t *testing.T) {
//		dir := t.TempDir()
//		vectortest.Run(t, vectortest.Harness{
//			Open: func(ctx context.Context, t *testing.T, cfg driver.Config) (driver.Collection, error) {
//				return openDriver(ctx, dir, cfg) // the driver package's own, unexported
//			},
//		})
//	}
//
// Every subtest opens its own collection under a fresh name (lower-case
// letters, digits and underscores, at most 40 bytes, so it is a valid
// Postgres identifier and Qdrant collection name) and drives it through the
// portable *vectorstore.Collection, so the suite checks the portable
// validation and the driver together: CRUD, idempotent upsert, every filter
// field, time ranges and validity, scope isolation, pagination, top-k order
// with ties, K larger than the collection, dimension mismatch, NaN / Inf /
// empty / zero vectors, typed errors with nothing written, concurrent
// writers and readers (run it under -race), reopen-after-close keeping every
// acknowledged write, exact metadata and microsecond timestamp round trips,
// each distance under each of its spellings, and revisions with the
// conditional writes: every write stores a greater revision that every read
// reports, UpsertIf / DeleteIf write only at the expected revision and
// nothing on a conflict, concurrent read-modify-UpsertIf writers lose no
// update, and revisions survive a reopen.
//
// The term-search cases hold every driver to the reference BM25 ranking
// (driver.RankTerms), whether it implements driver.TermSearcher or the
// portable layer ranks in process: Record.Terms round trips exactly
// through Upsert, UpsertIf, Get, List and a reopen (Query and SearchTerms
// matches carry none); SearchTerms over corpora of several layers, kinds,
// threads and resources, with queries of one to six terms, narrowing by
// ids, metadata and time, several K and BM25 parameters, gives the
// reference's Docs, DocFreq, AvgLen (relative tolerance 1e-9) and matches
// (the same records, scores within 1e-9, ties broken by ascending id, also
// at the K boundary); replacements, documents removed, records moved to
// another layer and every kind of delete show in the next search; documents
// of other layers, kinds, threads or resources and records without terms
// change no corpus' statistics; bad documents and bad term queries are
// typed errors naming the field, with nothing written; and searches run
// alongside writes (under -race) stay consistent.
package vectortest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

// Harness connects the suite to a driver.
type Harness struct {
	// Open opens, creating if needed, the collection cfg.Name. Opening a name
	// again after its collection was closed must reopen the same stored data
	// (the reopen tests depend on it). Open must honour cfg.Dimension == 0
	// and cfg.Distance == "" ("as stored") and report mismatches as driver.CodeConfigMismatch /
	// driver.CodeInvalidArgument errors. The harness owns cleanup of the
	// backend (drop collections in t.Cleanup if they outlive the test).
	Open func(ctx context.Context, t *testing.T, cfg driver.Config) (driver.Collection, error)
	// Skip lists subtest names the driver is excused from, with the reason
	// as value; the suite logs and skips them. Keep it empty for real
	// drivers: it exists for protocol tests against partial fakes.
	Skip map[string]string
}

// Run runs every conformance subtest.
func Run(t *testing.T, h Harness) {
	if h.Open == nil {
		t.Fatal("vectortest: Harness.Open is nil")
	}
	tests := []struct {
		name string
		fn   func(*testing.T, *suite)
	}{
		{"OpenConfig", testOpenConfig},
		{"CRUD", testCRUD},
		{"UpsertReplaces", testUpsertReplaces},
		{"UpsertBatchLastWins", testUpsertBatchLastWins},
		{"InvalidInputWritesNothing", testInvalidInput},
		{"InvalidQueries", testInvalidQueries},
		{"MetadataKeys", testMetadataKeys},
		{"Filters", testFilters},
		{"TimeRanges", testTimeRanges},
		{"ValidAt", testValidAt},
		{"ScopeIsolation", testScopeIsolation},
		{"DeleteWhere", testDeleteWhere},
		{"Pagination", testPagination},
		{"PaginationConcurrentInsert", testPaginationConcurrentInsert},
		{"TopKOrder", testTopKOrder},
		{"TopKTies", testTopKTies},
		{"KLargerThanCollection", testKLarger},
		{"FilteredTopK", testFilteredTopK},
		{"Distances", testDistances},
		{"DistanceAliases", testDistanceAliases},
		{"WithVectors", testWithVectors},
		{"MetadataRoundTrip", testMetadataRoundTrip},
		{"TimestampRoundTrip", testTimestampRoundTrip},
		{"ConcurrentWritersReaders", testConcurrency},
		{"ReopenKeepsAcknowledgedWrites", testReopen},
		{"Revisions", testRevisions},
		{"ConditionalWrites", testConditionalWrites},
		{"ConditionalDelete", testConditionalDelete},
		{"ConcurrentConditionalWrites", testConcurrentConditionalWrites},
		{"RevisionsSurviveReopen", testRevisionsSurviveReopen},
		{"TermsRoundTrip", testTermsRoundTrip},
		{"TermSearch", testTermSearch},
		{"TermSearchTies", testTermSearchTies},
		{"TermSearchUpdates", testTermSearchUpdates},
		{"TermCorpusIsolation", testTermCorpusIsolation},
		{"InvalidTermInput", testInvalidTermInput},
		{"TermSearchConcurrent", testTermSearchConcurrent},
		{"Closed", testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := h.Skip[tc.name]; ok {
				t.Skip("excused by harness: " + why)
			}
			tc.fn(t, &suite{h: h})
		})
	}
}

type suite struct {
	h Harness
}

var nameRand = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5eed))
var nameMu sync.Mutex

// newName returns a fresh collection name for a subtest.
func newName(t *testing.T) string {
	nameMu.Lock()
	n := nameRand.Uint32()
	nameMu.Unlock()
	base := strings.ToLower(t.Name())
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	var b strings.Builder
	for _, r := range base {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	s := b.String()
	if len(s) > 24 {
		s = s[:24]
	}
	return fmt.Sprintf("vt_%s_%08x", s, n)
}

// openCfg opens through the harness and wraps in the portable type.
func (s *suite) openCfg(t *testing.T, cfg driver.Config, opts *vectorstore.Options) (*vectorstore.Collection, error) {
	t.Helper()
	d, err := s.h.Open(context.Background(), t, cfg)
	c, err := vectorstore.WrapOpened(d, err, opts)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, nil
}

func (s *suite) open(t *testing.T, dim int) (*vectorstore.Collection, string) {
	t.Helper()
	name := newName(t)
	c, err := s.openCfg(t, driver.Config{Name: name, Dimension: dim}, nil)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	return c, name
}

var ctx = context.Background()

// tieOrder is the top K, for each K, of the tie-breaking cases: "z-best"
// scores highest, "0-worst" lowest, and "a" to "e" tie between them, so the
// ids break the tie, also at the K boundary.
var tieOrder = map[int][]string{
	1: {"z-best"},
	2: {"z-best", "a"},
	3: {"z-best", "a", "b"},
	6: {"z-best", "a", "b", "c", "d", "e"},
	7: {"z-best", "a", "b", "c", "d", "e", "0-worst"},
}

// stopReaders waits for the writers, then stops the readers, waits for
// them too and fails t with the errors any of them sent.
func stopReaders(t *testing.T, writers *sync.WaitGroup, stop chan struct{}, readers *sync.WaitGroup, errc chan error) {
	t.Helper()
	writers.Wait()
	close(stop)
	readers.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

// base is a fixed instant with sub-microsecond digits and a non-UTC zone, so
// normalisation is exercised by every fixture.
var base = time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))

func norm(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

func randVec(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	n = math.Sqrt(n)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}

func mustUpsert(t *testing.T, c *vectorstore.Collection, recs ...vectorstore.Record) {
	t.Helper()
	if err := c.Upsert(ctx, recs...); err != nil {
		t.Fatalf("upsert: %v", err)
	}
}

func mustCount(t *testing.T, c *vectorstore.Collection, f vectorstore.Filter) int {
	t.Helper()
	n, err := c.Count(ctx, f)
	if err != nil {
		t.Fatalf("count %+v: %v", f, err)
	}
	return n
}

func wantCode(t *testing.T, err error, code vectorstore.Code, sentinel error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got nil error, want %s", what, code)
	}
	var e *vectorstore.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error %v (%T) is not a *vectorstore.Error", what, err, err)
	}
	if e.Code != code {
		t.Fatalf("%s: code %s, want %s (%v)", what, e.Code, code, err)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: errors.Is(%v, %v) is false", what, err, sentinel)
	}
}

// checkRecord compares a stored record with what was written, after the
// portable normalisation (UTC microseconds, unit cosine vectors).
func checkRecord(t *testing.T, got, want vectorstore.Record, dist vectorstore.Distance, withVector bool) {
	t.Helper()
	if got.ID != want.ID || got.Layer != want.Layer || got.Kind != want.Kind || got.Scope != want.Scope || got.Text != want.Text {
		t.Fatalf("record %q fields differ:\n got %+v\nwant %+v", want.ID, brief(got), brief(want))
	}
	if len(got.Metadata) != len(want.Metadata) {
		t.Fatalf("record %q metadata %v, want %v", want.ID, got.Metadata, want.Metadata)
	}
	for k, v := range want.Metadata {
		if gv, ok := got.Metadata[k]; !ok || gv != v {
			t.Fatalf("record %q metadata %v, want %v", want.ID, got.Metadata, want.Metadata)
		}
	}
	for _, tt := range []struct {
		name      string
		got, want time.Time
	}{{"CreatedAt", got.CreatedAt, want.CreatedAt}, {"ValidFrom", got.ValidFrom, want.ValidFrom}, {"ValidTo", got.ValidTo, want.ValidTo}} {
		w := norm(tt.want)
		if !tt.got.Equal(w) || tt.got.IsZero() != w.IsZero() {
			t.Fatalf("record %q %s = %v, want %v", want.ID, tt.name, tt.got, w)
		}
		if !tt.got.IsZero() && tt.got.Location() != time.UTC {
			t.Fatalf("record %q %s location %v, want UTC", want.ID, tt.name, tt.got.Location())
		}
	}
	if !withVector {
		return
	}
	wv := want.Vector
	if dist == vectorstore.Cosine {
		wv = unit(wv)
	}
	if len(got.Vector) != len(wv) {
		t.Fatalf("record %q vector length %d, want %d", want.ID, len(got.Vector), len(wv))
	}
	for i := range wv {
		if math.Abs(float64(got.Vector[i]-wv[i])) > 1e-5 {
			t.Fatalf("record %q vector[%d] = %v, want %v", want.ID, i, got.Vector[i], wv[i])
		}
	}
}

func brief(r vectorstore.Record) string {
	return fmt.Sprintf("{id=%q layer=%q kind=%q scope=%+v text=%q md=%v created=%v from=%v to=%v}",
		r.ID, r.Layer, r.Kind, r.Scope, r.Text, r.Metadata, r.CreatedAt, r.ValidFrom, r.ValidTo)
}

func ids[T any](xs []T, id func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = id(x)
	}
	return out
}

func recID(r vectorstore.Record) string  { return r.ID }
func matchID(m vectorstore.Match) string { return m.Record.ID }

func listAll(t *testing.T, c *vectorstore.Collection, opts vectorstore.ListOptions) []vectorstore.Record {
	t.Helper()
	var out []vectorstore.Record
	pages := 0
	for {
		recs, next, err := c.List(ctx, opts)
		if err != nil {
			t.Fatalf("list %+v: %v", opts, err)
		}
		out = append(out, recs...)
		pages++
		if pages > 100000 {
			t.Fatal("list does not terminate")
		}
		if next == "" {
			return out
		}
		if len(recs) == 0 {
			t.Fatalf("list returned an empty page with a next token")
		}
		opts.PageToken = next
	}
}

func sortedIDs(ss []string) []string {
	out := slices.Clone(ss)
	sort.Strings(out)
	return out
}
