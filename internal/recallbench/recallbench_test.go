package recallbench

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/vectorstore"
)

// pgDSN returns the DSN of the server scripts/pg.sh started, "" without
// one; STRATA_REQUIRE_PG=1 (make test) turns a missing server into a
// failure so that the pgvector half cannot pass by being skipped.
func pgDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("STRATA_TEST_PG_DSN")
	if dsn == "" && os.Getenv("STRATA_REQUIRE_PG") == "1" {
		t.Fatal("STRATA_TEST_PG_DSN is not set but STRATA_REQUIRE_PG=1; run: scripts/pg.sh up")
	}
	return dsn
}

func quickBackends(t *testing.T) (backends []string, dsn string) {
	backends = []string{Chromem}
	if dsn = pgDSN(t); dsn != "" {
		backends = append(backends, PGVector)
	} else {
		t.Log("STRATA_TEST_PG_DSN not set: chromem only")
	}
	return backends, dsn
}

// checkReport asserts what every successful run must show: a result per
// backend and dataset, recall at the target, and a complete report.
func checkReport(t *testing.T, rep *Report, backends []string, datasets []string) {
	t.Helper()
	if len(rep.Results) != len(backends)*len(datasets) {
		t.Fatalf("%d results, want %d", len(rep.Results), len(backends)*len(datasets))
	}
	for _, r := range rep.Results {
		if r.Err != nil {
			t.Errorf("%s on %s: %v", r.Backend, r.Dataset, r.Err)
			continue
		}
		if !slices.Contains(datasets, r.Dataset) {
			t.Errorf("unexpected dataset %q", r.Dataset)
		}
		if r.Recall < TargetRecall {
			t.Errorf("%s on %s: recall@%d %.4f < %.2f", r.Backend, r.Dataset, rep.Config.K, r.Recall, TargetRecall)
		}
		if r.Ingest <= 0 || r.IngestRate() <= 0 {
			t.Errorf("%s on %s: no ingest time", r.Backend, r.Dataset)
		}
		if len(r.Throughput) != len(rep.Config.Clients) {
			t.Fatalf("%s on %s: %d throughput phases", r.Backend, r.Dataset, len(r.Throughput))
		}
		one := r.Throughput[0]
		if one.Clients != 1 || one.Queries < rep.Config.Queries || one.QPS <= 0 || one.P50 <= 0 || one.P99 < one.P50 {
			t.Errorf("%s on %s: bad one-client phase %+v", r.Backend, r.Dataset, one)
		}
	}
	if len(rep.Settings) != len(backends) {
		t.Errorf("settings of %d backends, want %d", len(rep.Settings), len(backends))
	}
	for _, s := range rep.Settings {
		if s.Backend == PGVector && (s.M != 16 || s.EfConstruction != 64) {
			t.Errorf("pgvector settings read back as m=%d ef_construction=%d, want the driver defaults 16/64", s.M, s.EfConstruction)
		}
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	text := md.String()
	for _, want := range []string{"## Machine", "## Settings", "## Datasets", "## Results", "## Targets", "recall@10"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, b := range backends {
		for _, d := range datasets {
			if !strings.Contains(text, "| "+b+" | "+d+" |") {
				t.Errorf("report lacks the row of %s on %s", b, d)
			}
		}
	}
	var svg bytes.Buffer
	if err := rep.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&svg)
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("plot is not well-formed XML: %v", err)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", text)
	}
}

// TestQuickRun is the quick benchmark: 1k clustered records on chromem and,
// with a server, pgvector.
func TestQuickRun(t *testing.T) {
	backends, dsn := quickBackends(t)
	rep, err := Run(t.Context(), Config{
		Backends: backends, PGDSN: dsn,
		Sizes: []int{1000}, TextSizes: []int{},
		Queries: 100, Duration: 150 * time.Millisecond, Rounds: 2,
		EfSearchSweep: []int{80}, BulkProbeSizes: []int{1000},
		ScratchDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep, backends, []string{"clustered-1k"})
	for _, r := range rep.Results {
		switch r.Backend {
		case Chromem:
			// The dot-product variant ranks unit vectors like cosine and
			// is exact: it must find the same neighbours.
			if v := r.Variant; v == nil || v.Recall < TargetRecall || v.P50 <= 0 || v.Ingest <= 0 {
				t.Errorf("chromem variant %+v", v)
			}
		case PGVector:
			if len(r.Sweep) != 1 || r.Sweep[0].EfSearch != 80 || r.Sweep[0].Recall < r.Recall-0.02 || r.Sweep[0].P50 <= 0 {
				t.Errorf("pgvector sweep %+v (default recall %.4f)", r.Sweep, r.Recall)
			}
			// Every query of the pass (warm-up, first round, repeats) is
			// one scan of the table, by index or sequential.
			want := int64(min(20, rep.Config.Queries) + rep.Config.Queries + (rep.Config.Rounds-1)*min(passRepeat, rep.Config.Queries))
			if sp := r.Sweep[0]; sp.SeqScans+sp.IndexScans < want {
				t.Errorf("pgvector sweep counted %d sequential + %d index scans, want at least %d", sp.SeqScans, sp.IndexScans, want)
			}
			if r.BulkLoad <= 0 || r.BulkIndex <= 0 {
				t.Errorf("pgvector bulk probe: load %v, index %v", r.BulkLoad, r.BulkIndex)
			}
		}
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if want := "## Beyond the defaults"; !strings.Contains(md.String(), want) {
		t.Errorf("report lacks %q", want)
	}
	checks := rep.Checks()
	if !checks[0].Measured || !checks[0].Met {
		t.Errorf("recall target: %+v", checks[0])
	}
	// No 10k dataset: the size-bound targets must say so, not pass.
	for _, c := range checks[1:] {
		if c.Measured {
			t.Errorf("target %q reported as measured without a 10k dataset", c.Target)
		}
	}
}

var (
	modelOnce sync.Once
	model     *uselite.Model
	modelErr  error
)

func testModel(t *testing.T) *uselite.Model {
	t.Helper()
	modelOnce.Do(func() { model, modelErr = uselite.Default() })
	if modelErr != nil {
		if errors.Is(modelErr, uselite.ErrModelNotFound) && os.Getenv("STRATA_REQUIRE_MODEL") == "" {
			t.Skipf("default model not installed (%v); run `make model`, or set STRATA_REQUIRE_MODEL=1 to make this a failure", modelErr)
		}
		t.Fatal(modelErr)
	}
	return model
}

func goRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestQuickRunText runs the real-text dataset with the real default model
// on a few hundred sentences.
func TestQuickRunText(t *testing.T) {
	m := testModel(t)
	backends, dsn := quickBackends(t)
	rep, err := Run(t.Context(), Config{
		Backends: backends, PGDSN: dsn,
		Sizes: []int{}, TextSizes: []int{200},
		Queries: 50, Duration: 100 * time.Millisecond, Rounds: 1,
		GoRoot: goRoot(t), Embedder: m,
		EfSearchSweep: []int{}, NoVariants: true,
		ScratchDir: t.TempDir(), CacheDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep, backends, []string{"text-200"})
	d := rep.Datasets[0]
	if d.Kind != Text || d.Size != 200 || d.Dim != m.Dimension() || d.Sources[SourceGoSrc] == 0 {
		t.Errorf("dataset info %+v", d)
	}
	// Real sentences about different things are not orthogonal, and a
	// query's nearest sentence is clearly closer than a random one.
	if d.Shape.Top1 <= d.Shape.RandomPair+0.1 || d.Shape.RandomPair <= 0.1 {
		t.Errorf("text shape %+v does not look like sentence embeddings", d.Shape)
	}
}

// TestClusteredResemblesText guards the calibration the report relies on:
// at 10k records the clustered generator's defaults give about the
// cosines measured on the default model's vectors of the real-text sample
// (seed 1) at 10k: nearest 0.755, 10th nearest 0.680, random pair 0.400
// (see the Datasets table of benchmarks/results/recall-backends.md).
func TestClusteredResemblesText(t *testing.T) {
	ds, err := GenerateClustered(10000, 40, 512, DefaultClusterParams, 1)
	if err != nil {
		t.Fatal(err)
	}
	truth, err := ExactTopK(t.Context(), ds.Vectors, ds.Queries, 10, 2)
	if err != nil {
		t.Fatal(err)
	}
	s := ShapeOf(ds.Vectors, truth)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"nearest", s.Top1, 0.755}, {"10th nearest", s.TopK, 0.680}, {"random pair", s.RandomPair, 0.400}} {
		if math.Abs(c.got-c.want) > 0.03 {
			t.Errorf("%s cosine %.3f, text has %.3f", c.name, c.got, c.want)
		}
	}
}

func TestGenerateClustered(t *testing.T) {
	a, err := GenerateClustered(300, 20, 32, DefaultClusterParams, 5)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GenerateClustered(300, 20, 32, DefaultClusterParams, 5)
	c, _ := GenerateClustered(300, 20, 32, DefaultClusterParams, 6)
	if len(a.Vectors) != 300 || len(a.Queries) != 20 || a.Dim != 32 || a.Name() != "clustered-300" {
		t.Fatalf("shape: %d vectors, %d queries, dim %d, name %s", len(a.Vectors), len(a.Queries), a.Dim, a.Name())
	}
	if !slices.Equal(a.Vectors[7], b.Vectors[7]) || !slices.Equal(a.Queries[3], b.Queries[3]) {
		t.Error("same seed, different vectors")
	}
	if slices.Equal(a.Vectors[7], c.Vectors[7]) {
		t.Error("different seeds, same vectors")
	}
	indexed := map[string]bool{}
	for _, v := range a.Vectors {
		if n := dot(v, v); math.Abs(n-1) > 1e-5 {
			t.Fatalf("vector norm² %v", n)
		}
		indexed[string(float32Bytes(v))] = true
	}
	for _, q := range a.Queries {
		if indexed[string(float32Bytes(q))] {
			t.Fatal("a query is one of the indexed vectors")
		}
	}
	// Independent Gaussian vectors in 32-d have random-pair cosines near 0
	// and nearest neighbours not much closer; clustered ones must not.
	truth, _ := ExactTopK(t.Context(), a.Vectors, a.Queries, 10, 1)
	if s := ShapeOf(a.Vectors, truth); s.RandomPair < 0.2 || s.Top1 < s.RandomPair+0.2 {
		t.Errorf("not clustered: %+v", s)
	}

	for _, bad := range []ClusterParams{
		{Noise: 0},
		{Noise: 1, Mean: -1},
		{Noise: 1, Levels: []Level{{Size: 0, Weight: 1}}},
		{Noise: 1, Levels: []Level{{Size: 5, Weight: math.NaN()}}},
	} {
		if _, err := GenerateClustered(10, 1, 8, bad, 1); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("params %+v: err %v, want ErrInvalidConfig", bad, err)
		}
	}
	if _, err := GenerateClustered(0, 1, 8, DefaultClusterParams, 1); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("n = 0: err %v", err)
	}
}

func float32Bytes(v []float32) []byte {
	var b bytes.Buffer
	for _, x := range v {
		u := math.Float32bits(x)
		b.Write([]byte{byte(u), byte(u >> 8), byte(u >> 16), byte(u >> 24)})
	}
	return b.Bytes()
}

// TestExactTopK checks the ground truth against a full sort, with
// duplicated vectors so that ties must go to the lower index.
func TestExactTopK(t *testing.T) {
	ds, _ := GenerateClustered(500, 30, 16, DefaultClusterParams, 2)
	vecs := slices.Clone(ds.Vectors)
	vecs = append(vecs, vecs[10], vecs[20], vecs[20]) // exact duplicates: ties
	queries := append(slices.Clone(ds.Queries), vecs[20])
	got, err := ExactTopK(t.Context(), vecs, queries, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	for qi, q := range queries {
		all := make([]Neighbor, len(vecs))
		for i, v := range vecs {
			all[i] = Neighbor{i, dot(q, v)}
		}
		slices.SortFunc(all, func(a, b Neighbor) int {
			if better(a, b) {
				return -1
			}
			return 1
		})
		if !slices.Equal(got[qi], all[:10]) {
			t.Fatalf("query %d: got %v, want %v", qi, got[qi], all[:10])
		}
	}
	// The reference scan of ScanLatency finds the same neighbours (in
	// float32, so only away from exact ties: the generated vectors).
	for qi, q := range ds.Queries {
		a, b := scanTopK(ds.Vectors, q, 10), got[qi]
		for i := range a {
			if a[i].Index != b[i].Index {
				t.Fatalf("query %d: scan %v, exact %v", qi, a, b)
			}
		}
	}
	if d, err := ScanLatency(t.Context(), ds.Vectors, ds.Queries, 10, 2); err != nil || d <= 0 {
		t.Errorf("ScanLatency = %v, %v", d, err)
	}
	// The last query is vector 20 itself: its copies tie, lowest index first.
	last := got[len(got)-1]
	if last[0].Index != 20 || last[1].Index != 501 || last[2].Index != 502 {
		t.Errorf("ties not broken by index: %v", last[:3])
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := ExactTopK(ctx, vecs, queries, 10, 2); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err %v", err)
	}
}

func TestRecall(t *testing.T) {
	m := func(ids ...int) []vectorstore.Match {
		var out []vectorstore.Match
		for _, i := range ids {
			out = append(out, vectorstore.Match{Record: vectorstore.Record{ID: recordID(i)}})
		}
		return out
	}
	n := func(ids ...int) []Neighbor {
		var out []Neighbor
		for _, i := range ids {
			out = append(out, Neighbor{Index: i})
		}
		return out
	}
	mean, worst := recall(
		[][]vectorstore.Match{m(1, 2, 3, 4), m(1, 2, 9, 8), m()},
		[][]Neighbor{n(1, 2, 3, 4), n(4, 3, 2, 1), n(5, 6, 7, 8)}, 4)
	if math.Abs(mean-0.5) > 1e-12 || worst != 0 {
		t.Errorf("recall = %v, %v; want 0.5, 0", mean, worst)
	}
}

func TestMedianThroughput(t *testing.T) {
	got := medianThroughput([]Throughput{
		{Clients: 4, Queries: 10, QPS: 300, P50: 5, P99: 90},
		{Clients: 4, Queries: 20, QPS: 100, P50: 50, P99: 70},
		{Clients: 4, Queries: 30, QPS: 200, P50: 7, P99: 80},
	})
	want := Throughput{Clients: 4, Queries: 60, QPS: 200, P50: 7, P99: 80}
	if got != want {
		t.Errorf("median = %+v, want %+v", got, want)
	}
}

func TestPercentile(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 200; i++ {
		s = append(s, time.Duration(i))
	}
	if p := percentile(s, 0.5); p != 100 {
		t.Errorf("p50 = %v", p)
	}
	if p := percentile(s, 0.99); p != 198 {
		t.Errorf("p99 = %v", p)
	}
	if p := percentile(nil, 0.5); p != 0 {
		t.Errorf("empty p50 = %v", p)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, c := range map[string]Config{
		"unknown backend":  {Backends: []string{"mongo"}},
		"pgvector no dsn":  {Backends: []string{PGVector}},
		"qdrant no addr":   {Backends: []string{Qdrant}},
		"twice":            {Backends: []string{Chromem, Chromem}},
		"empty backends":   {Backends: []string{}},
		"bad size":         {Sizes: []int{0}, TextSizes: []int{}},
		"no dataset":       {Sizes: []int{}, TextSizes: []int{}},
		"clients":          {Clients: []int{4}, TextSizes: []int{}},
		"k":                {K: vectorstore.MaxK + 1, TextSizes: []int{}},
		"text no goroot":   {Sizes: []int{}, TextSizes: []int{100}},
		"negative seconds": {Duration: -time.Second, TextSizes: []int{}},
		"ef_search":        {EfSearchSweep: []int{0}, TextSizes: []int{}},
		"rounds":           {Rounds: -1, TextSizes: []int{}},
	} {
		rep, err := Run(t.Context(), c)
		if !errors.Is(err, ErrInvalidConfig) || rep != nil {
			t.Errorf("%s: (%v, %v), want nil report and ErrInvalidConfig", name, rep, err)
		}
	}
}

// TestBackendFailure: a backend that cannot be reached fails its rows with
// ErrBackend, the run goes on, and the report shows the failure.
func TestBackendFailure(t *testing.T) {
	rep, err := Run(t.Context(), Config{
		Backends: []string{Chromem, PGVector},
		// Port 1 on loopback: nothing listens, connecting fails at once.
		PGDSN: "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2",
		Sizes: []int{200}, TextSizes: []int{}, Queries: 20, Duration: 10 * time.Millisecond,
		ScratchDir: t.TempDir(),
	})
	if !errors.Is(err, ErrBackend) || rep == nil {
		t.Fatalf("err %v, report %v", err, rep != nil)
	}
	if rep.Results[0].Err != nil || rep.Results[1].Err == nil {
		t.Fatalf("results: chromem %v, pgvector %v", rep.Results[0].Err, rep.Results[1].Err)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| pgvector | clustered-200 | failed: ") {
		t.Errorf("failure not in the report:\n%s", md.String())
	}
}

func TestCorpus(t *testing.T) {
	root := goRoot(t)
	c, err := Corpus(t.Context(), CorpusOptions{GoRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(c) < 10200 {
		t.Fatalf("%d sentences; the text dataset needs 10k + queries", len(c))
	}
	seen := map[string]bool{}
	bySource := map[string]int{}
	for _, s := range c {
		if !usable(s.Text) {
			t.Fatalf("unusable sentence kept: %q", s.Text)
		}
		if seen[s.Text] {
			t.Fatalf("duplicate: %q", s.Text)
		}
		seen[s.Text] = true
		bySource[s.Source]++
	}
	if bySource[SourceGoDoc] < 500 || bySource[SourceGoSrc] < 5000 {
		t.Errorf("sources %v", bySource)
	}
	again, _ := Corpus(t.Context(), CorpusOptions{GoRoot: root, LicenseDir: "-"})
	if bySource[SourceLicenses] > 0 && len(again) >= len(c) {
		t.Errorf("LicenseDir \"-\" kept the licences")
	}
	s1, err := Sample(c, 50, 3)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := Sample(c, 50, 3)
	if !slices.Equal(s1, s2) {
		t.Error("same seed, different sample")
	}
	if _, err := Sample(c, len(c)+1, 1); !errors.Is(err, ErrNotEnoughText) {
		t.Errorf("oversized sample: %v", err)
	}
	if _, err := Corpus(t.Context(), CorpusOptions{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("no GoRoot: %v", err)
	}
	if _, err := Corpus(t.Context(), CorpusOptions{GoRoot: t.TempDir()}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("GoRoot without src: %v", err)
	}
}

func TestSentences(t *testing.T) {
	got := splitSentences("The first one ends here. It is followed, e.g. by this one! Does it split? yes it does not split before lower case. Final words without stop")
	want := []string{"The first one ends here.", "It is followed, e.g. by this one!", "Does it split? yes it does not split before lower case.", "Final words without stop"}
	if !slices.Equal(got, want) {
		t.Errorf("split:\n got %q\nwant %q", got, want)
	}
	for s, ok := range map[string]bool{
		"The memory model specifies the conditions under which reads observe writes.": true,
		"the memory model specifies the conditions under which reads observe writes.": false,
		"The memory model specifies the conditions under which reads observe writes":  false,
		"Short sentence here.": false,
		"Call x.Foo(a, b) with map[string]int{} when the buffer is full of things.": false,
		"See the code at https://example.com/some/where for the details of it all.": false,
	} {
		if usable(s) != ok {
			t.Errorf("usable(%q) = %v", s, !ok)
		}
	}
}

// TestEmbedTextsCache: the second call reads the vectors back from the
// cache, bit for bit; a damaged cache file is recomputed, not trusted.
func TestEmbedTextsCache(t *testing.T) {
	e := hashing.New(64)
	texts := make([]string, 150)
	for i := range texts {
		texts[i] = "sentence number " + strings.Repeat("x", i%7) + " " + recordID(i)
	}
	dir := t.TempDir()
	v1, cached, err := EmbedTexts(t.Context(), e, texts, EmbedOptions{CacheDir: dir, Batch: 16, Workers: 3})
	if err != nil || cached {
		t.Fatalf("first: cached %v, err %v", cached, err)
	}
	direct, _ := e.Embed(t.Context(), texts)
	for i := range texts {
		if !slices.Equal(v1[i], direct[i]) {
			t.Fatalf("vector %d differs from a direct Embed", i)
		}
	}
	v2, cached, err := EmbedTexts(t.Context(), e, texts, EmbedOptions{CacheDir: dir})
	if err != nil || !cached {
		t.Fatalf("second: cached %v, err %v", cached, err)
	}
	for i := range texts {
		if !slices.Equal(v1[i], v2[i]) {
			t.Fatalf("cached vector %d differs", i)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.f32"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	if err := os.Truncate(files[0], 100); err != nil {
		t.Fatal(err)
	}
	_, cached, err = EmbedTexts(t.Context(), e, texts, EmbedOptions{CacheDir: dir})
	if err != nil || cached {
		t.Fatalf("damaged cache: cached %v, err %v", cached, err)
	}
	// Other texts, other file.
	if _, cached, _ := EmbedTexts(t.Context(), e, texts[:10], EmbedOptions{CacheDir: dir}); cached {
		t.Error("a different text list hit the cache")
	}
	// The embedder's error comes back wrapped.
	if _, _, err := EmbedTexts(t.Context(), e, []string{"fine", " "}, EmbedOptions{}); err == nil {
		t.Error("blank text embedded without error")
	}
}

// TestRunCancelled: a cancelled run stops with ctx's error and still
// returns the report of what it measured, and leaves no collection behind.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	scratch := t.TempDir()
	var once sync.Once
	rep, err := Run(ctx, Config{
		Backends: []string{Chromem}, Sizes: []int{300, 400}, TextSizes: []int{},
		Queries: 10, Duration: 10 * time.Millisecond, NoVariants: true,
		ScratchDir: scratch,
		// Cancel as soon as the first dataset's backend has finished.
		Log: slogFunc(func(msg string) {
			if msg == "done" {
				once.Do(cancel)
			}
		}),
	})
	if !errors.Is(err, context.Canceled) || rep == nil {
		t.Fatalf("err %v, report %v", err, rep != nil)
	}
	if len(rep.Results) != 1 || rep.Results[0].Dataset != "clustered-300" {
		t.Errorf("results %+v", rep.Results)
	}
	if left, _ := os.ReadDir(scratch); len(left) != 0 {
		t.Errorf("scratch not cleaned: %v", left)
	}
}

// TestQdrantUnreachable: the Qdrant path (no server on this machine) fails
// cleanly with typed errors: a malformed address as ErrInvalidConfig, a
// closed port as ErrBackend, and the run goes on.
func TestQdrantUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for addr, want := range map[string]error{"no-port": ErrInvalidConfig, "127.0.0.1:1": ErrBackend} {
		rep, err := Run(ctx, Config{
			Backends: []string{Qdrant, Chromem}, QdrantAddr: addr,
			Sizes: []int{100}, TextSizes: []int{}, Queries: 5, Duration: time.Millisecond, Rounds: 1,
			NoVariants: true, ScratchDir: t.TempDir(),
		})
		if rep == nil || !errors.Is(err, want) || !errors.Is(err, ErrBackend) {
			t.Fatalf("%s: err %v", addr, err)
		}
		if rep.Results[0].Err == nil || rep.Results[1].Err != nil {
			t.Errorf("%s: qdrant %v, chromem %v", addr, rep.Results[0].Err, rep.Results[1].Err)
		}
	}
}

func TestParseSizes(t *testing.T) {
	got, err := ParseSizes("1k, 10K,2500")
	if err != nil || !slices.Equal(got, []int{1000, 10000, 2500}) {
		t.Errorf("ParseSizes = %v, %v", got, err)
	}
	if got, err := ParseSizes("none"); err != nil || got == nil || len(got) != 0 {
		t.Errorf("none = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "k", "1m", "1k,,2k"} {
		if _, err := ParseSizes(bad); err == nil {
			t.Errorf("ParseSizes(%q) accepted", bad)
		}
	}
}
