package providertest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Received is one request as a fake server got it.
type Received struct {
	N      int       // its place among the server's requests, from 0
	Body   []byte    // the raw body
	At     time.Time // the server's clock when it arrived
	Path   string
	Header http.Header
}

// Server is the plumbing of a fake provider server: an httptest server
// that keeps every request and runs a clock for the cache simulator. The
// clock starts at 2026-01-02 03:04:05 UTC and moves one second per
// request, so cache entries age as they would between calls.
type Server struct {
	URL string
	// Failure, when it returns a status for request n (from 0), makes
	// Failed answer that request with that error. Set it before the
	// first request.
	Failure func(n int) (status int, header http.Header, msg string)
	// Delay holds each answer back, for timeouts. Set it before the first
	// request.
	Delay time.Duration

	mu       sync.Mutex
	now      time.Time
	received []Received
}

// NewServer starts a server that records each request, holds it back for
// Delay and hands it to handle; it is closed when the test ends.
func NewServer(t testing.TB, handle func(w http.ResponseWriter, r *http.Request, got Received)) *Server {
	t.Helper()
	s := &Server{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.now = s.now.Add(time.Second)
		got := Received{N: len(s.received), Body: raw, At: s.now, Path: r.URL.Path, Header: r.Header.Clone()}
		s.received = append(s.received, got)
		delay := s.Delay
		s.mu.Unlock()
		if !Hold(r, delay) {
			return // the client gave up: no one to answer
		}
		handle(w, r, got)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Advance moves the server's clock, e.g. past the cache TTL.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	s.now = s.now.Add(d)
	s.mu.Unlock()
}

// Requests is the number of requests received.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.received)
}

// Body is the body of request n (from 0).
func (s *Server) Body(n int) []byte { return s.request(n).Body }

// Header is the header of request n.
func (s *Server) Header(n int) http.Header { return s.request(n).Header }

// Path is the URL path of request n.
func (s *Server) Path(n int) string { return s.request(n).Path }

func (s *Server) request(n int) Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received[n]
}

// Failed reports the failure Failure asks for request n, with its
// headers already set on w; a zero status means answer normally. The
// error body is the provider's own, so the caller writes it.
func (s *Server) Failed(w http.ResponseWriter, n int) (status int, msg string) {
	s.mu.Lock()
	fail := s.Failure
	s.mu.Unlock()
	if fail == nil {
		return 0, ""
	}
	status, h, msg := fail(n)
	if status == 0 {
		return 0, ""
	}
	for k, v := range h {
		w.Header()[k] = v
	}
	return status, msg
}

// FailFirst is a Failure that answers the first k requests with status,
// header and msg, and the rest normally.
func FailFirst(k, status int, header http.Header, msg string) func(n int) (int, http.Header, string) {
	return func(n int) (int, http.Header, string) {
		if n < k {
			return status, header, msg
		}
		return 0, nil, ""
	}
}

// Hold keeps an answer back for d, for timeouts. It reports false when
// the client gave up first: there is no one left to answer.
func Hold(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// Split cuts s in three pieces, as stream deltas arrive.
func Split(s string) []string {
	if len(s) < 3 {
		return []string{s}
	}
	a, b := len(s)/3, 2*len(s)/3
	return []string{s[:a], s[a:b], s[b:]}
}
