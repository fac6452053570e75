package chromem

import (
	"bufio"
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore/driver"
)

// TestMemProfileStore opens the collection $CHROMEM_MEM_DIR/memories (a
// copy of a store built by benchmarks/cmd/scalebench, whose records are in
// <cache>/one-50000-hash512-v1/records), runs a term search and vector
// queries in its largest resource, and reports the heap and RSS (the
// anonymous and the file-backed parts); with $CHROMEM_MEM_PROFILE it also
// writes a heap profile, heap.pprof, into that directory. Skipped without
// $CHROMEM_MEM_DIR.
func TestMemProfileStore(t *testing.T) {
	dir := os.Getenv("CHROMEM_MEM_DIR")
	if dir == "" {
		t.Skip("CHROMEM_MEM_DIR not set")
	}
	ctx := context.Background()
	before := memNow()
	t0 := time.Now()
	d, err := openDriver(ctx, dir, driver.Config{Name: "memories"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	open := time.Since(t0)
	t.Logf("after open: RssFile %.1f MiB", statusMiB("RssFile"))
	c := d.(*collection)
	// The largest resource and a record of it.
	var res, layer string
	best := 0
	for r, l := range c.idx.by[fieldResource] {
		if len(l) > best {
			best, res, layer = len(l), r, l[0].Layer
		}
	}
	var probe *driver.Record
	for _, r := range c.idx.by[fieldResource][res] {
		if c.docs.get(r).count() > 3 {
			probe = r
			break
		}
	}
	if probe != nil {
		terms := map[string]float64{}
		for k := range c.docs.all(c.docs.get(probe)) {
			terms[k] = 1
			if len(terms) == 5 {
				break
			}
		}
		t1 := time.Now()
		if _, err := c.SearchTerms(ctx, driver.TermQuery{Terms: terms, K: 50, K1: 1.2, B: 0.75, Filter: driver.Filter{Layer: layer, Resource: res}}); err != nil {
			t.Fatal(err)
		}
		t.Logf("first term search %v; RssFile %.1f MiB", time.Since(t1), statusMiB("RssFile"))
		pruneTrace = func(o int) { t.Logf("prune outcome %d", o) }
		defer func() { pruneTrace = nil }()
		t1 = time.Now()
		if _, err := c.Query(ctx, driver.VectorQuery{Vector: probe.Vector, K: 50, Filter: driver.Filter{Layer: layer, Resource: res}}); err != nil {
			t.Fatal(err)
		}
		t.Logf("query %v; RssFile %.1f MiB", time.Since(t1), statusMiB("RssFile"))
		// A query unlike any record: a mix of two, as a search's text is.
		l := c.idx.by[fieldResource][res]
		mix := make([]float32, len(probe.Vector))
		var n2 float64
		for i := range mix {
			mix[i] = l[7].Vector[i] + l[len(l)/2].Vector[i] + l[len(l)-3].Vector[i]
			n2 += float64(mix[i]) * float64(mix[i])
		}
		for i := range mix {
			mix[i] /= float32(math.Sqrt(n2))
		}
		for _, k := range []int{20, 100} {
			t1 = time.Now()
			if _, err := c.Query(ctx, driver.VectorQuery{Vector: mix, K: k, Filter: driver.Filter{Layer: layer, Resource: res, Metadata: map[string]string{"embedding": "hash-512"}}}); err != nil {
				t.Fatal(err)
			}
			t.Logf("mixed query k=%d %v; RssFile %.1f MiB", k, time.Since(t1), statusMiB("RssFile"))
		}
	}
	after := memNow()
	t.Logf("open %v: %d records, resource %q holds %d", open, len(c.recs), res, best)
	t.Logf("heap %.1f -> %.1f MiB, RSS %.1f -> %.1f MiB (peak %.1f)", before.heap, after.heap, before.rss, after.rss, after.peak)
	t.Logf("RssAnon %.1f MiB, RssFile %.1f MiB, RssShmem %.1f MiB", statusMiB("RssAnon"), statusMiB("RssFile"), statusMiB("RssShmem"))
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("HeapInuse %.1f HeapIdle %.1f HeapReleased %.1f Sys %.1f MiB", float64(ms.HeapInuse)/(1<<20), float64(ms.HeapIdle)/(1<<20), float64(ms.HeapReleased)/(1<<20), float64(ms.Sys)/(1<<20))
	if p := os.Getenv("CHROMEM_MEM_PROFILE"); p != "" {
		f, err := os.Create(filepath.Join(p, "heap.pprof"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	runtime.KeepAlive(c)
}

type memStat struct{ heap, rss, peak float64 }

func memNow() memStat {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memStat{heap: float64(ms.HeapAlloc) / (1 << 20), rss: statusMiB("VmRSS"), peak: statusMiB("VmHWM")}
}

func statusMiB(key string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && k == key {
			var n float64
			for _, c := range strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")) {
				n = n*10 + float64(c-'0')
			}
			return n / 1024
		}
	}
	return 0
}
