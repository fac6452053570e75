package scalebench

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/vectorstore"
)

// TestRunTiny runs the whole harness on a tiny history: build, one case on
// the embedded store, the ingest case with the hashing embedder, and the
// three outputs.
func TestRunTiny(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	const size = 120
	st, err := BuildCached(ctx, root, t.TempDir(), One, size, 64, 2, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if st.Messages != size || st.Records != 2*size {
		t.Fatalf("load stats %+v: want %d messages and %d records (message + context each)", st, size, 2*size)
	}
	res, err := Run(ctx, Config{Backend: Embedded, Layout: One, Size: size, CacheRoot: root, Dimension: 64,
		Starts: 3, Turns: 3, Queries: 5, PhaseCap: 10 * time.Second, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if res.ResourceMessages != size || res.Start.N != 3 || res.Start.Fail != 0 || res.AppendRecord.N != 3 || res.Search.N != 5 {
		t.Fatalf("result %+v", res)
	}
	if res.Start.P50 <= 0 || res.Search.P50 <= 0 || res.MemSession.HeapMiB <= 0 {
		t.Fatalf("empty figures: %+v", res)
	}
	// The probes leave nothing behind.
	be, err := openEmbedded(ctx, CacheDir(root, One, size, 64), hashing.New(64))
	if err != nil {
		t.Fatal(err)
	}
	n, err := be.mem.Records.Count(ctx, vectorstore.Filter{Layer: LayerID})
	be.close()
	if err != nil || n != 2*size {
		t.Fatalf("records after the case: %d, %v; want %d", n, err, 2*size)
	}

	g, err := Ingest(ctx, IngestConfig{Backend: Embedded, Embedder: EmbedHash, Messages: 60, SessionLen: 20, ScratchDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if g.Sessions != 3 || g.Rate <= 0 {
		t.Fatalf("ingest %+v", g)
	}

	rep := &Report{Command: "test", Date: time.Now(), Sizes: []int{size}, Backends: []string{Embedded, PGVector},
		Layouts: []Layout{One}, Cases: []Result{res, {Backend: PGVector, Layout: One, Size: size, Skipped: "no PostgreSQL"}},
		Ingest: []IngestResult{g}, Builds: []LoadStats{st}}
	var md, svg, js bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| 120 | 120 | embedded |") || !strings.Contains(md.String(), "not run: no PostgreSQL") {
		t.Errorf("markdown:\n%s", md.String())
	}
	if !strings.Contains(svg.String(), "<polyline") && !strings.Contains(svg.String(), "<circle") {
		t.Errorf("svg has no points:\n%s", svg.String())
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Cases) != 2 {
		t.Errorf("json: %v, %d cases", err, len(back.Cases))
	}
}

// TestThreadScopedLoadWritesResourceRecords backs Build's shortcut: loading
// through thread-scoped sessions writes exactly the records that
// resource-scoped sessions write for the same conversations.
func TestThreadScopedLoadWritesResourceRecords(t *testing.T) {
	ctx := context.Background()
	read := func(scope core.Scope, workers int) []vectorstore.Record {
		dir := t.TempDir()
		if _, err := Build(ctx, BuildOptions{Dir: dir, Layout: One, Total: 90, Dimension: 32, Workers: workers, scope: scope}); err != nil {
			t.Fatal(err)
		}
		be, err := openEmbedded(ctx, dir, hashing.New(32))
		if err != nil {
			t.Fatal(err)
		}
		defer be.close()
		var out []vectorstore.Record
		for r, err := range be.mem.Records.All(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Layer: LayerID}, WithVectors: true}) {
			if err != nil {
				t.Fatal(err)
			}
			r.Revision = 0
			out = append(out, r)
		}
		slices.SortFunc(out, func(a, b vectorstore.Record) int { return strings.Compare(a.ID, b.ID) })
		return out
	}
	thread, resource := read(core.ScopeThread, 3), read(core.ScopeResource, 1)
	if len(thread) != 180 || len(thread) != len(resource) {
		t.Fatalf("%d records thread-scoped, %d resource-scoped; want 180", len(thread), len(resource))
	}
	for i := range thread {
		a, b := thread[i], resource[i]
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Fatalf("record %d differs:\n thread:   %s\n resource: %s", i, ja, jb)
		}
	}
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		l     Layout
		total int
	}{{One, 1000}, {One, 7}, {Spread, 10000}, {Spread, 1500}} {
		p := Plan(tc.l, tc.total)
		n := 0
		for _, c := range p {
			n += c.Msgs
			if c.Msgs < 1 || c.Msgs > maxConvLen || !c.MessageTime(c.Msgs).Before(historyEnd) {
				t.Fatalf("%s %d: conversation %+v", tc.l, tc.total, c)
			}
		}
		if n != tc.total {
			t.Errorf("%s %d: plan holds %d messages", tc.l, tc.total, n)
		}
	}
	a, b := Plan(One, 500)[3].Items(), Plan(One, 500)[3].Items()
	if a[0].Text() != b[0].Text() || a[0].Role != core.RoleUser || a[1].Role != core.RoleAssistant {
		t.Errorf("items not deterministic or not alternating: %q %q", a[0].Text(), b[0].Text())
	}
}
