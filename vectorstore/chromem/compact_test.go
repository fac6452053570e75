package chromem

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

// churn overwrites ten ids until the driver compacts, and returns how many
// rounds it took.
func churn(t *testing.T, c *vectorstore.Collection, cc *collection) int {
	t.Helper()
	before := cc.compacted
	for round := 0; round < 1000; round++ {
		var batch []vectorstore.Record
		for i := 0; i < 10; i++ {
			batch = append(batch, rec(fmt.Sprint("id", i), 256, float32(round+1)))
		}
		if err := c.Upsert(bg, batch...); err != nil {
			t.Fatal(err)
		}
		if cc.compacted != before || cc.compactErr != nil {
			return round
		}
	}
	t.Fatal("no compaction after 1000 rounds")
	return 0
}

// TestCompactionDirSyncFails injects a failure of the directory fsync that
// follows the rename of the compacted log, and makes later compactions fail
// before their rename. The first rename has happened, so the old log file
// is unlinked: the driver must switch to the new file (writes through the
// old handle would vanish on reopen), and must not acknowledge a write
// before the new file's directory entry is durable.
func TestCompactionDirSyncFails(t *testing.T) {
	dir := t.TempDir()
	d, err := openDriver(bg, dir, driver.Config{Name: "c", Dimension: 256})
	if err != nil {
		t.Fatal(err)
	}
	c, err := vectorstore.NewCollection(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	cc := d.(*collection)
	calls := 0
	syncDirFault = func(string) error {
		calls++
		switch calls {
		case 1: // the compaction's sync, after its rename
			// Later compactions fail before renaming: their temp file
			// cannot be created.
			if err := os.MkdirAll(filepath.Join(dir, "c", logFile+".tmp", "keep"), 0o700); err != nil {
				t.Error(err)
			}
			return errors.New("injected EIO")
		case 2: // the retry before the next append
			return errors.New("injected EIO")
		}
		return nil
	}
	t.Cleanup(func() { syncDirFault = nil })
	churn(t, c, cc)
	if cc.compactErr == nil || calls != 1 {
		t.Fatalf("compaction error %v after %d directory syncs, want the injected one", cc.compactErr, calls)
	}
	if err := c.Upsert(bg, rec("lost", 256, 1)); err == nil {
		t.Fatal("upsert acknowledged while the compacted log's directory entry is not durable")
	}
	if err := c.Upsert(bg, rec("after", 256, 7)); err != nil {
		t.Fatalf("upsert once the directory syncs again: %v", err)
	}
	if err := c.Delete(bg, "id0"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := OpenCollection(bg, dir, "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := ids(t, c2); got != "after,id1,id2,id3,id4,id5,id6,id7,id8,id9" {
		t.Fatalf("after reopen: %s (writes after the compaction went to the unlinked old log?)", got)
	}
}

// TestOpenSurvivesFailedCompaction makes the compaction that open runs on
// an oversized log fail (its temp file cannot be created). The log itself is
// intact, so open must succeed with every record and writes must work.
func TestOpenSurvivesFailedCompaction(t *testing.T) {
	dir := t.TempDir()
	d, err := openDriver(bg, dir, driver.Config{Name: "c", Dimension: 256})
	if err != nil {
		t.Fatal(err)
	}
	c, err := vectorstore.NewCollection(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	cc := d.(*collection)
	// Block compaction while the log grows: a directory in the temp file's
	// place, with an entry so that cleanup cannot remove it.
	tmp := filepath.Join(dir, "c", logFile+".tmp")
	if err := os.MkdirAll(filepath.Join(tmp, "keep"), 0o700); err != nil {
		t.Fatal(err)
	}
	churn(t, c, cc)
	if cc.compacted != 0 || cc.compactErr == nil {
		t.Fatalf("compaction did not fail: %d compactions, error %v", cc.compacted, cc.compactErr)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := OpenCollection(bg, dir, "c", nil)
	if err != nil {
		t.Fatalf("open with an intact log whose compaction fails: %v", err)
	}
	if got := ids(t, c2); got != "id0,id1,id2,id3,id4,id5,id6,id7,id8,id9" {
		t.Fatalf("records %s", got)
	}
	if err := c2.Upsert(bg, rec("new", 256, 1)); err != nil {
		t.Fatal(err)
	}
	c2.Close()
	// With the obstacle gone, the next open compacts.
	if err := os.RemoveAll(tmp); err != nil {
		t.Fatal(err)
	}
	d3, err := openDriver(bg, dir, driver.Config{Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	defer d3.Close()
	if d3.(*collection).compacted != 1 {
		t.Fatal("open did not compact once it could")
	}
}
