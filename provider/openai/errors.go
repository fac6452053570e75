package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/internal/httperr"
)

// ErrInvalidRequest is wrapped by the errors of a view the adapter cannot
// turn into a request: no view, an empty view, tools whose names collide,
// tool parameters that are not a JSON schema of "type": "object".
var ErrInvalidRequest = errors.New("openai: invalid request")

// OptionError reports invalid Options, naming the field.
type OptionError struct {
	Field  string
	Reason string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("openai: option %s: %s", e.Field, e.Reason)
}

// providerName is provider.Error.Provider for this adapter.
const providerName = "openai"

// errIncompleteStream: the event stream ended before the answer was
// complete.
var errIncompleteStream = errors.New("openai: stream ended before the response completed")

// codeStatus gives the HTTP status an error code or type stands for, for
// errors that arrive inside a stream after a 200 response.
var codeStatus = map[string]int{
	"server_error":            http.StatusInternalServerError,
	"internal_error":          http.StatusInternalServerError,
	"api_error":               http.StatusInternalServerError,
	"rate_limit_exceeded":     http.StatusTooManyRequests,
	"rate_limit_error":        http.StatusTooManyRequests,
	"insufficient_quota":      http.StatusTooManyRequests,
	"overloaded_error":        http.StatusServiceUnavailable,
	"service_unavailable":     http.StatusServiceUnavailable,
	"invalid_request_error":   http.StatusBadRequest,
	"invalid_prompt":          http.StatusBadRequest,
	"context_length_exceeded": http.StatusBadRequest,
}

// finalCodes are error codes whose status says "retry" but for which a
// retry cannot succeed: insufficient_quota arrives as a 429, yet waiting
// does not refill the account.
var finalCodes = map[string]bool{"insufficient_quota": true}

// streamFailure is an error reported inside a stream: an SSE error event,
// a response.failed event, or an {"error": …} chunk.
type streamFailure struct {
	code    string
	message string
	status  int
}

func (e *streamFailure) Error() string {
	if e.code != "" {
		return fmt.Sprintf("%s: %s", e.code, e.message)
	}
	return e.message
}

// parseStreamError reads the payload of an {"error": …} chunk, whose code
// is a string on OpenAI and a number on some gateways (OpenRouter).
func parseStreamError(data []byte) *streamFailure {
	var doc struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	f := &streamFailure{message: "stream error"}
	if json.Unmarshal(data, &doc) != nil {
		return f
	}
	if doc.Error.Message != "" {
		f.message = doc.Error.Message
	}
	var code string
	var num int
	switch {
	case json.Unmarshal(doc.Error.Code, &code) == nil && code != "":
		f.code = code
	case json.Unmarshal(doc.Error.Code, &num) == nil && num >= 400:
		f.status = num
	}
	if f.code == "" {
		f.code = doc.Error.Type
	}
	return f
}

// toError turns a failed SDK call into a *provider.Error with retry
// advice.
func toError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var perr *provider.Error
	if errors.As(err, &perr) || errors.Is(err, ErrInvalidRequest) {
		// Already typed, or the view's fault rather than the provider's.
		return err
	}
	e := &provider.Error{Provider: providerName, Err: err}
	var apiErr *sdk.Error
	var sf *streamFailure
	var se *ssestream.StreamError
	switch {
	case errors.As(err, &apiErr):
		httperr.FromHTTP(e, apiErr.StatusCode, apiErr.Message, apiErr.RawJSON(), apiErr.Response, time.Now())
		if finalCodes[apiErr.Code] || finalCodes[apiErr.Type] {
			e.Retryable, e.RetryAfter = false, 0
		}
	case errors.As(err, &se):
		sf = parseStreamError(se.Event.Data)
		fallthrough
	case sf != nil || errors.As(err, &sf):
		e.Message = sf.Error()
		e.StatusCode = sf.status
		if e.StatusCode == 0 {
			e.StatusCode = codeStatus[sf.code]
		}
		// An unknown failure inside a stream that had started is most
		// likely the server's; a known client error is final.
		e.Retryable = (e.StatusCode == 0 || httperr.RetryableStatus(e.StatusCode)) && !finalCodes[sf.code]
	default:
		httperr.FromFailure(ctx, e, err, errIncompleteStream)
	}
	return e
}
