// Package httperr holds the retry advice both provider adapters give: how
// an HTTP error answer, a timeout, a cancellation or a broken connection
// becomes a *provider.Error, and how the retry-after headers are read.
// What differs between the providers — their SDK error types and the
// errors that arrive inside a stream — stays in the adapters, which hand
// the parts they have read to FromHTTP, or the error to FromFailure.
package httperr

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stratamem/strata/provider"
)

// FromHTTP fills e from an error answer with the given status: the
// message (else the raw JSON body, else the status text), whether a retry
// can succeed, which the x-should-retry header overrides, and the
// retry-after advice read at now. resp may be nil, for an error that came
// inside a stream and has no headers of its own.
func FromHTTP(e *provider.Error, status int, message, rawJSON string, resp *http.Response, now time.Time) {
	e.StatusCode = status
	e.Message = message
	if e.Message == "" {
		e.Message = strings.TrimSpace(rawJSON)
	}
	if e.Message == "" {
		e.Message = http.StatusText(e.StatusCode)
	}
	e.Retryable = RetryableStatus(e.StatusCode)
	if resp != nil {
		switch resp.Header.Get("x-should-retry") {
		case "true":
			e.Retryable = true
		case "false":
			e.Retryable = false
		}
		e.RetryAfter = RetryAfter(resp.Header, now)
	}
}

// FromFailure fills e for err, a failure that carries no answer from the
// provider. ctx is the call's context: its error tells a deadline from a
// cancellation even when the SDK wrapped it. An error matching one of
// broken (say, the adapter's "the stream ended early") counts as a
// transport failure, which a retry can get past.
func FromFailure(ctx context.Context, e *provider.Error, err error, broken ...error) {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		e.Retryable = true
		e.Message = "request timed out"
	case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
		e.Message = "request canceled"
	case isTransport(err, broken):
		// The request may not have reached the server, or the answer
		// broke off: the same request can succeed later.
		e.Retryable = true
		e.Message = err.Error()
	default:
		e.Message = err.Error()
	}
}

// RetryableStatus reports whether a request that got status can succeed
// when sent again: request timeouts, rate limits, server errors.
func RetryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isTransport(err error, broken []error) bool {
	var ue *url.Error
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &ue) || errors.As(err, &ne) || errors.As(err, &oe) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	for _, b := range broken {
		if errors.Is(err, b) {
			return true
		}
	}
	return false
}

// RetryAfter reads the provider's advice: retry-after-ms (milliseconds),
// then retry-after (seconds or an HTTP date). Zero when absent or past.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
