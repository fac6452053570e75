package exportfmt

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

// Version is the format version written in headers. Version 2 added the
// state lines (State); a version 1 export, which has none, reads as
// before.
const Version = 2

// MinVersion is the oldest format version Reader reads.
const MinVersion = 1

// MaxLineBytes bounds one line: a record at the vector store's limits
// (1 MiB of text, 64 metadata values of 8 KiB, a 65536-value vector) fits
// with room to spare.
const MaxLineBytes = 16 << 20

// ErrMalformed is wrapped by every *LineError.
var ErrMalformed = errors.New("malformed line")

// Header is the optional first line of an export. It says what the
// vectors are, so an import into an empty store creates it right and an
// import into a store embedded differently is refused before anything is
// written.
type Header struct {
	// Format is Version; its key, "memctl_export", marks the line.
	Format int `json:"memctl_export"`
	// Embedder is the model id of the vectors ("" when the exporter did
	// not know it).
	Embedder string `json:"embedder,omitempty"`
	// Dimension of the vectors.
	Dimension int `json:"dimension"`
	// Distance of the collection ("cosine", "dot", "euclidean").
	Distance string `json:"distance,omitempty"`
}

// StateKey is the key of a state line, storage.Key with JSON names.
type StateKey struct {
	Scope   string `json:"scope"`
	ScopeID string `json:"scope_id"`
	Layer   string `json:"layer"`
	Name    string `json:"name"`
}

// Key is k as a storage.Key.
func (k StateKey) Key() storage.Key {
	return storage.Key{Scope: k.Scope, ScopeID: k.ScopeID, Layer: k.Layer, Name: k.Name}
}

// KeyOf is the StateKey of k.
func KeyOf(k storage.Key) StateKey {
	return StateKey{Scope: k.Scope, ScopeID: k.ScopeID, Layer: k.Layer, Name: k.Name}
}

// State is a state line: one value of the runtime's state store (a
// layer's state, a thread's binding to its resource, a recorded
// assembly...). The value is opaque bytes, written in base64 so that any
// value, JSON or not, round-trips byte for byte; its revision, the
// version counter of the store it was read from, is left out like a
// record's.
type State struct {
	Key   StateKey `json:"state"`
	Value []byte   `json:"value"`
}

// Writer writes an export.
type Writer struct {
	w      *bufio.Writer
	n      int
	states int
}

// NewWriter returns a Writer on w. Call Flush at the end.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 64<<10)} }

// WriteHeader writes the header line; call it first, if at all.
func (w *Writer) WriteHeader(h Header) error {
	if h.Format == 0 {
		h.Format = Version
	}
	return w.line(h)
}

// Write writes one record. Its revision is left out: it is the version
// counter of the store it was read from, not part of the memory (a store
// the export is imported into gives every record its own).
func (w *Writer) Write(r *vectorstore.Record) error {
	w.n++
	if r.Revision != 0 {
		c := *r
		c.Revision = 0
		r = &c
	}
	return w.line(r)
}

// Count is the number of records written.
func (w *Writer) Count() int { return w.n }

// WriteState writes one state line. The value is copied as it is; an
// invalid key is refused (storage.ErrInvalidKey), so that the import does
// not fail on it.
func (w *Writer) WriteState(k storage.Key, value []byte) error {
	if err := k.Validate(); err != nil {
		return err
	}
	if value == nil {
		value = []byte{}
	}
	w.states++
	return w.line(State{Key: KeyOf(k), Value: value})
}

// StateCount is the number of state lines written.
func (w *Writer) StateCount() int { return w.states }

func (w *Writer) line(v any) error {
	// encoding/json writes float32 values with the shortest digits that
	// parse back to the same float32, and times as RFC 3339 with all
	// their digits: the round trip is exact. HTML escaping is off so text
	// stays readable in the file; the controls encoding/json leaves raw
	// (DEL, C1, bidirectional overrides) are written as \u escapes, so an
	// export to a terminal or a pager fires none of them, and decodes to
	// the same text.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.w.Write(escapeControls(buf.Bytes()))
	return err
}

// Flush writes buffered data.
func (w *Writer) Flush() error { return w.w.Flush() }

// LineError reports a line that is not a record. It wraps ErrMalformed.
type LineError struct {
	Line int
	Msg  string
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Unwrap makes errors.Is(err, ErrMalformed) true.
func (e *LineError) Unwrap() error { return ErrMalformed }

// Reader reads an export line by line.
type Reader struct {
	r    *bufio.Reader
	line int
	// seen is set once a non-blank line was read: a header is only
	// allowed before it (blank lines before the header are fine).
	seen bool
	// Bytes is the number of bytes consumed so far (for progress).
	Bytes int64
}

// NewReader returns a Reader on r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 256<<10)} }

// Item is one line read: a header, a record or a state line.
type Item struct {
	Line   int
	Header *Header
	Record *vectorstore.Record
	State  *State
}

// Next returns the next non-blank line. A line that does not parse returns
// a *LineError and the reader stays usable: the next call reads the next
// line. At the end it returns io.EOF; a read failure of the underlying
// reader is returned as is (not a *LineError) and is final.
func (r *Reader) Next() (Item, error) {
	for {
		raw, err := r.readLine()
		if err != nil {
			return Item{}, err
		}
		r.line++
		line := r.line
		if len(raw) > MaxLineBytes {
			r.seen = true
			return Item{}, &LineError{Line: line, Msg: fmt.Sprintf("longer than %d bytes", MaxLineBytes)}
		}
		trimmed := bytes.TrimSpace(raw)
		if len(trimmed) == 0 {
			continue
		}
		first := !r.seen
		r.seen = true
		if trimmed[0] != '{' {
			return Item{}, &LineError{Line: line, Msg: "not a JSON object"}
		}
		if isHeader(trimmed) {
			var h Header
			if err := decodeStrict(trimmed, &h); err != nil {
				return Item{}, &LineError{Line: line, Msg: "header: " + err.Error()}
			}
			if h.Format < MinVersion || h.Format > Version {
				return Item{}, &LineError{Line: line, Msg: fmt.Sprintf("export format %d is not supported (this memctl reads %d to %d)", h.Format, MinVersion, Version)}
			}
			if !first {
				return Item{}, &LineError{Line: line, Msg: "header line after the first line"}
			}
			return Item{Line: line, Header: &h}, nil
		}
		if hasKey(trimmed, "state") {
			var st State
			if err := decodeStrict(trimmed, &st); err != nil {
				return Item{}, &LineError{Line: line, Msg: "state line: " + err.Error()}
			}
			if st.Value == nil {
				return Item{}, &LineError{Line: line, Msg: `state line: no "value"`}
			}
			if err := st.Key.Key().Validate(); err != nil {
				return Item{}, &LineError{Line: line, Msg: "state line: " + strings.TrimPrefix(err.Error(), "storage: ")}
			}
			return Item{Line: line, State: &st}, nil
		}
		var rec vectorstore.Record
		if err := decodeStrict(trimmed, &rec); err != nil {
			return Item{}, &LineError{Line: line, Msg: err.Error()}
		}
		if rec.ID == "" {
			return Item{}, &LineError{Line: line, Msg: `no "id"`}
		}
		return Item{Line: line, Record: &rec}, nil
	}
}

// readLine returns the next line without its terminator, whatever its
// length (lines over MaxLineBytes are consumed and reported by Next).
func (r *Reader) readLine() ([]byte, error) {
	var out []byte
	for {
		chunk, err := r.r.ReadSlice('\n')
		r.Bytes += int64(len(chunk))
		if len(out) <= MaxLineBytes {
			out = append(out, chunk...)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(out, []byte{'\n'}), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(out) == 0 {
				return nil, io.EOF
			}
			return out, nil
		default:
			return nil, err
		}
	}
}

func isHeader(line []byte) bool { return hasKey(line, "memctl_export") }

// hasKey reports whether the JSON object on line has key at its top
// level: a record has neither "memctl_export" nor "state".
func hasKey(line []byte, key string) bool {
	// Cheap check first; the strict decode decides.
	if !bytes.Contains(line, []byte(`"`+key+`"`)) {
		return false
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(line, &probe) != nil {
		return false
	}
	_, ok := probe[key]
	return ok
}

// decodeStrict decodes one JSON object into v, refusing unknown fields and
// trailing data, with a short message.
func decodeStrict(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New(cleanJSONError(err))
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

func cleanJSONError(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, se.Error())
	case errors.As(err, &te):
		f := te.Field
		if f == "" {
			f = "value"
		}
		return fmt.Sprintf("field %q: cannot use a JSON %s as %s", f, te.Value, te.Type)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "truncated JSON"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// escapeControls rewrites, in encoded JSON (where encoding/json has
// escaped the C0 controls, U+2028 and U+2029 itself), DEL, the C1
// controls (U+0080-U+009F) and the bidirectional controls (U+061C,
// U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) as \u escapes. They can
// only occur inside strings, where the escape decodes to the same
// character. b is returned as is when there is nothing to rewrite.
func escapeControls(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == 0x7f || size > 1 && (r <= 0x9f || r == 0x061c || r == 0x200e || r == 0x200f ||
			r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069) {
			if out == nil {
				out = append(make([]byte, 0, len(b)+16), b[:i]...)
			}
			h := strconv.FormatInt(int64(r), 16)
			out = append(out, `\u`+strings.Repeat("0", 4-len(h))+h...)
		} else if out != nil {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	if out == nil {
		return b
	}
	return out
}

// Duplicate is an id on more than one record line of an export: an
// import would keep only the last.
type Duplicate struct {
	ID    string
	Lines [2]int // the first two lines that hold it
}

// DuplicateState is a state key on more than one state line.
type DuplicateState struct {
	Key   StateKey
	Lines [2]int // the first two lines that hold it
}

// Summary is what Scan found in an export.
type Summary struct {
	// Records and States count the record and state lines that parse.
	Records, States int
	// Duplicates are the ids on more than one record line, in the order
	// their second line comes, each once; DuplicateStates the same of
	// state keys.
	Duplicates      []Duplicate
	DuplicateStates []DuplicateState
}

// Scan reads an export to its end and summarises it: the lines of each
// kind and the ids and state keys on more than one line. Lines that do
// not parse (*LineError) and records whose id skip refuses (nil: none)
// are passed over, left for the import to report; a read failure is
// returned.
func Scan(r io.Reader, skip func(id string) bool) (Summary, error) {
	var sum Summary
	first := map[string]int{}
	firstState := map[StateKey]int{}
	rd := NewReader(r)
	for {
		it, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return sum, nil
		}
		if err != nil {
			if errors.As(err, new(*LineError)) {
				continue
			}
			return sum, err
		}
		if st := it.State; st != nil {
			sum.States++
			switch line, seen := firstState[st.Key]; {
			case !seen:
				firstState[st.Key] = it.Line
			case line > 0:
				sum.DuplicateStates = append(sum.DuplicateStates, DuplicateState{Key: st.Key, Lines: [2]int{line, it.Line}})
				firstState[st.Key] = -1 // counted once
			}
			continue
		}
		if it.Record == nil || skip != nil && skip(it.Record.ID) {
			continue
		}
		sum.Records++
		id := it.Record.ID
		switch line, seen := first[id]; {
		case !seen:
			first[id] = it.Line
		case line > 0:
			sum.Duplicates = append(sum.Duplicates, Duplicate{ID: id, Lines: [2]int{line, it.Line}})
			first[id] = -1 // counted once
		}
	}
}

// Duplicates reads an export to its end and returns the ids on more than
// one record line, in the order their second line comes, each once (see
// Scan, which also finds repeated state keys).
func Duplicates(r io.Reader, skip func(id string) bool) ([]Duplicate, error) {
	sum, err := Scan(r, skip)
	return sum.Duplicates, err
}
