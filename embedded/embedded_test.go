package embedded_test

import (
	"context"
	"errors"
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
