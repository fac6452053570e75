package termsafe

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Unsafe reports whether r is escaped: the C0 controls (U+0000–U+001F),
// DEL, the C1 controls (U+0080–U+009F), the bidirectional controls
// (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) and the line and
// paragraph separators (U+2028, U+2029). Escape escapes them all; Text
// keeps newline and tab.
func Unsafe(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// Escape returns s with every unsafe character (see Unsafe), newline and
// tab included, and every byte that is not valid UTF-8 replaced with a
// visible escape: \n, \t, \r, \xNN for the other C0 controls, DEL and
// invalid bytes, \uNNNN for the rest. A string with nothing to escape is
// returned as is. Backslashes are not escaped: the result is for reading,
// not for parsing back.
func Escape(s string) string { return escape(s, false) }

// Text is Escape for a multi-line block: newlines and tabs are kept.
func Text(s string) string { return escape(s, true) }

func escape(s string, keepLayout bool) string {
	i := firstUnsafe(s, keepLayout)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i]))
		case keepLayout && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteString(hex2(byte(r)))
		case Unsafe(r):
			b.WriteString(`\u`)
			b.WriteString(hex4(r))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// firstUnsafe returns the index of the first byte to escape, or -1.
func firstUnsafe(s string, keepLayout bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 || c == 0x7f) && !(keepLayout && (c == '\n' || c == '\t')) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || Unsafe(r) {
			return i
		}
		i += size
	}
	return -1
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}

func hex4(r rune) string {
	h := strconv.FormatInt(int64(r), 16)
	return strings.Repeat("0", 4-len(h)) + h
}

// JSON returns encoded JSON (the output of encoding/json, which escapes
// the C0 controls, U+2028 and U+2029 itself) with DEL, the C1 controls and
// the bidirectional controls rewritten as \u escapes. They can only occur
// inside strings, where the escape decodes to the same character: the JSON
// means exactly what it meant. b is returned as is when there is nothing
// to rewrite.
func JSON(b []byte) []byte {
	i := firstUnsafeJSON(b)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		if size > 1 && Unsafe(r) || r == 0x7f {
			out = append(out, `\u`...)
			out = append(out, hex4(r)...)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

func firstUnsafeJSON(b []byte) int {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if size > 1 && Unsafe(r) {
			return i
		}
		i += size
	}
	return -1
}
