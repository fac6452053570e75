package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/vectorstore"
)

func TestOpenReopenAndMismatch(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	env, err := embedded.Open(ctx, dir, embedded.Options{Embedder: hashing.New(64)})
	if err != nil {
		t.Fatal(err)
	}
	vecs, _ := env.Memory.Embedder.Embed(ctx, []string{"hello"})
	if err := env.Memory.Records.Upsert(ctx, vectorstore.Record{ID: "r1", Layer: "x", Text: "hello", Vector: vecs[0]}); err != nil {
		t.Fatal(err)
	}
	rt, _ := core.NewRuntime(core.Config{Store: env.State, Layers: []core.AnyLayer{core.Layer[int]{ID: "n", Scope: core.ScopeGlobal}}})
	s, _ := rt.Start(ctx, core.RunOptions{})
	if err := core.SetState(ctx, s, "n", 42); err != nil {
		t.Fatal(err)
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	env, err = embedded.Open(ctx, dir, embedded.Options{Embedder: hashing.New(64)})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := env.Memory.Records.Count(ctx, vectorstore.Filter{}); n != 1 {
		t.Fatalf("records after reopen = %d", n)
	}
	rt, _ = core.NewRuntime(core.Config{Store: env.State, Layers: []core.AnyLayer{core.Layer[int]{ID: "n", Scope: core.ScopeGlobal}}})
	s, _ = rt.Start(ctx, core.RunOptions{})
	if v, _ := core.State[int](s, "n"); v != 42 {
		t.Fatalf("state after reopen = %d", v)
	}
	_ = env.Close()
	if _, err := embedded.Open(ctx, dir, embedded.Options{Embedder: hashing.New(32)}); !errors.Is(err, embedded.ErrEmbedderMismatch) {
		t.Fatalf("mismatch: %v", err)
	}
}

// Two first opens of one directory with different embedders used to race
// on strata.json (read and written before the records lock): both could
// pass the check, and the file named one embedder while the records held
// the other's vectors. Now one wins, the other fails with a mismatch, and
// the meta matches the records.
func TestConcurrentFirstOpensAgreeOnTheEmbedder(t *testing.T) {
	ctx := context.Background()
	for i := range 20 {
		dir := t.TempDir()
		embs := []*hashing.Embedder{hashing.New(64), hashing.New(32)}
		envs := make([]*embedded.Env, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for k := range embs {
			wg.Go(func() { envs[k], errs[k] = embedded.Open(ctx, dir, embedded.Options{Embedder: embs[k]}) })
		}
		wg.Wait()
		win := -1
		for k := range embs {
			switch {
			case errs[k] == nil && win < 0:
				win = k
			case errs[k] == nil:
				t.Fatalf("run %d: both opens succeeded", i)
			case !errors.Is(errs[k], embedded.ErrEmbedderMismatch):
				t.Fatalf("run %d: loser's error %v, want ErrEmbedderMismatch", i, errs[k])
			}
		}
		if win < 0 {
			t.Fatalf("run %d: no open succeeded: %v", i, errs)
		}
		meta, err := embedded.ReadMeta(dir)
		if err != nil || meta.Embedder != embs[win].Model() || meta.Dimension != embs[win].Dimension() {
			t.Fatalf("run %d: meta %+v %v, want the winner %s", i, meta, err, embs[win].Model())
		}
		env := envs[win]
		vecs, err := env.Memory.Embedder.Embed(ctx, []string{"hello"})
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Memory.Records.Upsert(ctx, vectorstore.Record{ID: "r1", Layer: "x", Text: "hello", Vector: vecs[0]}); err != nil {
			t.Fatalf("run %d: the records do not take the meta's embedder: %v", i, err)
		}
		if err := env.Close(); err != nil {
			t.Fatal(err)
		}
		env, err = embedded.Open(ctx, dir, embedded.Options{Embedder: embs[win]})
		if err != nil {
			t.Fatalf("run %d: reopen with the winner: %v", i, err)
		}
		if n, _ := env.Memory.Records.Count(ctx, vectorstore.Filter{}); n != 1 {
			t.Fatalf("run %d: %d records after reopen", i, n)
		}
		_ = env.Close()
		if _, err := embedded.Open(ctx, dir, embedded.Options{Embedder: embs[1-win]}); !errors.Is(err, embedded.ErrEmbedderMismatch) {
			t.Fatalf("run %d: reopen with the loser: %v", i, err)
		}
	}
}

// WriteMeta used one shared temporary name: concurrent writers wrote into
// each other's file (or renamed it from under each other). Every reader
// now sees one complete version, and no temporary file is left behind.
func TestConcurrentWriteMetaNeverTorn(t *testing.T) {
	dir := t.TempDir()
	metas := []embedded.Meta{{Embedder: "a", Dimension: 1}, {Embedder: "a-much-longer-embedder-name", Dimension: 1024}}
	if err := embedded.WriteMeta(dir, metas[0]); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for k := range metas {
		wg.Go(func() {
			for range 50 {
				if err := embedded.WriteMeta(dir, metas[k]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			m, err := embedded.ReadMeta(dir)
			if err != nil || (m != metas[0] && m != metas[1]) {
				errs <- fmt.Errorf("read %+v %v", m, err)
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}
