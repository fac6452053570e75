package cli

import (
	"io"
	"strings"

	"golang.org/x/text/width"
)

// tableWidth is the width memctl's tables fit by default: an 80-column
// terminal. -w (--wide) lifts it.
const tableWidth = 80

// column describes one column of a fitted table.
type column struct {
	name string
	// min is the width a cell may be clipped down to (with "…"); 0 never
	// clips the column (ids, which are copied from the table).
	min int
	// drop, when > 0, lets the column go when the table does not fit
	// once clipped; the highest drop goes first.
	drop int
	// right aligns the column right (numbers).
	right bool
}

// fitTable writes rows under the columns' names, two spaces between
// columns, within maxWidth columns (0: no limit): clippable columns are
// shortened first, from the last column to the first, then droppable
// columns are left out. Cells are escaped already (esc, cell); the width
// of a cell counts East Asian wide characters as two.
func fitTable(w io.Writer, maxWidth int, cols []column, rows [][]string) error {
	return fitTableIndent(w, maxWidth, "", cols, rows)
}

// fitTableIndent is fitTable with every line after indent, within the
// same width.
func fitTableIndent(w io.Writer, maxWidth int, indent string, cols []column, rows [][]string) error {
	if maxWidth > 0 {
		maxWidth = max(maxWidth-textWidth(indent), 1)
	}
	shown := make([]bool, len(cols))
	natural := make([]int, len(cols))
	for i, c := range cols {
		shown[i] = true
		natural[i] = textWidth(c.name)
		for _, r := range rows {
			natural[i] = max(natural[i], textWidth(r[i]))
		}
	}
	widths := make([]int, len(cols))
	// fit clips the shown columns, from the last to the first, down to
	// their minimums, and reports whether the table then fits.
	fit := func() bool {
		copy(widths, natural)
		t, n := 0, 0
		for i := range cols {
			if shown[i] {
				t += widths[i]
				n++
			}
		}
		over := t + 2*max(n-1, 0) - maxWidth
		for i := len(cols) - 1; i >= 0 && over > 0; i-- {
			if !shown[i] || cols[i].min == 0 {
				continue
			}
			cut := min(over, widths[i]-max(cols[i].min, textWidth(cols[i].name)))
			if cut > 0 {
				widths[i] -= cut
				over -= cut
			}
		}
		return over <= 0
	}
	// Columns are dropped one at a time, each time fitting anew from the
	// natural widths, so what a dropped column frees goes back to the
	// clipped ones.
	for maxWidth > 0 && !fit() {
		drop := -1
		for i, c := range cols {
			if shown[i] && c.drop > 0 && (drop < 0 || c.drop > cols[drop].drop) {
				drop = i
			}
		}
		if drop < 0 {
			break // as narrow as it gets
		}
		shown[drop] = false
	}
	if maxWidth <= 0 {
		copy(widths, natural)
	}
	var b strings.Builder
	line := func(cells []string) {
		b.Reset()
		b.WriteString(indent)
		last := -1
		for i := range cols {
			if shown[i] {
				last = i
			}
		}
		first := true
		for i, c := range cols {
			if !shown[i] {
				continue
			}
			if !first {
				b.WriteString("  ")
			}
			first = false
			s := clipWidth(cells[i], widths[i])
			pad := widths[i] - textWidth(s)
			switch {
			case c.right:
				b.WriteString(strings.Repeat(" ", pad))
				b.WriteString(s)
			case i == last:
				b.WriteString(s)
			default:
				b.WriteString(s)
				b.WriteString(strings.Repeat(" ", pad))
			}
		}
		b.WriteByte('\n')
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	line(names)
	out := b.String()
	if _, err := io.WriteString(w, out); err != nil {
		return err
	}
	for _, r := range rows {
		line(r)
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// textWidth is the number of terminal columns s takes.
func textWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

func runeWidth(r rune) int {
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// clipWidth shortens s to n columns, ending in "…" when it was cut.
func clipWidth(s string, n int) string {
	if textWidth(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		rw := runeWidth(r)
		if used+rw > n-1 {
			break
		}
		b.WriteRune(r)
		used += rw
	}
	b.WriteString("…")
	return b.String()
}
