package httpx

import (
	"net/http"
	"testing"
	"time"
)

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
