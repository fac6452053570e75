package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/stratamem/strata/cmd/memctl/internal/termsafe"
	"github.com/stratamem/strata/vectorstore"
)

// newTable returns a tab-aligned writer; call Flush.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// writeJSON writes v as one JSON line. The JSON is exact, and safe on a
// terminal: encoding/json escapes the C0 controls, termsafe.JSON the
// others (DEL, C1, bidirectional controls).
func writeJSON(w io.Writer, v any) error {
	return encodeJSON(w, v, false)
}

// writeJSONIndent writes v as indented JSON (single objects).
func writeJSONIndent(w io.Writer, v any) error {
	return encodeJSON(w, v, true)
}

func encodeJSON(w io.Writer, v any, indent bool) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termsafe.JSON(buf.Bytes()))
	return err
}

// esc makes a value read from the store (or given by the operator) safe
// to print on one line: every control, bidirectional override and invalid
// byte becomes a visible escape (see package termsafe). Every
// human-readable output passes what it quotes through esc, cell, clip or
// escText.
func esc(s string) string { return termsafe.Escape(s) }

// escText is esc for a multi-line block: newlines and tabs are kept.
func escText(s string) string { return termsafe.Text(s) }

// clip puts s on one line (runs of white space become one space), escapes
// what is left that a terminal would act on, and shortens it to n runes.
func clip(s string, n int) string {
	s = esc(strings.Join(strings.Fields(s), " "))
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// cell makes a value safe for a tab-separated cell: "-" when empty, with
// tabs, newlines and every other control escaped.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return esc(s)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func fmtTimeFull(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// scopeCell renders a record's scope keys.
func scopeCell(s vectorstore.Scope) string {
	switch {
	case s.Thread != "" && s.Resource != "":
		return "thread=" + s.Thread + " resource=" + s.Resource
	case s.Thread != "":
		return "thread=" + s.Thread
	case s.Resource != "":
		return "resource=" + s.Resource
	}
	return "global"
}

// validity renders a record's validity interval.
func validity(r *vectorstore.Record) string {
	if r.ValidFrom.IsZero() && r.ValidTo.IsZero() {
		return "always"
	}
	from, to := "always", "now"
	if !r.ValidFrom.IsZero() {
		from = fmtTime(r.ValidFrom)
	}
	if !r.ValidTo.IsZero() {
		to = fmtTime(r.ValidTo)
	}
	return from + " .. " + to
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
