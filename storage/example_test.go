package storage_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratamem/strata/storage"
)

// Two runs of one resource read the same state; the second writer's
// compare-and-swap fails instead of overwriting, so it re-reads and retries.
func Example() {
	ctx := context.Background()
	s := storage.NewMemory()
	defer s.Close()
	key := storage.Key{Scope: "resource", ScopeID: "user-7", Layer: "profile", Name: "state"}

	rev, _ := s.Put(ctx, key, []byte("v1"), 0)

	// Both runs read revision rev.
	_, errA := s.Put(ctx, key, []byte("v2 from run A"), rev)
	_, errB := s.Put(ctx, key, []byte("v2 from run B"), rev)
	fmt.Println(errA == nil, errors.Is(errB, storage.ErrConflict))

	var ce *storage.ConflictError
	if errors.As(errB, &ce) {
		e, _ := s.Get(ctx, key) // run B re-reads and merges
		_, err := s.Put(ctx, key, append(e.Value, " + B"...), ce.Actual)
		fmt.Println(err)
	}
	e, _ := s.Get(ctx, key)
	fmt.Println(string(e.Value))
	// Output:
	// true true
	// <nil>
	// v2 from run A + B
}
