package tokens

import (
	"strconv"
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
