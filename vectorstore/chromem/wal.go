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
// can be torn (a crash mid-append), and open cuts it off, keeping its bytes
// in records.log.torn-<offset> and logging a warning (openlog.go). A bad
// frame followed by other data is real corruption and fails the open with
// ErrCorrupt instead of silently dropping acknowledged writes. What the
// frames cannot show (a log cut at a frame boundary, a damaged last frame
// that had been acknowledged) the checkpoint beside the log does
// (checkpoint.go); Salvage (salvage.go) recovers the intact frames of a
// corrupt log.
//
// The checksum covers the payload, not the length field (format 1, kept so
// existing logs stay readable). A damaged length can make a frame claim to
// run past the end of the file, which is also what a torn final append
// looks like. Replay tells them apart by what follows the frame: if the
// rest of the file is exactly one payload with the frame's checksum, or a
// complete valid frame starts anywhere after it, acknowledged data follows
// and the log is corrupt; otherwise the frame is the torn last append. A
// length above maxFrame is never written, so it is corruption outright.

const (
	opUpsert byte = 1
	opDelete byte = 2

	// Record flags: ValidFrom (1) and ValidTo (2) follow the creation
	// time; flagTerms says that the record's document (Record.Terms)
	// follows its vector. A log written before documents existed has no
	// flagTerms and reads unchanged. A binary from before then does not
	// know the flag: it reads the document as the bytes after the record,
	// which fails the frame as a format error (CORRUPT, nothing truncated)
	// unless they happen to decode. Unknown flags are refused from now on.
	flagTerms  byte = 4
	knownFlags      = 1 | 2 | flagTerms

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

// record encodes r, whose document is logged (in the log's encoding, as
// docTable.logged gives a stored record's) when r.Terms is empty.
func (e *encoder) record(r *driver.Record, logged []byte) {
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
	if len(r.Terms) > 0 || len(logged) > 0 {
		flags |= flagTerms
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
	if flags&flagTerms != 0 && len(r.Terms) == 0 {
		e.b = append(e.b, logged...) // the same bytes as below
	} else if flags&flagTerms != 0 {
		// After the vector, so that a record without a document encodes
		// exactly as before the field existed. Sorted, like the metadata.
		e.uvarint(uint64(len(r.Terms)))
		for _, k := range sortedKeys(r.Terms) {
			e.str(k)
			e.b = binary.LittleEndian.AppendUint32(e.b, math.Float32bits(r.Terms[k]))
		}
	}
}

// frame wraps a payload with its header.
func frame(payload []byte) []byte {
	out := make([]byte, frameHeader, frameHeader+len(payload))
	binary.LittleEndian.PutUint32(out[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(out[4:8], crc32.Checksum(payload, crcTable))
	return append(out, payload...)
}

func encodeUpsert(recs []driver.Record) []byte { return encodeUpsertDocs(recs, nil) }

// encodeUpsertDocs is encodeUpsert of records whose documents are docs[i]
// (in the log's encoding) where their Terms are empty; docs may be nil.
func encodeUpsertDocs(recs []driver.Record, docs [][]byte) []byte {
	e := encoder{b: make([]byte, 0, 64+len(recs)*256)}
	e.b = append(e.b, opUpsert)
	e.uvarint(uint64(len(recs)))
	for i := range recs {
		var d []byte
		if docs != nil {
			d = docs[i]
		}
		e.record(&recs[i], d)
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
	// sink, when set, makes this a decoding for the collection's memory
	// (open's replay, decodeStored): a record's document becomes a doc
	// of sink's table (in docs), not a map; its text goes to sink's text
	// sink; its other strings are interned in in, so that the records
	// share one copy of each: the layer, kind, scope and metadata keys
	// repeat in every record, metadata values often (a role, a model),
	// and ids come back as the metadata of other records (a thread's
	// previous message).
	sink *replaySink
	in   map[string]string
	docs []doc
}

// replaySink is where the replay at open puts what it decodes besides
// the records: their documents and their texts.
type replaySink struct {
	docs  *docTable
	texts *textSink // nil: on the heap
}

// interned decodes a string, shared with every equal one decoded before
// when d is stored.
func (d *decoder) interned() string {
	b := d.bytes(d.uvarint())
	if d.sink == nil || d.err != nil {
		return string(b)
	}
	if s, ok := d.in[string(b)]; ok {
		return s
	}
	s := string(b)
	if d.in == nil {
		d.in = make(map[string]string)
	}
	d.in[s] = s
	return s
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
	r.ID = d.interned() // shared with the metadata naming it (a neighbour's)
	r.Layer = d.interned()
	r.Kind = d.interned()
	r.Scope.Thread = d.interned()
	r.Scope.Resource = d.interned()
	if d.sink != nil {
		r.Text = d.sink.texts.text(d.bytes(d.uvarint()))
	} else {
		r.Text = d.str()
	}
	if n := d.uvarint(); n > 0 && d.err == nil {
		if n > uint64(len(d.b)) {
			d.err = errShort
			return r
		}
		r.Metadata = make(map[string]string, n)
		for i := uint64(0); i < n && d.err == nil; i++ {
			k := d.interned()
			if k == keyRevision && d.sink != nil {
				// Read by the replay and dropped: not interned, which
				// would keep every revision's string until the end.
				r.Metadata[k] = d.str()
				continue
			}
			r.Metadata[k] = d.interned()
		}
	}
	r.CreatedAt = micro(d.varint())
	flags := d.byte1()
	if flags&^knownFlags != 0 && d.err == nil {
		// A later format's field: refuse rather than misread what follows.
		d.err = fmt.Errorf("record %q: unknown flags %#x", r.ID, flags)
		return r
	}
	if flags&1 != 0 {
		r.ValidFrom = micro(d.varint())
	}
	if flags&2 != 0 {
		r.ValidTo = micro(d.varint())
	}
	dim := d.uvarint()
	if d.err == nil && dim > uint64(len(d.b))/4 {
		// Checked before multiplying: dim*4 can wrap around to a small
		// number and make would then be asked for dim floats.
		d.err = errShort
	}
	raw := d.bytes(dim * 4)
	if d.err == nil {
		r.Vector = make([]float32, dim)
		for i := range r.Vector {
			r.Vector[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[i*4:]))
		}
	}
	var dc doc
	if flags&flagTerms != 0 && d.sink != nil {
		dc = storedDoc(d, d.sink.docs, r.ID)
	} else if flags&flagTerms != 0 {
		r.Terms = d.terms(r.ID)
	}
	if d.sink != nil {
		d.docs = append(d.docs, dc)
	}
	return r
}

// termCount reads the number of terms of record id's document: not 0 (an
// empty document is written as no flag), and, as a term takes at least 6
// bytes (length, one byte, weight), at most what the payload can hold, a
// bound checked before anything is allocated by it.
func (d *decoder) termCount(id string) uint64 {
	n := d.uvarint()
	if d.err == nil && (n == 0 || n > uint64(len(d.b))/6) {
		d.err = errShort
		if n == 0 {
			d.err = fmt.Errorf("record %q: empty document", id)
		}
	}
	return n
}

// terms decodes a record's document. What the portable layer would have
// refused (an empty or repeated term, a weight that is not finite and > 0,
// an empty document, which is written as no flag) is a format error: the
// term index relies on every weight being positive.
func (d *decoder) terms(id string) driver.Terms {
	n := d.termCount(id)
	if d.err != nil {
		return nil
	}
	t := make(driver.Terms, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		k := d.str()
		raw := d.bytes(4)
		if d.err != nil {
			break
		}
		w := math.Float32frombits(binary.LittleEndian.Uint32(raw))
		if _, dup := t[k]; k == "" || dup || !(w > 0) || math.IsInf(float64(w), 0) {
			d.err = fmt.Errorf("record %q: invalid term %q (weight %v)", id, k, w)
			break
		}
		t[k] = w
	}
	return t
}

// entry is one decoded frame.
type entry struct {
	op   byte
	recs []driver.Record
	// docs, when decoded stored (decodeStored), holds the document of
	// each of recs (whose Terms are then nil); "" for none.
	docs []doc
	ids  []string
}

func decodePayload(p []byte) (entry, error) { return decodeWith(&decoder{b: p}) }

// decodeStored is decodePayload for the collection's memory (see
// decoder.sink), interning in in, which it may create. The documents of
// e.docs hold their terms in sink.docs: the caller stores or releases
// them.
func decodeStored(p []byte, in *map[string]string, sink *replaySink) (entry, error) {
	d := &decoder{b: p, sink: sink, in: *in}
	e, err := decodeWith(d)
	*in = d.in
	e.docs = d.docs
	if err == nil && sink.texts.flush() != nil {
		// The texts of e are not in the file: decode again onto the heap
		// (the text sink is off from now on).
		for _, dc := range e.docs {
			sink.docs.release(dc)
		}
		return decodeStored(p, in, sink)
	}
	return e, err
}

func decodeWith(d *decoder) (entry, error) {
	e := entry{op: d.byte1()}
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		return e, errShort
	}
	// n <= len(d.b) bounds the count by the payload size, but a record
	// takes far more memory than the one byte it can minimally encode to:
	// preallocate a bounded amount and let append grow with real records.
	hint := min(n, 1024)
	switch e.op {
	case opUpsert:
		e.recs = make([]driver.Record, 0, hint)
		for i := uint64(0); i < n && d.err == nil; i++ {
			e.recs = append(e.recs, d.record())
		}
	case opDelete:
		e.ids = make([]string, 0, hint)
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
// cannot be a torn tail is an ErrCorrupt error. It checks no checkpoint:
// open uses openLog.
func replay(f *os.File, apply func(entry, int) error) (int64, error) {
	res, err := scan(f, nil, nil, apply)
	return res.good, err
}

// scanResult is what scan found.
type scanResult struct {
	good   int64  // end of the last good frame
	size   int64  // size of the file
	frames int    // good frames
	last   extent // the good frames, as a checkpoint extent
	// covered: one of the extents scan was given is satisfied by the good
	// frames (always true when it was given none).
	covered bool
}

// scan reads every frame of f, calling apply for each, up to the end of
// the file or the first bad frame. A bad frame that cannot be a torn
// final append is an ErrCorrupt error; otherwise it ends the good frames.
// scan also reports whether the good frames satisfy one of exts, the
// checkpoint's extents: the caller decides what an unsatisfied checkpoint
// means.
//
// With a sink, the frames are decoded for the collection's memory
// (decodeStored); without, as decodePayload does.
func scan(f *os.File, exts []extent, sink *replaySink, apply func(entry, int) error) (scanResult, error) {
	st, err := f.Stat()
	if err != nil {
		return scanResult{}, err
	}
	size := st.Size()
	res := scanResult{size: size, covered: len(exts) == 0}
	for _, e := range exts {
		if e.size == 0 {
			res.covered = true
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return res, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	hdr := make([]byte, frameHeader)
	var buf []byte
	var in map[string]string // decodeStored's strings, shared by the whole log
	for off < size {
		res.good = off
		if size-off < frameHeader {
			return res, nil // torn header
		}
		if _, err := io.ReadFull(r, hdr); err != nil {
			return res, err
		}
		n := int64(binary.LittleEndian.Uint32(hdr[0:4]))
		sum := binary.LittleEndian.Uint32(hdr[4:8])
		if n > maxFrame {
			// No append writes such a length, and a torn header holds a
			// prefix of a real one (or zeros), never more.
			return res, tailOrCorrupt(f, off, size, "frame length %d too large at offset %d", n, off)
		}
		end := off + frameHeader + n
		if end > size {
			// Torn (the length was written, the payload not all) unless
			// acknowledged data follows: then the length is damaged.
			return res, pastEnd(f, off, size, n, sum)
		}
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return res, err
		}
		if n == 0 || crc32.Checksum(buf, crcTable) != sum {
			return res, tailOrCorrupt(f, off, size, "checksum mismatch at offset %d", off)
		}
		var e entry
		if sink != nil {
			e, err = decodeStored(buf, &in, sink)
		} else {
			e, err = decodePayload(buf)
		}
		if err != nil {
			// A frame with a good checksum that does not decode was written
			// by a different format: never a crash artefact.
			return res, driver.Errorf(driver.CodeCorrupt, "open", "", "log frame at offset %d: %v", off, err)
		}
		if err := apply(e, int(frameHeader+n)); err != nil {
			return res, err
		}
		res.last = extent{size: end, last: off}
		copy(res.last.hdr[:], hdr)
		for _, x := range exts {
			if x == res.last {
				res.covered = true
			}
		}
		res.frames++
		off = end
	}
	res.good = off
	return res, nil
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

// pastEnd decides whether the frame at off, whose length n runs past the end
// of the file, is a torn final append (nil) or a damaged length field in
// front of acknowledged data (ErrCorrupt). The length is outside the
// checksum, so damage to it shows only through what follows: the frame's
// own complete payload (the last frame's length was damaged) or a later
// valid frame (an earlier frame's length was damaged). A torn append leaves
// neither: its payload is incomplete and nothing was appended after it.
func pastEnd(f *os.File, off, size, n int64, sum uint32) error {
	if rest := size - off - frameHeader; rest > 0 {
		h := crc32.New(crcTable)
		if _, err := io.Copy(h, io.NewSectionReader(f, off+frameHeader, rest)); err != nil {
			return err
		}
		if h.Sum32() == sum {
			return driver.Errorf(driver.CodeCorrupt, "open", "", "frame at offset %d claims %d bytes, but the %d bytes after its header are its complete payload: damaged length field", off, n, rest)
		}
	}
	p, err := laterFrame(f, off+frameHeader+1, size)
	if err != nil {
		return err
	}
	if p >= 0 {
		return driver.Errorf(driver.CodeCorrupt, "open", "", "frame at offset %d claims %d bytes, past the end of the file, but a valid frame starts at offset %d: damaged length field, not a torn write", off, n, p)
	}
	return nil
}

// laterFrame returns the offset of the first complete valid frame starting
// in [from, size), or -1. A candidate needs a length that fits in the file,
// a known op byte, a successor that can be a frame header (or the end of the
// file, or a torn header), a matching checksum and a payload that decodes.
// The cheap tests come first, so the checksum is computed for very few
// offsets. The scan runs only when open finds a frame running past the end
// of the file, i.e. after a crash or on damage. It errs on the safe side: a
// torn batch whose payload happens to embed a valid frame (record text
// holding log bytes) reads as corruption, so open fails instead of
// guessing; it never truncates acknowledged frames.
func laterFrame(f *os.File, from, size int64) (int64, error) {
	const win = 64 << 10
	const need = frameHeader + 1 // header and op byte
	buf := make([]byte, win+need)
	for base := from; base+need <= size; base += win {
		k, err := f.ReadAt(buf[:min(int64(len(buf)), size-base)], base)
		if err != nil && !errors.Is(err, io.EOF) {
			return -1, err
		}
		for i := 0; i < win && i+need <= k; i++ {
			ok, err := validFrameAt(f, base+int64(i), size, buf[i:i+need])
			if err != nil {
				return -1, err
			}
			if ok {
				return base + int64(i), nil
			}
		}
	}
	return -1, nil
}

// validFrameAt reports whether a complete valid frame starts at p; head
// holds the file's bytes p .. p+frameHeader (the header and the op byte).
func validFrameAt(f *os.File, p, size int64, head []byte) (bool, error) {
	n := int64(binary.LittleEndian.Uint32(head[0:4]))
	if n == 0 || n > maxFrame || p+frameHeader+n > size {
		return false, nil
	}
	if op := head[frameHeader]; op != opUpsert && op != opDelete {
		return false, nil
	}
	if end := p + frameHeader + n; size-end >= frameHeader+1 {
		var next [frameHeader + 1]byte
		if _, err := f.ReadAt(next[:], end); err != nil {
			return false, err
		}
		n2 := binary.LittleEndian.Uint32(next[0:4])
		if n2 == 0 || n2 > maxFrame || next[frameHeader] != opUpsert && next[frameHeader] != opDelete {
			return false, nil
		}
	}
	h := crc32.New(crcTable)
	if _, err := io.Copy(h, io.NewSectionReader(f, p+frameHeader, n)); err != nil {
		return false, err
	}
	if h.Sum32() != binary.LittleEndian.Uint32(head[4:8]) {
		return false, nil
	}
	payload := make([]byte, n)
	if _, err := f.ReadAt(payload, p+frameHeader); err != nil {
		return false, err
	}
	_, err := decodePayload(payload)
	return err == nil, nil
}

// writeCompacted writes recs to f, a new log, as upsert frames of
// compactChunk records encoded by encode (encodeUpsert, or a wrapper of it),
// returns its size, and records it in ck as the pending log (durably)
// before the caller may rename it over the log in place. The caller fsyncs
// f before that rename.
//
// docs, when not nil, holds the documents of recs (see encodeUpsertDocs).
func writeCompacted(f *os.File, recs []driver.Record, docs [][]byte, encode func([]driver.Record, [][]byte) []byte, ck *checkpoint) (int64, error) {
	var size int64
	var last extent
	for i := 0; i < len(recs); i += compactChunk {
		j := min(i+compactChunk, len(recs))
		var ds [][]byte
		if docs != nil {
			ds = docs[i:j]
		}
		fr := encode(recs[i:j], ds)
		if _, err := f.Write(fr); err != nil {
			return 0, err
		}
		last = extentOf(size, fr)
		size += int64(len(fr))
	}
	if err := ck.prepare(last); err != nil {
		return 0, err
	}
	return size, nil
}
