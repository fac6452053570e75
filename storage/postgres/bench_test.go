package postgres_test

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/postgres"
)

// Round trips of one compare-and-swap write and one read on the test server:
//
//	scripts/pg.sh up && eval "$(scripts/pg.sh env)"
//	go test -run '^$' -bench . ./storage/postgres/
func BenchmarkPutGet(b *testing.B) {
	admin := adminPool(b)
	s := open(b, freshTable(b, admin), postgres.Options{})
	defer s.Close()
	k := storage.Key{Scope: "thread", ScopeID: "bench", Layer: "layer", Name: "state"}
	value := []byte(`{"summary":"` + strings.Repeat("x", 512) + `"}`)
	rev := int64(0)
	b.Run("put", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var err error
			if rev, err = s.Put(ctx, k, value, rev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := s.Get(ctx, k); err != nil {
				b.Fatal(err)
			}
		}
	})
	var n atomic.Int64 // keys stay fresh across the runs of the sub-benchmark
	b.Run("put-parallel-keys", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			k := storage.Key{Scope: "thread", ScopeID: "p" + strconv.FormatInt(n.Add(1), 10), Layer: "layer", Name: "state"}
			rev := int64(0)
			for pb.Next() {
				var err error
				if rev, err = s.Put(ctx, k, value, rev); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
