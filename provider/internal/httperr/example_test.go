package httperr_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/internal/httperr"
)

// A 429 answer with retry advice becomes a retryable *provider.Error.
func ExampleFromHTTP() {
	resp := &http.Response{Header: http.Header{"Retry-After": {"3"}}}
	e := &provider.Error{Provider: "example"}
	httperr.FromHTTP(e, http.StatusTooManyRequests, "rate limited", "", resp, time.Now())
	fmt.Println(e)
	// Output: example: status 429: rate limited (retryable after 3s)
}
