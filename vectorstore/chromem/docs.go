package chromem

import (
	"encoding/binary"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"

	"github.com/stratamem/strata/vectorstore/driver"
)

// doc is a stored record's document (Record.Terms) in compact form: the
// number of terms, then each term in sorted order (of the terms' strings)
// as the uvarint of its number in the collection's termNames and its
// weight, one byte for an integer weight of 1 to 255, else a zero byte and
// the weight's float32 bits, little-endian. A stored record keeps its
// document in this form, in the collection's docTable, instead of a map:
// about a sixth of the bytes, one allocation instead of a map's groups
// and a string per term. The term index reads the terms in order; Get and
// List rebuild the map, compaction the log's encoding. The empty doc is no
// document.
type doc string

// docTable holds the documents of the stored records that have one, and
// the names of their terms; it is guarded, like recs, by the collection's
// mu.
type docTable struct {
	m     map[*driver.Record]doc
	names termNames
	buf   []byte // where a doc is encoded, before its one allocation
}

// termNames numbers terms: each term's number, name, and the number of
// holders referring to it (documents for the docTable, groups for the
// termDict). A term nobody refers to is forgotten and its number reused.
// The zero value is ready to use.
type termNames struct {
	ids   map[string]uint32
	names []string
	refs  []int32
	free  []uint32
}

func newDocTable() *docTable {
	return &docTable{m: make(map[*driver.Record]doc)}
}

// acquireCopy is acquire for a t that may refer to a larger string: a new
// name is copied, so that it refers to no more than itself.
func (n *termNames) acquireCopy(t string) uint32 {
	if id, ok := n.ids[t]; ok {
		n.refs[id]++
		return id
	}
	return n.acquire(strings.Clone(t))
}

// acquire returns the number of t, counting one more holder referring to
// it.
func (n *termNames) acquire(t string) uint32 {
	if id, ok := n.ids[t]; ok {
		n.refs[id]++
		return id
	}
	if n.ids == nil {
		n.ids = make(map[string]uint32)
	}
	var id uint32
	if k := len(n.free); k > 0 {
		id = n.free[k-1]
		n.free = n.free[:k-1]
		n.names[id], n.refs[id] = t, 1
	} else {
		id = uint32(len(n.names))
		n.names = append(n.names, t)
		n.refs = append(n.refs, 1)
	}
	n.ids[t] = id
	return id
}

// release counts one holder less referring to term id.
func (n *termNames) release(id uint32) {
	if n.refs[id]--; n.refs[id] == 0 {
		delete(n.ids, n.names[id])
		n.names[id] = ""
		n.free = append(n.free, id)
	}
}

// get returns the document of r, "" if it has none.
func (t *docTable) get(r *driver.Record) doc { return t.m[r] }

// put makes d the document of r, which has none.
func (t *docTable) put(r *driver.Record, d doc) {
	if d != "" {
		t.m[r] = d
	}
}

// drop forgets the document of r, if it has one.
func (t *docTable) drop(r *driver.Record) {
	d, ok := t.m[r]
	if !ok {
		return
	}
	delete(t.m, r)
	t.release(d)
}

// release counts d's terms one document less held (d is forgotten).
func (t *docTable) release(d doc) {
	for id := range d.entries() {
		t.names.release(id)
	}
}

// appendWeight appends w in a doc's encoding.
func appendWeight(b []byte, w float32) []byte {
	if w >= 1 && w <= 255 && w == float32(int(w)) {
		return append(b, byte(w))
	}
	return binary.LittleEndian.AppendUint32(append(b, 0), math.Float32bits(w))
}

func readWeight(d doc, o int) (float32, int) {
	if b := d[o]; b != 0 {
		return float32(b), o + 1
	}
	return math.Float32frombits(uint32(d[o+1]) | uint32(d[o+2])<<8 | uint32(d[o+3])<<16 | uint32(d[o+4])<<24), o + 5
}

// fromTerms encodes m (acquiring its terms); "" for an empty or nil m.
func (t *docTable) fromTerms(m driver.Terms) doc {
	if len(m) == 0 {
		return ""
	}
	keys := sortedKeys(m)
	b := binary.AppendUvarint(t.buf[:0], uint64(len(keys)))
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(t.names.acquireCopy(k)))
		b = appendWeight(b, m[k])
	}
	t.buf = b
	return doc(b)
}

// fromLog encodes the document enc in the log's encoding (see wal.go),
// well formed and sorted (checked by logDoc).
func (t *docTable) fromLog(enc []byte) doc {
	d := decoder{b: enc}
	n := d.uvarint()
	b := binary.AppendUvarint(t.buf[:0], n)
	for ; n > 0; n-- {
		k := d.bytes(d.uvarint())
		w := math.Float32frombits(binary.LittleEndian.Uint32(d.bytes(4)))
		b = binary.AppendUvarint(b, uint64(t.names.acquireCopy(string(k))))
		b = appendWeight(b, w)
	}
	t.buf = b
	return doc(b) // a copy: t.buf is reused
}

// all yields the terms of d with their weights, in sorted order.
func (t *docTable) all(d doc) iter.Seq2[string, float32] {
	return func(yield func(string, float32) bool) {
		for id, w := range d.entries() {
			if !yield(t.names.names[id], w) {
				return
			}
		}
	}
}

// entries yields the term ids of d with their weights, in sorted term
// order; none for no document.
func (d doc) entries() iter.Seq2[uint32, float32] {
	return func(yield func(uint32, float32) bool) {
		if d == "" {
			return
		}
		n, o := docUvarint(d, 0)
		for ; n > 0; n-- {
			var id uint64
			id, o = docUvarint(d, o)
			var w float32
			w, o = readWeight(d, o)
			if !yield(uint32(id), w) {
				return
			}
		}
	}
}

// docUvarint decodes the uvarint of d at o and returns it with the offset
// after it; d is well formed.
func docUvarint(d doc, o int) (uint64, int) {
	var x uint64
	var s uint
	for {
		b := d[o]
		o++
		if b < 0x80 {
			return x | uint64(b)<<s, o
		}
		x |= uint64(b&0x7f) << s
		s += 7
	}
}

// count is the number of terms of d.
func (d doc) count() int {
	if d == "" {
		return 0
	}
	n, _ := docUvarint(d, 0)
	return int(n)
}

// length is driver.Terms.Len of d: its weights summed in sorted term
// order, the order they are stored in.
func (d doc) length() float64 {
	if d == "" {
		return 0
	}
	var s float64
	for _, w := range d.entries() {
		s += float64(w)
	}
	return s
}

// terms returns d as a new map, nil for no document.
func (t *docTable) terms(d doc) driver.Terms {
	if d == "" {
		return nil
	}
	m := make(driver.Terms, d.count())
	for k, w := range t.all(d) {
		m[k] = w
	}
	return m
}

// approx is what approxSize counts for d's terms.
func (t *docTable) approx(d doc) int {
	n := 0
	for k := range t.all(d) {
		n += len(k) + 5
	}
	return n
}

// logged returns d in the log's encoding, the bytes encoder.record writes
// for the same map; nil for no document.
func (t *docTable) logged(d doc) []byte {
	if d == "" {
		return nil
	}
	e := encoder{b: make([]byte, 0, 16*d.count())}
	e.uvarint(uint64(d.count()))
	for k, w := range t.all(d) {
		e.str(k)
		e.b = binary.LittleEndian.AppendUint32(e.b, math.Float32bits(w))
	}
	return e.b
}

// logDoc validates the document at the start of d.b (a log record's,
// after its vector) and returns its bytes there, still in the log's
// encoding, and whether its terms are in strictly increasing order (as
// every encoder of this package writes them). A repeated or empty term,
// or a weight that is not finite and > 0, is an error, as for the map
// the decoder builds otherwise; terms out of order are checked for
// repetition by the caller, which decodes them as a map.
func logDoc(d *decoder, id string) (enc []byte, sorted bool) {
	start := d.b
	n := d.termCount(id)
	if d.err != nil {
		return nil, false
	}
	sorted = true
	var prev []byte
	for i := uint64(0); i < n && d.err == nil; i++ {
		k := d.bytes(d.uvarint())
		raw := d.bytes(4)
		if d.err != nil {
			break
		}
		w := math.Float32frombits(binary.LittleEndian.Uint32(raw))
		if len(k) == 0 || !(w > 0) || math.IsInf(float64(w), 0) {
			d.err = fmt.Errorf("record %q: invalid term %q (weight %v)", id, k, w)
			break
		}
		if i > 0 && string(k) <= string(prev) {
			sorted = false
		}
		prev = k
	}
	if d.err != nil {
		return nil, false
	}
	return start[:len(start)-len(d.b)], sorted
}

// storedDoc decodes a record's document for a stored decoding: straight
// into the compact form when the log's terms are sorted, else through a
// map, which finds repeated terms.
func storedDoc(d *decoder, tab *docTable, id string) doc {
	enc, sorted := logDoc(d, id)
	if d.err != nil {
		return ""
	}
	if sorted {
		return tab.fromLog(enc)
	}
	d2 := decoder{b: slices.Clone(enc)}
	m := d2.terms(id)
	if d2.err != nil {
		d.err = d2.err
		return ""
	}
	return tab.fromTerms(m)
}
