package embed

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// HTTPError is returned by the remote embedders when the server answers with
// a non-2xx status, after any retries. Use errors.As to inspect it.
type HTTPError struct {
	Backend    string        // "openai" or "ollama"
	URL        string        // request URL
	StatusCode int           // HTTP status code
	Message    string        // error message extracted from the body, if any
	Type       string        // OpenAI error type, if any
	Code       string        // OpenAI error code, if any
	Body       string        // start of the raw body when no message could be extracted
	RetryAfter time.Duration // server's Retry-After, if it sent one
	Attempts   int           // requests made, including the failed last one
}

func (e *HTTPError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s embeddings: POST %s: HTTP %d %s", e.Backend, e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	switch {
	case e.Message != "":
		b.WriteString(": ")
		b.WriteString(e.Message)
	case e.Body != "":
		b.WriteString(": ")
		b.WriteString(e.Body)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " (code %s)", e.Code)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

// Retryable reports whether the status is one a later identical request may
// succeed on: 408, 409 (lock contention), 425, 429 and 5xx other than 501 and
// 505.
func (e *HTTPError) Retryable() bool { return RetryableStatus(e.StatusCode) }

// RetryableStatus is the status policy behind HTTPError.Retryable.
func RetryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
		return false
	}
	return code >= 500 && code <= 599
}
