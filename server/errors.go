package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

// Errors of the operations, each answered with its HTTP status.
var (
	// ErrInvalidRequest is wrapped for a request the server cannot read
	// or that a layer rejects (400).
	ErrInvalidRequest = errors.New("server: invalid request")
	// ErrNotFound is wrapped for a memory, state key or assembly that is
	// not there, or that belongs to a resource the key may not see (404:
	// another resource's ids are not confirmed to exist).
	ErrNotFound = errors.New("server: not found")
	// ErrConflict is wrapped when a conditional write lost the race: the
	// stored revision has moved on (409).
	ErrConflict = errors.New("server: conflict")
	// ErrTooLarge is wrapped by *LimitError for a request body over
	// Options.MaxBodyBytes (413).
	ErrTooLarge = errors.New("server: request too large")
	// ErrRateLimited is wrapped by *LimitError for a key over its rate
	// (429).
	ErrRateLimited = errors.New("server: rate limited")
	// ErrShuttingDown is wrapped for a request that arrives while the
	// server drains (503).
	ErrShuttingDown = errors.New("server: shutting down")
	// ErrNoState is wrapped for a state or assembly read on a store with
	// no state store (a bare Qdrant or chromem target) (501).
	ErrNoState = errors.New("server: no state store")
)

// LimitError is a request refused by a limit: the body size (ErrTooLarge)
// or the key's request rate (ErrRateLimited).
type LimitError struct {
	// Limit is ErrTooLarge or ErrRateLimited.
	Limit error
	// Max is the limit: bytes for a body, requests per second for a rate.
	Max float64
	// RetryAfter is when the key may send again (rate limits only).
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	if errors.Is(e.Limit, ErrTooLarge) {
		return fmt.Sprintf("%v: the body is over %.0f bytes", e.Limit, e.Max)
	}
	return fmt.Sprintf("%v: over %g requests per second; retry in %s", e.Limit, e.Max, e.RetryAfter.Round(time.Millisecond))
}

// Unwrap returns Limit.
func (e *LimitError) Unwrap() error { return e.Limit }

// invalid wraps a layer's validation error as ErrInvalidRequest, keeping
// the layer's own error for errors.Is.
func invalid(err error) error {
	if err == nil || errors.Is(err, ErrInvalidRequest) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
}

// classify maps the errors of the layers and stores to the server's, so
// that both transports answer alike. Errors already of the server's pass
// through.
func classify(err error) error {
	var ve *vectorstore.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrInvalidRequest), errors.Is(err, ErrNotFound), errors.Is(err, ErrConflict),
		errors.Is(err, ErrForbidden), errors.Is(err, ErrUnauthenticated), errors.Is(err, ErrTooLarge),
		errors.Is(err, ErrRateLimited), errors.Is(err, ErrShuttingDown), errors.Is(err, ErrNoState):
		return err
	case errors.Is(err, memory.ErrScope), errors.Is(err, temporal.ErrInvalidFact), errors.Is(err, entity.ErrInvalidUpdate),
		errors.Is(err, scratchpad.ErrInvalidUpdate), errors.Is(err, semantic.ErrInvalidQuery),
		errors.Is(err, storage.ErrInvalidKey):
		return invalid(err)
	case errors.Is(err, storage.ErrConflict), errors.As(err, &ve) && ve.Code == vectorstore.CodeConflict:
		return fmt.Errorf("%w: %w", ErrConflict, err)
	case errors.Is(err, storage.ErrNotFound), errors.Is(err, vectorstore.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.As(err, &ve) && (ve.Code == vectorstore.CodeInvalidArgument || ve.Code == vectorstore.CodeInvalidFilter ||
		ve.Code == vectorstore.CodeInvalidRecord || ve.Code == vectorstore.CodeUnknownFilterField):
		return invalid(err)
	}
	return err
}

// Status is the HTTP status of an operation's error.
func Status(err error) int {
	switch err = classify(err); {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, ErrUnauthenticated):
		return http.StatusUnauthorized
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrRateLimited):
		return http.StatusTooManyRequests
	case errors.Is(err, ErrInvalidRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrShuttingDown):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrNoState):
		return http.StatusNotImplemented
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// code is the machine-readable error code of the JSON error body.
func code(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "unauthenticated"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusConflict:
		return "conflict"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusTooManyRequests:
		return "rate_limited"
	case http.StatusBadRequest:
		return "invalid_request"
	case http.StatusServiceUnavailable:
		return "shutting_down"
	case http.StatusNotImplemented:
		return "no_state_store"
	case http.StatusGatewayTimeout:
		return "timeout"
	}
	return "internal"
}

// retryAfter is the Retry-After header value of a rate-limit error, in
// whole seconds rounded up.
func retryAfter(err error) string {
	var le *LimitError
	if !errors.As(err, &le) || le.RetryAfter <= 0 {
		return ""
	}
	return strconv.Itoa(int((le.RetryAfter + time.Second - 1) / time.Second))
}
