package tokens

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// DefaultCacheEntries is the capacity NewCache uses when given 0 or less.
const DefaultCacheEntries = 16384

// Cache memoizes the counts of another Tokenizer. It is safe for concurrent
// use and is itself a Tokenizer.
//
// Entries are keyed by a 128-bit hash of the text (two maphash sums with
// per-cache random seeds), so the cache holds 24 bytes per entry however
// long the texts are; a wrong count would need a 128-bit collision.
//
// Eviction is generational, a cheap approximation of LRU: new counts go to
// a young generation; when it holds maxEntries/2 entries it becomes the old
// generation and the previous old one is dropped. A hit in the old
// generation is promoted to the young one, so texts in steady use survive
// and one-off texts age out after two rotations. At most maxEntries counts
// are held.
type Cache struct {
	tok   Tokenizer
	half  int
	seed1 maphash.Seed
	seed2 maphash.Seed

	mu    sync.RWMutex
	young map[cacheKey]int32
	old   map[cacheKey]int32

	hits   atomic.Int64
	misses atomic.Int64
}

type cacheKey struct{ a, b uint64 }

// NewCache wraps t with a cache of at most maxEntries counts (two
// generations of maxEntries/2; a maxEntries of 1 holds up to 2);
// maxEntries <= 0 selects DefaultCacheEntries. Wrapping a *Cache is allowed
// but pointless.
func NewCache(t Tokenizer, maxEntries int) *Cache {
	if maxEntries <= 0 {
		maxEntries = DefaultCacheEntries
	}
	half := maxEntries / 2
	if half < 1 {
		half = 1
	}
	return &Cache{
		tok:   t,
		half:  half,
		seed1: maphash.MakeSeed(),
		seed2: maphash.MakeSeed(),
		young: make(map[cacheKey]int32),
	}
}

func (c *Cache) key(text string) cacheKey {
	return cacheKey{maphash.String(c.seed1, text), maphash.String(c.seed2, text)}
}

// Count returns the wrapped tokenizer's count for text, from the cache when
// the text was counted before. The empty string is answered without a
// lookup and counts as neither hit nor miss.
func (c *Cache) Count(text string) int {
	if text == "" {
		return c.tok.Count(text)
	}
	k := c.key(text)

	c.mu.RLock()
	n, ok := c.young[k]
	c.mu.RUnlock()
	if ok {
		c.hits.Add(1)
		return int(n)
	}

	c.mu.Lock()
	if n, ok := c.young[k]; ok {
		c.mu.Unlock()
		c.hits.Add(1)
		return int(n)
	}
	if n, ok := c.old[k]; ok {
		delete(c.old, k)
		c.insertLocked(k, n)
		c.mu.Unlock()
		c.hits.Add(1)
		return int(n)
	}
	c.mu.Unlock()

	// Count outside the lock: BPE on a long text takes milliseconds and
	// must not stall other goroutines' hits. Two goroutines missing on the
	// same text both count it; the result is the same either way.
	c.misses.Add(1)
	cnt := c.tok.Count(text)
	c.mu.Lock()
	c.insertLocked(k, int32(min(cnt, 1<<31-1)))
	c.mu.Unlock()
	return cnt
}

func (c *Cache) insertLocked(k cacheKey, n int32) {
	if len(c.young) >= c.half {
		c.old = c.young
		c.young = make(map[cacheKey]int32, c.half)
	}
	c.young[k] = n
}

// Name returns the wrapped tokenizer's name: a cache does not change counts.
func (c *Cache) Name() string { return c.tok.Name() }

// Stats returns how many Count calls were answered from the cache (hits)
// and how many went to the wrapped tokenizer (misses).
func (c *Cache) Stats() (hits, misses int64) {
	return c.hits.Load(), c.misses.Load()
}

// Len returns the number of counts held.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.young) + len(c.old)
}
