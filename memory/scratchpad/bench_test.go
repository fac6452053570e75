package scratchpad_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/scratchpad"
)

// BenchmarkUpdate measures one scratchpad/update call setting 3 keys
// against the embedded store (hashing embedder included).
func BenchmarkUpdate(b *testing.B) {
	ctx := context.Background()
	store := memtest.NewStore(b, "", &memtest.Clock{T: t0})
	l := memtest.Layer(b, scratchpad.New, store, scratchpad.Options{})
	s := memtest.Session(b, core.Config{Layers: []core.AnyLayer{l}}, core.RunOptions{ThreadID: "t"})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		args := fmt.Sprintf(`{"set": {"step": "%d", "plan": "plan %d", "status": "working"}}`, i, i%7)
		out, err := s.ExecuteTool(ctx, call(fmt.Sprint("c", i), args))
		if err != nil || strings.HasPrefix(out.Output, "error") {
			b.Fatal(out.Output, err)
		}
	}
}

// BenchmarkAssemble measures a turn with 100 notes, unchanged since the
// previous turn.
func BenchmarkAssemble(b *testing.B) {
	ctx := context.Background()
	store := memtest.NewStore(b, "", &memtest.Clock{T: t0})
	l := memtest.Layer(b, scratchpad.New, store, scratchpad.Options{})
	s := memtest.Session(b, core.Config{Layers: []core.AnyLayer{l}}, core.RunOptions{ThreadID: "t"})
	var set []string
	for i := 0; i < 100; i++ {
		set = append(set, fmt.Sprintf(`"key%03d": "value of note %d"`, i, i))
	}
	if _, err := s.ExecuteTool(ctx, call("c", `{"set": {`+strings.Join(set, ",")+`}}`)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Assemble(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
