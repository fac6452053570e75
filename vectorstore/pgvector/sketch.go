package pgvector

import (
	"math"

	"github.com/stratamem/strata/vectorstore/driver"
)

// A document's sketch bounds, for any term, the weight the document gives
// it, without looking the document up. It is sketchBytes bytes:
//
//   - bytes 0-31, weights: byte b holds the code of the largest weight
//     among the document's terms whose bucket is b. Code 0 means no term
//     of the document falls in the bucket, codes 1-254 an upper bound
//     2^((code-128)/8) of the weight (9% steps from 2^-15.9 to 2^15.75),
//     255 a weight above that range (no bound);
//   - bytes 32-63, a Bloom filter of the document's terms, blocked by
//     byte: a term sets up to three bits (its mask) of one byte; a term
//     with a bit of its mask clear is not in the document (one whose mask
//     is set may be: about 6% false positives at 28 terms). One byte per
//     term keeps the test to one get_byte in SQL.
//
// A term's bucket, byte and mask come from its FNV-1a 64-bit hash: the
// bucket is its low byte modulo 32, the Bloom byte the next byte modulo
// 32, the mask's bits three 3-bit fields after it. Stored with the
// record (term_sketch) and in every posting, the sketch lets a ranking
// bound what the other query terms can add to a candidate from one of its
// postings alone (see SearchTerms).
//
// The layout is part of the schema: changing it needs a migration that
// rewrites every sketch.
const (
	sketchBuckets = 32
	sketchBytes   = sketchBuckets + 32
)

func termHash(term string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(term); i++ {
		h ^= uint64(term[i])
		h *= 1099511628211
	}
	return h
}

// sketchBucket is the weight bucket of a term.
func sketchBucket(term string) int { return int(termHash(term)&0xff) % sketchBuckets }

// bloomByte is the index of a term's Bloom byte (after the weights) and
// its mask there.
func bloomByte(term string) (int, byte) {
	h := termHash(term)
	mask := byte(1)<<(h>>16&7) | byte(1)<<(h>>19&7) | byte(1)<<(h>>22&7)
	return sketchBuckets + int(h>>8&0xff)%32, mask
}

// sketchValue is the weight bound of a code in 1..254.
func sketchValue(code int) float64 { return math.Pow(2, float64(code-128)/8) }

// sketchCode is the smallest code whose value bounds w (w > 0), 255 when
// none does.
func sketchCode(w float64) byte {
	if w <= sketchValue(1) {
		return 1
	}
	c := int(math.Ceil(8*math.Log2(w))) + 128
	c = max(c, 1)
	for c < 255 && sketchValue(c) < w {
		c++
	}
	for c > 1 && c < 255 && sketchValue(c-1) >= w {
		c--
	}
	if c >= 255 {
		return 255
	}
	return byte(c)
}

// termSketch is the sketch of a document; nil for none.
func termSketch(t driver.Terms) []byte {
	if len(t) == 0 {
		return nil
	}
	s := make([]byte, sketchBytes)
	for term, w := range t {
		j := sketchBucket(term)
		if c := sketchCode(float64(w)); c > s[j] {
			s[j] = c
		}
		b, mask := bloomByte(term)
		s[b] |= mask
	}
	return s
}

// sketchHas reports whether the Bloom filter of sketch s admits term.
func sketchHas(s []byte, term string) bool {
	b, mask := bloomByte(term)
	return s[b]&mask == mask
}
