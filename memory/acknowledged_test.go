package memory_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/faulty"
	_ "github.com/stratamem/strata/vectorstore/pgvector"
)

// Acknowledged means stored: for every memory layer
// and every backend, a session call made while the store fails (or
// stalls past the hook's timeout) returns an error matching
// core.ErrNotStored, and every call that returned nil has its records in
// the store.

// backend opens a fault-injecting store on one engine.
type backend struct {
	name string
	open func(t *testing.T) (*memory.Store, *faulty.Collection)
}

var collectionSeq atomic.Int64

func backends(t *testing.T) []backend {
	bs := []backend{{"chromem", func(t *testing.T) (*memory.Store, *faulty.Collection) {
		return memtest.NewFaultyStore(t, "", nil)
	}}}
	dsn := os.Getenv("STRATA_TEST_PG_DSN")
	switch {
	case dsn != "":
		bs = append(bs, backend{"pgvector", func(t *testing.T) (*memory.Store, *faulty.Collection) {
			sep := "?"
			if strings.Contains(dsn, "?") {
				sep = "&"
			}
			name := fmt.Sprintf("ack_%d_%d", os.Getpid(), collectionSeq.Add(1))
			col, fc, err := faulty.Open(context.Background(), dsn+sep+"collection="+name, &vectorstore.Options{Dimension: memtest.Dimension})
			if err != nil {
				t.Fatal(err)
			}
			// The table stays: the test database is dropped with the server.
			t.Cleanup(func() { _ = col.Close() })
			return &memory.Store{Records: col, Embedder: hashing.New(memtest.Dimension)}, fc
		}})
	case os.Getenv("STRATA_REQUIRE_PG") == "1":
		t.Fatal("STRATA_TEST_PG_DSN is not set but STRATA_REQUIRE_PG=1")
	}
	return bs
}

// tally counts calls acknowledged (nil) and refused (ErrNotStored).
type tally struct{ acked, refused int }

func (c *tally) call(t *testing.T, what string, err error, wantRefused bool) {
	t.Helper()
	switch {
	case err == nil && !wantRefused:
		c.acked++
	case errors.Is(err, core.ErrNotStored) && wantRefused:
		c.refused++
		var we *core.WriteError
		if !errors.As(err, &we) || we.Layer == "" || we.Item == "" {
			t.Fatalf("%s: %v does not name layer and item", what, err)
		}
	default:
		t.Fatalf("%s: err = %v, want refused=%v", what, err, wantRefused)
	}
}

func count(t *testing.T, st *memory.Store, f vectorstore.Filter) int {
	t.Helper()
	n, err := st.Records.Count(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAcknowledgedMeansStored(t *testing.T) {
	injected := errors.New("disk full")
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Run("semantic", func(t *testing.T) {
				ctx := context.Background()
				st, fc := b.open(t)
				l, err := semantic.New(st, semantic.Options{Common: memory.Common{Scope: core.ScopeResource}, Mode: semantic.ModeLexical})
				if err != nil {
					t.Fatal(err)
				}
				rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{l}})
				s := memtest.Start(t, rt, core.RunOptions{ThreadID: "t1", ResourceID: "alice"})
				var c tally
				fc.FailWrites(injected)
				c.call(t, "Append while failing", s.Append(ctx, core.UserMessage("my locker code is 1234")), true)
				c.call(t, "Record while failing", s.Record(ctx, core.AssistantMessage("noted the locker code")), true)
				fc.FailWrites(nil)
				c.call(t, "Append healed", s.Append(ctx, core.UserMessage("and the gym is on Elm street")), false)
				c.call(t, "Complete", s.Complete(ctx, "ok"), false)
				if n := count(t, st, vectorstore.Filter{Layer: "semantic", Kind: semantic.KindMessage}); n != 3 {
					t.Fatalf("%d messages stored, want all 3 (%+v)", n, c)
				}
				// A store that stalls past the hook's timeout: unknown
				// outcome, not acknowledged; retried once it answers.
				l2 := l.Layer
				l2.Timeouts = core.Timeouts{core.HookOnItemAppend: 30 * time.Millisecond}
				rt = memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{l2}})
				s = memtest.Start(t, rt, core.RunOptions{ThreadID: "t2", ResourceID: "alice"})
				fc.SetWriteDelay(300 * time.Millisecond)
				c.call(t, "Append stalled", s.Append(ctx, core.UserMessage("the wifi password is hunter2")), true)
				fc.SetWriteDelay(0)
				time.Sleep(350 * time.Millisecond) // the abandoned hook finishes
				c.call(t, "Append after the stall", s.Append(ctx, core.UserMessage("thanks")), false)
				c.call(t, "Complete", s.Complete(ctx, "ok"), false)
				if n := count(t, st, vectorstore.Filter{Layer: "semantic", Kind: semantic.KindMessage, Thread: "t2"}); n != 2 {
					t.Fatalf("stalled thread: %d messages stored, want 2", n)
				}
				t.Logf("semantic: %d acknowledged, %d refused, all acknowledged stored", c.acked, c.refused)
			})

			t.Run("episodic", func(t *testing.T) {
				ctx := context.Background()
				st, fc := b.open(t)
				l, err := episodic.New(st, episodic.Options{})
				if err != nil {
					t.Fatal(err)
				}
				rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{l}})
				var c tally
				s := memtest.Start(t, rt, core.RunOptions{ThreadID: "t1", ResourceID: "alice"})
				_ = s.Append(ctx, core.UserMessage("plan the trip to Porto"))
				fc.FailWrites(injected)
				c.call(t, "Complete while failing", s.Complete(ctx, "ok"), true)
				fc.FailWrites(nil)
				s = memtest.Start(t, rt, core.RunOptions{ThreadID: "t2", ResourceID: "alice"})
				_ = s.Append(ctx, core.UserMessage("book the hotel in Porto"))
				c.call(t, "Complete healed", s.Complete(ctx, "ok"), false)
				if n := count(t, st, vectorstore.Filter{Layer: "episodic"}); n != c.acked {
					t.Fatalf("%d episodes stored, %d acknowledged", n, c.acked)
				}
			})

			t.Run("observations", func(t *testing.T) {
				ctx := context.Background()
				st, fc := b.open(t)
				l, err := observations.New(st, observations.Options{Common: memory.Common{Scope: core.ScopeResource}})
				if err != nil {
					t.Fatal(err)
				}
				rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{l}})
				s := memtest.Start(t, rt, core.RunOptions{ThreadID: "t1", ResourceID: "alice"})
				var c tally
				fc.FailWrites(injected)
				c.call(t, "Record while failing", s.Record(ctx, core.UserMessage("I'm allergic to peanuts.")), true)
				fc.FailWrites(nil)
				c.call(t, "Record healed", s.Record(ctx, core.UserMessage("I work at Acme.")), false)
				c.call(t, "Complete", s.Complete(ctx, "ok"), false)
				got, err := l.List(ctx, vectorstore.Scope{Resource: "alice"})
				if err != nil || len(got) != 1 || !strings.Contains(got[0].Text, "Acme") {
					t.Fatalf("stored %+v %v: want the acknowledged one only", got, err)
				}
			})

			t.Run("temporal", func(t *testing.T) {
				ctx := context.Background()
				st, fc := b.open(t)
				l, err := temporal.New(st, temporal.Options{Common: memory.Common{Scope: core.ScopeResource}, Extractor: temporal.Patterns{}})
				if err != nil {
					t.Fatal(err)
				}
				rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{l}})
				s := memtest.Start(t, rt, core.RunOptions{ThreadID: "t1", ResourceID: "alice"})
				var c tally
				fc.FailWrites(injected)
				c.call(t, "Record while failing", s.Record(ctx, core.UserMessage("I moved to Berlin.")), true)
				fc.FailWrites(nil)
				c.call(t, "Record healed", s.Record(ctx, core.UserMessage("I live in Lyon.")), false)
				c.call(t, "Complete", s.Complete(ctx, "ok"), false)
				if n := count(t, st, vectorstore.Filter{Layer: "temporal"}); n == 0 {
					t.Fatal("the acknowledged fact is not stored")
				}
			})

			t.Run("entity", func(t *testing.T) {
				ctx := context.Background()
				st, fc := b.open(t)
				l, err := entity.New(st, entity.Options{Common: memory.Common{Scope: core.ScopeResource}})
				if err != nil {
					t.Fatal(err)
				}
				rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{l}})
				s := memtest.Start(t, rt, core.RunOptions{ThreadID: "t1", ResourceID: "alice"})
				var c tally
				call := func(id, name string) core.Item {
					return core.FunctionCall(id, "updateEntities", `{"entities":[{"name":"`+name+`","type":"person","notes":["a friend"]}]}`)
				}
				fc.FailWrites(injected)
				c.call(t, "Record while failing", s.Record(ctx, call("c1", "Ada")), true)
				fc.FailWrites(nil)
				c.call(t, "Record healed", s.Record(ctx, call("c2", "Grace")), false)
				c.call(t, "Complete", s.Complete(ctx, "ok"), false)
				if n := count(t, st, vectorstore.Filter{Layer: "entity"}); n != 1 {
					t.Fatalf("%d entities stored, want the acknowledged one", n)
				}
			})

			t.Run("scratchpad", func(t *testing.T) {
				ctx := context.Background()
				st, fc := b.open(t)
				l, err := scratchpad.New(st, scratchpad.Options{})
				if err != nil {
					t.Fatal(err)
				}
				rt := memtest.Runtime(t, core.Config{Layers: []core.AnyLayer{l}})
				s := memtest.Start(t, rt, core.RunOptions{ThreadID: "t1", ResourceID: "alice"})
				fc.FailWrites(injected)
				out, err := s.ExecuteTool(ctx, core.FunctionCall("c1", "scratchpad/update", `{"set":{"plan":"call the bank"}}`))
				if err == nil || !strings.HasPrefix(out.Output, "error:") {
					t.Fatalf("a failed write answered %q, %v", out.Output, err)
				}
				if !errors.Is(err, core.ErrNotStored) {
					t.Fatalf("err = %v, want ErrNotStored", err)
				}
				fc.FailWrites(nil)
				if n := count(t, st, vectorstore.Filter{Layer: "scratchpad"}); n != 0 {
					t.Fatalf("%d notes stored after a refused write", n)
				}
			})
		})
	}
}
