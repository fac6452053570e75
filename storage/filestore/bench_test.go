package filestore

import (
	"bytes"
	"testing"

	"github.com/stratamem/strata/storage"
)

var benchValue = bytes.Repeat([]byte(`{"k":"v"},`), 100) // 1 KB of state

func benchPut(b *testing.B, opts Options) {
	s, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	k := storage.Key{Scope: "thread", ScopeID: "bench", Layer: "layer", Name: "state"}
	var rev int64
	b.SetBytes(int64(len(benchValue)))
	b.ReportAllocs()
	for b.Loop() {
		if rev, err = s.Put(ctx, k, benchValue, rev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPut(b *testing.B)       { benchPut(b, Options{}) }
func BenchmarkPutNoSync(b *testing.B) { benchPut(b, Options{NoSync: true}) }

func BenchmarkGet(b *testing.B) {
	s, err := Open(b.TempDir(), Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
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
