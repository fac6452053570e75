package exportfmt_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stratamem/strata/cmd/memctl/internal/exportfmt"
)

const header = `{"memctl_export":1,"embedder":"hash-2","dimension":2,"distance":"dot"}`

// readAll reads every item: headers are "H", records their ids, errors
// "E<line>".
func readAll(t *testing.T, in string) []string {
	t.Helper()
	r := exportfmt.NewReader(strings.NewReader(in))
	var out []string
	for {
		it, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		var le *exportfmt.LineError
		switch {
		case errors.As(err, &le):
			out = append(out, "E"+string(rune('0'+le.Line)))
		case err != nil:
			t.Fatal(err)
		case it.Header != nil:
			out = append(out, "H")
		default:
			out = append(out, it.Record.ID)
		}
	}
}

// The header is the first non-blank line, wherever blank lines put it;
// after a record (or a bad line) it is refused.
func TestHeaderIsFirstNonBlankLine(t *testing.T) {
	for in, want := range map[string]string{
		header + "\n{\"id\":\"a\"}\n":                "H a",
		"\n" + header + "\n{\"id\":\"a\"}\n":         "H a",
		"  \n\r\n\t\n" + header + "\n{\"id\":\"a\"}": "H a",
		"{\"id\":\"a\"}\n" + header + "\n":           "a E2",
		"\n{\"id\":\"a\"}\n\n" + header + "\n":       "a E4",
		"not json\n" + header + "\n":                 "E1 E2",
	} {
		if got := strings.Join(readAll(t, in), " "); got != want {
			t.Errorf("%q: read %q, want %q", in, got, want)
		}
	}
}
