package termsafe

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, escape, text string }{
		{"", "", ""},
		{"plain text, café, 東京, emoji 🎉", "plain text, café, 東京, emoji 🎉", "plain text, café, 東京, emoji 🎉"},
		{`C:\path\x1b stays`, `C:\path\x1b stays`, `C:\path\x1b stays`},
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\x07`, `\x1b]0;pwned\x07`},
		{"\x1b[2Jcleared", `\x1b[2Jcleared`, `\x1b[2Jcleared`},
		{"a\nb\tc", `a\nb\tc`, "a\nb\tc"},
		{"over\rwrite", `over\rwrite`, `over\rwrite`},
		{"\x00\x01\x08\x0b\x0c\x1f", `\x00\x01\x08\x0b\x0c\x1f`, `\x00\x01\x08\x0b\x0c\x1f`},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"csi\u009b2J nel\u0085 \u0080", `csi\u009b2J nel\u0085 \u0080`, `csi\u009b2J nel\u0085 \u0080`},
		{"osc\u009d0;x\u009c", `osc\u009d0;x\u009c`, `osc\u009d0;x\u009c`},
		{"abc\u202edcba", `abc\u202edcba`, `abc\u202edcba`},
		{"\u202a\u202b\u202c\u202d \u2066\u2067\u2068\u2069 \u200e\u200f\u061c", `\u202a\u202b\u202c\u202d \u2066\u2067\u2068\u2069 \u200e\u200f\u061c`, `\u202a\u202b\u202c\u202d \u2066\u2067\u2068\u2069 \u200e\u200f\u061c`},
		{"line\u2028sep\u2029", `line\u2028sep\u2029`, `line\u2028sep\u2029`},
		{"bad \xff\xfe utf8 \xc3", `bad \xff\xfe utf8 \xc3`, `bad \xff\xfe utf8 \xc3`},
		{"carol\x1fmain", `carol\x1fmain`, `carol\x1fmain`},
		// Printable neighbours of the escaped ranges stay.
		{"\u00a0\u00a9\u2027\u202f\u2065\u206a", "\u00a0\u00a9\u2027\u202f\u2065\u206a", "\u00a0\u00a9\u2027\u202f\u2065\u206a"},
	} {
		if got := Escape(c.in); got != c.escape {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.escape)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

// TestEscapeEverything: no rune the escaping keeps is a control, in every
// code point of the BMP and beyond, valid or not.
func TestEscapeEverything(t *testing.T) {
	for r := rune(0); r <= 0x10ffff; r++ {
		if r == 0x30000 {
			r = 0xe0000 // skip the unassigned planes
		}
		s := string(r)
		if !utf8.ValidRune(r) {
			continue
		}
		for _, out := range []string{Escape(s), Text(s)} {
			for _, o := range out {
				if o == '\n' || o == '\t' {
					if out == Escape(s) {
						t.Fatalf("Escape(%U) kept %q", r, o)
					}
					continue
				}
				if Unsafe(o) {
					t.Fatalf("escape of %U holds %U", r, o)
				}
			}
		}
	}
}

func TestJSON(t *testing.T) {
	in := map[string]string{"text": "\x1b]0;pwned\x07 \x1b[2J \x7f \u009b2J \u202eevil\u2066 \u2028 ok é", "plain": "nothing"}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got := JSON(raw)
	for _, bad := range []string{"\x1b", "\x07", "\x7f", "\u009b", "\u202e", "\u2066", "\u2028"} {
		if strings.Contains(string(got), bad) {
			t.Errorf("JSON left %q raw: %s", bad, got)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("JSON broke the encoding: %v: %s", err, got)
	}
	if back["text"] != in["text"] || back["plain"] != in["plain"] {
		t.Errorf("round trip changed the data: %q", back)
	}
	clean := []byte(`{"a":"b é"}`)
	if out := JSON(clean); &out[0] != &clean[0] {
		t.Error("JSON copied a slice with nothing to rewrite")
	}
}

func BenchmarkEscapeClean(b *testing.B) {
	s := strings.Repeat("an ordinary memory about Berlin, café ", 20)
	for b.Loop() {
		_ = Escape(s)
	}
}
