package recallbench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Targets of issue 4.
const (
	TargetRecall       = 0.95                   // recall@10 on every backend at its defaults
	TargetEmbeddedP50  = 5 * time.Millisecond   // embedded default, top-10 p50 at 10k records
	TargetIngest10k    = 2 * time.Second        // ingest of 10k precomputed vectors, every backend
	targetSize         = 10000                  // the size the latency and ingest targets are set at
	embeddedBackend    = Chromem                // the embedded default
	reportTimeFormat   = "2006-01-02 15:04 MST" // when the run started
	recallDigits       = 4
	defaultReportTitle = "Recall and speed of the vector backends"
)

// Check is one target and whether the run met it.
type Check struct {
	Target string
	// Met is false when any measured row misses the target; Measured says
	// whether the run had any row the target applies to.
	Met, Measured bool
	Detail        string
}

// Checks evaluates the targets against the results. A target with
// no applicable row (e.g. no 10k dataset in a quick run) is reported as not
// measured rather than met.
func (r *Report) Checks() []Check {
	rec := Check{Target: fmt.Sprintf("recall@%d >= %.2f on every backend at its default settings", r.Config.K, TargetRecall), Met: true}
	var worst []string
	for _, x := range r.Results {
		if x.Err != nil {
			continue
		}
		rec.Measured = true
		if x.Recall < TargetRecall {
			rec.Met = false
			worst = append(worst, fmt.Sprintf("%s on %s: %.*f", x.Backend, x.Dataset, recallDigits, x.Recall))
		}
	}
	if rec.Met {
		lo := 1.0
		at := ""
		for _, x := range r.Results {
			if x.Err == nil && x.Recall <= lo {
				lo, at = x.Recall, x.Backend+" on "+x.Dataset
			}
		}
		rec.Detail = fmt.Sprintf("lowest %.*f (%s)", recallDigits, lo, at)
	} else {
		rec.Detail = "below on " + strings.Join(worst, "; ")
	}

	lat := Check{Target: fmt.Sprintf("embedded default (%s) top-%d p50 under %v at %s records", embeddedBackend, r.Config.K, TargetEmbeddedP50, SizeLabel(targetSize)), Met: true}
	ing := Check{Target: fmt.Sprintf("ingest of %s precomputed vectors under %v on every backend", SizeLabel(targetSize), TargetIngest10k), Met: true}
	var latD, ingD []string
	for _, x := range r.Results {
		if x.Err != nil || x.Size != targetSize {
			continue
		}
		if x.Backend == embeddedBackend && len(x.Throughput) > 0 {
			lat.Measured = true
			p50 := x.Throughput[0].P50
			lat.Met = lat.Met && p50 < TargetEmbeddedP50
			latD = append(latD, fmt.Sprintf("%s: %s", x.Dataset, fmtDur(p50)))
		}
		ing.Measured = true
		ing.Met = ing.Met && x.Ingest < TargetIngest10k
		ingD = append(ingD, fmt.Sprintf("%s on %s: %.2f s", x.Backend, x.Dataset, x.Ingest.Seconds()))
	}
	lat.Detail, ing.Detail = strings.Join(latD, "; "), strings.Join(ingD, "; ")
	return []Check{rec, lat, ing}
}

// WriteMarkdown writes the report as Markdown.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	c := &r.Config
	p("# %s\n\n", defaultReportTitle)
	p("Issue 4: for each backend, ingest rate, top-%d query latency (p50/p99), queries per second at ", c.K)
	var cl []string
	for _, n := range c.Clients {
		cl = append(cl, fmt.Sprint(n))
	}
	p("%s concurrent clients, and recall@%d against exact search, on clustered synthetic vectors and on the default model's vectors of real text.\n\n", strings.Join(cl, " and "), c.K)
	if c.Command != "" {
		p("Reproduce: `%s`\n\n", c.Command)
	}
	p("Run started %s, took %s.\n\n", r.Started.UTC().Format(reportTimeFormat), r.Elapsed.Round(time.Second))

	p("## Machine\n\n")
	m := &r.Machine
	p("- CPU: %d × %s (runtime.NumCPU %d)\n", m.CPUs, orUnknown(m.CPUModel), m.CPUs)
	p("- Memory: %s\n", orUnknown(m.MemTotal))
	p("- Go %s, %s\n", m.GoVersion, m.OSArch)
	p("- Load average (1, 5, 15 min) at start: %s; at end: %s. The machine is shared with other jobs: read figures as orders of magnitude and ratios.\n\n", orUnknown(m.LoadStart), orUnknown(m.LoadEnd))

	p("## Settings\n\n")
	p("Every backend runs at its defaults, as strata opens it with no options.\n\n")
	p("| backend | search | HNSW m | ef_construction | ef_search | notes |\n|---|---|---|---|---|---|\n")
	for _, s := range r.Settings {
		p("| %s | %s | %s | %s | %s | %s |\n", s.Backend, s.Search, intOrDash(s.M), intOrDash(s.EfConstruction), orDash(s.EfSearch), s.Notes)
	}
	batches := "each dataset loaded with one Upsert call (a bulk load)"
	if c.Batch > 0 {
		batches = fmt.Sprintf("Upsert batches of %d records", c.Batch)
	}
	p("\nRun: k = %d, %d queries per dataset (not in the index, drawn from the same distribution), %s, %d rounds of %v per throughput phase, distance cosine, record ids `r%%08d`.\n\n",
		c.K, c.Queries, batches, c.Rounds, c.Duration)

	p("## Datasets\n\n")
	p("The three cosines describe how clustered a dataset is: the mean cosine of a query to its nearest and to its %dth nearest record, and of a random pair of records. The clustered generator's defaults were chosen to match the real text's at 10k.\n\n", c.K)
	p("The last column is a reference for latency: the median time of a plain exact top-%d scan in Go over the same vectors (one goroutine, float32 dot products, no store around it), measured in the same run.\n\n", c.K)
	p("| dataset | records | dim | queries | cos 1st NN | cos %dth NN | cos random pair | how it was made | Go scan p50 |\n|---|---|---|---|---|---|---|---|---|\n", c.K)
	for _, d := range r.Datasets {
		how := d.Note
		if len(d.Sources) > 0 {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(d.Sources)) {
				parts = append(parts, fmt.Sprintf("%s %d", k, d.Sources[k]))
			}
			how += " (indexed sentences by source: " + strings.Join(parts, ", ") + ")"
		}
		if d.Kind == Text {
			if d.Cached {
				how += "; vectors read from the cache"
			} else if d.EmbedSeconds > 0 {
				how += fmt.Sprintf("; embedding took %.1f s", d.EmbedSeconds)
			}
		}
		p("| %s | %d | %d | %d | %.3f | %.3f | %.3f | %s | %s |\n", d.Name, d.Size, d.Dim, d.Queries, d.Shape.Top1, d.Shape.TopK, d.Shape.RandomPair, how, fmtDur(d.ScanP50))
	}

	p("\n## Results\n\n")
	p("| backend | dataset | ingest | ingest rate | p50 | p99 |")
	for _, n := range c.Clients {
		p(" QPS @%d |", n)
	}
	p(" recall@%d (worst query) |\n|---|---|---|---|---|---|", c.K)
	for range c.Clients {
		p("---|")
	}
	p("---|\n")
	for _, x := range r.Results {
		if x.Err != nil {
			p("| %s | %s | failed: %s |\n", x.Backend, x.Dataset, strings.ReplaceAll(x.Err.Error(), "|", "\\|"))
			continue
		}
		ingest := fmt.Sprintf("%.2f s", x.Ingest.Seconds())
		if x.Ready > 0 {
			ingest += fmt.Sprintf(" (indexed %.2f s)", x.Ready.Seconds())
		}
		p("| %s | %s | %s | %s/s | %s | %s |", x.Backend, x.Dataset, ingest, fmtRate(x.IngestRate()), fmtDur(x.Throughput[0].P50), fmtDur(x.Throughput[0].P99))
		for _, t := range x.Throughput {
			p(" %s |", fmtRate(t.QPS))
		}
		p(" %.*f (%.1f) |\n", recallDigits, x.Recall, x.MinRecall)
	}
	p("\nLatency under load (p50 / p99 with every client busy):\n\n")
	for _, x := range r.Results {
		if x.Err != nil || len(x.Throughput) < 2 {
			continue
		}
		var parts []string
		for _, t := range x.Throughput[1:] {
			parts = append(parts, fmt.Sprintf("%d clients %s / %s", t.Clients, fmtDur(t.P50), fmtDur(t.P99)))
		}
		p("- %s on %s: %s\n", x.Backend, x.Dataset, strings.Join(parts, "; "))
	}

	r.writeProbes(p)

	p("\n## Targets\n\n")
	p("| target | met | measured |\n|---|---|---|\n")
	for _, ch := range r.Checks() {
		met := "yes"
		switch {
		case !ch.Measured:
			met = "not measured"
		case !ch.Met:
			met = "**no**"
		}
		p("| %s | %s | %s |\n", ch.Target, met, orDash(ch.Detail))
	}

	p("\n## How it is measured\n\n")
	p("- **Ingest**: wall time of upserting every record through the portable `vectorstore.Collection.Upsert` in batches, from the first call until the last returned (each call durable and searchable when it returns; for a backend that indexes after acknowledging, the time until it reports the index built is shown in parentheses). Records, vectors included, are built before the clock starts.\n")
	p("- **Latency**: one client runs the queries in order, one `Query` (top-%d, no filter, no vectors returned) at a time, for %v (the first round: at least one full pass); p50 and p99 are over every call of the phase (nearest rank). A warm-up of 20 queries precedes the first round.\n", c.K, c.Duration)
	p("- **QPS**: completed queries divided by the phase's wall time, with N clients (goroutines) each issuing queries back to back for %v.\n", c.Duration)
	p("- **Rounds**: the one-client and N-client phases run %d times in turn; every latency and QPS figure is the median over the rounds, so a burst of other work on the shared machine during one round does not decide it. The variant and `ef_search` passes and the Go scan reference likewise report the median over %d rounds (the first over every query, later ones over the first %d).\n", c.Rounds, c.Rounds, passRepeat)
	p("- **Recall@%d**: for each query, the share of the backend's top-%d (from the first pass) that is in the exact top-%d computed in Go by brute force over the same vectors (float64 sums, ties by ascending id); mean over the queries, worst single query in parentheses.\n", c.K, c.K, c.K)
	p("- Each backend gets a fresh collection per dataset, dropped afterwards.\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	return nil
}

// writeProbes writes the measurements beyond the defaults: the ef_search
// sweep and the bulk-load probe.
func (r *Report) writeProbes(p func(string, ...any)) {
	c := &r.Config
	var swept, bulk, variants []Result
	for _, x := range r.Results {
		if x.Err == nil && x.Variant != nil {
			variants = append(variants, x)
		}
		if x.Err == nil && len(x.Sweep) > 0 {
			swept = append(swept, x)
		}
		if x.Err == nil && x.BulkIndex > 0 {
			bulk = append(bulk, x)
		}
	}
	if len(swept) == 0 && len(bulk) == 0 && len(variants) == 0 {
		return
	}
	p("\n## Beyond the defaults\n\n")
	if len(variants) > 0 {
		p("Variants: the same records in a collection of the same backend configured another way, sequential passes over the queries (after a warm-up), compared with the default run.\n\n")
		p("| backend | dataset | variant | ingest | p50 | p99 | recall@%d (worst) | default p50 |\n|---|---|---|---|---|---|---|---|\n", c.K)
		for _, x := range variants {
			v := x.Variant
			p("| %s | %s | %s | %.2f s | %s | %s | %.*f (%.1f) | %s |\n", x.Backend, x.Dataset, v.Label, v.Ingest.Seconds(), fmtDur(v.P50), fmtDur(v.P99), recallDigits, v.Recall, v.MinRecall, fmtDur(x.Throughput[0].P50))
		}
		p("\n")
	}
	if len(swept) > 0 {
		p("HNSW query candidate list (`ef_search`): recall@%d (worst query) and p50 latency of sequential passes over the same queries and index, after the default-settings measurement. The first column is the default run of the Results table. \"sequential scan\" marks a setting at which PostgreSQL's planner, per its statistics (pg_stat_user_tables) during the pass, stopped using the HNSW index and scanned the table: exact results at brute-force cost, not an HNSW figure.\n\n", c.K)
		p("| backend | dataset | default |")
		for _, sp := range swept[0].Sweep {
			p(" ef_search %d |", sp.EfSearch)
		}
		p("\n|---|---|---|")
		for range swept[0].Sweep {
			p("---|")
		}
		p("\n")
		for _, x := range swept {
			p("| %s | %s | %.*f (%.1f), %s |", x.Backend, x.Dataset, recallDigits, x.Recall, x.MinRecall, fmtDur(x.Throughput[0].P50))
			for _, sp := range x.Sweep {
				plan := ""
				if sp.SeqScans > sp.IndexScans {
					plan = ", **sequential scan**"
				}
				p(" %.*f (%.1f), %s%s |", recallDigits, sp.Recall, sp.MinRecall, fmtDur(sp.P50), plan)
			}
			p("\n")
		}
		p("\n")
	}
	if len(bulk) > 0 {
		p("Bulk load with the index built afterwards: the same records upserted (same batches, COPY) into a collection created without an index (`pgvector.Options{Index: \"none\"}`), then one `CREATE INDEX ... USING hnsw` with the driver's default m and ef_construction. pgvector's documentation recommends this order for initial loads. The driver does the same by itself when one Upsert loads an empty table (the ingest column); with smaller batches every later insert maintains the graph.\n\n")
		p("| backend | dataset | ingest as run (index maintained on insert) | load without index | CREATE INDEX | load + index |\n|---|---|---|---|---|---|\n")
		for _, x := range bulk {
			p("| %s | %s | %.2f s | %.2f s | %.2f s | %.2f s |\n", x.Backend, x.Dataset, x.Ingest.Seconds(), x.BulkLoad.Seconds(), x.BulkIndex.Seconds(), (x.BulkLoad + x.BulkIndex).Seconds())
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func intOrDash(n int) string {
	if n == 0 {
		return "—"
	}
	return fmt.Sprint(n)
}

// fmtDur prints a latency with three significant digits in a fitting unit.
func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return sig3(d.Seconds()) + " s"
	case d >= time.Millisecond:
		return sig3(float64(d)/float64(time.Millisecond)) + " ms"
	default:
		return sig3(float64(d)/float64(time.Microsecond)) + " µs"
	}
}

// sig3 prints x (under 1000 but for rounding) with three significant
// digits in fixed notation: %.3g would print 999.7 as "1e+03".
func sig3(x float64) string {
	switch {
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	default:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
}

// fmtRate prints a rate: whole numbers with thousands separators from 100
// up, three significant digits below.
func fmtRate(x float64) string {
	if x >= 100 {
		n := int64(x + 0.5)
		s := fmt.Sprint(n)
		var out []byte
		for i := range len(s) {
			if i > 0 && (len(s)-i)%3 == 0 {
				out = append(out, ',')
			}
			out = append(out, s[i])
		}
		return string(out)
	}
	return fmt.Sprintf("%.3g", x)
}
