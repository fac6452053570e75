package recallbench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/vectorstore"
)

// Config configures a run. The zero value runs the full benchmark on the
// embedded backend only: clustered vectors at 1k, 10k and 100k records and
// real text at 10k, 200 queries, top-10, three rounds of 2 s per
// throughput phase.
type Config struct {
	// Backends to run; nil means chromem, plus pgvector when PGDSN is set
	// and qdrant when QdrantAddr is set. Naming a backend without its
	// address is an ErrInvalidConfig.
	Backends []string
	// PGDSN is a PostgreSQL URL (postgres://...) of a database with the
	// vector extension available.
	PGDSN string
	// QdrantAddr is a Qdrant gRPC address, host:port.
	QdrantAddr string

	// Sizes of the clustered datasets; nil means 1k, 10k, 100k.
	Sizes []int
	// TextSizes of the real-text datasets; nil means 10k, empty non-nil
	// means none.
	TextSizes []int
	// Dim of the clustered vectors; 0 means 512, the default model's.
	Dim int
	// Queries per dataset; 0 means 200.
	Queries int
	// K is the number of neighbours asked for; 0 means 10.
	K int
	// Duration of each throughput phase; 0 means 2 s. The first round's
	// one-client phase always runs every query at least once (that pass
	// gives the recall).
	Duration time.Duration
	// Rounds repeats the latency and throughput phases; each figure
	// reported is the median over the rounds, so that a burst of other work
	// on a shared machine during one round does not decide it. 0 means 3.
	Rounds int
	// Clients are the concurrency levels measured; nil means 1 and 4. The
	// first must be 1: its pass over the queries gives latency and recall.
	Clients []int
	// Batch is the number of records per Upsert call; 0 means all of a
	// dataset in one call, the bulk load a store is first filled with
	// (pgvector then builds its HNSW index once, after the load).
	Batch int
	// Seed of the generators; 0 means 1.
	Seed uint64
	// Cluster shapes the clustered vectors; zero means DefaultClusterParams.
	Cluster ClusterParams
	// EfSearchSweep are further HNSW query candidate lists to measure
	// recall and latency at, on backends that have the setting (pgvector),
	// after the default-settings measurement; nil means 80, 160, 320,
	// empty non-nil none.
	EfSearchSweep []int
	// NoVariants skips the backends' variants (chromem: a dot-product
	// collection, which the driver scans itself instead of chromem-go).
	NoVariants bool
	// BulkProbeSizes are the dataset sizes at which a backend's
	// alternative bulk path (pgvector: load unindexed, then CREATE INDEX)
	// is timed too; nil means 10k (the ingest target's size), empty
	// non-nil none.
	BulkProbeSizes []int

	// GoRoot is the Go distribution whose documents and doc comments are
	// the real text (`go env GOROOT`); required when TextSizes is not empty.
	GoRoot string
	// LicenseDir, see CorpusOptions.
	LicenseDir string
	// Embedder turns the sentences into vectors; nil means the default
	// model, uselite.Default().
	Embedder embed.Embedder
	// CacheDir keeps embedded vectors between runs (see EmbedOptions);
	// "" means no cache.
	CacheDir string
	// ScratchDir holds the embedded backend's collections during the run;
	// "" means the system temporary directory. They are deleted after use.
	ScratchDir string

	// Log receives progress; nil means no progress output.
	Log *slog.Logger
	// Command is recorded in the report as the way to reproduce it.
	Command string
}

func (c *Config) withDefaults() (Config, error) {
	o := *c
	if o.Backends == nil {
		o.Backends = []string{Chromem}
		if o.PGDSN != "" {
			o.Backends = append(o.Backends, PGVector)
		}
		if o.QdrantAddr != "" {
			o.Backends = append(o.Backends, Qdrant)
		}
	}
	if len(o.Backends) == 0 {
		return o, fmt.Errorf("%w: no backend selected", ErrInvalidConfig)
	}
	if o.Sizes == nil {
		o.Sizes = []int{1000, 10000, 100000}
	}
	if o.TextSizes == nil {
		o.TextSizes = []int{10000}
	}
	o.Dim = cmp.Or(o.Dim, 512)
	o.Queries = cmp.Or(o.Queries, 200)
	o.K = cmp.Or(o.K, 10)
	o.Duration = cmp.Or(o.Duration, 2*time.Second)
	o.Rounds = cmp.Or(o.Rounds, 3)
	if o.Clients == nil {
		o.Clients = []int{1, 4}
	}
	if o.EfSearchSweep == nil {
		o.EfSearchSweep = []int{80, 160, 320}
	}
	if o.BulkProbeSizes == nil {
		o.BulkProbeSizes = []int{targetSize}
	}
	o.Seed = cmp.Or(o.Seed, 1)
	if o.Cluster.Noise == 0 && o.Cluster.Levels == nil {
		o.Cluster = DefaultClusterParams
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	bad := func(format string, args ...any) (Config, error) {
		return o, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	seen := map[string]bool{}
	for _, b := range o.Backends {
		if seen[b] {
			return bad("backend %q named twice", b)
		}
		seen[b] = true
		if _, err := o.opener(b); err != nil {
			return o, err
		}
	}
	for _, n := range slices.Concat(o.Sizes, o.TextSizes) {
		if n < 1 || n > 10_000_000 {
			return bad("size %d out of range 1..10000000", n)
		}
	}
	if len(o.Sizes)+len(o.TextSizes) == 0 {
		return bad("no dataset selected")
	}
	switch {
	case o.Dim < 2 || o.Dim > vectorstore.MaxDimension:
		return bad("dimension %d out of range", o.Dim)
	case o.Queries < 1:
		return bad("queries must be >= 1")
	case o.K < 1 || o.K > vectorstore.MaxK:
		return bad("k %d out of range 1..%d", o.K, vectorstore.MaxK)
	case o.Duration < 0:
		return bad("negative duration")
	case len(o.Clients) == 0 || o.Clients[0] != 1:
		return bad("clients must start with 1 (got %v)", o.Clients)
	case o.Batch < 0:
		return bad("batch must be >= 0")
	case o.Rounds < 1 || o.Rounds > 100:
		return bad("rounds %d out of range 1..100", o.Rounds)
	}
	for _, c := range o.Clients {
		if c < 1 || c > 256 {
			return bad("clients %d out of range 1..256", c)
		}
	}
	for _, ef := range o.EfSearchSweep {
		if ef < 1 || ef > 1000 {
			return bad("ef_search %d out of range 1..1000", ef)
		}
	}
	if len(o.TextSizes) > 0 && o.GoRoot == "" {
		return bad("the text dataset needs GoRoot (`go env GOROOT`)")
	}
	return o, nil
}

// Throughput is one concurrency level's measurement.
type Throughput struct {
	Clients  int
	Queries  int // completed
	QPS      float64
	P50, P99 time.Duration
}

// Result is one backend on one dataset.
type Result struct {
	Backend, Dataset string
	Size             int
	// Ingest is the wall time of upserting every record, in batches, until
	// the last Upsert returned; Ready adds the wait for a backend that
	// indexes after acknowledging (zero when there is none).
	Ingest, Ready time.Duration
	// Throughput per concurrency level; the first (one client) also gives
	// the latency percentiles of the report.
	Throughput []Throughput
	// Recall is the mean recall@K over the queries against ExactTopK;
	// MinRecall the worst single query.
	Recall, MinRecall float64
	// Sweep holds recall and latency at other HNSW candidate lists
	// (Config.EfSearchSweep), each from one sequential pass.
	Sweep []SweepPoint
	// BulkLoad and BulkIndex time the backend's alternative bulk path when
	// it was probed (Config.BulkProbeSizes): loading without the ANN index,
	// then building it. Zero when not probed.
	BulkLoad, BulkIndex time.Duration
	// Variant is the backend configured another way (Config.Variants),
	// measured with one sequential pass; nil when not run.
	Variant *VariantResult
	// Err is set when the backend failed on this dataset; the other fields
	// then hold what was measured before.
	Err error
}

// VariantResult is a backend configured another way than its default.
type VariantResult struct {
	Label             string
	Ingest            time.Duration
	P50, P99          time.Duration
	Recall, MinRecall float64
}

// SweepPoint is one query-time setting of an HNSW backend.
type SweepPoint struct {
	EfSearch          int
	Recall, MinRecall float64
	P50               time.Duration
	// SeqScans and IndexScans count the plans the backend's planner chose
	// for the pass (PostgreSQL's statistics); both 0 when not known.
	SeqScans, IndexScans int64
}

// IngestRate is records per second over Ingest.
func (r *Result) IngestRate() float64 {
	if r.Ingest <= 0 {
		return 0
	}
	return float64(r.Size) / r.Ingest.Seconds()
}

// DatasetInfo describes a dataset of the run.
type DatasetInfo struct {
	Name, Kind   string
	Size, Dim    int
	Queries      int
	Shape        Shape
	Note         string
	Sources      map[string]int
	EmbedSeconds float64 // time spent embedding (0 when cached or synthetic)
	// ScanP50 is the median latency of a plain exact scan in Go over the
	// dataset (ScanLatency): a reference, measured in the same run.
	ScanP50 time.Duration
	Cached  bool
}

// Report is the outcome of Run.
type Report struct {
	Config   Config // with defaults applied
	Machine  Machine
	Started  time.Time
	Elapsed  time.Duration
	Datasets []DatasetInfo
	Settings []Settings
	Results  []Result
}

// Run runs the benchmark: for each dataset it computes the exact top-K of
// the queries, then for each backend opens a fresh collection, ingests,
// measures latency, throughput and recall, and drops the collection.
//
// A backend that fails on a dataset is recorded in its Result and the run
// goes on; Run then returns the report with an error joining the failures
// (each wrapping ErrBackend). An error that stops the run part-way (a
// cancelled ctx) also comes with the report of what was measured.
// Configuration errors, a missing model or too little text return before
// anything runs, with a nil report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	// What the text dataset needs is checked before anything runs, so a
	// missing model fails in a second rather than after the other datasets.
	var corpus []Sentence
	if len(c.TextSizes) > 0 {
		if c.Embedder == nil {
			m, err := uselite.Default()
			if err != nil {
				return nil, fmt.Errorf("recallbench: the text dataset needs the default model: %w", err)
			}
			c.Embedder = m
		}
		c.Log.Info("reading the real-text corpus", "goroot", c.GoRoot)
		if corpus, err = Corpus(ctx, CorpusOptions{GoRoot: c.GoRoot, LicenseDir: c.LicenseDir}); err != nil {
			return nil, err
		}
		if _, err := Sample(corpus, slices.Max(c.TextSizes)+c.Queries, c.Seed); err != nil {
			return nil, err
		}
	}
	rep := &Report{Config: c, Started: time.Now()}
	rep.Machine = readMachine()
	stop := func(err error) (*Report, error) {
		rep.Machine.LoadEnd = readLoad()
		rep.Elapsed = time.Since(rep.Started)
		return rep, errors.Join(append(failures(rep), err)...)
	}
	settingsSeen := map[string]bool{}

	type job struct {
		kind string
		size int
	}
	var jobs []job
	for _, n := range c.Sizes {
		jobs = append(jobs, job{Clustered, n})
	}
	for _, n := range c.TextSizes {
		jobs = append(jobs, job{Text, n})
	}
	for _, j := range jobs {
		var ds *Dataset
		var info DatasetInfo
		switch j.kind {
		case Clustered:
			c.Log.Info("generating clustered vectors", "size", j.size, "dim", c.Dim)
			ds, err = GenerateClustered(j.size, c.Queries, c.Dim, c.Cluster, c.Seed)
		case Text:
			ds, info, err = c.textDataset(ctx, corpus, j.size)
		}
		if err != nil {
			return stop(err)
		}
		c.Log.Info("computing exact top-k", "dataset", ds.Name(), "queries", len(ds.Queries))
		truth, err := ExactTopK(ctx, ds.Vectors, ds.Queries, c.K, runtime.NumCPU())
		if err != nil {
			return stop(err)
		}
		info.ScanP50, err = ScanLatency(ctx, ds.Vectors, ds.Queries, c.K, c.Rounds)
		if err != nil {
			return stop(err)
		}
		info.Name, info.Kind, info.Size, info.Dim, info.Queries = ds.Name(), ds.Kind, len(ds.Vectors), ds.Dim, len(ds.Queries)
		info.Shape, info.Note, info.Sources = ShapeOf(ds.Vectors, truth), ds.Note, ds.Sources
		rep.Datasets = append(rep.Datasets, info)

		for _, b := range c.Backends {
			c.Log.Info("running", "backend", b, "dataset", ds.Name())
			res, set := c.runOne(ctx, b, ds, truth)
			if res.Err != nil {
				c.Log.Error("backend failed", "backend", b, "dataset", ds.Name(), "err", res.Err)
			} else {
				c.Log.Info("done", "backend", b, "dataset", ds.Name(), "ingest", res.Ingest.Round(time.Millisecond),
					"p50", res.Throughput[0].P50, "recall", fmt.Sprintf("%.4f", res.Recall))
			}
			if set != nil && !settingsSeen[b] {
				settingsSeen[b] = true
				rep.Settings = append(rep.Settings, *set)
			}
			rep.Results = append(rep.Results, res)
			if err := ctx.Err(); err != nil {
				return stop(err)
			}
		}
	}
	return stop(nil)
}

// failures are the errors of the report's results.
func failures(rep *Report) []error {
	var errs []error
	for _, r := range rep.Results {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return errs
}

func (c *Config) textDataset(ctx context.Context, corpus []Sentence, n int) (*Dataset, DatasetInfo, error) {
	var info DatasetInfo
	sample, err := Sample(corpus, n+c.Queries, c.Seed)
	if err != nil {
		return nil, info, err
	}
	texts := make([]string, len(sample))
	for i, s := range sample {
		texts[i] = s.Text
	}
	e := c.Embedder // set by Run
	c.Log.Info("embedding sentences", "count", len(texts), "model", e.Model())
	t0 := time.Now()
	vecs, cached, err := EmbedTexts(ctx, e, texts, EmbedOptions{CacheDir: c.CacheDir})
	if err != nil {
		return nil, info, err
	}
	info.Cached = cached
	if !cached {
		info.EmbedSeconds = time.Since(t0).Seconds()
	}
	ds := &Dataset{Kind: Text, Dim: e.Dimension(), Texts: texts[:n], QueryTexts: texts[n:], Sources: map[string]int{},
		Note: fmt.Sprintf("%d sentences drawn (seed %d) from %d usable sentences of %s; embedded with %s", len(texts), c.Seed, len(corpus), c.GoRoot, e.Model())}
	for _, s := range sample[:n] {
		ds.Sources[s.Source]++
	}
	for i, v := range vecs {
		v = embed.Normalize(slices.Clone(v))
		if i < n {
			ds.Vectors = append(ds.Vectors, v)
		} else {
			ds.Queries = append(ds.Queries, v)
		}
	}
	if len(ds.Vectors) > 0 {
		ds.Dim = len(ds.Vectors[0])
	}
	return ds, info, nil
}

// collectionName is unique per process so that two runs sharing a server
// never write into each other's collections.
func collectionName(ds *Dataset) string {
	return fmt.Sprintf("recallbench_%s_%s_%d", ds.Kind, strings.ToLower(SizeLabel(len(ds.Vectors))), os.Getpid())
}

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func recordID(i int) string { return fmt.Sprintf("r%08d", i) }

func (c *Config) runOne(ctx context.Context, backend string, ds *Dataset, truth [][]Neighbor) (res Result, set *Settings) {
	res = Result{Backend: backend, Dataset: ds.Name(), Size: len(ds.Vectors)}
	fail := func(stage string, err error) (Result, *Settings) {
		res.Err = fmt.Errorf("%w: %s on %s: %s: %w", ErrBackend, backend, ds.Name(), stage, err)
		return res, set
	}
	open, err := c.opener(backend)
	if err != nil {
		return fail("open", err)
	}
	inst, err := open(ctx, collectionName(ds), ds.Dim)
	if err != nil {
		return fail("open", err)
	}
	defer func() {
		// Drop with a fresh context: the run's may be cancelled, and the
		// collection must not outlive the run.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := inst.drop(dctx); err != nil && res.Err == nil {
			res.Err = fmt.Errorf("%w: %s on %s: drop: %w", ErrBackend, backend, ds.Name(), err)
		}
	}()

	// Records are built before the clock starts: ingest measures the
	// store, not this program's allocations.
	recs := make([]vectorstore.Record, len(ds.Vectors))
	for i, v := range ds.Vectors {
		recs[i] = vectorstore.Record{ID: recordID(i), Layer: "bench", Kind: ds.Kind, Vector: v,
			CreatedAt: epoch.Add(time.Duration(i) * time.Second)}
		if ds.Texts != nil {
			recs[i].Text = ds.Texts[i]
		}
	}
	t0 := time.Now()
	batch := c.batchFor(len(recs))
	for lo := 0; lo < len(recs); lo += batch {
		if err := inst.coll.Upsert(ctx, recs[lo:min(lo+batch, len(recs))]...); err != nil {
			return fail("ingest", err)
		}
	}
	res.Ingest = time.Since(t0)
	if inst.ready != nil {
		if err := inst.ready(ctx); err != nil {
			return fail("wait for index", err)
		}
		res.Ready = time.Since(t0)
	}
	if n, err := inst.coll.Count(ctx, vectorstore.Filter{}); err != nil {
		return fail("count", err)
	} else if n != len(ds.Vectors) {
		return fail("count", fmt.Errorf("collection holds %d records, %d were ingested", n, len(ds.Vectors)))
	}
	if s, err := inst.settings(ctx); err != nil {
		return fail("read settings", err)
	} else {
		set = &s
	}

	// Warm-up: caches, connections, the planner. Not measured.
	for i := range min(20, len(ds.Queries)) {
		if _, err := inst.coll.Query(ctx, ds.Queries[i], vectorstore.QueryOptions{K: c.K}); err != nil {
			return fail("query", err)
		}
	}
	first := make([][]vectorstore.Match, len(ds.Queries))
	rounds := make([][]Throughput, len(c.Clients))
	for round := range c.Rounds {
		for ci, clients := range c.Clients {
			keep := first
			if round > 0 {
				keep = nil
			}
			tp, err := c.throughput(ctx, inst.coll, ds.Queries, clients, keep)
			if err != nil {
				return fail(fmt.Sprintf("query (%d clients)", clients), err)
			}
			rounds[ci] = append(rounds[ci], tp)
		}
	}
	for _, rs := range rounds {
		res.Throughput = append(res.Throughput, medianThroughput(rs))
	}
	res.Recall, res.MinRecall = recall(first, truth, c.K)

	if inst.withEfSearch != nil {
		for _, ef := range c.EfSearchSweep {
			sp, err := c.sweepPoint(ctx, inst, ef, ds.Queries, truth)
			if err != nil {
				return fail(fmt.Sprintf("ef_search %d", ef), err)
			}
			res.Sweep = append(res.Sweep, sp)
		}
	}
	if inst.variant != nil && !c.NoVariants {
		c.Log.Info("variant", "backend", backend, "dataset", ds.Name())
		v, err := c.runVariant(ctx, inst, recs, ds.Queries, truth)
		if err != nil {
			return fail("variant", err)
		}
		res.Variant = v
	}
	if inst.bulkLoad != nil && slices.Contains(c.BulkProbeSizes, len(ds.Vectors)) {
		c.Log.Info("bulk-load probe", "backend", backend, "dataset", ds.Name())
		res.BulkLoad, res.BulkIndex, err = inst.bulkLoad(ctx, recs, c.batchFor(len(recs)))
		if err != nil {
			return fail("bulk-load probe", err)
		}
	}
	return res, set
}

func (c *Config) runVariant(ctx context.Context, base *instance, recs []vectorstore.Record, queries [][]float32, truth [][]Neighbor) (v *VariantResult, err error) {
	inst, label, err := base.variant(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		err = errors.Join(err, inst.drop(context.WithoutCancel(ctx)))
	}()
	v = &VariantResult{Label: label}
	t0 := time.Now()
	batch := c.batchFor(len(recs))
	for lo := 0; lo < len(recs); lo += batch {
		if err := inst.coll.Upsert(ctx, recs[lo:min(lo+batch, len(recs))]...); err != nil {
			return nil, err
		}
	}
	v.Ingest = time.Since(t0)
	got, p50, p99, err := c.pass(ctx, inst.coll, queries)
	if err != nil {
		return nil, err
	}
	v.P50, v.P99 = p50, p99
	v.Recall, v.MinRecall = recall(got, truth, c.K)
	return v, nil
}

// pass runs every query once, in order, after a short warm-up, and returns
// the results and the p50 and p99 latencies of the pass. With several
// rounds, each further round repeats the first passRepeat queries and the
// latencies reported are the medians over the rounds.
func (c *Config) pass(ctx context.Context, coll *vectorstore.Collection, queries [][]float32) (got [][]vectorstore.Match, p50, p99 time.Duration, err error) {
	for i := range min(20, len(queries)) {
		if _, err := coll.Query(ctx, queries[i], vectorstore.QueryOptions{K: c.K}); err != nil {
			return nil, 0, 0, err
		}
	}
	got = make([][]vectorstore.Match, len(queries))
	var p50s, p99s []time.Duration
	for round := range c.Rounds {
		n := len(queries)
		if round > 0 {
			n = min(n, passRepeat)
		}
		lat := make([]time.Duration, n)
		for i, q := range queries[:n] {
			t := time.Now()
			ms, err := coll.Query(ctx, q, vectorstore.QueryOptions{K: c.K})
			if err != nil {
				return nil, 0, 0, err
			}
			lat[i] = time.Since(t)
			if round == 0 {
				got[i] = ms
			}
		}
		slices.Sort(lat)
		p50s = append(p50s, percentile(lat, 0.5))
		p99s = append(p99s, percentile(lat, 0.99))
	}
	return got, median(p50s), median(p99s), nil
}

// passRepeat is how many queries the later rounds of a pass repeat.
const passRepeat = 50

func (c *Config) sweepPoint(ctx context.Context, inst *instance, ef int, queries [][]float32, truth [][]Neighbor) (SweepPoint, error) {
	coll, err := inst.withEfSearch(ctx, ef)
	if err != nil {
		return SweepPoint{}, err
	}
	defer coll.Close()
	var seq0, idx0 int64
	if inst.scans != nil {
		if seq0, idx0, err = inst.scans(ctx); err != nil {
			return SweepPoint{}, err
		}
	}
	got, p50, _, err := c.pass(ctx, coll, queries)
	if err != nil {
		return SweepPoint{}, err
	}
	sp := SweepPoint{EfSearch: ef, P50: p50}
	if inst.scans != nil {
		seq1, idx1, err := inst.scans(ctx)
		if err != nil {
			return SweepPoint{}, err
		}
		sp.SeqScans, sp.IndexScans = seq1-seq0, idx1-idx0
	}
	sp.Recall, sp.MinRecall = recall(got, truth, c.K)
	return sp, nil
}

// medianThroughput is the median of each figure over rounds; Queries is
// their total.
func medianThroughput(rs []Throughput) Throughput {
	out := Throughput{Clients: rs[0].Clients}
	var qps []float64
	var p50, p99 []time.Duration
	for _, r := range rs {
		out.Queries += r.Queries
		qps = append(qps, r.QPS)
		p50 = append(p50, r.P50)
		p99 = append(p99, r.P99)
	}
	out.QPS, out.P50, out.P99 = median(qps), median(p50), median(p99)
	return out
}

// median of xs (the lower middle for an even count); xs is sorted in place.
func median[T int64 | float64 | time.Duration](xs []T) T {
	slices.Sort(xs)
	return xs[(len(xs)-1)/2]
}

// throughput runs queries from clients goroutines for c.Duration and
// measures each call. With one client and a non-nil first it runs at least
// one full pass in order and stores that pass's results in first, for the
// recall.
func (c *Config) throughput(ctx context.Context, coll *vectorstore.Collection, queries [][]float32, clients int, first [][]vectorstore.Match) (Throughput, error) {
	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(c.Duration)
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Clients start at different queries so they do not move in
			// lock step over the same rows.
			i := w * len(queries) / clients
			for n := 0; ; n++ {
				// The one-client phase always completes its first pass,
				// which gives the recall.
				recallPass := first != nil && clients == 1 && n < len(queries)
				if !recallPass && !time.Now().Before(deadline) {
					return
				}
				if ctx.Err() != nil {
					errs[w] = ctx.Err()
					return
				}
				q := i % len(queries)
				t := time.Now()
				ms, err := coll.Query(ctx, queries[q], vectorstore.QueryOptions{K: c.K})
				lat[w] = append(lat[w], time.Since(t))
				if err != nil {
					errs[w] = err
					return
				}
				if recallPass {
					first[q] = ms
				}
				i++
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return Throughput{}, err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	tp := Throughput{Clients: clients, Queries: len(all), QPS: float64(len(all)) / elapsed.Seconds(),
		P50: percentile(all, 0.50), P99: percentile(all, 0.99)}
	return tp, nil
}

// percentile of sorted samples, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// recall is the mean and the minimum over queries of |got ∩ want| / k.
func recall(got [][]vectorstore.Match, truth [][]Neighbor, k int) (mean, worst float64) {
	worst = 1
	for qi, want := range truth {
		ids := make(map[string]bool, len(want))
		for _, n := range want {
			ids[recordID(n.Index)] = true
		}
		hit := 0
		for _, m := range got[qi] {
			if ids[m.Record.ID] {
				hit++
			}
		}
		r := float64(hit) / float64(min(k, len(want)))
		mean += r
		worst = min(worst, r)
	}
	if len(truth) == 0 {
		return 0, 0
	}
	return mean / float64(len(truth)), worst
}

// batchFor is the Upsert batch size for n records.
func (c *Config) batchFor(n int) int {
	if c.Batch == 0 {
		return max(1, n)
	}
	return c.Batch
}

// ParseSizes reads a list of dataset sizes as the commands take them:
// "1k,10k,100k" or "1000,2500", k meaning thousands; "none" is an empty
// (non-nil) list.
func ParseSizes(s string) ([]int, error) {
	if s == "none" {
		return []int{}, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(strings.ToLower(part))
		mult := 1
		if t, ok := strings.CutSuffix(part, "k"); ok {
			part, mult = t, 1000
		}
		n, err := strconv.Atoi(part)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q (want e.g. 1k, 10k or 2500)", part)
		}
		out = append(out, n*mult)
	}
	return out, nil
}
