package chromem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// The checkpoint (records.ckpt) records how much of the log has been
// acknowledged, so that open can tell damage to acknowledged frames from a
// torn append. Frame checksums alone cannot: a log cut at a frame boundary
// is a well-formed log, and a last frame whose checksum fails looks like an
// append the crash interrupted.
//
// It names an extent of the log: its size and the offset and 8-byte header
// (length and payload CRC) of the frame that ends it. The log satisfies an
// extent when replay reaches a valid frame with that header at that offset,
// ending exactly there; a log that satisfies none of the checkpoint's
// extents has lost or changed acknowledged frames and fails to open with
// ErrCorrupt. Frames after the extent are checked as before (format 1):
// a torn tail there is cut, kept beside the log.
//
// Discipline: the checkpoint is written only after the log's fsync has
// returned, so it never names bytes that were not durable; it is not
// fsynced itself, so after a power failure it may lag behind the log,
// which only narrows what open can verify. It is two fixed slots, written
// alternately, each with its own checksum; the valid slot with the higher
// sequence wins, so a torn slot write leaves the previous one in force.
//
// Compaction replaces the log by a shorter file. Before the rename it
// records the new log as a pending extent (fsynced), so a crash between
// the rename and the next checkpoint write finds a log that satisfies the
// pending extent, and a crash before the rename one that satisfies the
// current extent. The next write drops the pending extent.
//
// Logs written before the checkpoint existed (no records.ckpt) open as
// before, and get a checkpoint on their first open. Older versions of the
// driver ignore the file; a log they compact no longer satisfies the
// checkpoint (recover with Salvage, which keeps every record).

const (
	ckptFile  = "records.ckpt"
	ckptMagic = "STRCKPT1"
	// ckptStride separates the two slots, so they never share a page.
	ckptStride = 4096
	extentLen  = 8 + 8 + frameHeader
	ckptLen    = len(ckptMagic) + 8 + 8 + 2*extentLen + 4
)

// extent is an acknowledged prefix of the log: size bytes, the last frame
// starting at offset last with header hdr. The zero extent is the empty
// log, satisfied by any log.
type extent struct {
	size int64
	last int64
	hdr  [frameHeader]byte
}

// extentOf is the extent ending with fr, a whole frame written at off.
func extentOf(off int64, fr []byte) extent {
	e := extent{size: off + int64(len(fr)), last: off}
	copy(e.hdr[:], fr[:frameHeader])
	return e
}

// ckptRecord is the content of one slot.
type ckptRecord struct {
	seq     uint64
	cur     extent // the log in place
	pend    extent // a compacted log about to replace it, if hasPend
	hasPend bool
}

func (r ckptRecord) extents() []extent {
	if r.hasPend {
		return []extent{r.cur, r.pend}
	}
	return []extent{r.cur}
}

func putExtent(b []byte, e extent) {
	binary.LittleEndian.PutUint64(b[0:8], uint64(e.size))
	binary.LittleEndian.PutUint64(b[8:16], uint64(e.last))
	copy(b[16:extentLen], e.hdr[:])
}

func getExtent(b []byte) extent {
	e := extent{size: int64(binary.LittleEndian.Uint64(b[0:8])), last: int64(binary.LittleEndian.Uint64(b[8:16]))}
	copy(e.hdr[:], b[16:extentLen])
	return e
}

func (r ckptRecord) marshal() []byte {
	b := make([]byte, ckptLen)
	p := copy(b, ckptMagic)
	binary.LittleEndian.PutUint64(b[p:], r.seq)
	p += 8
	if r.hasPend {
		b[p] = 1
	}
	p += 8
	putExtent(b[p:], r.cur)
	p += extentLen
	putExtent(b[p:], r.pend)
	p += extentLen
	binary.LittleEndian.PutUint32(b[p:], crc32.Checksum(b[:p], crcTable))
	return b
}

func unmarshalCkpt(b []byte) (ckptRecord, bool) {
	if len(b) < ckptLen || string(b[:len(ckptMagic)]) != ckptMagic {
		return ckptRecord{}, false
	}
	p := ckptLen - 4
	if crc32.Checksum(b[:p], crcTable) != binary.LittleEndian.Uint32(b[p:]) {
		return ckptRecord{}, false
	}
	p = len(ckptMagic)
	r := ckptRecord{seq: binary.LittleEndian.Uint64(b[p:])}
	p += 8
	r.hasPend = b[p]&1 != 0
	p += 8
	r.cur = getExtent(b[p:])
	p += extentLen
	r.pend = getExtent(b[p:])
	for _, e := range r.extents() {
		if e.size < 0 || e.last < 0 || e.size > 0 && e.last+frameHeader > e.size {
			return ckptRecord{}, false
		}
	}
	return r, true
}

// ckptState says what was found in records.ckpt.
type ckptState int

const (
	ckptMissing ckptState = iota // no file: a log from before checkpoints, or a new one
	ckptInvalid                  // a file with no valid slot
	ckptOK
)

// readCkpt reads the checkpoint of f, choosing the valid slot with the
// higher sequence.
func readCkpt(f *os.File) (ckptRecord, ckptState, error) {
	var best ckptRecord
	found, empty := false, true
	buf := make([]byte, ckptLen)
	for slot := range int64(2) {
		n, err := f.ReadAt(buf, slot*ckptStride)
		if err != nil && !errors.Is(err, io.EOF) {
			return ckptRecord{}, ckptInvalid, fmt.Errorf("chromem: read %s: %w", f.Name(), err)
		}
		empty = empty && n == 0
		if r, ok := unmarshalCkpt(buf[:n]); ok && (!found || r.seq > best.seq) {
			best, found = r, true
		}
	}
	switch {
	case empty:
		// Created, never written: a crash right after the creation.
		return ckptRecord{}, ckptMissing, nil
	case !found:
		return ckptRecord{}, ckptInvalid, nil
	}
	return best, ckptOK, nil
}

// readCkptFile reads cdir's checkpoint without creating or changing it.
func readCkptFile(cdir string) (ckptRecord, ckptState, error) {
	f, err := os.Open(filepath.Join(cdir, ckptFile))
	if errors.Is(err, fs.ErrNotExist) {
		return ckptRecord{}, ckptMissing, nil
	}
	if err != nil {
		return ckptRecord{}, ckptInvalid, fmt.Errorf("chromem: %w", err)
	}
	defer f.Close()
	return readCkpt(f)
}

// checkpoint is the open records.ckpt of a collection. Its methods are
// called under the collection's write lock (or during open), and are safe
// on a nil *checkpoint, which records nothing.
type checkpoint struct {
	f   *os.File
	rec ckptRecord // the last record written (or read)
	// warned: a write failed and was reported; later failures are not.
	warned bool
}

// openCkpt opens (creating if needed) cdir's checkpoint and reads it.
func openCkpt(cdir string) (*checkpoint, ckptState, error) {
	path := filepath.Join(cdir, ckptFile)
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, ckptInvalid, fmt.Errorf("chromem: open checkpoint: %w", err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		if err := syncDir(cdir); err != nil {
			f.Close()
			return nil, ckptInvalid, err
		}
		return &checkpoint{f: f}, ckptMissing, nil
	}
	rec, st, err := readCkpt(f)
	if err != nil {
		f.Close()
		return nil, st, err
	}
	return &checkpoint{f: f, rec: rec}, st, nil
}

// write stores r in the slot after the current one, fsynced if sync.
func (k *checkpoint) write(r ckptRecord, sync bool) error {
	r.seq = k.rec.seq + 1
	_, err := k.f.WriteAt(r.marshal(), int64(r.seq%2)*ckptStride)
	if err == nil && sync {
		err = k.f.Sync()
	}
	if err != nil {
		return fmt.Errorf("chromem: write checkpoint: %w", err)
	}
	k.rec = r
	return nil
}

// acked records that the log, size bytes long, ends with the frame fr and
// that this frame is durable. The caller has fsynced the log. A failure
// leaves the checkpoint lagging, which is safe, so it is only reported.
func (k *checkpoint) acked(size int64, fr []byte) {
	if k == nil {
		return
	}
	if err := k.write(ckptRecord{cur: extentOf(size-int64(len(fr)), fr)}, false); err != nil && !k.warned {
		k.warned = true
		slog.Warn("chromem: the checkpoint lags behind the log; open verifies less of it", "file", k.f.Name(), "err", err)
	}
}

// reset makes e, a durable prefix of the log in place, the whole
// checkpoint.
func (k *checkpoint) reset(e extent, sync bool) error {
	if k == nil {
		return nil
	}
	return k.write(ckptRecord{cur: e}, sync)
}

// prepare records next, the extent of a complete compacted log about to be
// renamed over the log in place, durably: once the rename is durable, open
// must accept the new log.
func (k *checkpoint) prepare(next extent) error {
	if k == nil {
		return nil
	}
	return k.write(ckptRecord{cur: k.rec.cur, pend: next, hasPend: true}, true)
}

func (k *checkpoint) close() error {
	if k == nil {
		return nil
	}
	return k.f.Close()
}
