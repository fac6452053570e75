package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestDisabledWritesNothing(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, "x", 10, false, Options{})
	b.Add(5)
	b.Finish()
	if buf.Len() != 0 {
		t.Fatalf("disabled bar wrote %q", buf.String())
	}
	var nilBar *Bar
	nilBar.Add(1) // must not panic
	nilBar.Finish()
}

func TestEnabledRedrawsAndThrottles(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	b := New(&buf, "copy", 4, true, Options{Now: func() time.Time { return now }})
	b.Add(1)
	b.Add(1) // same instant: throttled
	if got := strings.Count(buf.String(), "\r"); got != 1 {
		t.Fatalf("want 1 draw, got %d: %q", got, buf.String())
	}
	now = now.Add(time.Second)
	b.Add(2)
	b.Finish()
	out := buf.String()
	if !strings.Contains(out, "4/4 100%") || !strings.HasSuffix(out, "\n") {
		t.Fatalf("final line wrong: %q", out)
	}
}

func TestIsTerminalOnPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(w) {
		t.Fatal("a pipe is not a terminal")
	}
	if IsTerminal(&bytes.Buffer{}) {
		t.Fatal("a buffer is not a terminal")
	}
}

func TestBytesUnit(t *testing.T) {
	b := New(nil, "import", 0, false, Options{Unit: "bytes"})
	b.Set(3 << 20)
	if l := b.Line(); !strings.Contains(l, "3.0MiB") {
		t.Fatalf("line %q", l)
	}
}

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		sep  string
		want string
	}{
		{0, "", "0B"},
		{1023, " ", "1023 B"},
		{1 << 10, "", "1.0KiB"},
		{3 << 20, " ", "3.0 MiB"},
		{5 << 29, "", "2.5GiB"},
	} {
		if got := Bytes(c.n, c.sep); got != c.want {
			t.Errorf("Bytes(%d, %q) = %q, want %q", c.n, c.sep, got, c.want)
		}
	}
}
