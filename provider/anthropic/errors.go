package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/stratamem/strata/provider"
)

// ErrInvalidRequest is wrapped by the errors of a view the adapter cannot
// turn into a request: no view, no messages, tools whose names collide,
// function-call arguments that are not a JSON object.
var ErrInvalidRequest = errors.New("anthropic: invalid request")

// OptionError reports invalid Options, naming the field.
type OptionError struct {
	Field  string
	Reason string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("anthropic: option %s: %s", e.Field, e.Reason)
}

// providerName is provider.Error.Provider for this adapter.
const providerName = "anthropic"

// errorTypeStatus gives the HTTP status an error type stands for, for
// errors that arrive as an SSE "error" event after a 200 response.
var errorTypeStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"timeout_error":         http.StatusGatewayTimeout,
	"api_error":             http.StatusInternalServerError,
	"overloaded_error":      529,
}

// toError turns a failed SDK call into a *provider.Error with retry
// advice. ctx is the call's context: its error tells a deadline from a
// cancellation even when the SDK wrapped it.
func toError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var perr *provider.Error
	if errors.As(err, &perr) {
		return err
	}
	e := &provider.Error{Provider: providerName, Err: err}
	var apiErr *sdk.Error
	switch {
	case errors.As(err, &apiErr):
		e.StatusCode = apiErr.StatusCode
		if st, ok := errorTypeStatus[string(apiErr.Type())]; ok && (e.StatusCode == 0 || e.StatusCode == http.StatusOK) {
			// An error event inside a stream that had answered 200.
			e.StatusCode = st
		}
		e.Message = apiErr.Message
		if e.Message == "" {
			e.Message = strings.TrimSpace(apiErr.RawJSON())
		}
		if e.Message == "" {
			e.Message = http.StatusText(e.StatusCode)
		}
		e.Retryable = retryableStatus(e.StatusCode)
		if apiErr.Response != nil {
			switch apiErr.Response.Header.Get("x-should-retry") {
			case "true":
				e.Retryable = true
			case "false":
				e.Retryable = false
			}
			e.RetryAfter = retryAfter(apiErr.Response.Header, time.Now())
		}
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		e.Retryable = true
		e.Message = "request timed out"
	case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
		e.Message = "request canceled"
	case isTransport(err):
		// The request may not have reached the server, or the answer
		// broke off: the same request can succeed later.
		e.Retryable = true
		e.Message = err.Error()
	default:
		e.Message = err.Error()
	}
	return e
}

func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isTransport(err error) bool {
	var ue *url.Error
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.As(err, &oe) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errIncompleteStream)
}

// retryAfter reads the provider's advice: retry-after-ms (milliseconds),
// then retry-after (seconds or an HTTP date). Zero when absent or past.
func retryAfter(h http.Header, now time.Time) time.Duration {
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
