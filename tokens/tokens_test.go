package tokens

import (
	"strings"
	"testing"
)

func TestEstimate(t *testing.T) {
	e := Estimate()
	cases := []struct {
		text string
		want int
	}{
		{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {"abcdefgh", 2},
		{"日本語", 1}, {"日本語の文", 2}, // runes, not bytes
		{strings.Repeat("x", 1000), 250},
		{"\xff\xff\xff\xff\xff", 2}, // each invalid byte is one rune
	}
	for _, tc := range cases {
		if got := e.Count(tc.text); got != tc.want {
			t.Errorf("Estimate Count(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}
