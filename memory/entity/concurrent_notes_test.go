package entity_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
	_ "github.com/stratamem/strata/vectorstore/pgvector"
)

// notesRace has writers goroutines in each of runtimes runtimes add notes
// to one resource-scoped entity, perCall notes per goroutine, and returns
// how many calls were answered ok and how many notes the store holds.
// Every runtime has its own layer (its own lock) over its own store
// handle, as separate processes would; they share the state store when
// shared is set.
func notesRace(t *testing.T, stores []*memory.Store, writers, calls int) (okCalls, errCalls int, stored map[string]bool) {
	t.Helper()
	ctx := context.Background()
	state := storage.NewMemory()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for r, st := range stores {
		l, err := entity.New(st, entity.Options{Common: memory.Common{Scope: core.ScopeResource}, MaxNotes: 1000})
		if err != nil {
			t.Fatal(err)
		}
		rt := memtest.Runtime(t, core.Config{Store: state, Layers: []core.AnyLayer{l}})
		for g := 0; g < writers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := rt.Start(ctx, core.RunOptions{ThreadID: fmt.Sprintf("t-%d-%d", r, g), ResourceID: "alice"})
				if err != nil {
					t.Error(err)
					return
				}
				defer s.Close(ctx)
				for i := 0; i < calls; i++ {
					note := fmt.Sprintf("note %d-%d-%d", r, g, i)
					out, _ := s.ExecuteTool(ctx, core.FunctionCall(fmt.Sprintf("c-%d-%d-%d", r, g, i), "entity/update",
						`{"entities":[{"name":"Ada","type":"person","notes":["`+note+`"]}]}`))

					mu.Lock()
					if strings.HasPrefix(out.Output, "ok") {
						okCalls++
					} else {
						errCalls++
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	recs, _, err := stores[0].Records.List(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Layer: "entity"}})
	if err != nil {
		t.Fatal(err)
	}
	stored = map[string]bool{}
	for _, r := range recs {
		for _, n := range strings.Split(strings.SplitN(r.Text, "): ", 2)[1], "; ") {
			stored[n] = true
		}
	}
	return okCalls, errCalls, stored
}

// Item 4 of "acknowledged means stored": concurrent notes to one entity
// are all kept, and every call is answered as what became of it.
func TestConcurrentNotesNoneLostNoneMisreported(t *testing.T) {
	t.Run("one runtime", func(t *testing.T) {
		st := memtest.NewStore(t, "", nil)
		ok, bad, stored := notesRace(t, []*memory.Store{st}, 8, 10)
		t.Logf("one runtime, 8 goroutines x 10: %d ok, %d errors, %d notes stored", ok, bad, len(stored))
		if ok != 80 || bad != 0 || len(stored) != 80 {
			t.Fatalf("%d ok, %d errors, %d of 80 notes stored", ok, bad, len(stored))
		}
	})
	t.Run("two runtimes embedded", func(t *testing.T) {
		st := memtest.NewStore(t, "", nil)
		st2 := &memory.Store{Records: st.Records, Embedder: st.Embedder}
		ok, bad, stored := notesRace(t, []*memory.Store{st, st2}, 4, 10)
		t.Logf("two runtimes on one embedded store, 4 goroutines x 10 each: %d ok, %d errors, %d notes stored", ok, bad, len(stored))
		if ok != len(stored) || bad != 0 {
			t.Fatalf("%d answered ok, %d errors, %d stored", ok, bad, len(stored))
		}
	})
	t.Run("two processes pgvector", func(t *testing.T) {
		dsn := os.Getenv("STRATA_TEST_PG_DSN")
		if dsn == "" {
			if os.Getenv("STRATA_REQUIRE_PG") == "1" {
				t.Fatal("STRATA_TEST_PG_DSN is not set but STRATA_REQUIRE_PG=1")
			}
			t.Skip("STRATA_TEST_PG_DSN is not set")
		}
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		url := fmt.Sprintf("%s%scollection=entity_race_%d", dsn, sep, os.Getpid())
		var stores []*memory.Store
		for range 2 {
			col, err := vectorstore.Open(context.Background(), url, &vectorstore.Options{Dimension: memtest.Dimension})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = col.Close() })
			stores = append(stores, &memory.Store{Records: col, Embedder: hashing.New(memtest.Dimension)})
		}
		ok, bad, stored := notesRace(t, stores, 4, 10)
		t.Logf("two pools (processes) on pgvector, 4 goroutines x 10 each: %d ok, %d errors, %d notes stored", ok, bad, len(stored))
		if ok != 80 || bad != 0 || len(stored) != 80 {
			t.Fatalf("%d ok, %d errors, %d of 80 notes stored", ok, bad, len(stored))
		}
	})
}
