package exportfmt_test

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/stratamem/strata/exportfmt"
	"github.com/stratamem/strata/storage"
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

// TestStateLines: a state line round-trips any value byte for byte (JSON
// or not, empty included), is told apart from records, and a bad one is
// a *LineError naming the line; Scan counts them and finds repeated keys.
func TestStateLines(t *testing.T) {
	k := storage.Key{Scope: "thread", ScopeID: "alice\x1fmain", Layer: "todo", Name: "state"}
	vals := [][]byte{[]byte(`{"items":["a"]}`), {0, 0xff, '\n', 0x1b}, {}}
	var buf bytes.Buffer
	w := exportfmt.NewWriter(&buf)
	if err := w.Write(&vectorstore.Record{ID: "r1", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		k := k
		k.Name = string(rune('a' + i))
		if err := w.WriteState(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteState(storage.Key{Scope: "thread", Layer: "x", Name: "y"}, nil); !errors.Is(err, storage.ErrInvalidKey) {
		t.Errorf("a key without its scope id: %v", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if w.Count() != 1 || w.StateCount() != 3 {
		t.Errorf("counts %d, %d", w.Count(), w.StateCount())
	}
	r := exportfmt.NewReader(bytes.NewReader(buf.Bytes()))
	if it, err := r.Next(); err != nil || it.Record == nil || it.Record.ID != "r1" {
		t.Fatalf("first line: %+v, %v", it, err)
	}
	for i, v := range vals {
		it, err := r.Next()
		if err != nil || it.State == nil {
			t.Fatalf("state line %d: %+v, %v", i, it, err)
		}
		want := k
		want.Name = string(rune('a' + i))
		if it.State.Key.Key() != want || !bytes.Equal(it.State.Value, v) {
			t.Errorf("state line %d: %+v %q, want %+v %q", i, it.State.Key, it.State.Value, want, v)
		}
	}
	for in, want := range map[string]string{
		`{"state":{"scope":"thread","scope_id":"t","layer":"l","name":"n"}}`:                         `no "value"`,
		`{"state":{"scope":"thread","layer":"l","name":"n"},"value":""}`:                             "needs a scope id",
		`{"state":{"scope":"thread","scope_id":"t","layer":"l","name":"n"},"value":"!!"}`:            "state line",
		`{"state":{"scope":"thread","scope_id":"t","layer":"l","name":"n"},"value":"","revision":3}`: "revision",
	} {
		_, err := exportfmt.NewReader(strings.NewReader(in)).Next()
		var le *exportfmt.LineError
		if !errors.As(err, &le) || le.Line != 1 || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a line 1 error mentioning %q", in, err, want)
		}
	}
	dup := buf.String() + `{"state":{"scope":"thread","scope_id":"alice\u001fmain","layer":"todo","name":"a"},"value":""}` + "\n"
	sum, err := exportfmt.Scan(strings.NewReader(dup), nil)
	if err != nil || sum.Records != 1 || sum.States != 4 || len(sum.DuplicateStates) != 1 || sum.DuplicateStates[0].Lines != [2]int{2, 5} {
		t.Errorf("scan: %+v, %v", sum, err)
	}
}

// TestReadsVersionOne: an export of format 1 (before state lines) reads;
// a format from the future is refused by name.
func TestReadsVersionOne(t *testing.T) {
	if got := strings.Join(readAll(t, header+"\n{\"id\":\"a\"}\n"), " "); got != "H a" {
		t.Errorf("version 1: %s", got)
	}
	_, err := exportfmt.NewReader(strings.NewReader(`{"memctl_export":3,"dimension":2}`)).Next()
	if err == nil || !strings.Contains(err.Error(), "export format 3 is not supported") {
		t.Errorf("version 3: %v", err)
	}
}
