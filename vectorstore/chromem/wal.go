package chromem

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"time"

	"github.com/stratamem/strata/vectorstore/driver"
)

// The log is a sequence of frames, each
//
//	uint32 payload length | uint32 CRC-32C of payload | payload
//
// A payload is one whole Upsert batch or one whole Delete, so a batch is
// applied entirely or not at all on replay. Every frame is fsynced before
// the call that wrote it returns; therefore only the last frame of the file
// can be torn (a crash mid-append), and replay truncates it. A bad frame
// followed by other data is real corruption and fails the open with
// ErrCorrupt instead of silently dropping acknowledged writes.

const (
	opUpsert byte = 1
	opDelete byte = 2

	frameHeader = 8
	// maxFrame bounds a frame so a corrupt length cannot make replay
	// allocate gigabytes.
	maxFrame = 1 << 30
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

type encoder struct{ b []byte }

func (e *encoder) uvarint(x uint64) { e.b = binary.AppendUvarint(e.b, x) }
func (e *encoder) varint(x int64)   { e.b = binary.AppendVarint(e.b, x) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }

func (e *encoder) record(r *driver.Record) {
	e.str(r.ID)
	e.str(r.Layer)
	e.str(r.Kind)
	e.str(r.Scope.Thread)
	e.str(r.Scope.Resource)
	e.str(r.Text)
	e.uvarint(uint64(len(r.Metadata)))
	for _, k := range sortedKeys(r.Metadata) { // sorted: byte-identical logs for identical input
		e.str(k)
		e.str(r.Metadata[k])
	}
	e.varint(r.CreatedAt.UnixMicro())
	var flags byte
	if !r.ValidFrom.IsZero() {
		flags |= 1
	}
	if !r.ValidTo.IsZero() {
		flags |= 2
	}
	e.b = append(e.b, flags)
	if flags&1 != 0 {
		e.varint(r.ValidFrom.UnixMicro())
	}
	if flags&2 != 0 {
		e.varint(r.ValidTo.UnixMicro())
	}
	e.uvarint(uint64(len(r.Vector)))
	for _, f := range r.Vector {
		e.b = binary.LittleEndian.AppendUint32(e.b, math.Float32bits(f))
	}
}

// frame wraps a payload with its header.
func frame(payload []byte) []byte {
	out := make([]byte, frameHeader, frameHeader+len(payload))
	binary.LittleEndian.PutUint32(out[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(out[4:8], crc32.Checksum(payload, crcTable))
	return append(out, payload...)
}

func encodeUpsert(recs []driver.Record) []byte {
	e := encoder{b: make([]byte, 0, 64+len(recs)*256)}
	e.b = append(e.b, opUpsert)
	e.uvarint(uint64(len(recs)))
	for i := range recs {
		e.record(&recs[i])
	}
	return frame(e.b)
}

func encodeDelete(ids []string) []byte {
	e := encoder{}
	e.b = append(e.b, opDelete)
	e.uvarint(uint64(len(ids)))
	for _, id := range ids {
		e.str(id)
	}
	return frame(e.b)
}

var errShort = errors.New("truncated payload")

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errShort
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) str() string { return string(d.bytes(d.uvarint())) }
func (d *decoder) byte1() byte {
	b := d.bytes(1)
	if b == nil {
		return 0
	}
	return b[0]
}

func micro(us int64) time.Time { return time.UnixMicro(us).UTC() }

func (d *decoder) record() driver.Record {
	var r driver.Record
	r.ID = d.str()
	r.Layer = d.str()
	r.Kind = d.str()
	r.Scope.Thread = d.str()
	r.Scope.Resource = d.str()
	r.Text = d.str()
	if n := d.uvarint(); n > 0 && d.err == nil {
		if n > uint64(len(d.b)) {
			d.err = errShort
			return r
		}
		r.Metadata = make(map[string]string, n)
		for i := uint64(0); i < n && d.err == nil; i++ {
			k := d.str()
			r.Metadata[k] = d.str()
		}
	}
	r.CreatedAt = micro(d.varint())
	flags := d.byte1()
	if flags&1 != 0 {
		r.ValidFrom = micro(d.varint())
	}
	if flags&2 != 0 {
		r.ValidTo = micro(d.varint())
	}
	dim := d.uvarint()
	raw := d.bytes(dim * 4)
	if d.err == nil {
		r.Vector = make([]float32, dim)
		for i := range r.Vector {
			r.Vector[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[i*4:]))
		}
	}
	return r
}

// entry is one decoded frame.
type entry struct {
	op   byte
	recs []driver.Record
	ids  []string
}

func decodePayload(p []byte) (entry, error) {
	d := decoder{b: p}
	e := entry{op: d.byte1()}
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		return e, errShort
	}
	switch e.op {
	case opUpsert:
		e.recs = make([]driver.Record, 0, n)
		for i := uint64(0); i < n && d.err == nil; i++ {
			e.recs = append(e.recs, d.record())
		}
	case opDelete:
		e.ids = make([]string, 0, n)
		for i := uint64(0); i < n && d.err == nil; i++ {
			e.ids = append(e.ids, d.str())
		}
	default:
		return e, fmt.Errorf("unknown op %d", e.op)
	}
	if d.err != nil {
		return e, d.err
	}
	if len(d.b) != 0 {
		return e, fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return e, nil
}

// replay reads every frame of f, calling apply for each, and returns the
// offset of the end of the last good frame. A torn tail is reported through
// the returned offset being smaller than the file size; corruption that
// cannot be a torn tail is an ErrCorrupt error.
func replay(f *os.File, apply func(entry, int) error) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	hdr := make([]byte, frameHeader)
	var buf []byte
	for off < size {
		if size-off < frameHeader {
			return off, nil // torn header
		}
		if _, err := io.ReadFull(r, hdr); err != nil {
			return 0, err
		}
		n := int64(binary.LittleEndian.Uint32(hdr[0:4]))
		sum := binary.LittleEndian.Uint32(hdr[4:8])
		end := off + frameHeader + n
		if end > size {
			return off, nil // torn: the length was written, the payload not all
		}
		if n > maxFrame {
			return off, tailOrCorrupt(f, off, size, "frame length %d too large", n)
		}
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return 0, err
		}
		if n == 0 || crc32.Checksum(buf, crcTable) != sum {
			return off, tailOrCorrupt(f, off, size, "checksum mismatch at offset %d", off)
		}
		e, err := decodePayload(buf)
		if err != nil {
			// A frame with a good checksum that does not decode was written
			// by a different format: never a crash artefact.
			return off, driver.Errorf(driver.CodeCorrupt, "open", "", "log frame at offset %d: %v", off, err)
		}
		if err := apply(e, int(frameHeader+n)); err != nil {
			return off, err
		}
		off = end
	}
	return off, nil
}

// tailOrCorrupt decides whether a bad frame at off is a torn final write
// (nothing but that frame or zero bytes follow it: the file size was
// extended by the crashed append) or corruption of acknowledged data.
func tailOrCorrupt(f *os.File, off, size int64, format string, args ...any) error {
	hdr := make([]byte, frameHeader)
	if _, err := f.ReadAt(hdr, off); err != nil {
		return err
	}
	n := int64(binary.LittleEndian.Uint32(hdr[0:4]))
	if n <= maxFrame && off+frameHeader+n == size {
		return nil // the bad frame is the last one: torn write
	}
	rest := make([]byte, 64<<10)
	for p := off; p < size; {
		k, err := f.ReadAt(rest, p)
		for _, b := range rest[:k] {
			if b != 0 {
				return driver.Errorf(driver.CodeCorrupt, "open", "", format+" (followed by more data: not a torn write)", args...)
			}
		}
		p += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	return nil // only zeros follow: a preallocated, never-written tail
}
