package pgvector

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratamem/strata/vectorstore/driver"
)

// Every code bounds the weights it encodes, tightly (the code below does
// not), over the whole float32 range of positive weights.
func TestSketchCode(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ws := []float64{1, 0.5, 0.25, 0.75, 1.75, 2, 3, 1e-30, 1e-6, sketchValue(1), sketchValue(254), sketchValue(254) * 1.0001, 1e6, 1e30, math.MaxFloat32, math.SmallestNonzeroFloat32}
	for i := 0; i < 10000; i++ {
		ws = append(ws, float64(float32(math.Exp(r.NormFloat64()*8))))
	}
	for _, w := range ws {
		c := sketchCode(w)
		switch {
		case c == 0:
			t.Fatalf("code 0 for weight %g", w)
		case c == 255:
			if w <= sketchValue(254) {
				t.Fatalf("weight %g within range got code 255", w)
			}
		default:
			if sketchValue(int(c)) < w {
				t.Fatalf("code %d (%g) below weight %g", c, sketchValue(int(c)), w)
			}
			if c > 1 && sketchValue(int(c)-1) >= w {
				t.Fatalf("code %d for weight %g is not the tightest", c, w)
			}
		}
	}
	s := termSketch(driver.Terms{"a": 1, "b": 0.25, "c": 3})
	if len(s) != sketchBytes {
		t.Fatalf("sketch of %d bytes", len(s))
	}
	for term, w := range map[string]float64{"a": 1, "b": 0.25, "c": 3} {
		if c := s[sketchBucket(term)]; c == 0 || c != 255 && sketchValue(int(c)) < w {
			t.Fatalf("term %q (%g): code %d", term, w, c)
		}
	}
	// Every term of a document passes its Bloom filter; most others do not.
	r2 := rand.New(rand.NewPCG(3, 4))
	doc := driver.Terms{}
	for len(doc) < 28 {
		doc[fmt.Sprintf("t%d", r2.IntN(1000000))] = 1
	}
	ds := termSketch(doc)
	for term := range doc {
		if !sketchHas(ds, term) {
			t.Fatalf("term %q of the document fails its Bloom filter", term)
		}
	}
	fp := 0
	for i := 0; i < 10000; i++ {
		if term := fmt.Sprintf("other%d", i); sketchHas(ds, term) {
			fp++
		}
	}
	if fp > 900 { // blocked by byte: about 6% at 28 terms
		t.Fatalf("Bloom filter admits %d of 10000 absent terms", fp)
	}
	if termSketch(nil) != nil {
		t.Fatal("sketch of no document")
	}
}
