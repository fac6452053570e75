package entity_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/memtest"
)

// BenchmarkAssemble measures one turn's assembly with the layer holding
// 500 entities, of which the budget shows a part.
func BenchmarkAssemble(b *testing.B) {
	ctx := context.Background()
	store := memtest.NewStore(b, "", &memtest.Clock{T: t0})
	l := memtest.Layer(b, entity.New, store, entity.Options{})
	s := memtest.Session(b, core.Config{Layers: []core.AnyLayer{l}}, core.RunOptions{ThreadID: "t"})
	for c := 0; c < 5; c++ {
		var batch []string
		for i := 0; i < 100; i++ {
			batch = append(batch, fmt.Sprintf(`{"name": "Entity %d-%d", "type": "concept", "notes": ["note one about %d", "note two"]}`, c, i, i))
		}
		out, err := s.ExecuteTool(ctx, core.FunctionCall(fmt.Sprint("c", c), "entity/update", `{"entities": [`+strings.Join(batch, ",")+`]}`))
		if err != nil || strings.HasPrefix(out.Output, "error") {
			b.Fatal(out.Output, err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Assemble(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdate measures one entity/update call of 10 entities against
// the embedded store (embedding with the hashing embedder included).
func BenchmarkUpdate(b *testing.B) {
	ctx := context.Background()
	store := memtest.NewStore(b, "", &memtest.Clock{T: t0})
	l := memtest.Layer(b, entity.New, store, entity.Options{})
	s := memtest.Session(b, core.Config{Layers: []core.AnyLayer{l}}, core.RunOptions{ThreadID: "t"})
	var batch []string
	for i := 0; i < 10; i++ {
		batch = append(batch, fmt.Sprintf(`{"name": "Entity %d", "type": "person", "note": "seen again"}`, i))
	}
	args := `{"entities": [` + strings.Join(batch, ",") + `]}`
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.ExecuteTool(ctx, core.FunctionCall(fmt.Sprint("c", i), "entity/update", args)); err != nil {
			b.Fatal(err)
		}
	}
}
