package embed

import (
	"errors"
	"math/rand/v2"
	"time"
)

// ErrInvalidConfig is wrapped by constructors given unusable options.
var ErrInvalidConfig = errors.New("embed: invalid configuration")

// RetryPolicy says how the remote embedders retry a request that failed with
// a transport error, a per-attempt timeout, or a retryable HTTP status (see
// RetryableStatus). The zero value retries 3 times with exponential backoff
// from 500ms, capped at 20s, with jitter, and honours Retry-After up to 60s.
type RetryPolicy struct {
	// MaxRetries is the number of retries after the first attempt.
	// 0 means 3; a negative value disables retries.
	MaxRetries int
	// BaseDelay is the wait before the first retry; it doubles per retry.
	// 0 means 500ms.
	BaseDelay time.Duration
	// MaxDelay caps the computed backoff. 0 means 20s.
	MaxDelay time.Duration
	// NoJitter makes the schedule deterministic: BaseDelay, 2*BaseDelay, ...
	// Without it each wait is drawn uniformly from [d/2, d] so that many
	// clients rate-limited together do not retry in lockstep.
	NoJitter bool
	// Schedule, when non-nil, replaces the computed backoff: retry i waits
	// Schedule[i] (no jitter) and there are len(Schedule) retries. Useful in
	// tests and for callers with their own pacing.
	Schedule []time.Duration
	// MaxRetryAfter is the longest Retry-After the client will wait for;
	// a server asking for more ends the call with the *HTTPError at once
	// (its RetryAfter field says how long the server asked for).
	// 0 means 60s.
	MaxRetryAfter time.Duration
}

// Retries is the number of retries the policy allows after the first attempt.
func (p RetryPolicy) Retries() int {
	switch {
	case p.Schedule != nil:
		return len(p.Schedule)
	case p.MaxRetries < 0:
		return 0
	case p.MaxRetries == 0:
		return 3
	}
	return p.MaxRetries
}

// Backoff is the wait before retry number retry (0-based), before any
// Retry-After from the server is taken into account.
func (p RetryPolicy) Backoff(retry int) time.Duration {
	if p.Schedule != nil {
		if retry < 0 || retry >= len(p.Schedule) {
			return 0
		}
		return p.Schedule[retry]
	}
	base, limit := p.BaseDelay, p.MaxDelay
	if base <= 0 {
		base = 500 * time.Millisecond
	}
	if limit <= 0 {
		limit = 20 * time.Second
	}
	d := base
	for i := 0; i < retry && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	if !p.NoJitter && d > 1 {
		d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
	}
	return d
}

// RetryAfterLimit is the longest Retry-After the policy waits for.
func (p RetryPolicy) RetryAfterLimit() time.Duration {
	if p.MaxRetryAfter <= 0 {
		return 60 * time.Second
	}
	return p.MaxRetryAfter
}
