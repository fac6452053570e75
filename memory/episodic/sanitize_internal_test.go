package episodic

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// sanitize never panics, whatever the bound: below the ellipsis' own size
// (which New refuses) it clips without it, on a rune boundary.
func TestSanitizeAnyBound(t *testing.T) {
	s := "héllo wörld, a summary longer than every bound"
	for max := -1; max <= 20; max++ {
		got := sanitize(s, max)
		if len(got) > max && max >= 0 || !utf8.ValidString(got) {
			t.Errorf("sanitize(%d) = %q", max, got)
		}
		if max > len(" …") && !strings.HasSuffix(got, " …") {
			t.Errorf("sanitize(%d) = %q, want the ellipsis", max, got)
		}
	}
}
