package procinfo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestField(t *testing.T) {
	p := filepath.Join(t.TempDir(), "info")
	if err := os.WriteFile(p, []byte("a: 1\nmodel name\t: Test CPU\nmodel name: second\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Field(p, "model name"); got != "Test CPU" {
		t.Fatalf("Field = %q", got)
	}
	if got := Field(p, "missing"); got != "" {
		t.Fatalf("missing key = %q", got)
	}
	if got := Field(filepath.Join(t.TempDir(), "none"), "a"); got != "" {
		t.Fatalf("missing file = %q", got)
	}
}
