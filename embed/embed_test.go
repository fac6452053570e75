package embed

import (
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestValidateTexts(t *testing.T) {
	if err := ValidateTexts([]string{"a", " b "}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in    []string
		index int
	}{{nil, -1}, {[]string{}, -1}, {[]string{""}, 0}, {[]string{"a", "\n\t "}, 1}} {
		err := ValidateTexts(tc.in)
		var ie *InputError
		if !errors.Is(err, ErrEmptyInput) || !errors.As(err, &ie) || ie.Index != tc.index {
			t.Errorf("ValidateTexts(%q) = %v", tc.in, err)
		}
	}
}

func TestCosineAndNormalize(t *testing.T) {
	v := Normalize([]float32{3, 4})
	if v[0] != 0.6 || v[1] != 0.8 {
		t.Errorf("Normalize = %v", v)
	}
	if z := Normalize([]float32{0, 0}); z[0] != 0 || z[1] != 0 {
		t.Errorf("zero vector changed: %v", z)
	}
	if c := Cosine([]float32{1, 0}, []float32{0, 2}); c != 0 {
		t.Errorf("orthogonal cosine %v", c)
	}
	if c := Cosine([]float32{1, 1}, []float32{2, 2}); math.Abs(c-1) > 1e-12 {
		t.Errorf("parallel cosine %v", c)
	}
	if Cosine([]float32{1}, []float32{1, 2}) != 0 || Cosine([]float32{0}, []float32{1}) != 0 {
		t.Error("degenerate cosine not 0")
	}
}

func TestRetryPolicy(t *testing.T) {
	var zero RetryPolicy
	if zero.Retries() != 3 || zero.RetryAfterLimit() != time.Minute {
		t.Errorf("zero policy: %d retries, limit %v", zero.Retries(), zero.RetryAfterLimit())
	}
	for i := range 10 {
		d, full := zero.Backoff(i), min(500*time.Millisecond<<i, 20*time.Second)
		if d < full/2 || d > full {
			t.Errorf("jittered backoff %d = %v outside [%v, %v]", i, d, full/2, full)
		}
	}
	det := RetryPolicy{BaseDelay: time.Second, MaxDelay: 5 * time.Second, NoJitter: true, MaxRetries: 4}
	var got []time.Duration
	for i := range det.Retries() {
		got = append(got, det.Backoff(i))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second}
	if len(got) != len(want) {
		t.Fatalf("schedule %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("schedule %v, want %v", got, want)
		}
	}
	if (RetryPolicy{MaxRetries: -1}).Retries() != 0 {
		t.Error("negative MaxRetries should disable retries")
	}
	s := RetryPolicy{Schedule: []time.Duration{time.Millisecond, 0}, MaxRetries: 9}
	if s.Retries() != 2 || s.Backoff(0) != time.Millisecond || s.Backoff(5) != 0 {
		t.Errorf("explicit schedule: %d retries", s.Retries())
	}
}

func TestHTTPError(t *testing.T) {
	e := &HTTPError{Backend: "openai", URL: "http://x/v1/embeddings", StatusCode: 429, Message: "slow down", Code: "rate_limit_exceeded", Attempts: 4}
	msg := e.Error()
	for _, part := range []string{"openai embeddings", "HTTP 429 Too Many Requests", "slow down", "rate_limit_exceeded", "after 4 attempts"} {
		if !strings.Contains(msg, part) {
			t.Errorf("%q lacks %q", msg, part)
		}
	}
	for code, want := range map[int]bool{400: false, 401: false, 404: false, 408: true, 429: true, 500: true, 501: false, 503: true, 505: false} {
		if RetryableStatus(code) != want {
			t.Errorf("RetryableStatus(%d) = %v", code, !want)
		}
	}
	if (&HTTPError{StatusCode: http.StatusBadGateway}).Retryable() != true {
		t.Error("502 not retryable")
	}
}
