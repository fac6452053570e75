package vectorstore

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/vectorstore/driver"
)

func TestErrorChain(t *testing.T) {
	cause := context.DeadlineExceeded
	err := error(&Error{Code: CodeInvalidVector, Op: "upsert", ID: "x", Field: "vector[2]", Msg: "NaN or Inf", Err: cause})
	wrapped := errors.Join(errors.New("outer"), err)
	if !errors.Is(wrapped, ErrInvalidVector) || !errors.Is(wrapped, context.DeadlineExceeded) || errors.Is(wrapped, ErrNotFound) {
		t.Fatal("errors.Is does not see the sentinel and the cause")
	}
	var e *Error
	if !errors.As(wrapped, &e) || e.Field != "vector[2]" || CodeOf(wrapped) != CodeInvalidVector {
		t.Fatal("errors.As")
	}
	for _, part := range []string{"upsert", "INVALID_VECTOR", `"x"`, "vector[2]", "NaN", "deadline"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("%q lacks %q", err.Error(), part)
		}
	}
}

func TestPageToken(t *testing.T) {
	fp := fingerprint(Filter{Layer: "a", IDs: []string{"y", "x"}}, false)
	if fp != fingerprint(Filter{Layer: "a", IDs: []string{"x", "y"}}, false) {
		t.Fatal("fingerprint depends on id order")
	}
	if fp == fingerprint(Filter{Layer: "a", IDs: []string{"x", "y"}}, true) || fp == fingerprint(Filter{Layer: "b"}, false) {
		t.Fatal("fingerprint ignores order or filter")
	}
	cur := driver.Cursor{CreatedAt: time.Date(1969, 7, 20, 20, 17, 40, 123456000, time.UTC), ID: "id/with?odd=chars ü"}
	tok := encodeToken(cur, fp)
	got, err := decodeToken(tok, fp)
	if err != nil || !got.CreatedAt.Equal(cur.CreatedAt) || got.ID != cur.ID {
		t.Fatalf("round trip: %v %v", got, err)
	}
	for _, bad := range []string{"", "!!", tok[:len(tok)-3], tok[:10] + flip(tok[10]) + tok[11:]} {
		if _, err := decodeToken(bad, fp); err == nil {
			t.Errorf("token %q accepted", bad)
		}
	}
}

func TestValidMetadataKey(t *testing.T) {
	for k, want := range map[string]bool{"a": true, "_x": true, "lang-code_2": true, "A9": true,
		"": false, "9a": false, "-a": false, "a.b": false, "a b": false, "ü": false, "$layer": false,
		strings.Repeat("k", 64): true, strings.Repeat("k", 65): false} {
		if ValidMetadataKey(k) != want {
			t.Errorf("ValidMetadataKey(%q) = %v", k, !want)
		}
	}
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

func TestOpenErrorHidesPassword(t *testing.T) {
	_, err := Open(context.Background(), "postgres://user:s3cret@host:5432/db\x7f", nil)
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("err = %v", err)
	}
}

// captured is the driver.Config the "capture" test scheme was last opened
// with; the opener then fails, so no collection is needed.
var captured driver.Config

var errCaptured = errors.New("captured")

func init() {
	Register("capture", func(_ context.Context, _ *url.URL, cfg driver.Config) (driver.Collection, error) {
		captured = cfg
		return nil, errCaptured
	})
}

// TestOpenCanonicalDistance: Options.Distance and the URL's distance may use
// any spelling ParseDistance accepts; the driver always gets the canonical
// name (it stores and scores by it), and two spellings of one distance agree.
func TestOpenCanonicalDistance(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		url  string
		opt  Distance
		want Distance
	}{
		{"capture://x", "l2", Euclidean},
		{"capture://x", "Cosine", Cosine},
		{"capture://x", " IP ", Dot},
		{"capture://x?distance=euclid", "L2", Euclidean},
		{"capture://x?distance=inner_product", "dot", Dot},
		{"capture://x?distance=COS", "", Cosine},
		{"capture://x", "", ""},
	} {
		captured = driver.Config{}
		if _, err := Open(ctx, tc.url, &Options{Distance: tc.opt}); !errors.Is(err, errCaptured) {
			t.Fatalf("Open(%s, %q): %v", tc.url, tc.opt, err)
		}
		if captured.Distance != tc.want {
			t.Errorf("Open(%s, %q): driver got distance %q, want %q", tc.url, tc.opt, captured.Distance, tc.want)
		}
	}
	for _, tc := range []struct {
		url string
		opt Distance
	}{{"capture://x?distance=l2", "dot"}, {"capture://x", "manhattan"}} {
		if _, err := Open(ctx, tc.url, &Options{Distance: tc.opt}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Open(%s, %q): %v, want ErrInvalidArgument", tc.url, tc.opt, err)
		}
	}
}

// capturedURL is the URL the "captureurl" scheme was last opened with.
var capturedURL *url.URL

func init() {
	Register("captureurl", func(_ context.Context, u *url.URL, cfg driver.Config) (driver.Collection, error) {
		captured, capturedURL = cfg, u
		return nil, errCaptured
	})
}

// TestOpenStrictQuery: a query that url.Query would read partially (and
// url.Query's ignored error) is refused, naming the parameter, before the
// driver is called; a well-formed one reaches the driver intact.
func TestOpenStrictQuery(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		query, field string
	}{
		{"collection=zz;yy", "url"}, // url.Query drops the pair: the default collection
		{"collection=a&dimension=3;x=1", "url"},
		{"collection=%zz", "url"},
		{"collection=a&collection=b", "collection"},
		{"dimension=3&dimension=3", "dimension"},
		{"collection=", "collection"},
		{"dimension=", "dimension"},
		{"distance=", "distance"},
		{"metadata_keys=", "metadata_keys"},
		{"=x", "url"},
		{"opt=1&opt=2", "opt"},
		{"opt=", "opt"},
	} {
		captured, capturedURL = driver.Config{}, nil
		_, err := Open(ctx, "captureurl://u:s3cret@h/?"+tc.query, nil)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidArgument || e.Field != tc.field {
			t.Errorf("?%s: %v, want CodeInvalidArgument on field %q", tc.query, err, tc.field)
			continue
		}
		if capturedURL != nil {
			t.Errorf("?%s: the driver was called", tc.query)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("?%s: error %q shows the password", tc.query, err)
		}
	}
	// An escaped ';' is part of the value, and the driver gets the rest of
	// the query, re-encoded, without the common parameters.
	_, err := Open(ctx, "captureurl://h/?collection=zz%3Byy&dimension=3&opt=a%26b&other=x", nil)
	if !errors.Is(err, errCaptured) {
		t.Fatal(err)
	}
	if captured.Name != "zz;yy" || captured.Dimension != 3 {
		t.Fatalf("driver got %+v", captured)
	}
	q, err := url.ParseQuery(capturedURL.RawQuery)
	if err != nil || len(q) != 2 || q.Get("opt") != "a&b" || q.Get("other") != "x" {
		t.Fatalf("driver got query %q (%v)", capturedURL.RawQuery, err)
	}
	if p, err := Params(capturedURL); err != nil || len(p) != 2 {
		t.Fatalf("Params of the driver's URL: %v %v", p, err)
	}
}
