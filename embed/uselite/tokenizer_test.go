package uselite

import (
	"errors"
	"slices"
	"testing"
)

// A tiny vocabulary exercising the reference tokenizer's rules. Ids 0-5 are
// reserved; the rest are pieces with scores. The expected ids below were
// checked against the JavaScript tokenizer of @energetic-ai/embeddings 0.2.0
// given this vocabulary.
const testVocab = `[
 ["\ufffd", 0], ["<s>", 0], ["</s>", 0], ["x1", 0], ["x2", 0], ["x3", 0],
 ["▁", -5],
 ["▁a", -2],
 ["▁ab", -3],
 ["b", -2],
 ["c", -2],
 ["▁abc", -9],
 ["bc", -1.5],
 [":", null],
 ["fi", -1],
 ["▁fi", -0.5],
 ["ab", -100],
 ["d", -4],
 ["dd", -8]
]`

func newTestTokenizer(t *testing.T) *Tokenizer {
	t.Helper()
	tok, err := NewTokenizer([]byte(testVocab))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestTokenizerViterbi(t *testing.T) {
	tok := newTestTokenizer(t)
	for _, tc := range []struct {
		in   string
		want []int32
	}{
		// "▁a"+"bc" (-2-1.5) beats "▁ab"+"c" (-5) and "▁abc" (-9).
		{"abc", []int32{7, 12}},
		// Each U+0020 becomes "▁"; a leading one is added.
		{"a a", []int32{7, 7}},
		{" a", []int32{6, 7}},
		// A null score counts as 0, making ":" free.
		{"a:", []int32{7, 13}},
		// NFKC turns full-width letters into ASCII: "▁ab" (-3) beats
		// "▁a"+"b" (-4).
		{"ａｂ", []int32{8}},
		// "▁fi" (-0.5) covers "ﬁ" after NFKC, but nothing ends after "▁f", so
		// best there stays 0, which the reference cannot tell from unset:
		// the unknown arc from it scores 0 + 0 and wins.
		{"ﬁ", []int32{6, 0}},
		// Unknown characters become id 0, and a run of them collapses to one.
		{"a€€€b", []int32{7, 0, 9}},
		{"€", []int32{6, 0}},
		// Characters outside the BMP are one symbol, like for..of in JS.
		{"a🍕🍕", []int32{7, 0}},
		// Equal totals: "d"+"d" (-8) ties "dd" (-8); the reference keeps the
		// later-starting piece, which wins with >=.
		{"dd", []int32{6, 17, 17}},
		// Tabs and newlines are not spaces: they stay, as unknown pieces.
		{"a\tb", []int32{7, 0, 9}},
		{"", nil},
	} {
		if got := tok.Encode(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestTokenizerPieces(t *testing.T) {
	tok := newTestTokenizer(t)
	if tok.VocabSize() != 19 {
		t.Fatalf("VocabSize = %d", tok.VocabSize())
	}
	if got := tok.Piece(8); got != "▁ab" {
		t.Errorf("Piece(8) = %q", got)
	}
	if got := tok.Piece(-1) + tok.Piece(19); got != "" {
		t.Errorf("out-of-range pieces = %q", got)
	}
	if got := Normalize("ＡＢ c"); got != "▁AB▁c" {
		t.Errorf("Normalize = %q", got)
	}
}

func TestTokenizerBadVocab(t *testing.T) {
	for _, v := range []string{
		`not json`,
		`[["a", 0]]`,
		`[["\ufffd",0],["<s>",0],["</s>",0],["x",0],["y",0],["z",0],["a"]]`,
		`[["\ufffd",0],["<s>",0],["</s>",0],["x",0],["y",0],["z",0],["a","high"]]`,
	} {
		if _, err := NewTokenizer([]byte(v)); !errors.Is(err, ErrUnsupportedModel) {
			t.Errorf("NewTokenizer(%s) error = %v, want ErrUnsupportedModel", v, err)
		}
	}
}

func TestTokenizerRealVocab(t *testing.T) {
	m := testModel(t)
	tok := m.Tokenizer()
	if tok.VocabSize() != 8000 {
		t.Errorf("VocabSize = %d", tok.VocabSize())
	}
	// Pieces reassemble to the normalised text.
	for _, s := range []string{"Hello world.", "supercalifragilistic", "3.14159"} {
		var got string
		for _, id := range tok.Encode(s) {
			got += tok.Piece(int(id))
		}
		if got != Normalize(s) {
			t.Errorf("pieces of %q join to %q, want %q", s, got, Normalize(s))
		}
	}
}

// FuzzEncode checks that any input, valid UTF-8 or not, tokenizes without
// panicking into ids that exist and that the tokens cover the input.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"abc", "", " ", "\xff\xfe", "ﬁ:dd", "a\u200bb", "🍕 ab  c"} {
		f.Add(s)
	}
	tok, err := NewTokenizer([]byte(testVocab))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		if (len(ids) == 0) != (Normalize(s) == "") {
			t.Fatalf("Encode(%q) = %v", s, ids)
		}
		for _, id := range ids {
			if id < 0 || int(id) >= tok.VocabSize() || (id > 0 && id < reservedPieces) {
				t.Fatalf("Encode(%q) has id %d", s, id)
			}
		}
	})
}
