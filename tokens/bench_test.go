package tokens

import (
	"strings"
	"testing"
)

// paragraph is about 1 KB of ordinary English prose.
var paragraph = strings.Repeat("Context windows are finite, so an agent runtime must decide which "+
	"memories, instructions and tool results earn their place in each request. ", 8)[:1024]

func benchCount(b *testing.B, tk Tokenizer) {
	tk.Count(paragraph) // build the encoding outside the timer
	b.SetBytes(int64(len(paragraph)))
	b.ReportAllocs()
	for b.Loop() {
		tk.Count(paragraph)
	}
}

func BenchmarkCountEstimate(b *testing.B) { benchCount(b, Estimate()) }
func BenchmarkCacheHit(b *testing.B)      { benchCount(b, NewCache(Estimate(), 0)) }

func BenchmarkCacheHitParallel(b *testing.B) {
	c := NewCache(Estimate(), 0)
	c.Count(paragraph)
	b.SetBytes(int64(len(paragraph)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Count(paragraph)
		}
	})
}
