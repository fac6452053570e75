package vectorstore

import (
	"context"
	"errors"
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
