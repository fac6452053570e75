package tiktoken

import (
	"strings"
	"testing"

	"github.com/stratamem/strata/tokens"
)

// paragraph is about 1 KB of ordinary English prose.
var paragraph = strings.Repeat("Context windows are finite, so an agent runtime must decide which "+
	"memories, instructions and tool results earn their place in each request. ", 8)[:1024]

func benchCount(b *testing.B, tk tokens.Tokenizer) {
	tk.Count(paragraph) // build the encoding outside the timer
	b.SetBytes(int64(len(paragraph)))
	b.ReportAllocs()
	for b.Loop() {
		tk.Count(paragraph)
	}
}

func BenchmarkCountO200k(b *testing.B)  { benchCount(b, mustNew(b, O200kBase)) }
func BenchmarkCountCl100k(b *testing.B) { benchCount(b, mustNew(b, Cl100kBase)) }
func BenchmarkCacheHit(b *testing.B)    { benchCount(b, tokens.NewCache(mustNew(b, O200kBase), 0)) }

func BenchmarkCacheHitParallel(b *testing.B) {
	c := tokens.NewCache(mustNew(b, O200kBase), 0)
	c.Count(paragraph)
	b.SetBytes(int64(len(paragraph)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Count(paragraph)
		}
	})
}
