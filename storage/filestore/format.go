package filestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/stratamem/strata/storage"
)

var (
	// ErrCorrupt is wrapped by every *CorruptError.
	ErrCorrupt = errors.New("filestore: corrupt file")
	// ErrFormat is returned by Open for a directory written by an unknown
	// version of this package.
	ErrFormat = errors.New("filestore: unsupported format")
)

// CorruptError reports a data file that cannot be read back. It wraps
// ErrCorrupt. Remove or restore the file to recover the key.
type CorruptError struct {
	Path   string
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("filestore: corrupt file %s: %s", e.Path, e.Reason)
}

// Unwrap lets errors.Is(err, ErrCorrupt) match.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

const (
	magic       = "SFS1"
	headerSize  = 24
	crcSize     = 4
	flagDeleted = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// record is the decoded content of a data file.
type record struct {
	key      storage.Key
	revision int64
	deleted  bool
	value    []byte
}

func encodeKey(k storage.Key) []byte {
	var b []byte
	for _, p := range [...]string{k.Scope, k.ScopeID, k.Layer, k.Name} {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return b
}

func decodeKey(b []byte) (storage.Key, bool) {
	var parts [4]string
	for i := range parts {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return storage.Key{}, false
		}
		parts[i] = string(b[w : w+int(n)])
		b = b[w+int(n):]
	}
	if len(b) != 0 {
		return storage.Key{}, false
	}
	return storage.Key{Scope: parts[0], ScopeID: parts[1], Layer: parts[2], Name: parts[3]}, true
}

func (r *record) encode() []byte {
	kb := encodeKey(r.key)
	buf := make([]byte, headerSize, headerSize+len(kb)+len(r.value)+crcSize)
	copy(buf, magic)
	if r.deleted {
		buf[4] = flagDeleted
	}
	binary.BigEndian.PutUint64(buf[8:], uint64(r.revision))
	binary.BigEndian.PutUint32(buf[16:], uint32(len(kb)))
	binary.BigEndian.PutUint32(buf[20:], uint32(len(r.value)))
	buf = append(buf, kb...)
	buf = append(buf, r.value...)
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
}

// decodeRecord parses b, the content of the file at path. The value aliases b.
func decodeRecord(path string, b []byte) (record, error) {
	bad := func(format string, args ...any) (record, error) {
		return record{}, &CorruptError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	if len(b) < headerSize+crcSize {
		return bad("%d bytes is shorter than a header", len(b))
	}
	if string(b[:4]) != magic {
		return bad("bad magic %q", b[:4])
	}
	body, sum := b[:len(b)-crcSize], binary.BigEndian.Uint32(b[len(b)-crcSize:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return bad("checksum %08x, stored %08x", got, sum)
	}
	flags := b[4]
	if flags&^flagDeleted != 0 || b[5] != 0 || b[6] != 0 || b[7] != 0 {
		return bad("unknown flags %x", b[4:8])
	}
	rev := int64(binary.BigEndian.Uint64(b[8:]))
	klen := uint64(binary.BigEndian.Uint32(b[16:]))
	vlen := uint64(binary.BigEndian.Uint32(b[20:]))
	if uint64(len(body)) != headerSize+klen+vlen {
		return bad("length %d does not match header (key %d, value %d)", len(b), klen, vlen)
	}
	if rev <= 0 {
		return bad("revision %d", rev)
	}
	key, ok := decodeKey(body[headerSize : headerSize+klen])
	if !ok {
		return bad("malformed key")
	}
	r := record{key: key, revision: rev, deleted: flags&flagDeleted != 0, value: body[headerSize+klen:]}
	if r.deleted && vlen != 0 {
		return bad("tombstone with a value")
	}
	return r, nil
}

// readKey reads only the header and key of the data file at path, which is
// all a listing needs: values may be large. It checks what it reads and
// the file's length against the header, not the checksum of the value.
// ok is false when the file vanished.
func readKey(path string) (key storage.Key, deleted, ok bool, err error) {
	bad := func(format string, args ...any) (storage.Key, bool, bool, error) {
		return storage.Key{}, false, false, &CorruptError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return storage.Key{}, false, false, nil
	}
	if err != nil {
		return storage.Key{}, false, false, fmt.Errorf("filestore: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return storage.Key{}, false, false, fmt.Errorf("filestore: %w", err)
	}
	var h [headerSize]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return bad("%d bytes is shorter than a header", fi.Size())
		}
		return storage.Key{}, false, false, fmt.Errorf("filestore: reading %s: %w", path, err)
	}
	if string(h[:4]) != magic {
		return bad("bad magic %q", h[:4])
	}
	if h[4]&^flagDeleted != 0 || h[5] != 0 || h[6] != 0 || h[7] != 0 {
		return bad("unknown flags %x", h[4:8])
	}
	klen := uint64(binary.BigEndian.Uint32(h[16:]))
	vlen := uint64(binary.BigEndian.Uint32(h[20:]))
	if uint64(fi.Size()) != headerSize+klen+vlen+crcSize {
		return bad("length %d does not match header (key %d, value %d)", fi.Size(), klen, vlen)
	}
	kb := make([]byte, klen)
	if _, err := io.ReadFull(f, kb); err != nil {
		return storage.Key{}, false, false, fmt.Errorf("filestore: reading %s: %w", path, err)
	}
	key, ok = decodeKey(kb)
	if !ok {
		return bad("malformed key")
	}
	return key, h[4]&flagDeleted != 0, true, nil
}
