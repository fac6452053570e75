package hashing

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/stratamem/strata/embed"
)

func TestDeterministicAndNormalised(t *testing.T) {
	e := New(64)
	ctx := context.Background()
	texts := []string{"The cat sat on the mat.", "!!!", "naïve café", "a b"}
	a, err := e.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(64).Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		if len(a[i]) != 64 {
			t.Fatalf("len = %d", len(a[i]))
		}
		if !slices.Equal(a[i], b[i]) {
			t.Errorf("text %d: vectors differ between instances", i)
		}
		var ss float64
		for _, x := range a[i] {
			ss += float64(x) * float64(x)
		}
		if math.Abs(ss-1) > 1e-6 {
			t.Errorf("text %d: squared norm %f", i, ss)
		}
	}
	// Pinned values: a change to the hashing scheme changes every stored
	// test vector, so it must be deliberate.
	nonzero := map[int]float32{}
	for i, x := range a[0] {
		if x != 0 {
			nonzero[i] = x
		}
	}
	if len(nonzero) != len(pinnedCat) {
		t.Fatalf("%q has non-zero components %v, want %v", texts[0], nonzero, pinnedCat)
	}
	for i, want := range pinnedCat {
		if nonzero[i] != want {
			t.Errorf("%q component %d = %v, want %v", texts[0], i, nonzero[i], want)
		}
	}
}

// pinnedCat is New(64)'s vector of "The cat sat on the mat." ("the" twice
// gives the -0.6576 at 23).
var pinnedCat = map[int]float32{
	6: -0.16439898, 8: 0.32879797, 13: 0.32879797, 15: 0.16439898, 23: -0.65759593,
	24: -0.32879797, 32: 0.16439898, 35: 0.16439898, 40: 0.16439898, 62: 0.32879797,
}

func TestCaseAndPunctuationInsensitive(t *testing.T) {
	v, err := New(0).Embed(context.Background(), []string{"Hello, World!", "hello world", "goodbye moon"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v[0], v[1]) {
		t.Error("case/punctuation changed the vector")
	}
	if c := embed.Cosine(v[0], v[2]); c > 0.5 {
		t.Errorf("unrelated words have cosine %f", c)
	}
}

func TestNotSemantic(t *testing.T) {
	// Documented limitation: paraphrases without shared words look unrelated.
	v, err := New(256).Embed(context.Background(), []string{"a large dog", "a big hound", "a large cat"})
	if err != nil {
		t.Fatal(err)
	}
	if embed.Cosine(v[0], v[1]) >= embed.Cosine(v[0], v[2]) {
		t.Error("hashing embedder unexpectedly ranked the paraphrase above the word overlap")
	}
}

func TestIdentityAndErrors(t *testing.T) {
	e := New(0)
	if e.Dimension() != DefaultDimension || e.Model() != "hash-256" {
		t.Errorf("Dimension=%d Model=%q", e.Dimension(), e.Model())
	}
	if New(-3).Dimension() != DefaultDimension || New(7).Model() != "hash-7" {
		t.Error("dimension defaults")
	}
	ctx := context.Background()
	for _, in := range [][]string{nil, {""}, {"x", " "}} {
		if _, err := e.Embed(ctx, in); !errors.Is(err, embed.ErrEmptyInput) {
			t.Errorf("Embed(%q) = %v", in, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.Embed(cctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
