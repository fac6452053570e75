package uselite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"

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
		}
	}
	if t.len16[unkID] < 1 {
		return nil, fmt.Errorf("%w: vocab.json unknown piece is empty", ErrUnsupportedModel)
	}
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

type arc struct {
	start int
	score float64
	id    int32
}

// Encode returns the piece ids of text (all of them: the model itself keeps
// only the first MaxTokens). Empty text gives no ids.
func (t *Tokenizer) Encode(text string) []int32 {
	syms := []rune(Normalize(text))
	n := len(syms)
	if n == 0 {
		return nil
	}
	// ends[e] lists the pieces ending at symbol e, in increasing start order,
	// which is the order the reference visits them in.
	ends := make([][]arc, n+1)
	for i := 0; i < n; i++ {
		found := false
		node, ok := t.nodes[0].children[syms[i]]
		for j := i; ok; j++ {
			nd := &t.nodes[node]
			if nd.end {
				ends[j+1] = append(ends[j+1], arc{start: i, score: nd.score, id: nd.id})
				found = true
			}
			if j+1 >= n {
				break
			}
			node, ok = nd.children[syms[j+1]]
		}
		if !found {
			ends[i+1] = append(ends[i+1], arc{start: i, score: 0, id: unkID})
		}
	}
	best := make([]float64, n+1)
	words := make([]int32, n+1)
	for e := 0; e <= n; e++ {
		for _, a := range ends[e] {
			score := a.score + best[a.start]
			// The reference treats a best of exactly 0 as "unset".
			if best[e] == 0 || score >= best[e] {
				best[e] = score
				words[e] = a.id
			}
		}
	}
	var rev []int32
	for it := n; it > 0; {
		id := words[it]
		rev = append(rev, id)
		it -= t.len16[id]
	}
	out := make([]int32, 0, len(rev))
	prevUnk := false
	for _, id := range rev {
		if !(prevUnk && id == unkID) {
			out = append(out, id)
		}
		prevUnk = id == unkID
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
