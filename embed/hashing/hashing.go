package hashing

import (
	"context"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/stratamem/strata/embed"
)

// DefaultDimension is used when New is given a dimension below 1.
const DefaultDimension = 256

// Embedder is the hashing embedder. It is immutable and safe for concurrent
// use.
type Embedder struct{ dim int }

var _ embed.Embedder = (*Embedder)(nil)

// New returns a hashing embedder producing vectors of length dim
// (DefaultDimension when dim < 1).
func New(dim int) *Embedder {
	if dim < 1 {
		dim = DefaultDimension
	}
	return &Embedder{dim: dim}
}

// Dimension returns the vector length.
func (e *Embedder) Dimension() int { return e.dim }

// Model returns "hash-DIM", e.g. "hash-256".
func (e *Embedder) Model() string { return "hash-" + strconv.Itoa(e.dim) }

// Embed implements embed.Embedder. The result depends only on the text and
// the dimension: the same input gives bit-identical vectors on every run and
// platform.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := embed.ValidateTexts(texts); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = e.vector(t)
	}
	return out, nil
}

func (e *Embedder) vector(text string) []float32 {
	acc := make([]float64, e.dim)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	})
	if len(words) == 0 {
		// Punctuation-only text still gets a stable, non-zero vector.
		words = []string{strings.TrimSpace(text)}
	}
	for i, w := range words {
		e.add(acc, "w:"+w, 1)
		if i > 0 {
			e.add(acc, "b:"+words[i-1]+" "+w, 0.5)
		}
	}
	var ss float64
	for _, x := range acc {
		ss += x * x
	}
	if ss == 0 {
		// Features cancelled out exactly (rare); fall back to the whole text.
		e.add(acc, "t:"+text, 1)
		ss = 1
	}
	inv := 1 / math.Sqrt(ss)
	v := make([]float32, e.dim)
	for i, x := range acc {
		v[i] = float32(x * inv)
	}
	return v
}

// add hashes a feature to a coordinate and a sign; the sign keeps unrelated
// features from all pushing the same way, so their expected dot product is 0.
func (e *Embedder) add(acc []float64, feature string, weight float64) {
	h := fnv.New64a()
	h.Write([]byte(feature))
	s := h.Sum64()
	idx := int(s % uint64(e.dim))
	if s>>63 == 1 {
		weight = -weight
	}
	acc[idx] += weight
}
