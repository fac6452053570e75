package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal (an *os.File on a tty).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Bar draws one progress line on a terminal, redrawn in place with '\r'.
// A disabled Bar (or a nil one) does nothing, so callers need no checks
// when output is piped. It is not safe for concurrent use.
type Bar struct {
	w       io.Writer
	label   string
	unit    string
	total   int64
	n       int64
	start   time.Time
	last    time.Time
	width   int
	drawn   bool
	enabled bool
	now     func() time.Time
}

// Options configure a Bar.
type Options struct {
	// Unit follows the counts, e.g. "records" or "bytes" (bytes are shown
	// in KiB/MiB).
	Unit string
	// Width of the bar in cells; 0 means 30.
	Width int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// New returns a bar writing to w when enabled. total 0 means unknown: the
// line then shows the count and the rate only.
func New(w io.Writer, label string, total int64, enabled bool, opts Options) *Bar {
	b := &Bar{w: w, label: label, total: total, enabled: enabled && w != nil, unit: opts.Unit, width: opts.Width, now: opts.Now}
	if b.width <= 0 {
		b.width = 30
	}
	if b.now == nil {
		b.now = time.Now
	}
	b.start = b.now()
	return b
}

// SetTotal changes the total (e.g. once it is known).
func (b *Bar) SetTotal(total int64) {
	if b != nil {
		b.total = total
	}
}

// Add advances the count by n and redraws at most ten times a second.
func (b *Bar) Add(n int) {
	if b == nil {
		return
	}
	b.Set(b.n + int64(n))
}

// Set sets the count and redraws at most ten times a second.
func (b *Bar) Set(n int64) {
	if b == nil {
		return
	}
	b.n = n
	if !b.enabled {
		return
	}
	now := b.now()
	if b.drawn && now.Sub(b.last) < 100*time.Millisecond {
		return
	}
	b.last = now
	b.draw(now)
}

// Finish draws the final state and ends the line.
func (b *Bar) Finish() {
	if b == nil || !b.enabled {
		return
	}
	b.draw(b.now())
	fmt.Fprint(b.w, "\n")
	b.enabled = false
}

// Clear erases the line (before an error message, say).
func (b *Bar) Clear() {
	if b == nil || !b.enabled || !b.drawn {
		return
	}
	fmt.Fprint(b.w, "\r\x1b[K")
	b.drawn = false
}

// Line renders the bar's current line (without '\r'), for tests.
func (b *Bar) Line() string { return b.render(b.now()) }

func (b *Bar) draw(now time.Time) {
	fmt.Fprint(b.w, "\r\x1b[K"+b.render(now))
	b.drawn = true
}

func (b *Bar) render(now time.Time) string {
	var s strings.Builder
	s.WriteString(b.label)
	el := now.Sub(b.start)
	rate := 0.0
	if el > 0 {
		rate = float64(b.n) / el.Seconds()
	}
	if b.total > 0 {
		frac := float64(b.n) / float64(b.total)
		frac = min(max(frac, 0), 1)
		full := int(frac * float64(b.width))
		s.WriteString(" [")
		s.WriteString(strings.Repeat("=", full))
		if full < b.width {
			s.WriteString(">")
			s.WriteString(strings.Repeat(" ", b.width-full-1))
		}
		fmt.Fprintf(&s, "] %s/%s %3.0f%%", b.count(b.n), b.count(b.total), frac*100)
		if rate > 0 && b.n < b.total {
			eta := time.Duration(float64(b.total-b.n) / rate * float64(time.Second))
			fmt.Fprintf(&s, " ETA %s", eta.Round(time.Second))
		}
	} else {
		fmt.Fprintf(&s, " %s", b.count(b.n))
	}
	if rate > 0 {
		fmt.Fprintf(&s, " %s/s", b.count(int64(rate)))
	}
	return s.String()
}

func (b *Bar) count(n int64) string {
	if b.unit == "bytes" {
		return Bytes(n, "")
	}
	if b.unit != "" {
		return fmt.Sprintf("%d %s", n, b.unit)
	}
	return fmt.Sprint(n)
}

// Bytes formats a size of n bytes in GiB, MiB or KiB with one decimal,
// or in B, with sep between the number and the unit.
func Bytes(n int64, sep string) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f%sGiB", float64(n)/(1<<30), sep)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f%sMiB", float64(n)/(1<<20), sep)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f%sKiB", float64(n)/(1<<10), sep)
	}
	return fmt.Sprintf("%d%sB", n, sep)
}
