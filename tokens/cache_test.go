package tokens

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// countingTokenizer wraps a real tokenizer and counts how often it is asked,
// so the cache's hit/miss accounting can be checked against reality.
type countingTokenizer struct {
	Tokenizer
	calls atomic.Int64
}

func (c *countingTokenizer) Count(text string) int {
	c.calls.Add(1)
	return c.Tokenizer.Count(text)
}

func TestCacheHitMiss(t *testing.T) {
	inner := &countingTokenizer{Tokenizer: mustNew(t, Cl100kBase)}
	c := NewCache(inner, 0)
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

func TestCacheBoundedAndPromotes(t *testing.T) {
	inner := &countingTokenizer{Tokenizer: Estimate()}
	c := NewCache(inner, 10)
	hot := "the hot text stays cached"
	c.Count(hot)
	for i := 0; i < 1000; i++ {
		c.Count("cold " + strconv.Itoa(i))
		c.Count(hot) // keeps being promoted, never evicted
		if l := c.Len(); l > 10 {
			t.Fatalf("cache holds %d entries, bound is 10", l)
		}
	}
	hits, misses := c.Stats()
	if misses != 1001 || hits != 1000 {
		t.Fatalf("Stats = %d hits, %d misses; want 1000, 1001", hits, misses)
	}
	// A cold text from long ago is gone: counting it again is a miss.
	c.Count("cold 0")
	if _, m := c.Stats(); m != 1002 {
		t.Fatalf("evicted entry still cached (misses %d)", m)
	}
}

func TestCacheTinyBound(t *testing.T) {
	c := NewCache(Estimate(), 1)
	for i := 0; i < 100; i++ {
		if got, want := c.Count(strconv.Itoa(i*1000)), Estimate().Count(strconv.Itoa(i*1000)); got != want {
			t.Fatalf("Count = %d, want %d", got, want)
		}
	}
	if c.Len() > 2 {
		t.Fatalf("Len = %d", c.Len())
	}
}

func TestCacheConcurrentAccounting(t *testing.T) {
	inner := &countingTokenizer{Tokenizer: mustNew(t, O200kBase)}
	c := NewCache(inner, 64)
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
