package uselite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// separator is SentencePiece's word-boundary mark "▁" (U+2581).
const separator = '\u2581'

// reservedPieces are the first vocabulary entries (unknown, <s>, </s> and
// three spare ids) that never match input text.
const reservedPieces = 6

// unkID is the id emitted for characters no piece covers.
const unkID = 0

// Tokenizer is the SentencePiece unigram tokenizer of Universal Sentence
// Encoder Lite. It reproduces the reference TF.js tokenizer exactly, quirks
// included: NFKC normalisation, "▁" before the text and in place of every
// U+0020 space (other whitespace is left alone), a trie of the vocabulary,
// a Viterbi pass over the piece scores in which a null score counts as 0 and
// ties go to the later-starting piece, characters outside the vocabulary
// becoming id 0, and runs of id 0 merged into one.
//
// A Tokenizer is immutable and safe for concurrent use.
type Tokenizer struct {
	pieces []string
	len16  []int // UTF-16 length of each piece: what the reference steps back by
	nodes  []trieNode
	// maxRunes is the longest piece in symbols: how far a trie walk reads.
	maxRunes int
	// maxStep is the longest step of the reference's walk back: the largest
	// len16 of a piece the pass can emit (the unknown piece included).
	maxStep int
}

type trieNode struct {
	children map[rune]int32
	end      bool
	score    float64
	id       int32
}

// NewTokenizer builds a tokenizer from the vocab.json of the model package:
// a JSON array of [piece, score] pairs, score possibly null.
func NewTokenizer(vocabJSON []byte) (*Tokenizer, error) {
	var raw [][]json.RawMessage
	if err := json.Unmarshal(vocabJSON, &raw); err != nil {
		return nil, fmt.Errorf("%w: vocab.json: %w", ErrUnsupportedModel, err)
	}
	if len(raw) <= reservedPieces {
		return nil, fmt.Errorf("%w: vocab.json has only %d entries", ErrUnsupportedModel, len(raw))
	}
	t := &Tokenizer{
		pieces: make([]string, len(raw)),
		len16:  make([]int, len(raw)),
		nodes:  []trieNode{{}},
	}
	for i, e := range raw {
		if len(e) != 2 {
			return nil, fmt.Errorf("%w: vocab.json entry %d has %d fields, want 2", ErrUnsupportedModel, i, len(e))
		}
		var piece string
		if err := json.Unmarshal(e[0], &piece); err != nil {
			return nil, fmt.Errorf("%w: vocab.json entry %d: %w", ErrUnsupportedModel, i, err)
		}
		var score float64 // null stays 0, as null + x == x in JavaScript
		if !bytes.Equal(bytes.TrimSpace(e[1]), []byte("null")) {
			if err := json.Unmarshal(e[1], &score); err != nil {
				return nil, fmt.Errorf("%w: vocab.json entry %d score: %w", ErrUnsupportedModel, i, err)
			}
		}
		t.pieces[i] = piece
		t.len16[i] = len(utf16.Encode([]rune(piece)))
		if i >= reservedPieces && piece != "" {
			t.insert(piece, score, int32(i))
			t.maxRunes = max(t.maxRunes, utf8.RuneCountInString(piece))
			t.maxStep = max(t.maxStep, t.len16[i])
		}
	}
	if t.len16[unkID] < 1 {
		return nil, fmt.Errorf("%w: vocab.json unknown piece is empty", ErrUnsupportedModel)
	}
	t.maxRunes = max(t.maxRunes, 1)
	t.maxStep = max(t.maxStep, t.len16[unkID])
	return t, nil
}

// insert adds a piece; a later duplicate replaces the score and id of an
// earlier one, as in the reference.
func (t *Tokenizer) insert(piece string, score float64, id int32) {
	n := int32(0)
	for _, r := range piece {
		next, ok := t.nodes[n].children[r]
		if !ok {
			if t.nodes[n].children == nil {
				t.nodes[n].children = make(map[rune]int32, 1)
			}
			next = int32(len(t.nodes))
			t.nodes = append(t.nodes, trieNode{})
			t.nodes[n].children[r] = next
		}
		n = next
	}
	t.nodes[n].end = true
	t.nodes[n].score = score
	t.nodes[n].id = id
}

// VocabSize is the number of pieces.
func (t *Tokenizer) VocabSize() int { return len(t.pieces) }

// Piece returns the text of piece id, or "" when id is out of range.
func (t *Tokenizer) Piece(id int) string {
	if id < 0 || id >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

// Normalize applies the tokenizer's input normalisation: NFKC, then "▁" in
// front and in place of every U+0020 space. Empty text stays empty.
func Normalize(text string) string {
	s := norm.NFKC.String(text)
	if s == "" {
		return s
	}
	return string(separator) + strings.ReplaceAll(s, " ", string(separator))
}

// Encode returns the piece ids of text (all of them: the model itself keeps
// only the first MaxTokens; EncodePrefix computes just those). Empty text
// gives no ids. Memory is linear in the length of text: about 22 bytes per
// character, ids included (23 MB for 1 MiB of English, BenchmarkEncodeLong;
// the first version, building every candidate piece up front, took 150).
func (t *Tokenizer) Encode(text string) []int32 { return t.encode(text, -1) }

// EncodePrefix returns the first n piece ids of text: exactly
// Encode(text)[:n], or all of Encode(text) when it has fewer, without
// tokenizing the rest of a long text.
//
// The Viterbi pass runs forward over the normalised text, one character at
// a time, and the reference picks the segmentation by walking back from the
// end of the text, so in general the first pieces depend on the last
// characters. But every walk back passes through one of the last few
// positions reached (a piece spans at most a few characters), and once the
// walks back from all of those meet at one position, every longer text,
// whatever follows, is segmented through that position: the pieces before
// it are final. EncodePrefix stops as soon as the final pieces number n.
// On ordinary text that happens within a few characters of the n-th piece
// (with the model's vocabulary a space is always such a meeting point: no
// piece has "▁" after its first character), so EncodePrefix(text, 128)
// reads a few hundred characters of a text of any length (measured: 42 µs
// and 33 KB for a 4 MiB text, BenchmarkEncodePrefixLong). Text where the
// walks never meet, such as one letter repeated with no space (whether the
// first piece is "aa" or "a" can depend on the parity of the run), is
// tokenized to its end, in the linear memory of Encode. Both are checked
// against a direct port of the reference (TestEncodePrefixMatchesReference,
// FuzzEncodePrefix) and the TF.js tokens of the golden sentences.
func (t *Tokenizer) EncodePrefix(text string, n int) []int32 {
	if n <= 0 {
		return nil
	}
	return t.encode(text, n)
}

// checkEvery is how many characters the forward pass advances between
// looks for a meeting point. After a look that finds none, the next one
// waits until the pass has gone as far again past the last meeting point,
// so text without meeting points costs linear time, not quadratic.
const checkEvery = 32

// encode tokenizes text; limit < 0 means all ids, else at most limit ids,
// stopping early as described at EncodePrefix.
//
// It is the reference algorithm arranged to run forward: the reference
// collects, for each end position, the pieces ending there in increasing
// start order, then scores end positions left to right. Here each start
// position relaxes the pieces starting at it, in increasing start order, so
// every end position sees the same candidates in the same order, with the
// same float64 additions and comparisons, and best[i] is final when start i
// is relaxed (every piece ending at i starts before i). Normalisation is
// streamed too (norm.Iter yields NFKC segment by segment; concatenated they
// are exactly norm.NFKC.String of the text).
func (t *Tokenizer) encode(text string, limit int) []int32 {
	var it norm.Iter
	it.InitString(norm.NFKC, text)
	var syms []rune // normalised symbols read so far
	eof := false    // it is exhausted
	best := []float64{0}
	words := []int32{0}
	if limit < 0 {
		// All of the text is read: size the arrays once (NFKC rarely
		// changes the length much; append copes when it does).
		n := utf8.RuneCountInString(text) + 2
		syms = make([]rune, 0, n)
		best = append(make([]float64, 0, n), 0)
		words = append(make([]int32, 0, n), 0)
	}
	// pull appends the next normalised segment to syms: "▁" before the
	// first symbol and in place of each U+0020, invalid UTF-8 bytes as
	// U+FFFD each (as []rune(string) converts them).
	pull := func() {
		for !it.Done() {
			seg := it.Next()
			if len(seg) == 0 {
				continue
			}
			if len(syms) == 0 {
				syms = append(syms, separator)
			}
			for len(seg) > 0 {
				r, size := utf8.DecodeRune(seg)
				if r == ' ' {
					r = separator
				}
				syms = append(syms, r)
				seg = seg[size:]
			}
			return
		}
		eof = true
	}
	var out []int32 // final ids, unknown runs merged
	fixed := 0      // position every walk back from further on passes through
	nextCheck := checkEvery
	for i := 0; ; i++ {
		// The trie walk from i reads at most maxRunes symbols.
		for !eof && len(syms) < i+t.maxRunes {
			pull()
		}
		if i >= len(syms) {
			break
		}
		for len(best) <= len(syms) {
			best = append(best, 0)
			words = append(words, 0)
		}
		t.relax(syms, i, best, words)
		if limit >= 0 && i+1 >= nextCheck {
			// best and words are final up to i+1.
			if m := t.meet(words, i+1, fixed); m > fixed {
				out = t.appendPath(out, words, m, fixed)
				fixed = m
				if len(out) >= limit {
					return out[:limit]
				}
			}
			nextCheck = i + 1 + max(checkEvery, i+1-fixed)
		}
	}
	out = t.appendPath(out, words, len(syms), fixed)
	if limit >= 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// relax scores the pieces starting at symbol i (the unknown piece if none
// does) into best and words.
func (t *Tokenizer) relax(syms []rune, i int, best []float64, words []int32) {
	update := func(e int, score float64, id int32) {
		// The reference treats a best of exactly 0 as "unset"; ties go to
		// the later-starting piece (>=).
		if best[e] == 0 || score >= best[e] {
			best[e] = score
			words[e] = id
		}
	}
	found := false
	node, ok := t.nodes[0].children[syms[i]]
	for j := i; ok; j++ {
		nd := &t.nodes[node]
		if nd.end {
			update(j+1, nd.score+best[i], nd.id)
			found = true
		}
		if j+1 >= len(syms) {
			break
		}
		node, ok = nd.children[syms[j+1]]
	}
	if !found {
		update(i+1, 0+best[i], unkID)
	}
}

// back is one step of the reference's walk back from position p: it steps
// by the UTF-16 length of the piece ending there (a quirk kept for
// fidelity), and stops at or below 0.
func (t *Tokenizer) back(words []int32, p int) int {
	return max(p-t.len16[words[p]], 0)
}

// meet returns the largest position above fixed that every walk back from
// the positions (end-maxStep, end] passes through, or fixed if there is none
// (yet). The reference's walk from the end of any text that continues past
// end lands first in that window, one step of at most maxStep being all it
// can skip, and words there are final: so a meeting point of all the walks
// from the window is on the final walk, whatever the rest of the text is.
// All walks from the window pass through fixed (a meeting point found
// earlier), so the search stops there.
func (t *Tokenizer) meet(words []int32, end, fixed int) int {
	var buf [32]int
	cur := buf[:0]
	for p := max(end-t.maxStep+1, fixed); p <= end; p++ {
		cur = append(cur, p)
	}
	for {
		hi, lo := cur[0], cur[0]
		for _, p := range cur[1:] {
			hi, lo = max(hi, p), min(lo, p)
		}
		if hi == lo {
			return max(hi, fixed)
		}
		if hi <= fixed {
			return fixed
		}
		// Step the walks furthest along; walks that meet stay together.
		for k, p := range cur {
			if p == hi {
				cur[k] = t.back(words, p)
			}
		}
	}
}

// appendPath appends to out the ids of the walk back from position from to
// position to (both on the final walk), in text order, merging a run of
// unknown pieces into one id as the reference does, across calls too.
func (t *Tokenizer) appendPath(out, words []int32, from, to int) []int32 {
	start := len(out)
	for p := from; p > to; p = t.back(words, p) {
		out = append(out, words[p])
	}
	slices.Reverse(out[start:])
	// Merge runs of unknown pieces, including one continuing the run that
	// ended the previous call's ids.
	w := start
	for r := start; r < len(out); r++ {
		if out[r] == unkID && w > 0 && out[w-1] == unkID {
			continue
		}
		out[w] = out[r]
		w++
	}
	return out[:w]
}
