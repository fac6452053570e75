package server

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of the request limits (Options).
const (
	// DefaultMaxBodyBytes bounds a request body when Options.MaxBodyBytes
	// is 0: room for a batch of facts or entities, not for a bulk import.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultRate is the requests per second one key may send when
	// Options.Rate is 0, DefaultBurst how many it may send at once.
	DefaultRate  = 50
	DefaultBurst = 100
	// maxLimiters bounds the limiters kept for unauthenticated callers
	// (keyed by address), so a scan from many addresses cannot grow the
	// map without end.
	maxLimiters = 10000
)

// limiter keeps one token bucket per key name (and, for requests that
// fail authentication, per remote address).
type limiter struct {
	r     rate.Limit
	burst int
	mu    sync.Mutex
	by    map[string]*rate.Limiter
}

func newLimiter(perSecond float64, burst int) *limiter {
	if perSecond < 0 {
		return nil // unlimited
	}
	if perSecond == 0 {
		perSecond = DefaultRate
	}
	if burst <= 0 {
		burst = max(DefaultBurst, int(perSecond))
	}
	return &limiter{r: rate.Limit(perSecond), burst: burst, by: map[string]*rate.Limiter{}}
}

// allow takes one token from who's bucket, or returns the *LimitError to
// answer with.
func (l *limiter) allow(who string) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	b, ok := l.by[who]
	if !ok {
		if len(l.by) >= maxLimiters {
			clear(l.by) // forgetting buckets only forgives; it never blocks anyone
		}
		b = rate.NewLimiter(l.r, l.burst)
		l.by[who] = b
	}
	l.mu.Unlock()
	now := time.Now()
	res := b.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now) // a refused request costs no token
		return &LimitError{Limit: ErrRateLimited, Max: float64(l.r), RetryAfter: d}
	}
	return nil
}
