package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/stratamem/strata/vectorstore"
)

// newTable returns a tab-aligned writer; call Flush.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// writeJSON writes v as one JSON line.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeJSONIndent writes v as indented JSON (single objects).
func writeJSONIndent(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// clip puts s on one line and shortens it to n runes.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// cell makes a value safe for a tab-separated cell.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
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
