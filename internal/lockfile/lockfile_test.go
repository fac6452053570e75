package lockfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHolderRoundTrip(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "LOCK"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := Holder(f); got != 0 {
		t.Fatalf("empty file: holder %d", got)
	}
	if _, err := f.WriteString("123456789012\n"); err != nil {
		t.Fatal(err)
	}
	WriteHolder(f)
	if got := Holder(f); got != os.Getpid() {
		t.Fatalf("holder %d, want %d", got, os.Getpid())
	}
	if err := os.WriteFile(f.Name(), []byte("not a pid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Holder(f); got != 0 {
		t.Fatalf("garbage: holder %d", got)
	}
}
