package qdrant_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/qdrant"
)

// TestProtocolEnvironment: environment.Open over this driver records the
// embedder in the collection's metadata, reopens with it, refuses another
// one, and opens (and records when named) a collection written without a
// record.
func TestProtocolEnvironment(t *testing.T) {
	ctx := context.Background()
	addr := qdrant.StartFake(t)
	u := "qdrant://" + addr + "?collection=env"
	env, err := environment.Open(ctx, u, environment.Options{Embedder: hashing.New(16)})
	if err != nil {
		t.Fatal(err)
	}
	h16 := environment.Record{Embedder: "hash-16", Dimension: 16}
	if !env.Created || env.Recorded != h16 || env.State != nil {
		t.Fatalf("created: %+v", env)
	}
	_ = env.Close()
	env, err = environment.Open(ctx, u, environment.Options{MustExist: true})
	if err != nil || env.Memory.Embedder.Model() != "hash-16" {
		t.Fatalf("reopened: %v", err)
	}
	_ = env.Close()
	_, err = environment.Open(ctx, u, environment.Options{Embedder: hashing.New(8)})
	var me *environment.EmbedderMismatchError
	if !errors.As(err, &me) || me.Recorded != h16 || me.Given.Embedder != "hash-8" {
		t.Fatalf("another embedder: %v", err)
	}

	// Written by today's code: no record.
	old := "qdrant://" + addr + "?collection=old"
	c, err := vectorstore.Open(ctx, old, &vectorstore.Options{Dimension: 8})
	if err != nil {
		t.Fatal(err)
	}
	vs, _ := hashing.New(8).Embed(ctx, []string{"x"})
	if err := c.Upsert(ctx, vectorstore.Record{ID: "x", Layer: "l", Text: "x", Vector: vs[0]}); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	env, err = environment.Open(ctx, old, environment.Options{Embedder: hashing.New(8), MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	if env.Recorded != (environment.Record{Embedder: "hash-8", Dimension: 8}) {
		t.Errorf("old collection opened with a named embedder: recorded %+v", env.Recorded)
	}
	_ = env.Close()
}
