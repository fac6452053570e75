package chromem

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
	"github.com/stratamem/strata/vectorstore/vectortest"
)

func TestConformance(t *testing.T) {
	dir := t.TempDir()
	vectortest.Run(t, vectortest.Harness{
		Open: func(ctx context.Context, t *testing.T, cfg driver.Config) (driver.Collection, error) {
			return openDriver(ctx, dir, cfg)
		},
	})
}

// TestRevisionFloorAfterCompaction: compaction drops a deleted record and
// with it the highest revision ever handed out; meta.json keeps it, so the
// reopened collection never hands that revision out again.
func TestRevisionFloorAfterCompaction(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := openDriver(ctx, dir, driver.Config{Name: "c", Dimension: 2})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(id string) driver.Record {
		return driver.Record{ID: id, Vector: []float32{1, 0}, CreatedAt: time.Unix(1, 0).UTC()}
	}
	if err := d.Upsert(ctx, []driver.Record{rec("a"), rec("b")}); err != nil {
		t.Fatal(err)
	}
	b, _, err := d.Get(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	cc := d.(*collection)
	cc.wmu.Lock()
	err = cc.compact()
	cc.wmu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := readMeta(filepath.Join(dir, "c"))
	if err != nil || m.Revision != b.Revision {
		t.Fatalf("meta.json revision floor %d (%v), want %d", m.Revision, err, b.Revision)
	}
	d, err = openDriver(ctx, dir, driver.Config{Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rev, err := d.UpsertIf(ctx, rec("b"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if rev <= b.Revision {
		t.Fatalf("b re-created after compaction and reopen with revision %d, the deleted b had %d", rev, b.Revision)
	}
}

// TestRevisionsOfLegacyLog: a log written before revisions existed has no
// revision entries; replay numbers its writes in log order, the same way
// at every open, and user metadata comes back untouched.
func TestRevisionsOfLegacyLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cdir := filepath.Join(dir, "c")
	if err := os.MkdirAll(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeMeta(cdir, meta{Format: metaFormat, Name: "c", Dimension: 2, Distance: driver.DistanceCosine}); err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1, 0).UTC()
	a := driver.Record{ID: "a", Vector: []float32{1, 0}, Metadata: map[string]string{"k": "v"}, CreatedAt: at}
	b := driver.Record{ID: "b", Vector: []float32{0, 1}, CreatedAt: at}
	log := append(encodeUpsert([]driver.Record{a}), encodeUpsert([]driver.Record{a, b})...)
	if err := os.WriteFile(filepath.Join(cdir, logFile), log, 0o600); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		d, err := openDriver(ctx, dir, driver.Config{Name: "c"})
		if err != nil {
			t.Fatal(err)
		}
		ga, _, _ := d.Get(ctx, "a")
		gb, _, _ := d.Get(ctx, "b")
		if ga.Revision != 2 || gb.Revision != 3 || len(ga.Metadata) != 1 || ga.Metadata["k"] != "v" || gb.Metadata != nil {
			t.Fatalf("round %d: a %+v, b %+v; want revisions 2 and 3, metadata as written", round, ga, gb)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// New writes continue above, and their revisions are logged.
	d, err := openDriver(ctx, dir, driver.Config{Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := d.UpsertIf(ctx, a, 2)
	if err != nil || rev != 4 {
		t.Fatalf("UpsertIf at the replayed revision: %d %v, want 4", rev, err)
	}
	d.Close()
	d, err = openDriver(ctx, dir, driver.Config{Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if ga, _, _ := d.Get(ctx, "a"); ga.Revision != 4 || len(ga.Metadata) != 1 {
		t.Fatalf("after reopen: %+v, want revision 4 and only the user's metadata", ga)
	}
	// The revision entry is the log's business: it never reaches chromem-go
	// documents, so a filter on it matches nothing.
	if n, err := d.Count(ctx, driver.Filter{Metadata: map[string]string{keyRevision: "4"}}); err != nil || n != 0 {
		t.Fatalf("count on the log's revision key: %d %v", n, err)
	}
}

// TestCorruptRevisionEntry: a revision entry that is not a positive
// integer is corruption, not a revision to guess.
func TestCorruptRevisionEntry(t *testing.T) {
	dir := t.TempDir()
	cdir := filepath.Join(dir, "c")
	if err := os.MkdirAll(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeMeta(cdir, meta{Format: metaFormat, Name: "c", Dimension: 2, Distance: driver.DistanceCosine}); err != nil {
		t.Fatal(err)
	}
	r := driver.Record{ID: "a", Vector: []float32{1, 0}, Metadata: map[string]string{keyRevision: "x"}, CreatedAt: time.Unix(1, 0).UTC()}
	if err := os.WriteFile(filepath.Join(cdir, logFile), encodeUpsert([]driver.Record{r}), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openDriver(context.Background(), dir, driver.Config{Name: "c"}); !errors.Is(err, driver.ErrCorrupt) {
		t.Fatalf("open with a corrupt revision entry: %v, want ErrCorrupt", err)
	}
}

// TestURLStrict: chromem URLs take the common parameters only; anything
// else, and any malformed query, is refused with the parameter named.
func TestURLStrict(t *testing.T) {
	dir := t.TempDir()
	for q, field := range map[string]string{
		"dimension=2&bogus=1":           "bogus",
		"dimension=2&Collection=x":      "Collection",
		"collection=a;b&dimension=2":    "url",
		"dimension=2&dimension=3":       "dimension",
		"collection=&dimension=2":       "collection",
		"dimension=2&metadata_keys=a.b": "metadata_keys",
	} {
		_, err := vectorstore.Open(context.Background(), "chromem://"+dir+"?"+q, nil)
		var e *driver.Error
		if !errors.As(err, &e) || e.Code != driver.CodeInvalidArgument || e.Field != field {
			t.Errorf("?%s: %v, want CodeInvalidArgument on %q", q, err, field)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Fatalf("refused URLs created %d entries (%v)", len(entries), err)
	}
	c, err := vectorstore.Open(context.Background(), "chromem://"+dir+"?collection=ok&dimension=2&distance=dot&metadata_keys=a,b", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
