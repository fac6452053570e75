package storage_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stratamem/strata/storage"
)

var benchValue = bytes.Repeat([]byte(`{"k":"v"},`), 100) // 1 KB of state

func BenchmarkMemoryPut(b *testing.B) {
	ctx := context.Background()
	s := storage.NewMemory()
	k := storage.Key{Scope: "thread", ScopeID: "bench", Layer: "layer", Name: "state"}
	var rev int64
	var err error
	b.SetBytes(int64(len(benchValue)))
	b.ReportAllocs()
	for b.Loop() {
		if rev, err = s.Put(ctx, k, benchValue, rev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMemoryGet(b *testing.B) {
	ctx := context.Background()
	s := storage.NewMemory()
	k := storage.Key{Scope: "thread", ScopeID: "bench", Layer: "layer", Name: "state"}
	if _, err := s.Put(ctx, k, benchValue, 0); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(benchValue)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(ctx, k); err != nil {
			b.Fatal(err)
		}
	}
}
