package cli

import (
	"errors"
	"fmt"
	"github.com/stratamem/strata/embed/uselite"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/vectorstore"
)

func TestParseStoreRef(t *testing.T) {
	for in, want := range map[string]storeRef{
		"./data":                          {Dir: "data"},
		"/var/lib/strata":                 {Dir: "/var/lib/strata"},
		"file:///var/lib/strata":          {Dir: "/var/lib/strata"},
		"postgres://u@h/db?collection=x":  {URL: "postgres://u@h/db?collection=x", Scheme: "postgres"},
		"postgresql://u@h/db":             {URL: "postgresql://u@h/db", Scheme: "postgres"},
		"qdrant://localhost:6334":         {URL: "qdrant://localhost:6334", Scheme: "qdrant"},
		"chromem:///tmp/x?collection=abc": {URL: "chromem:///tmp/x?collection=abc", Scheme: "chromem"},
	} {
		got, err := parseStoreRef(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got.Dir != filepath.Clean(want.Dir) && want.Dir != "" || got.URL != want.URL || got.Scheme != want.Scheme {
			t.Errorf("%s: got %+v want %+v", in, got, want)
		}
	}
	for _, bad := range []string{"", "mysql://h/db", "file://host/x"} {
		if _, err := parseStoreRef(bad); !errors.Is(err, ErrUsage) {
			t.Errorf("%q: want a usage error, got %v", bad, err)
		}
	}
	if s := redactURL("postgres://u:secret@h/db"); strings.Contains(s, "secret") {
		t.Errorf("password shown: %s", s)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:secret@h:5432/db?collection=x":                "postgres://u:xxxxx@h:5432/db?collection=x",
		"postgres://u@h/db?password=secret&sslmode=disable":         "postgres://u@h/db?password=xxxxx&sslmode=disable",
		"postgres://u@h/db?sslmode=verify-full&SSLPassword=secret":  "postgres://u@h/db?sslmode=verify-full&SSLPassword=xxxxx",
		"qdrant://h:6334?collection=m&api_key=secret":               "qdrant://h:6334?collection=m&api_key=xxxxx",
		"qdrant://h:6334?APIKEY=secret&Token=secret&collection=m":   "qdrant://h:6334?APIKEY=xxxxx&Token=xxxxx&collection=m",
		"qdrant://h:6334?api%5Fkey=secret":                          "qdrant://h:6334?api%5Fkey=xxxxx",
		"postgres://u:secret@h/db?password=secret&token=secret&x=y": "postgres://u:xxxxx@h/db?password=xxxxx&token=xxxxx&x=y",
		"postgres://u:secret@h:5432/db%zz?password=secret":          "postgres://<redacted>",
		"qdrant://h:6334?collection=m&api_key=secret%":              "qdrant://h:6334?collection=m&api_key=xxxxx",
		"postgres://u:pa ss@h/db":                                   "postgres://<redacted>",
		"chromem:///tmp/x?collection=abc":                           "chromem:///tmp/x?collection=abc",
		"postgres://u@h/db":                                         "postgres://u@h/db",
		"::secret::":                                                "<redacted>",
	} {
		got := redactURL(in)
		if got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(got, "secret") {
			t.Errorf("redactURL(%q) shows the secret: %q", in, got)
		}
	}
	// Every message that names a store goes through redactURL.
	for _, raw := range []string{"postgres://u:secret@h/db?password=secret", "qdrant://h:6334?api_key=secret"} {
		ref, err := parseStoreRef(raw)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(ref.String(), "secret") || strings.Contains(fmt.Sprint(ref), "secret") {
			t.Errorf("storeRef shows the secret: %s", ref)
		}
	}
	for _, raw := range []string{"postgres://u:secret@h/db%zz", "file://u:secret@host/x"} {
		_, err := parseStoreRef(raw)
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("parseStoreRef(%q): error %v shows the secret or is nil", raw, err)
		}
	}
}

func TestParseTimeFlag(t *testing.T) {
	now := time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-01-02":                time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC),
		"2026-01-02T03:04:05Z":      time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		"2026-01-02T03:04:05+02:00": time.Date(2026, 1, 2, 1, 4, 5, 0, time.UTC),
		"24h":                       now.Add(-24 * time.Hour),
		"7d":                        now.Add(-7 * 24 * time.Hour),
		"2w":                        now.Add(-14 * 24 * time.Hour),
		"now":                       now,
	} {
		got, err := parseTimeFlag("--since", in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("%s: got %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-3d", "2026-13-01"} {
		if _, err := parseTimeFlag("--since", bad, now); !errors.Is(err, ErrUsage) {
			t.Errorf("%q: want a usage error, got %v", bad, err)
		}
	}
}

func TestExitCodeAndMessage(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
	}{
		{nil, 0},
		{usageErrorf("x"), 2},
		{&memory.RecordError{Field: "text", Msg: "empty"}, 2},
		{notFoundf("x"), 3},
		{fmt.Errorf("wrapped: %w", &vectorstore.Error{Code: vectorstore.CodeNotFound}), 3},
		{fmt.Errorf("%w at d", ErrNoStore), 3},
		// A --state directory that does not exist fails rm as a runtime error.
		{fmt.Errorf("nothing deleted (%w: %w)", ErrStateStore, notFoundf("no state store at d")), 1},
		{&vectorstore.Error{Code: vectorstore.CodeDimensionMismatch}, 1},
		{errors.New("boom"), 1},
	} {
		if got := ExitCode(c.err); got != c.code {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.code)
		}
	}
	if m := Message(usageErrorf("first\nsecond\n\nthird")); m != "first; second; third" {
		t.Errorf("Message: %q", m)
	}
	// The classifying prefixes go; the same words inside a message stay.
	for err, want := range map[error]string{
		notFoundf("no record x"):                                       "no record x",
		fmt.Errorf("show: %w", notFoundf("no record x")):               "show: no record x",
		fmt.Errorf("%w: no model.json in d", uselite.ErrModelNotFound): "uselite: model not found: no model.json in d (or pass --embedder hash:DIM, openai:MODEL or ollama:MODEL)",
	} {
		if m := Message(err); m != want {
			t.Errorf("Message(%v) = %q, want %q", err, m, want)
		}
	}
}

func TestRecordsEqual(t *testing.T) {
	a := vectorstore.Record{ID: "x", Text: "t", Vector: []float32{1, 2}, Metadata: map[string]string{"k": "v"}}
	b := a.Clone()
	if !recordsEqual(&a, &b) {
		t.Fatal("clone differs")
	}
	b.Metadata["k"] = "w"
	if recordsEqual(&a, &b) {
		t.Fatal("metadata change not seen")
	}
	c := a.Clone()
	c.Vector[1] = 2.0000002
	if recordsEqual(&a, &c) || !environment.SameRecord(&a, &c) {
		t.Fatal("vectors: strict for import, within rounding for migrate")
	}
}

// TestCellsEscape: the helpers every table and listing uses print no
// control, and clip counts and cuts after escaping.
func TestCellsEscape(t *testing.T) {
	for in, want := range map[string]string{
		"":                          "-",
		"a\tb\nc\rd":                `a\tb\nc\rd`,
		"x\x1b]0;t\x07\u009b\u202e": `x\x1b]0;t\x07\u009b\u202e`,
		"carol\x1fmain":             `carol\x1fmain`,
	} {
		if got := cell(in); got != want {
			t.Errorf("cell(%q) = %q, want %q", in, got, want)
		}
	}
	if got := clip("  two\n\twords\x1b[2J  ", 0); got != `two words\x1b[2J` {
		t.Errorf("clip = %q", got)
	}
	if got := clip("ab\x1b[2Jcdef", 6); got != `ab\x1…` {
		t.Errorf("clip 6 = %q", got)
	}
	var b strings.Builder
	if err := writeJSON(&b, map[string]string{"t": "\x1b\u009b\u202e\x7f"}); err != nil || b.String() != `{"t":"\u001b\u009b\u202e\u007f"}`+"\n" {
		t.Errorf("writeJSON = %q, %v", b.String(), err)
	}
	for in, want := range map[string]string{"main": "main", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", "t-1.x@y": "t-1.x@y"} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
