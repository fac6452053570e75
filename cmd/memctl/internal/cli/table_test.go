package cli

import (
	"strings"
	"testing"
	"time"
)

func TestFitTable(t *testing.T) {
	cols := []column{{name: "ID"}, {name: "LAYER", min: 6, drop: 1}, {name: "KIND", drop: 2}, {name: "TEXT", min: 10}}
	rows := [][]string{{"id-0123456789", "observations", "observation", strings.Repeat("x", 100)}, {"id-1", "日本語のレイヤー", "k", "short"}}
	var b strings.Builder
	if err := fitTable(&b, 40, cols, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("lines %q", lines)
	}
	for _, l := range lines {
		if w := textWidth(l); w > 40 {
			t.Errorf("line of %d columns: %q", w, l)
		}
	}
	// KIND is left out first; the ids stay whole; the text is cut with …
	if strings.Contains(lines[0], "KIND") || !strings.Contains(lines[1], "id-0123456789") || !strings.HasSuffix(lines[1], "…") {
		t.Errorf("fitted:\n%s", b.String())
	}
	b.Reset()
	if err := fitTable(&b, 0, cols, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "KIND") || !strings.Contains(b.String(), strings.Repeat("x", 100)) {
		t.Errorf("unlimited:\n%s", b.String())
	}
	// Wide characters count twice.
	if textWidth("日本") != 4 || clipWidth("日本語", 5) != "日本…" {
		t.Errorf("wide: %d %q", textWidth("日本"), clipWidth("日本語", 5))
	}
}

func TestFmtLatency(t *testing.T) {
	for d, want := range map[time.Duration]string{
		999700 * time.Nanosecond: "1.00 ms",
		999 * time.Microsecond:   "999 µs",
		12345 * time.Nanosecond:  "12.3 µs",
		1500 * time.Nanosecond:   "1.50 µs",
		2500 * time.Millisecond:  "2.50 s",
		150 * time.Millisecond:   "150 ms",
	} {
		if got := fmtLatency(d); got != want {
			t.Errorf("fmtLatency(%v) = %q, want %q", d, got, want)
		}
	}
}
