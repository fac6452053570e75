package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Embedder turns texts into vectors. Implementations are safe for concurrent
// use by multiple goroutines.
type Embedder interface {
	// Embed returns one vector per text, in input order, each of length
	// Dimension(). An empty batch, or any empty or whitespace-only text, is an
	// error wrapping ErrEmptyInput.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dimension is the length of the vectors Embed returns. Remote embedders
	// whose dimension is not configured report 0 until the first successful
	// call has revealed it.
	Dimension() int
	// Model is a stable identifier of the vector space, such as
	// "use-lite-en@0.2.0", "hash-256" or "openai:text-embedding-3-small".
	// Vectors from embedders with different Model values must not be mixed
	// in one collection.
	Model() string
}

var (
	// ErrEmptyInput is wrapped by errors for an empty batch or an empty
	// (or whitespace-only) text.
	ErrEmptyInput = errors.New("embed: empty input")
	// ErrDimensionMismatch is wrapped when a backend returns vectors whose
	// length differs from the configured or previously observed dimension.
	ErrDimensionMismatch = errors.New("embed: dimension mismatch")
	// ErrBadResponse is wrapped when a remote backend answers with a body
	// that cannot be decoded or does not match the request (wrong count,
	// duplicate or out-of-range indices).
	ErrBadResponse = errors.New("embed: bad response")
)

// InputError reports which text of a batch was rejected. It wraps
// ErrEmptyInput.
type InputError struct {
	Index int // position in the batch; -1 when the batch itself is empty
}

func (e *InputError) Error() string {
	if e.Index < 0 {
		return "embed: empty input: no texts in batch"
	}
	return fmt.Sprintf("embed: empty input: text %d is empty or whitespace", e.Index)
}

// Unwrap makes errors.Is(err, ErrEmptyInput) true.
func (e *InputError) Unwrap() error { return ErrEmptyInput }

// ValidateTexts returns an *InputError (wrapping ErrEmptyInput) when texts is
// empty or holds an empty or whitespace-only string. Implementations call it
// before doing any work.
func ValidateTexts(texts []string) error {
	if len(texts) == 0 {
		return &InputError{Index: -1}
	}
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			return &InputError{Index: i}
		}
	}
	return nil
}

// Normalize scales v in place to unit L2 norm and returns it. A zero vector
// is left unchanged.
func Normalize(v []float32) []float32 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		return v
	}
	inv := 1 / math.Sqrt(ss)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
	return v
}

// Cosine returns the cosine similarity of a and b, or 0 when either is a zero
// vector or their lengths differ.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
