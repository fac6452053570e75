package chromem

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

var bg = context.Background()

func rec(id string, dim int, x float32) vectorstore.Record {
	v := make([]float32, dim)
	v[0] = 1
	v[dim-1] = x
	return vectorstore.Record{ID: id, Text: "text of " + id, Vector: v, CreatedAt: time.Unix(1700000000, 0),
		Metadata: map[string]string{"k": id}}
}

// writeThree writes three frames and returns the log bytes and the offset
// where the third frame starts.
func writeThree(t *testing.T, dir string) ([]byte, int64) {
	t.Helper()
	c, err := OpenCollection(bg, dir, "c", &vectorstore.Options{Dimension: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Upsert(bg, rec("a", 4, 1), rec("b", 4, 2)); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(bg, "a"); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "c", logFile))
	if err != nil {
		t.Fatal(err)
	}
	third := st.Size()
	if err := c.Upsert(bg, rec("c", 4, 3), rec("d", 4, 4)); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "c", logFile))
	if err != nil {
		t.Fatal(err)
	}
	return b, third
}

func ids(t *testing.T, c *vectorstore.Collection) string {
	t.Helper()
	recs, _, err := c.List(bg, vectorstore.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, r := range recs {
		s = append(s, r.ID)
	}
	return strings.Join(s, ",")
}

func TestTornTailEveryCut(t *testing.T) {
	src := t.TempDir()
	full, third := writeThree(t, src)
	metaBytes, err := os.ReadFile(filepath.Join(src, "c", metaFile))
	if err != nil {
		t.Fatal(err)
	}
	for cut := third; cut < int64(len(full)); cut++ {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "c"), 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "c", metaFile), metaBytes, 0o600)
		os.WriteFile(filepath.Join(dir, "c", logFile), full[:cut], 0o600)
		c, err := OpenCollection(bg, dir, "c", nil)
		if err != nil {
			t.Fatalf("cut %d: open: %v", cut, err)
		}
		if got := ids(t, c); got != "b" {
			t.Fatalf("cut %d: records %q, want only b (the torn batch c,d is all-or-nothing)", cut, got)
		}
		// The torn tail was cut off, so new appends are readable.
		if err := c.Upsert(bg, rec("e", 4, 5)); err != nil {
			t.Fatal(err)
		}
		c.Close()
		c, err = OpenCollection(bg, dir, "c", nil)
		if err != nil {
			t.Fatalf("cut %d: second open: %v", cut, err)
		}
		if got := ids(t, c); got != "b,e" {
			t.Fatalf("cut %d: after append and reopen %q, want b,e", cut, got)
		}
		c.Close()
	}
}

func copyColl(t *testing.T, log []byte, src string) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "c"), 0o700)
	m, _ := os.ReadFile(filepath.Join(src, "c", metaFile))
	os.WriteFile(filepath.Join(dir, "c", metaFile), m, 0o600)
	os.WriteFile(filepath.Join(dir, "c", logFile), log, 0o600)
	return dir
}

func TestTailVariants(t *testing.T) {
	src := t.TempDir()
	full, third := writeThree(t, src)
	// Zero-filled tail: the file size grew but the data never reached disk.
	zeroTail := append(append([]byte(nil), full[:third]...), make([]byte, len(full)-int(third)+4096)...)
	// Garbage whose header claims more bytes than the file has.
	garbage := append(append([]byte(nil), full...), 0xff, 0xff, 0x00, 0x00, 1, 2, 3, 4, 9, 9, 9)
	for name, log := range map[string][]byte{"zero-tail": zeroTail, "garbage-tail": garbage} {
		c, err := OpenCollection(bg, copyColl(t, log, src), "c", nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := "b"
		if name == "garbage-tail" {
			want = "b,c,d"
		}
		if got := ids(t, c); got != want {
			t.Fatalf("%s: %q, want %q", name, got, want)
		}
		c.Close()
	}
}

func TestCorruptMiddleIsAnError(t *testing.T) {
	src := t.TempDir()
	full, _ := writeThree(t, src)
	bad := append([]byte(nil), full...)
	bad[frameHeader+5] ^= 0x40 // inside the first frame's payload
	_, err := OpenCollection(bg, copyColl(t, bad, src), "c", nil)
	if !errors.Is(err, vectorstore.ErrCorrupt) {
		t.Fatalf("open with a damaged first frame: %v, want ErrCorrupt", err)
	}
	_, err = OpenCollection(bg, copyColl(t, full, src), "c", &vectorstore.Options{Dimension: 5})
	if !errors.Is(err, vectorstore.ErrConfigMismatch) {
		t.Fatalf("open with another dimension: %v, want ErrConfigMismatch", err)
	}
}

func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	d, err := openDriver(bg, dir, driver.Config{Name: "c", Dimension: 256, Distance: driver.DistanceCosine})
	if err != nil {
		t.Fatal(err)
	}
	c, err := vectorstore.NewCollection(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Overwrite ten ids over and over: the log grows, the live set does not.
	for round := 0; round < 150; round++ {
		var batch []vectorstore.Record
		for i := 0; i < 10; i++ {
			batch = append(batch, rec(fmt.Sprint("id", i), 256, float32(round)))
		}
		if err := c.Upsert(bg, batch...); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(bg, "id9"); err != nil {
		t.Fatal(err)
	}
	cc := d.(*collection)
	if cc.compacted == 0 {
		t.Fatalf("log of %d bytes for %d live bytes never compacted", cc.size, cc.live)
	}
	st, _ := os.Stat(filepath.Join(dir, "c", logFile))
	if st.Size() > 2*compactMinBytes {
		t.Fatalf("log is %d bytes after compaction", st.Size())
	}
	c.Close()
	c2, err := OpenCollection(bg, dir, "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := ids(t, c2); got != "id0,id1,id2,id3,id4,id5,id6,id7,id8" {
		t.Fatalf("after compaction and reopen: %s", got)
	}
	r, err := c2.Get(bg, "id3")
	if err != nil {
		t.Fatal(err)
	}
	want := rec("id3", 256, 149)
	if r.Vector[255] == 0 || r.Text != want.Text {
		t.Fatalf("id3 is not the last write: %v", r.Vector[255])
	}
}

func TestLockedWhileOpen(t *testing.T) {
	dir := t.TempDir()
	c, err := OpenCollection(bg, dir, "c", &vectorstore.Options{Dimension: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, err = OpenCollection(bg, dir, "c", nil)
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) || le.PID != os.Getpid() || le.Path != filepath.Join(dir, "c") {
		t.Fatalf("second open while the first is open: %v, want a *LockedError naming this process", err)
	}
	c.Close()
	c, err = OpenCollection(bg, dir, "c", nil)
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	c.Close()
}

func TestOpenURL(t *testing.T) {
	dir := t.TempDir()
	c, err := vectorstore.Open(bg, "chromem://"+dir+"?collection=notes&dimension=3&distance=dot", nil)
	if err != nil {
		t.Fatal(err)
	}
	if info := c.Info(); info.Name != "notes" || info.Dimension != 3 || info.Distance != vectorstore.Dot || info.Driver != "chromem" {
		t.Fatalf("Info = %+v", info)
	}
	if err := c.Upsert(bg, vectorstore.Record{ID: "x", Vector: []float32{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := os.Stat(filepath.Join(dir, "notes", logFile)); err != nil {
		t.Fatalf("collection not under the URL's directory: %v", err)
	}
	// Reopen by URL without dimension: taken from the stored collection.
	c, err = vectorstore.Open(bg, "chromem://"+dir+"?collection=notes&distance=dot", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Count(bg, vectorstore.Filter{}); n != 1 {
		t.Fatalf("count after URL reopen = %d", n)
	}
	c.Close()
	// The default collection name.
	c, err = vectorstore.Open(bg, "chromem://"+dir, &vectorstore.Options{Dimension: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c.Info().Name != vectorstore.DefaultCollectionName {
		t.Fatalf("default name %q", c.Info().Name)
	}
	c.Close()
	for url, want := range map[string]error{
		"chromem://" + dir + "?collection=x&dimension=2&bogus=1": vectorstore.ErrInvalidArgument,
		"chromem://" + dir + "?collection=x&dimension=two":       vectorstore.ErrInvalidArgument,
		"chromem://" + dir + "?collection=../x&dimension=2":      vectorstore.ErrInvalidArgument,
		"chromem://" + dir + "?collection=x&distance=manhattan":  vectorstore.ErrInvalidArgument,
		"chromem://" + dir + "?collection=fresh":                 vectorstore.ErrInvalidArgument, // no dimension to create
		"chromem://somehost/" + dir + "?dimension=2":             vectorstore.ErrInvalidArgument,
		"nosuch:///x": vectorstore.ErrUnsupportedScheme,
		"chromem://" + dir + "?collection=notes&distance=cosine": vectorstore.ErrConfigMismatch,
	} {
		_, err := vectorstore.Open(bg, url, nil)
		if !errors.Is(err, want) {
			t.Errorf("Open(%q) = %v, want %v", url, err, want)
		}
	}
	_, err = vectorstore.Open(bg, "chromem://"+dir+"?dimension=3", &vectorstore.Options{Dimension: 4})
	if !errors.Is(err, vectorstore.ErrInvalidArgument) {
		t.Errorf("URL and Options disagree: %v", err)
	}
	// A relative directory.
	t.Chdir(dir)
	c, err = vectorstore.Open(bg, "chromem:rel/data?collection=r&dimension=2", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := os.Stat(filepath.Join(dir, "rel", "data", "r", metaFile)); err != nil {
		t.Fatalf("relative URL: %v", err)
	}
}

// frameStarts returns the offset of every frame of a well-formed log.
func frameStarts(t *testing.T, log []byte) []int {
	t.Helper()
	var offs []int
	for off := 0; off < len(log); {
		offs = append(offs, off)
		off += frameHeader + int(binary.LittleEndian.Uint32(log[off:]))
	}
	return offs
}

// TestDamagedLengthIsCorruption flips every bit of every frame's length
// field. The length is not covered by the checksum, so a damaged one used
// to make open treat the frame as a torn tail and truncate the log there:
// acknowledged frames after it vanished and a deleted record came back. Every
// such flip must be ErrCorrupt, with the log left exactly as it was.
func TestDamagedLengthIsCorruption(t *testing.T) {
	src := t.TempDir()
	full, _ := writeThree(t, src)
	starts := frameStarts(t, full)
	if len(starts) != 3 {
		t.Fatalf("%d frames, want 3", len(starts))
	}
	for fi, off := range starts {
		for bit := 0; bit < 32; bit++ {
			bad := append([]byte(nil), full...)
			bad[off+bit/8] ^= 1 << (bit % 8)
			dir := copyColl(t, bad, src)
			c, err := OpenCollection(bg, dir, "c", nil)
			if err == nil {
				got := ids(t, c)
				c.Close()
				t.Fatalf("frame %d, length bit %d flipped: open succeeded with records %q, want ErrCorrupt", fi, bit, got)
			}
			if !errors.Is(err, vectorstore.ErrCorrupt) {
				t.Fatalf("frame %d, length bit %d flipped: %v, want ErrCorrupt", fi, bit, err)
			}
			after, rerr := os.ReadFile(filepath.Join(dir, "c", logFile))
			if rerr != nil || !bytes.Equal(after, bad) {
				t.Fatalf("frame %d, length bit %d flipped: the failed open changed the log (%d -> %d bytes)", fi, bit, len(bad), len(after))
			}
		}
	}
}

// TestTornTailWithLengthPastEnd checks the torn-tail side of the same
// decision: a last frame whose header was written in full but whose payload
// was cut short is still recovered, also when garbage or zeros follow.
func TestTornTailWithLengthPastEnd(t *testing.T) {
	src := t.TempDir()
	full, third := writeThree(t, src)
	for _, cut := range []int64{third + frameHeader, third + frameHeader + 1, int64(len(full)) - 1} {
		dir := copyColl(t, full[:cut], src)
		c, err := OpenCollection(bg, dir, "c", nil)
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if got := ids(t, c); got != "b" {
			t.Fatalf("cut %d: %q, want b", cut, got)
		}
		c.Close()
		if st, _ := os.Stat(filepath.Join(dir, "c", logFile)); st.Size() != third {
			t.Fatalf("cut %d: log is %d bytes after recovery, want %d", cut, st.Size(), third)
		}
	}
}

// TestHugeDimensionFrame feeds replay a frame with a valid checksum whose
// vector length makes dim*4 overflow: it must be ErrCorrupt, not a panic in
// make.
func TestHugeDimensionFrame(t *testing.T) {
	src := t.TempDir()
	full, _ := writeThree(t, src)
	for _, dim := range []uint64{1 << 62, 1<<62 + 1, 1 << 40, math.MaxUint64} {
		e := encoder{}
		e.b = append(e.b, opUpsert)
		e.uvarint(1)
		for range 6 {
			e.str("") // id, layer, kind, thread, resource, text
		}
		e.uvarint(0) // metadata
		e.varint(0)  // created
		e.b = append(e.b, 0)
		e.uvarint(dim)
		log := append(append([]byte(nil), full...), frame(e.b)...)
		_, err := OpenCollection(bg, copyColl(t, log, src), "c", nil)
		if !errors.Is(err, vectorstore.ErrCorrupt) {
			t.Fatalf("dim %d: %v, want ErrCorrupt", dim, err)
		}
	}
	// A count one larger than the payload holds is corrupt too.
	e := encoder{}
	e.b = append(e.b, opDelete)
	e.uvarint(1 << 20)
	e.b = append(e.b, make([]byte, 1<<20-1)...)
	log := append(append([]byte(nil), full...), frame(e.b)...)
	if _, err := OpenCollection(bg, copyColl(t, log, src), "c", nil); !errors.Is(err, vectorstore.ErrCorrupt) {
		t.Fatalf("delete of 1M ids with one missing: %v, want ErrCorrupt", err)
	}
}
