//go:build linux || darwin || freebsd

package chromem

import (
	"os"
	"slices"
	"strings"
	"syscall"
	"unsafe"
)

// slabFile holds cold data of a collection outside the Go heap: the full
// slabs of its vecStore and, from open, the texts of its records. Each
// piece is written to an unlinked temporary file in the collection's
// directory and mapped back read-only, so it is page cache, read on
// demand, rather than resident anonymous memory. A query that bounds its
// scores from the int8 codes (which stay on the heap) reads the vectors of
// a few hundred candidates only, so only their pages become resident, and
// a text is read when a record is returned; a scan of a whole chain maps
// all of its pages, which the kernel can still reclaim and read again from
// the file. The file is a cache of values the log holds: it is rebuilt at
// every open, never read by a later one, and disappears with the last
// descriptor (Close, or the process's end).
//
// The pages are written with WriteAt, one page per call, not through the
// mapping: writing does not make them resident in this process, and the
// page cache then holds small folios, which a fault maps one page (and the
// kernel's fault-around window) at a time. A large write can leave large
// folios, which a fault maps whole (2 MiB at a time, measured on ext4).
//
// Nothing read through a mapping may outlive it: a slab is unmapped when
// its chain no longer uses it (the caller holds the collection's mu
// exclusively, so no query reads it), and everything at Close; a record
// leaving the collection (Get, List, Query, SearchTerms) carries a copy of
// its text (detach).
type slabFile struct {
	f    *os.File
	fd   int                       // f's descriptor, for pread
	size int64                     // the next free offset, page aligned
	maps map[unsafe.Pointer][]byte // a mapping's first byte → the mapping
	// spans are the mappings by address, for reads that copy out of the
	// file with pread rather than through the mapping (readFloats).
	spans []span
}

// span is a mapping: its addresses and the file offset of the first.
type span struct {
	start, end uintptr
	off        int64
}

// addSpan notes mapping m of the file at off.
func (s *slabFile) addSpan(m []byte, off int64) {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
	sp := span{start, start + uintptr(len(m)), off}
	i, _ := slices.BinarySearchFunc(s.spans, start, func(x span, p uintptr) int { return cmpUintptr(x.start, p) })
	s.spans = slices.Insert(s.spans, i, sp)
}

func cmpUintptr(a, b uintptr) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fileOffset returns the file offset of the n bytes at p, if they lie in
// a mapping of the file.
func (s *slabFile) fileOffset(p unsafe.Pointer, n int) (int64, bool) {
	if s == nil || n == 0 {
		return 0, false
	}
	a := uintptr(p)
	i, _ := slices.BinarySearchFunc(s.spans, a+1, func(x span, p uintptr) int { return cmpUintptr(x.start, p) })
	if i == 0 {
		return 0, false
	}
	sp := s.spans[i-1]
	if a < sp.start || a+uintptr(n) > sp.end {
		return 0, false
	}
	return sp.off + int64(a-sp.start), true
}

// readFloats returns the values of v: v itself if it is on the heap,
// else a copy read into dst (of v's length) with pread. Reading a few
// scattered vectors through the mapping would make resident, each, the
// kernel's whole fault-around window (64 KiB), and those pages would stay
// resident: a query's few hundred candidates would keep some 20 MiB more
// mapped after every query, until every vector is. A pread copies from
// the page cache and maps nothing. The caller holds the collection's mu.
func (s *slabFile) readFloats(dst, v []float32) []float32 {
	off, ok := s.fileOffset(unsafe.Pointer(unsafe.SliceData(v)), 4*len(v))
	if !ok {
		return v
	}
	dst = dst[:len(v)]
	if !s.pread(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), 4*len(dst)), off) {
		return v // read through the mapping instead
	}
	return dst
}

// pread fills b from the file at off, reporting whether it could. It
// calls pread(2) directly: os.File.ReadAt's bookkeeping is a good part of
// the cost of reading one vector.
func (s *slabFile) pread(b []byte, off int64) bool {
	for len(b) > 0 {
		n, err := syscall.Pread(s.fd, b, off)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return false
		}
		b, off = b[n:], off+int64(n)
	}
	return true
}

// cloneFloats is a copy of v, read like readFloats; nil for nil.
func (s *slabFile) cloneFloats(v []float32) []float32 {
	if v == nil {
		return nil
	}
	dst := make([]float32, len(v))
	if w := s.readFloats(dst, v); unsafe.SliceData(w) != unsafe.SliceData(dst) {
		copy(dst, w)
	}
	return dst
}

// cloneString is a copy of t, read with pread if it lies in the file
// (see readFloats).
func (s *slabFile) cloneString(t string) string {
	off, ok := s.fileOffset(unsafe.Pointer(unsafe.StringData(t)), len(t))
	if !ok {
		return strings.Clone(t)
	}
	b := make([]byte, len(t))
	if !s.pread(b, off) {
		copy(b, t)
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// openSlabFile creates the file in dir; nil if it cannot (everything then
// stays on the heap, as on platforms without mmap).
func openSlabFile(dir string) *slabFile {
	f, err := os.CreateTemp(dir, ".vectors-*.tmp")
	if err != nil {
		return nil
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil
	}
	return &slabFile{f: f, fd: int(f.Fd()), maps: make(map[unsafe.Pointer][]byte)}
}

// mapBytes returns a read-only copy of raw in the file, nil if it could
// not make one.
func (s *slabFile) mapBytes(raw []byte) []byte {
	n := len(raw)
	page := os.Getpagesize()
	length := (n + page - 1) / page * page
	for o := 0; o < n; o += page {
		if _, err := s.f.WriteAt(raw[o:min(n, o+page)], s.size+int64(o)); err != nil {
			return nil
		}
	}
	m, err := syscall.Mmap(int(s.f.Fd()), s.size, length, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	// No readahead: a vector or text read is its pages, not a whole run.
	_ = syscall.Madvise(m, syscall.MADV_RANDOM)
	s.maps[unsafe.Pointer(unsafe.SliceData(m))] = m
	s.addSpan(m, s.size)
	s.size += int64(length)
	return m[:n]
}

// seal returns a read-only copy of vals in the file, or nil if it could
// not make one (vals then stays in use).
func (s *slabFile) seal(vals []float32) []float32 {
	if s == nil || len(vals) == 0 {
		return nil
	}
	m := s.mapBytes(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(vals))), 4*len(vals)))
	if m == nil {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(m))), len(vals))
}

// release unmaps slab if seal made it; nothing may read it afterwards.
// Its bytes stay in the file, which only grows, until close.
func (s *slabFile) release(slab []float32) {
	if s == nil || cap(slab) == 0 {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(slab[:1]))
	if m, ok := s.maps[p]; ok {
		delete(s.maps, p)
		s.spans = slices.DeleteFunc(s.spans, func(x span) bool { return x.start == uintptr(p) })
		_ = syscall.Munmap(m)
	}
}

// mapped reports whether slab is one of the file's.
func (s *slabFile) mapped(slab []float32) bool {
	if s == nil || cap(slab) == 0 {
		return false
	}
	_, ok := s.maps[unsafe.Pointer(unsafe.SliceData(slab[:1]))]
	return ok
}

// textRegion is the size of the pieces of the file texts are mapped in.
const textRegion = 16 << 20

// textSink moves the texts decoded at open to the file as they are
// decoded, so that they never take heap memory: a text becomes a string
// over a read-only region of the file, mapped ahead of the writes (its
// pages past the end of the file are never read before being written).
// The bytes are written when the frame that holds them is decoded
// (flush), before any reader sees them; a failed write disables the sink
// and the frame is decoded again with heap strings (decodeStored).
type textSink struct {
	s       *slabFile
	region  []byte // the current region
	base    int64  // its offset in the file
	used    int    // bytes of region handed out
	pending int    // of which the last pending are not written yet
	buf     []byte // those bytes
	failed  bool
}

// newTextSink returns a sink into s; nil if s is.
func newTextSink(s *slabFile) *textSink {
	if s == nil {
		return nil
	}
	return &textSink{s: s}
}

// text returns b as a string, in the file if b is long enough and the sink
// works.
func (t *textSink) text(b []byte) string {
	if t == nil || t.failed || len(b) < minMappedText {
		return string(b)
	}
	if t.region == nil || t.used+len(b) > len(t.region) {
		if t.flush() != nil {
			return string(b)
		}
		page := os.Getpagesize()
		length := max(textRegion, (len(b)+page-1)/page*page)
		m, err := syscall.Mmap(int(t.s.f.Fd()), t.s.size, length, syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			t.failed = true
			return string(b)
		}
		_ = syscall.Madvise(m, syscall.MADV_RANDOM)
		t.s.maps[unsafe.Pointer(unsafe.SliceData(m))] = m
		t.s.addSpan(m, t.s.size)
		t.region, t.base, t.used = m, t.s.size, 0
		t.s.size += int64(length)
	}
	off := t.used
	t.buf = append(t.buf, b...)
	t.used += len(b)
	t.pending += len(b)
	return unsafe.String(&t.region[off], len(b))
}

// flush writes the pending bytes, one page of the file per write (see
// slabFile). After a failure nothing more is handed out, and the strings
// handed out since the last flush must not be read.
func (t *textSink) flush() error {
	if t == nil || t.pending == 0 {
		return nil
	}
	page := int64(os.Getpagesize())
	off := t.base + int64(t.used-t.pending)
	for b := t.buf; len(b) > 0; {
		n := min(int64(len(b)), page-off%page)
		if _, err := t.s.f.WriteAt(b[:n], off); err != nil {
			t.failed = true
			t.pending, t.buf = 0, t.buf[:0]
			return err
		}
		b, off = b[n:], off+n
	}
	t.pending, t.buf = 0, t.buf[:0]
	return nil
}

// trim drops the pages of every mapping from the process (MADV_DONTNEED:
// the page cache keeps them, and a later read maps them again), so that
// what the reads since the last trim touched does not stay resident. The
// caller holds the collection's mu, shared at least: no mapping can go
// meanwhile.
func (s *slabFile) trim() {
	if s == nil {
		return
	}
	for _, m := range s.maps {
		_ = syscall.Madvise(m, syscall.MADV_DONTNEED)
	}
}

// close unmaps everything and closes the file.
func (s *slabFile) close() {
	if s == nil {
		return
	}
	for _, m := range s.maps {
		_ = syscall.Munmap(m)
	}
	s.maps, s.spans = nil, nil
	_ = s.f.Close()
}
