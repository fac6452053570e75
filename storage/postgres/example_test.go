package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/postgres"
)

// Two runs of one resource share state in PostgreSQL; the second writer's
// compare-and-swap fails instead of overwriting, so it re-reads and merges.
// The DSN comes from scripts/pg.sh up (TestExample runs this example).
func Example() {
	ctx := context.Background()
	s, err := postgres.Open(ctx, os.Getenv("STRATA_TEST_PG_DSN"), postgres.Options{Table: "strata_state_example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	key := storage.Key{Scope: "resource", ScopeID: "user-7", Layer: "profile", Name: "state"}
	if e, err := s.Get(ctx, key); err == nil { // start from a clean slate
		_ = s.Delete(ctx, key, e.Revision)
	}

	rev, err := s.Put(ctx, key, []byte("v1"), 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Both runs read revision rev.
	_, errA := s.Put(ctx, key, []byte("v2 from run A"), rev)
	_, errB := s.Put(ctx, key, []byte("v2 from run B"), rev)
	fmt.Println(errA == nil, errors.Is(errB, storage.ErrConflict))

	var ce *storage.ConflictError
	if errors.As(errB, &ce) {
		e, _ := s.Get(ctx, key) // run B re-reads and merges
		if _, err := s.Put(ctx, key, append(e.Value, " + B"...), ce.Actual); err != nil {
			fmt.Println(err)
		}
	}
	e, _ := s.Get(ctx, key)
	fmt.Println(string(e.Value))
}

// captureStdout returns what fn prints.
func captureStdout(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	func() {
		defer func() { os.Stdout = old }()
		fn()
	}()
	w.Close()
	out := <-done
	r.Close()
	return string(out)
}
