package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/internal/httperr"
)

// ErrInvalidRequest is wrapped by the errors of a view the adapter cannot
// turn into a request: no view, no messages, tools whose names collide or
// whose parameters are not a schema of "type": "object", function-call
// arguments that are not a JSON object.
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
		status := apiErr.StatusCode
		if st, ok := errorTypeStatus[string(apiErr.Type())]; ok && (status == 0 || status == http.StatusOK) {
			// An error event inside a stream that had answered 200.
			status = st
		}
		httperr.FromHTTP(e, status, apiErr.Message, apiErr.RawJSON(), apiErr.Response, time.Now())
	default:
		httperr.FromFailure(ctx, e, err, errIncompleteStream)
	}
	return e
}
