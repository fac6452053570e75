package filestore_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/filestore"
)

func Example() {
	dir, err := os.MkdirTemp("", "strata-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	s, err := filestore.Open(dir, filestore.Options{})
	if err != nil {
		panic(err)
	}
	key := storage.Key{Scope: "thread", ScopeID: "t-42", Layer: "scratchpad", Name: "state"}

	rev, _ := s.Put(ctx, key, []byte(`{"notes":[]}`), 0) // create
	_, err = s.Put(ctx, key, []byte(`{"notes":["lost"]}`), 0)
	fmt.Println(errors.Is(err, storage.ErrConflict)) // someone else's create would not be overwritten
	rev, _ = s.Put(ctx, key, []byte(`{"notes":["a"]}`), rev)
	s.Close()

	// A later run (or another process) sees every acknowledged write.
	s, _ = filestore.Open(dir, filestore.Options{})
	defer s.Close()
	e, _ := s.Get(ctx, key)
	fmt.Println(string(e.Value), e.Revision == rev)
	// Output:
	// true
	// {"notes":["a"]} true
}
