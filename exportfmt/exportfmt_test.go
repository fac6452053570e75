package exportfmt_test

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/stratamem/strata/exportfmt"
	"github.com/stratamem/strata/vectorstore"
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

// TestWriteControlsExact: a record holding terminal controls is written
// with none of them raw (an export to stdout fires nothing on a terminal)
// and reads back exactly.
func TestWriteControlsExact(t *testing.T) {
	planted := "\x1b]0;pwned\x07\x1b[2J\r\x7f\u009b2J\u202eevil\u2066\u2028"
	in := vectorstore.Record{ID: "id\x1b[1m", Layer: "observations", Text: planted,
		Scope:    vectorstore.Scope{Thread: "t\u009d1"},
		Metadata: map[string]string{"note": planted}}
	var buf bytes.Buffer
	w := exportfmt.NewWriter(&buf)
	if err := w.Write(&in); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, r := range buf.String() {
		if r != '\n' && (r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x2028) {
			t.Fatalf("export holds %U raw: %q", r, buf.String())
		}
	}
	it, err := exportfmt.NewReader(&buf).Next()
	if err != nil {
		t.Fatal(err)
	}
	got := it.Record
	if got.ID != in.ID || got.Text != in.Text || got.Scope != in.Scope || got.Metadata["note"] != planted {
		t.Errorf("read back %+v, want %+v", got, in)
	}
}

// TestWriteNoRevision: the store's revision is not part of an export.
func TestWriteNoRevision(t *testing.T) {
	var buf bytes.Buffer
	w := exportfmt.NewWriter(&buf)
	r := vectorstore.Record{ID: "a", Text: "x", Revision: 7}
	if err := w.Write(&r); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "revision") || r.Revision != 7 {
		t.Errorf("export %s (record revision now %d)", buf.String(), r.Revision)
	}
}

func TestDuplicates(t *testing.T) {
	in := `{"memctl_export":1,"dimension":0}
{"id":"a","text":"1"}
{"id":"b","text":"2"}
not json
{"id":"a","text":"3"}
{"id":"bad id","text":"4"}
{"id":"bad id","text":"5"}
{"id":"a","text":"6"}
{"id":"b","text":"7"}
`
	dups, err := exportfmt.Duplicates(strings.NewReader(in), func(id string) bool { return strings.Contains(id, " ") })
	want := []exportfmt.Duplicate{{ID: "a", Lines: [2]int{2, 5}}, {ID: "b", Lines: [2]int{3, 9}}}
	if err != nil || !reflect.DeepEqual(dups, want) {
		t.Fatalf("Duplicates = %+v, %v; want %+v", dups, err, want)
	}
}
