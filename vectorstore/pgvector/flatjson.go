package pgvector

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// Fast decoding of the two jsonb columns every read returns: metadata (an
// object of strings) and terms (an object of numbers). PostgreSQL prints
// them as flat objects without escapes in the common case, which these
// read without encoding/json's reflection (a third of a semantic search's
// client CPU went to it: about a thousand records read per search). Any
// input they are not sure of (an escape, invalid UTF-8, a nested or
// unexpected value, trailing bytes) makes them report false, and the
// caller decodes with encoding/json, so results and errors stay those of
// encoding/json.

// flatScanner walks a flat JSON object.
type flatScanner struct {
	b []byte
	i int
}

func (s *flatScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next reports whether s is at c (after white space) and skips it.
func (s *flatScanner) next(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string without escapes or control characters, valid UTF-8.
func (s *flatScanner) str() (string, bool) {
	if !s.next('"') {
		return "", false
	}
	start, ascii := s.i, true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(v) {
				return "", false
			}
			return string(v), true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
		s.i++
	}
	return "", false
}

// num reads a number in JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *flatScanner) num() (string, bool) {
	s.ws()
	start := s.i
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	lead := s.i
	if n := digits(); n == 0 || n > 1 && s.b[lead] == '0' {
		return "", false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return "", false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return "", false
		}
	}
	return string(s.b[start:s.i]), true
}

// object reads a flat object, calling val after each key to read its value.
func (s *flatScanner) object(val func(key string) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return s.end()
	}
	for {
		k, ok := s.str()
		if !ok || !s.next(':') || !val(k) {
			return false
		}
		if s.next('}') {
			return s.end()
		}
		if !s.next(',') {
			return false
		}
	}
}

func (s *flatScanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// flatStrings decodes an object of strings; false if unsure (see above).
func flatStrings(b []byte) (map[string]string, bool) {
	s := flatScanner{b: b}
	m := make(map[string]string, sizeHint(b))
	ok := s.object(func(k string) bool {
		v, ok := s.str()
		m[k] = v
		return ok
	})
	return m, ok
}

// flatFloat32s decodes an object of numbers as float32, as encoding/json
// does (strconv.ParseFloat with 32 bits); false if unsure (see above),
// including a number out of float32's range, which encoding/json rejects.
func flatFloat32s(b []byte) (map[string]float32, bool) {
	s := flatScanner{b: b}
	m := make(map[string]float32, sizeHint(b))
	ok := s.object(func(k string) bool {
		t, ok := s.num()
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(t, 32)
		if err != nil {
			return false
		}
		m[k] = float32(f)
		return true
	})
	return m, ok
}

// sizeHint is about the number of members of a flat object (commas in
// strings count too: a hint only).
func sizeHint(b []byte) int { return bytes.Count(b, []byte{','}) + 1 }
