package chromem

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stratamem/strata/vectorstore"
)

// logRecord is one captured slog record.
type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]any
}

// captureLog makes the default slog logger record into the returned
// function's result for the rest of the test.
func captureLog(t *testing.T) func() []logRecord {
	t.Helper()
	h := &captureHandler{mu: new(sync.Mutex), recs: new([]logRecord)}
	prev := slog.Default()
	slog.SetDefault(slog.New(h))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return func() []logRecord {
		h.mu.Lock()
		defer h.mu.Unlock()
		return append([]logRecord(nil), *h.recs...)
	}
}

type captureHandler struct {
	mu   *sync.Mutex
	recs *[]logRecord
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *captureHandler) WithGroup(string) slog.Handler            { return h }
func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	lr := logRecord{level: r.Level, msg: r.Message, attrs: map[string]any{}}
	r.Attrs(func(a slog.Attr) bool { lr.attrs[a.Key] = a.Value.Any(); return true })
	h.mu.Lock()
	*h.recs = append(*h.recs, lr)
	h.mu.Unlock()
	return nil
}

// collDir is the collection directory of the tests' collection "c".
func collDir(dir string) string { return filepath.Join(dir, "c") }

func logPath(dir string) string { return filepath.Join(dir, "c", logFile) }

func readLog(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(logPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeLog(t *testing.T, dir string, b []byte) {
	t.Helper()
	if err := os.WriteFile(logPath(dir), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// mustCorrupt opens dir's collection expecting ErrCorrupt with the recovery
// hint and the log left exactly as it was; it returns the error text.
func mustCorrupt(t *testing.T, dir, what string) string {
	t.Helper()
	before, _ := os.ReadFile(logPath(dir))
	c, err := OpenCollection(bg, dir, "c", nil)
	if err == nil {
		got := ids(t, c)
		c.Close()
		t.Fatalf("%s: open succeeded with records %q, want ErrCorrupt", what, got)
	}
	if !errors.Is(err, vectorstore.ErrCorrupt) {
		t.Fatalf("%s: %v, want ErrCorrupt", what, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "memctl salvage") || !strings.Contains(msg, "chromem.Salvage") {
		t.Fatalf("%s: the error does not say how to recover: %v", what, err)
	}
	after, _ := os.ReadFile(logPath(dir))
	if !bytes.Equal(before, after) {
		t.Fatalf("%s: the failed open changed the log (%d -> %d bytes)", what, len(before), len(after))
	}
	return err.Error()
}

// requireWired fails the test, with what to do, while chromem.go does not
// keep the checkpoint (openLog on open, checkpoint.acked after each
// append, writeCompacted on compaction, checkpoint.close on Close).
func requireWired(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	c, err := OpenCollection(bg, dir, "c", &vectorstore.Options{Dimension: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Upsert(bg, rec("x", 2, 1)); err != nil {
		t.Fatal(err)
	}
	r, st, err := readCkptFile(collDir(dir))
	if err != nil || st != ckptOK || r.cur.size == 0 {
		t.Fatalf("chromem.go does not keep the log checkpoint yet (no %s recording a write: %v): apply the call-site change of checkpoint.go (openLog, checkpoint.acked, writeCompacted, checkpoint.close)", ckptFile, err)
	}
}

// TestDamagedLastFrameIsCorrupt flips bits inside the last frame, which
// was fsynced and acknowledged. Its length still fits the file, so without
// a checkpoint it looks like a torn final append: the log used to open
// with the batch gone. The checkpoint records it as acknowledged, so the
// open is ErrCorrupt and the log stays as it was.
func TestDamagedLastFrameIsCorrupt(t *testing.T) {
	requireWired(t)
	src := t.TempDir()
	full, third := writeThree(t, src)
	for _, pos := range []int64{
		third + 4,                // the payload checksum in the header
		third + frameHeader,      // the op byte
		third + frameHeader + 9,  // inside the first record
		int64(len(full)) - 1,     // the last byte
		int64(len(full)) - 1 - 4, // inside the last vector
	} {
		dir := copyDir(t, src)
		bad := append([]byte(nil), full...)
		bad[pos] ^= 0x10
		writeLog(t, dir, bad)
		msg := mustCorrupt(t, dir, "bit flip in the last frame")
		if !strings.Contains(msg, "acknowledged") {
			t.Fatalf("flip at %d: %s", pos, msg)
		}
		if torn, _ := filepath.Glob(logPath(dir) + ".torn-*"); len(torn) != 0 {
			t.Fatalf("flip at %d: the acknowledged frame was treated as a torn tail: %v", pos, torn)
		}
	}
}

// TestTruncatedAtFrameBoundaryIsCorrupt cuts the log at each frame boundary:
// a well-formed, shorter log, which used to open with the acknowledged
// frames after the cut gone.
func TestTruncatedAtFrameBoundaryIsCorrupt(t *testing.T) {
	requireWired(t)
	src := t.TempDir()
	full, _ := writeThree(t, src)
	for _, cut := range frameStarts(t, full) {
		dir := copyDir(t, src)
		writeLog(t, dir, full[:cut])
		msg := mustCorrupt(t, dir, "log truncated at a frame boundary")
		if !strings.Contains(msg, "missing (truncated)") {
			t.Fatalf("cut at %d: %s", cut, msg)
		}
	}
}

// TestMissingLogIsCorrupt deletes records.log next to meta.json: the open
// used to create an empty log and return an empty collection.
func TestMissingLogIsCorrupt(t *testing.T) {
	requireWired(t)
	src := t.TempDir()
	writeThree(t, src)
	for _, also := range []string{"", ckptFile} { // with and without the checkpoint
		dir := copyDir(t, src)
		os.Remove(logPath(dir))
		if also != "" {
			os.Remove(filepath.Join(collDir(dir), also))
		}
		msg := mustCorrupt(t, dir, "records.log deleted")
		if !strings.Contains(msg, "is missing") {
			t.Fatal(msg)
		}
		if _, err := os.Stat(logPath(dir)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the failed open created %s: %v", logPath(dir), err)
		}
	}
	// A collection that was created and never written has a log too.
	dir := t.TempDir()
	c, err := OpenCollection(bg, dir, "c", &vectorstore.Options{Dimension: 4})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	os.Remove(logPath(dir))
	mustCorrupt(t, dir, "empty collection's records.log deleted")
}

// TestTornTailKeptAndWarned appends what a crash in the middle of an append
// leaves: part of a frame, never acknowledged (the checkpoint does not
// cover it). The open cuts it, as before, but now logs a warning with the
// offset and size and keeps the bytes beside the log.
func TestTornTailKeptAndWarned(t *testing.T) {
	requireWired(t)
	src := t.TempDir()
	full, _ := writeThree(t, src)
	next := encodeUpsert([]vectorstore.Record{rec("e", 4, 5)})
	complete := append([]byte(nil), next...)
	complete[len(complete)-1] ^= 1 // whole length, payload not all written
	zeros := append(append([]byte(nil), next[:frameHeader]...), make([]byte, len(next)-frameHeader)...)
	for name, tail := range map[string][]byte{
		"torn header":      next[:5],
		"torn payload":     next[:frameHeader+7],
		"all but one byte": next[:len(next)-1],
		"bad last byte":    complete,
		"zero payload":     zeros,
		"zeros":            make([]byte, 4096),
	} {
		dir := copyDir(t, src)
		writeLog(t, dir, append(append([]byte(nil), full...), tail...))
		logs := captureLog(t)
		c, err := OpenCollection(bg, dir, "c", nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := ids(t, c); got != "b,c,d" {
			t.Fatalf("%s: records %q, want b,c,d", name, got)
		}
		c.Close()
		if got := readLog(t, dir); !bytes.Equal(got, full) {
			t.Fatalf("%s: log is %d bytes after the cut, want %d", name, len(got), len(full))
		}
		kept := logPath(dir) + ".torn-" + itoa(len(full))
		b, err := os.ReadFile(kept)
		if err != nil || !bytes.Equal(b, tail) {
			t.Fatalf("%s: the cut bytes are not kept in %s: %v (%d bytes, want %d)", name, kept, err, len(b), len(tail))
		}
		var warned bool
		for _, r := range logs() {
			if r.level == slog.LevelWarn && strings.Contains(r.msg, "torn tail") {
				warned = true
				if r.attrs["log"] != logPath(dir) || r.attrs["offset"] != int64(len(full)) || r.attrs["bytes"] != int64(len(tail)) || r.attrs["kept"] != kept {
					t.Fatalf("%s: warning attributes %v", name, r.attrs)
				}
			}
		}
		if !warned {
			t.Fatalf("%s: no warning logged for the cut: %v", name, logs())
		}
	}
	// A second torn tail at the same offset does not overwrite the first.
	dir := copyDir(t, src)
	for i := range 2 {
		writeLog(t, dir, append(append([]byte(nil), full...), next[:3+i]...))
		c, err := OpenCollection(bg, dir, "c", nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	first, _ := os.ReadFile(logPath(dir) + ".torn-" + itoa(len(full)))
	second, _ := os.ReadFile(logPath(dir) + ".torn-" + itoa(len(full)) + ".1")
	if !bytes.Equal(first, next[:3]) || !bytes.Equal(second, next[:4]) {
		t.Fatalf("kept tails %x and %x, want %x and %x", first, second, next[:3], next[:4])
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestLaggingCheckpointIsSafe puts back the checkpoint of an earlier state,
// as a power failure can leave it (it is not fsynced): the log holds more
// than it records, which opens, and what it records is still verified.
func TestLaggingCheckpointIsSafe(t *testing.T) {
	requireWired(t)
	dir := t.TempDir()
	c, err := OpenCollection(bg, dir, "c", &vectorstore.Options{Dimension: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Upsert(bg, rec("a", 4, 1)); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(filepath.Join(collDir(dir), ckptFile))
	if err != nil {
		t.Fatal(err)
	}
	one := int64(len(readLog(t, dir)))
	if err := c.Upsert(bg, rec("b", 4, 2)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	os.WriteFile(filepath.Join(collDir(dir), ckptFile), old, 0o600)
	c, err = OpenCollection(bg, dir, "c", nil)
	if err != nil {
		t.Fatalf("open with a lagging checkpoint: %v", err)
	}
	if got := ids(t, c); got != "a,b" {
		t.Fatalf("records %q", got)
	}
	c.Close()
	os.WriteFile(filepath.Join(collDir(dir), ckptFile), old, 0o600)
	full := readLog(t, dir)
	writeLog(t, dir, full[:one-1])
	mustCorrupt(t, dir, "damage inside what the lagging checkpoint records")
}

// TestCheckpointSlots damages the newest checkpoint slot (a torn write of
// it): the other slot, one write older, is used. With both damaged the log
// opens unverified, with a warning.
func TestCheckpointSlots(t *testing.T) {
	requireWired(t)
	src := t.TempDir()
	full, third := writeThree(t, src)
	ckPath := func(dir string) string { return filepath.Join(collDir(dir), ckptFile) }
	b, err := os.ReadFile(ckPath(src))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(ckPath(src))
	if err != nil {
		t.Fatal(err)
	}
	r, st, err := readCkpt(f)
	f.Close()
	if err != nil || st != ckptOK || r.cur.size != int64(len(full)) || r.cur.last != third {
		t.Fatalf("checkpoint %+v %v %v, want the whole log of %d bytes", r, st, err, len(full))
	}
	newest := int(r.seq%2) * ckptStride
	dir := copyDir(t, src)
	bad := append([]byte(nil), b...)
	bad[newest+20] ^= 1
	os.WriteFile(ckPath(dir), bad, 0o600)
	c, err := OpenCollection(bg, dir, "c", nil)
	if err != nil {
		t.Fatalf("open with the newest slot torn: %v", err)
	}
	c.Close()

	dir = copyDir(t, src)
	bad = append([]byte(nil), b...)
	bad[20] ^= 1
	bad[ckptStride+20] ^= 1
	os.WriteFile(ckPath(dir), bad, 0o600)
	logs := captureLog(t)
	c, err = OpenCollection(bg, dir, "c", nil)
	if err != nil {
		t.Fatalf("open with both slots damaged: %v", err)
	}
	if got := ids(t, c); got != "b,c,d" {
		t.Fatalf("records %q", got)
	}
	c.Close()
	var warned bool
	for _, r := range logs() {
		warned = warned || strings.Contains(r.msg, "checkpoint is unreadable")
	}
	if !warned {
		t.Fatal("no warning for the unreadable checkpoint")
	}
	// The open wrote a new checkpoint: damage is detected again.
	writeLog(t, dir, full[:third])
	mustCorrupt(t, dir, "truncation after the checkpoint was rewritten")
}

// goldenV1 is a log written by the driver before checkpoints existed
// (format 1): upsert a,b; delete a; upsert c. Its meta.json is goldenMeta.
const (
	goldenV1   = "720000001140a0f1010201610873656d616e746963046661637402743105616c69636505616c70686101046c616e6702656e8080f2818389850600030000803f00000040000040400162000000000462657461008080f28183898506038080f2818389850680908feb9d89850603000000000000803f00000000040000002e724ed202010161250000001008f93001010163000000000567616d6d61008089ec82838985060003000080bf0000003f00000000"
	goldenMeta = "{\n  \"format\": 1,\n  \"name\": \"c\",\n  \"dimension\": 3,\n  \"distance\": \"dot\"\n}\n"
)

// TestV1LogOpens opens a log written before checkpoints: it opens as it
// did, gets a checkpoint, and damage is detected from then on.
func TestV1LogOpens(t *testing.T) {
	requireWired(t)
	log, err := hex.DecodeString(goldenV1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.MkdirAll(collDir(dir), 0o700)
	os.WriteFile(filepath.Join(collDir(dir), metaFile), []byte(goldenMeta), 0o600)
	writeLog(t, dir, log)
	for range 2 {
		c, err := OpenCollection(bg, dir, "c", nil)
		if err != nil {
			t.Fatalf("open a format 1 log: %v", err)
		}
		if got := ids(t, c); got != "b,c" {
			t.Fatalf("records %q, want b,c", got)
		}
		r, err := c.Get(bg, "b")
		if err != nil || r.Text != "beta" || r.ValidTo.IsZero() || r.Vector[1] != 1 {
			t.Fatalf("b = %+v, %v", r, err)
		}
		c.Close()
		if !bytes.Equal(readLog(t, dir), log) {
			t.Fatal("opening changed the log")
		}
	}
	if _, err := os.Stat(filepath.Join(collDir(dir), ckptFile)); err != nil {
		t.Fatalf("no checkpoint after the first open: %v", err)
	}
	starts := frameStarts(t, log)
	writeLog(t, dir, log[:starts[len(starts)-1]])
	mustCorrupt(t, dir, "format 1 log truncated after its first open")
}

// TestCompactionCheckpoint compacts, then checks that the compacted log
// satisfies the checkpoint, that a crash right after the rename (the
// checkpoint still recording the old log, with the new one pending) opens,
// and that truncation of the compacted log is detected.
func TestCompactionCheckpoint(t *testing.T) {
	requireWired(t)
	dir := t.TempDir()
	c, err := OpenCollection(bg, dir, "c", &vectorstore.Options{Dimension: 256})
	if err != nil {
		t.Fatal(err)
	}
	cc := driverOf(c)
	snap := t.TempDir()
	syncDirFault = func(d string) error {
		if cc.compacted == 0 && d == collDir(dir) && !fileExists(filepath.Join(snap, "c")) {
			// Called right after the compacted log was renamed into place.
			copyTree(t, collDir(dir), filepath.Join(snap, "c"))
		}
		return nil
	}
	t.Cleanup(func() { syncDirFault = nil })
	churn(t, c, cc)
	syncDirFault = nil
	if cc.compacted == 0 || cc.compactErr != nil {
		t.Fatalf("no compaction: %v", cc.compactErr)
	}
	if err := c.Upsert(bg, rec("after", 256, 1)); err != nil {
		t.Fatal(err)
	}
	want := ids(t, c)
	c.Close()

	f, err := os.Open(filepath.Join(snap, "c", ckptFile))
	if err != nil {
		t.Fatal(err)
	}
	r, _, _ := readCkpt(f)
	f.Close()
	if !r.hasPend {
		t.Fatalf("the snapshot's checkpoint has no pending log: %+v", r)
	}
	c2, err := OpenCollection(bg, snap, "c", nil)
	if err != nil {
		t.Fatalf("open after a crash right after the compaction's rename: %v", err)
	}
	if got := ids(t, c2); got != strings.TrimPrefix(want, "after,") {
		t.Fatalf("snapshot records %q, want %q", got, strings.TrimPrefix(want, "after,"))
	}
	c2.Close()

	c, err = OpenCollection(bg, dir, "c", nil)
	if err != nil {
		t.Fatalf("reopen after compaction: %v", err)
	}
	if got := ids(t, c); got != want {
		t.Fatalf("records %q, want %q", got, want)
	}
	c.Close()
	full := readLog(t, dir)
	starts := frameStarts(t, full)
	writeLog(t, dir, full[:starts[len(starts)-1]])
	mustCorrupt(t, dir, "compacted log truncated")
}

// TestPendingCheckpointBeforeRename is the other side of the compaction
// crash: the pending log was recorded, the rename never happened, and the
// old log, still in place, must open.
func TestPendingCheckpointBeforeRename(t *testing.T) {
	requireWired(t)
	src := t.TempDir()
	full, third := writeThree(t, src)
	ck, st, err := openCkpt(collDir(src))
	if err != nil || st != ckptOK {
		t.Fatal(st, err)
	}
	other := encodeUpsert([]vectorstore.Record{rec("x", 4, 9)})
	if err := ck.prepare(extentOf(0, other)); err != nil {
		t.Fatal(err)
	}
	ck.close()
	c, err := OpenCollection(bg, src, "c", nil)
	if err != nil {
		t.Fatalf("open the old log with a compacted one pending: %v", err)
	}
	c.Close()
	// The pending extent is gone after the open: a cut to it is detected.
	writeLog(t, src, full[:third])
	mustCorrupt(t, src, "truncation after a pending checkpoint")
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// copyTree copies the regular files of src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	es, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// copyDir copies the collection "c" of src, checkpoint included, into a new
// directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, collDir(src), collDir(dir))
	return dir
}
