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

// Erasing everything kept about one resource: a store that implements
// Lister enumerates the resource's keys, and each is deleted at the
// revision just read.
func ExampleLister() {
	ctx := context.Background()
	var s storage.Store = storage.NewMemory()
	defer s.Close()
	for _, k := range []storage.Key{
		{Scope: "resource", ScopeID: "alice", Layer: "profile", Name: "state"},
		{Scope: "resource", ScopeID: "alice", Layer: "entity", Name: "state"},
		{Scope: "resource", ScopeID: "bob", Layer: "profile", Name: "state"},
	} {
		_, _ = s.Put(ctx, k, []byte("{}"), 0)
	}
	l, ok := s.(storage.Lister)
	if !ok {
		return // this store cannot enumerate
	}
	keys, _ := l.Keys(ctx, "resource", "alice")
	for _, k := range keys {
		fmt.Println(k)
		if e, err := s.Get(ctx, k); err == nil {
			_ = s.Delete(ctx, k, e.Revision)
		}
	}
	left, _ := l.Keys(ctx, "resource", "alice")
	bob, _ := l.Keys(ctx, "resource", "bob")
	fmt.Println(len(left), len(bob))
	// Output:
	// resource/alice/entity/state
	// resource/alice/profile/state
	// 0 1
}

// Finding every thread of one resource: thread state lives under
// ThreadScopeID(resource, thread), so the scope ids that start with
// ThreadScopeID(resource, "") are the resource's threads, and only them.
func ExampleScopeLister() {
	ctx := context.Background()
	var s storage.Store = storage.NewMemory()
	defer s.Close()
	for _, id := range []string{
		storage.ThreadScopeID("alice", "main"),
		storage.ThreadScopeID("alice", "work"),
		storage.ThreadScopeID("alicia", "main"),
		storage.ThreadScopeID("", "alice"), // a thread of no resource
	} {
		_, _ = s.Put(ctx, storage.Key{Scope: "thread", ScopeID: id, Layer: "notes", Name: "state"}, []byte("{}"), 0)
	}
	sl, ok := s.(storage.ScopeLister)
	if !ok {
		return // this store cannot enumerate scope ids
	}
	ids, _ := sl.ScopeIDs(ctx, "thread", storage.ThreadScopeID("alice", ""))
	for _, id := range ids {
		_, thread := storage.SplitThreadScopeID(id)
		fmt.Println(thread)
	}
	// Output:
	// main
	// work
}
