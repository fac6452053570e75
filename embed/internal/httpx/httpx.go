// Package httpx is the request loop shared by the remote embedders: JSON POST
// with a per-attempt timeout, retries with backoff on transport errors and
// retryable statuses, Retry-After, and typed *embed.HTTPError results.
package httpx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stratamem/strata/embed"
)

// MaxBody bounds how much of a response is read. A batch of 2048 vectors of
// 3072 floats written as JSON text is about 75 MiB.
const MaxBody = 256 << 20

// Client posts JSON to one endpoint.
type Client struct {
	Backend string // "openai" or "ollama", used in error messages
	HTTP    *http.Client
	Timeout time.Duration // per attempt; <= 0 means none beyond ctx
	Retry   embed.RetryPolicy
	Header  http.Header // sent with every request (auth, content type added by Post)
	// ParseError extracts message, type and code from an error body.
	ParseError func(body []byte) (msg, typ, code string)
	// Sleep waits between attempts; nil means a timer that ctx can cut
	// short. Tests replace it to record the schedule without waiting.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Post sends body to url and returns the body of the first 2xx response.
// It retries as Retry says; a non-2xx final answer is an *embed.HTTPError,
// a cancelled or expired ctx is returned wrapped (errors.Is works for
// context.Canceled and context.DeadlineExceeded), and when ctx ends during
// a backoff wait the last failure is wrapped too.
func (c *Client) Post(ctx context.Context, url string, body []byte) ([]byte, error) {
	retries := c.Retry.Retries()
	var last error
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, c.ctxErr(url, err, last)
		}
		respBody, retryAfter, err := c.once(ctx, url, body)
		if err == nil {
			return respBody, nil
		}
		var he *embed.HTTPError
		if errors.As(err, &he) {
			he.Attempts = attempt + 1
			if !he.Retryable() {
				return nil, he
			}
		} else if ctx.Err() != nil {
			// The caller's context ended the request: not a transient fault.
			return nil, c.ctxErr(url, ctx.Err(), last)
		}
		last = err
		if attempt >= retries {
			return nil, err
		}
		wait := c.Retry.Backoff(attempt)
		if retryAfter > 0 {
			if retryAfter > c.Retry.RetryAfterLimit() {
				return nil, err
			}
			wait = max(wait, retryAfter)
		}
		sleepFn := c.Sleep
		if sleepFn == nil {
			sleepFn = sleep
		}
		if werr := sleepFn(ctx, wait); werr != nil {
			return nil, c.ctxErr(url, werr, last)
		}
	}
}

func (c *Client) ctxErr(url string, ctxErr, last error) error {
	if last != nil {
		return fmt.Errorf("%s embeddings: POST %s: %w (last failure: %w)", c.Backend, url, ctxErr, last)
	}
	return fmt.Errorf("%s embeddings: POST %s: %w", c.Backend, url, ctxErr)
}

// once makes one attempt. A transport failure or per-attempt timeout is
// returned as a plain error (retryable); a non-2xx status as *embed.HTTPError.
func (c *Client) once(ctx context.Context, url string, body []byte) ([]byte, time.Duration, error) {
	actx := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, fmt.Errorf("%s embeddings: %w: %w", c.Backend, embed.ErrInvalidConfig, err)
	}
	for k, vs := range c.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() == nil && actx.Err() != nil {
			return nil, 0, fmt.Errorf("%s embeddings: POST %s: attempt timed out after %v: %w", c.Backend, url, c.Timeout, err)
		}
		return nil, 0, fmt.Errorf("%s embeddings: POST %s: %w", c.Backend, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return nil, 0, fmt.Errorf("%s embeddings: POST %s: reading response: %w", c.Backend, url, err)
	}
	if len(data) > MaxBody {
		return nil, 0, fmt.Errorf("%s embeddings: POST %s: %w: response larger than %d bytes", c.Backend, url, embed.ErrBadResponse, MaxBody)
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return data, 0, nil
	}
	he := &embed.HTTPError{Backend: c.Backend, URL: url, StatusCode: resp.StatusCode, Attempts: 1}
	he.RetryAfter = parseRetryAfter(resp.Header, time.Now())
	if c.ParseError != nil {
		he.Message, he.Type, he.Code = c.ParseError(data)
	}
	if he.Message == "" {
		he.Body = snippet(data)
	}
	return nil, he.RetryAfter, he
}

// parseRetryAfter reads retry-after-ms (sent by OpenAI) or Retry-After in
// seconds or as an HTTP date.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); (err == nil || errors.Is(err, strconv.ErrRange)) && ms > 0 {
			return toDuration(ms, time.Millisecond)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	// ParseFloat reports out-of-range values as ±Inf with an error:
	// those count as numbers too.
	if s, err := strconv.ParseFloat(v, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return toDuration(s, time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// toDuration converts x units to a Duration. NaN and x <= 0 give 0 (no
// wait asked for); a wait beyond the Duration range (about 292 years, e.g.
// "10000000000", "1e300" or "Inf" seconds) gives the largest Duration, which
// is longer than any RetryAfterLimit, instead of the negative value a
// plain conversion would wrap to.
func toDuration(x float64, unit time.Duration) time.Duration {
	if !(x > 0) {
		return 0
	}
	d := x * float64(unit)
	if d >= math.MaxInt64 { // float64(MaxInt64) is 2^63: one past the range
		return math.MaxInt64
	}
	return time.Duration(d)
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Dim tracks the vector dimension of a remote model: fixed when configured,
// otherwise learned from the first response and enforced after that.
type Dim struct{ v atomic.Int64 }

// Set fixes the dimension (used when it is configured).
func (d *Dim) Set(n int) { d.v.Store(int64(n)) }

// Get returns the known dimension or 0.
func (d *Dim) Get() int { return int(d.v.Load()) }

// Check accepts vectors of the known dimension, learning it on first use.
func (d *Dim) Check(backend string, vecs [][]float32) error {
	for i, v := range vecs {
		if len(v) == 0 {
			return fmt.Errorf("%s embeddings: %w: vector %d is empty", backend, embed.ErrBadResponse, i)
		}
		want := d.v.Load()
		if want == 0 {
			if d.v.CompareAndSwap(0, int64(len(v))) {
				continue
			}
			want = d.v.Load()
		}
		if int64(len(v)) != want {
			return fmt.Errorf("%s embeddings: %w: vector %d has %d dimensions, want %d", backend, embed.ErrDimensionMismatch, i, len(v), want)
		}
	}
	return nil
}

// Batches splits n items into consecutive [lo, hi) ranges of at most size.
func Batches(n, size int) [][2]int {
	if size <= 0 {
		size = n
	}
	var out [][2]int
	for lo := 0; lo < n; lo += size {
		out = append(out, [2]int{lo, min(lo+size, n)})
	}
	return out
}
