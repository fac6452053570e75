package httpx

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratamem/strata/embed"
)

const maxDuration = time.Duration(math.MaxInt64)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {"0.25"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"9"}}, 1500 * time.Millisecond},
		// Values beyond time.Duration's range (about 292 years) saturate
		// instead of wrapping to a negative duration that reads as "none".
		{http.Header{"Retry-After": {"10000000000"}}, maxDuration},
		{http.Header{"Retry-After": {"1e300"}}, maxDuration},
		{http.Header{"Retry-After": {"Inf"}}, maxDuration},
		{http.Header{"Retry-After": {"9223372036"}}, 9223372036 * time.Second},
		{http.Header{"Retry-After": {"9223372037"}}, maxDuration},
		{http.Header{"Retry-After-Ms": {"1e30"}}, maxDuration},
		{http.Header{"Retry-After-Ms": {"+Inf"}}, maxDuration},
		{http.Header{"Retry-After": {"NaN"}}, 0},
		{http.Header{"Retry-After-Ms": {"NaN"}, "Retry-After": {"4"}}, 4 * time.Second},
		{http.Header{"Retry-After": {"-Inf"}}, 0},
	} {
		if got := parseRetryAfter(tc.h, now); got != tc.want {
			t.Errorf("parseRetryAfter(%v) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

func TestBatches(t *testing.T) {
	got := Batches(7, 3)
	if len(got) != 3 || got[0] != [2]int{0, 3} || got[2] != [2]int{6, 7} {
		t.Errorf("Batches(7,3) = %v", got)
	}
	if got := Batches(2, 0); len(got) != 1 || got[0] != [2]int{0, 2} {
		t.Errorf("Batches(2,0) = %v", got)
	}
}

func TestDim(t *testing.T) {
	var d Dim
	if err := d.Check("x", [][]float32{{1, 2}, {3, 4}}); err != nil || d.Get() != 2 {
		t.Fatalf("learn: %v %d", err, d.Get())
	}
	if err := d.Check("x", [][]float32{{1}}); err == nil {
		t.Error("mismatch accepted")
	}
	if err := d.Check("x", [][]float32{{}}); err == nil {
		t.Error("empty vector accepted")
	}
}

// TestRetryAfterOverflowGivesUp: a Retry-After too large for a
// time.Duration is longer than any limit, so the client gives up at once
// instead of retrying early.
func TestRetryAfterOverflowGivesUp(t *testing.T) {
	for _, ra := range []string{"10000000000", "1e300", "Inf"} {
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			w.Header().Set("Retry-After", ra)
			w.WriteHeader(http.StatusTooManyRequests)
		}))
		c := &Client{Backend: "test", Retry: embed.RetryPolicy{Schedule: []time.Duration{time.Millisecond, time.Millisecond}},
			Sleep: func(context.Context, time.Duration) error { return nil }}
		_, err := c.Post(context.Background(), srv.URL, []byte("{}"))
		srv.Close()
		var he *embed.HTTPError
		if !errors.As(err, &he) || he.StatusCode != http.StatusTooManyRequests || he.RetryAfter != maxDuration {
			t.Fatalf("Retry-After %q: %v, want an HTTP 429 error with RetryAfter %v", ra, err, maxDuration)
		}
		if got := n.Load(); got != 1 {
			t.Errorf("Retry-After %q: %d requests, want 1 (the wait is beyond the limit)", ra, got)
		}
	}
}
