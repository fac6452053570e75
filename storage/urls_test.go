package storage_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/filestore"
	_ "github.com/stratamem/strata/storage/postgres"
)

func TestOpenURL(t *testing.T) {
	ctx := context.Background()
	key := storage.Key{Scope: "global", Layer: "l", Name: "state"}
	dir := filepath.Join(t.TempDir(), "state")

	// A directory path and the file URL of it open the same filestore.
	st, err := storage.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*filestore.Store); !ok {
		t.Fatalf("a directory opened %T", st)
	}
	rev, err := st.Put(ctx, key, []byte("v"), 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	for _, u := range []string{"file://" + filepath.ToSlash(dir), "file://localhost" + filepath.ToSlash(dir)} {
		st, err := storage.Open(ctx, u)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if e, err := st.Get(ctx, key); err != nil || string(e.Value) != "v" || e.Revision != rev {
			t.Errorf("%s: Get = %+v, %v", u, e, err)
		}
		_ = st.Close()
	}

	// mem:// is a fresh Memory each time.
	m, err := storage.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*storage.Memory); !ok {
		t.Fatalf("mem:// opened %T", m)
	}
	_ = m.Close()

	for _, tc := range []struct{ url, want string }{
		{"", "empty"},
		{"redis://localhost", `no state-store driver for scheme "redis"`},
		{"file://otherhost/x", "host"},
		{"file:///x?sync=0", "no parameters"},
		{"mem://?x=1", "mem://"},
		{"postgres://u:secret@127.0.0.1:1/db?collection=a;b", "malformed query"},
		{"postgres://u:secret@127.0.0.1:1/db?collection=a&collection=b", "given 2 times"},
		{"postgres://u:secret@127.0.0.1:1/db?dimension=x", `"dimension"`},
		{"postgres://u:secret@127.0.0.1:1/db?distance=hamming", `"distance"`},
		{"postgres://u:secret@127.0.0.1:1/db?timeout=-1s", `"timeout"`},
	} {
		_, err := storage.Open(ctx, tc.url)
		if !errors.Is(err, storage.ErrInvalidURL) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) = %v, want ErrInvalidURL mentioning %q", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q): the error shows the password: %v", tc.url, err)
		}
	}
	if got := strings.Join(storage.Schemes(), ","); got != "file,mem,postgres,postgresql" {
		t.Errorf("Schemes = %s", got)
	}
}
