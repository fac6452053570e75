package recallbench

import (
	"testing"
	"time"
)

func TestFmtDurFixedNotation(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{999700 * time.Nanosecond, "1000 µs"},
		{1500 * time.Nanosecond, "1.50 µs"},
		{42 * time.Microsecond, "42.0 µs"},
		{3200 * time.Microsecond, "3.20 ms"},
		{2 * time.Second, "2.00 s"},
	} {
		if got := fmtDur(c.d); got != c.want {
			t.Errorf("fmtDur(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
