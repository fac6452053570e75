package tiktoken

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stratamem/strata/tokens"
)

// countingTokenizer wraps a real tokenizer and counts how often it is asked,
// so the cache's hit/miss accounting can be checked against reality.
type countingTokenizer struct {
	tokens.Tokenizer
	calls atomic.Int64
}

func (c *countingTokenizer) Count(text string) int {
	c.calls.Add(1)
	return c.Tokenizer.Count(text)
}

func TestCacheHitMiss(t *testing.T) {
	inner := &countingTokenizer{Tokenizer: mustNew(t, Cl100kBase)}
	c := tokens.NewCache(inner, 0)
	if c.Name() != Cl100kBase {
		t.Fatalf("Name() = %q", c.Name())
	}
	if n := c.Count("hello world"); n != 2 {
		t.Fatalf("Count = %d, want 2", n)
	}
	if n := c.Count("hello world"); n != 2 {
		t.Fatalf("cached Count = %d, want 2", n)
	}
	c.Count("tiktoken is great!")
	c.Count("hello world")
	c.Count("") // neither hit nor miss
	hits, misses := c.Stats()
	if hits != 2 || misses != 2 {
		t.Fatalf("Stats = %d hits, %d misses; want 2, 2", hits, misses)
	}
	if got := inner.calls.Load(); got != 3 { // two misses + the empty string
		t.Fatalf("inner tokenizer called %d times, want 3", got)
	}
}

func TestCacheConcurrentAccounting(t *testing.T) {
	inner := &countingTokenizer{Tokenizer: mustNew(t, O200kBase)}
	c := tokens.NewCache(inner, 64)
	want := make([]int, 100)
	for i := range want {
		want[i] = inner.Tokenizer.Count("text number " + strconv.Itoa(i))
	}
	const goroutines, per = 8, 200
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				text := "text number " + strconv.Itoa(i%100)
				if got := c.Count(text); got != want[i%100] {
					t.Errorf("Count(%q) = %d, want %d", text, got, want[i%100])
					return
				}
			}
		}()
	}
	wg.Wait()
	hits, misses := c.Stats()
	if hits+misses != goroutines*per {
		t.Fatalf("hits %d + misses %d != %d calls", hits, misses, goroutines*per)
	}
	if misses != inner.calls.Load() {
		t.Fatalf("misses %d != inner calls %d", misses, inner.calls.Load())
	}
}
