package httperr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stratamem/strata/provider"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"absent", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {" 1.5 "}}, 1500 * time.Millisecond},
		{"milliseconds first", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"7"}}, 250 * time.Millisecond},
		{"bad milliseconds fall back", http.Header{"Retry-After-Ms": {"soon"}, "Retry-After": {"2"}}, 2 * time.Second},
		{"zero milliseconds fall back", http.Header{"Retry-After-Ms": {"0"}}, 0},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0},
		{"HTTP date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{"past date", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"garbage", http.Header{"Retry-After": {"tomorrow"}}, 0},
	} {
		if got := RetryAfter(tc.h, now); got != tc.want {
			t.Errorf("%s: RetryAfter = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRetryableStatus(t *testing.T) {
	for code, want := range map[int]bool{400: false, 401: false, 404: false, 408: true, 429: true, 500: true, 503: true, 529: true} {
		if RetryableStatus(code) != want {
			t.Errorf("RetryableStatus(%d) = %v", code, !want)
		}
	}
}

func TestFromHTTP(t *testing.T) {
	now := time.Now()
	resp := func(h http.Header) *http.Response { return &http.Response{Header: h} }
	for _, tc := range []struct {
		name         string
		status       int
		message, raw string
		resp         *http.Response
		wantMsg      string
		retryable    bool
		after        time.Duration
	}{
		{name: "rate limit", status: 429, message: "slow down", resp: resp(http.Header{"Retry-After": {"3"}}), wantMsg: "slow down", retryable: true, after: 3 * time.Second},
		{name: "raw body when no message", status: 400, raw: ` {"error":"x"} `, resp: resp(http.Header{}), wantMsg: `{"error":"x"}`},
		{name: "status text when empty", status: 503, wantMsg: "Service Unavailable", retryable: true},
		{name: "x-should-retry false", status: 500, message: "m", resp: resp(http.Header{"X-Should-Retry": {"false"}}), wantMsg: "m"},
		{name: "x-should-retry true", status: 409, message: "m", resp: resp(http.Header{"X-Should-Retry": {"true"}}), wantMsg: "m", retryable: true},
	} {
		e := &provider.Error{Provider: "p"}
		FromHTTP(e, tc.status, tc.message, tc.raw, tc.resp, now)
		if e.StatusCode != tc.status || e.Message != tc.wantMsg || e.Retryable != tc.retryable || e.RetryAfter != tc.after {
			t.Errorf("%s: %+v", tc.name, e)
		}
	}
}

var errBroken = errors.New("stream ended early")

func TestFromFailure(t *testing.T) {
	// Real transport failures: a request to a closed listener, and a
	// request whose context deadline passes while the server waits.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + ln.Addr().String()
	ln.Close()
	_, refused := http.Get(closedURL)
	if refused == nil {
		t.Fatal("a closed port answered")
	}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	client := &http.Client{Timeout: 20 * time.Millisecond}
	_, timedOut := client.Get(srv.URL)
	if timedOut == nil {
		t.Fatal("the request did not time out")
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	for _, tc := range []struct {
		name      string
		ctx       context.Context
		err       error
		wantMsg   string
		retryable bool
	}{
		{"client timeout", context.Background(), timedOut, "request timed out", true},
		{"deadline", context.Background(), fmt.Errorf("sdk: %w", context.DeadlineExceeded), "request timed out", true},
		{"canceled", context.Background(), fmt.Errorf("sdk: %w", context.Canceled), "request canceled", false},
		{"canceled context, opaque error", canceled, errors.New("opaque"), "request canceled", false},
		{"connection refused", context.Background(), refused, refused.Error(), true},
		{"unexpected EOF", context.Background(), fmt.Errorf("read: %w", io.ErrUnexpectedEOF), "read: unexpected EOF", true},
		{"adapter's broken stream", context.Background(), fmt.Errorf("x: %w", errBroken), "x: stream ended early", true},
		{"anything else", context.Background(), errors.New("bad JSON"), "bad JSON", false},
	} {
		e := &provider.Error{Provider: "p", Err: tc.err}
		FromFailure(tc.ctx, e, tc.err, errBroken)
		if e.Message != tc.wantMsg || e.Retryable != tc.retryable || e.StatusCode != 0 {
			t.Errorf("%s: %+v, want message %q retryable %v", tc.name, e, tc.wantMsg, tc.retryable)
		}
	}
	// Without the adapter's sentinel its error is not a transport one.
	e := &provider.Error{}
	FromFailure(context.Background(), e, errBroken)
	if e.Retryable {
		t.Fatal("an unlisted error counted as a transport failure")
	}
}
