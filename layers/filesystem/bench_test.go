package filesystem_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/filesystem"
)

// BenchmarkAssembleTwelveFiles measures one assembly of a session tracking
// twelve unchanged 2 KiB files: twelve stats and cache hits, no reads.
func BenchmarkAssembleTwelveFiles(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	var mentions []string
	for i := range 12 {
		name := fmt.Sprintf("f%02d.go", i)
		write(b, dir, name, strings.Repeat(fmt.Sprintf("// line of file %d\n", i), 110), t0)
		mentions = append(mentions, "#"+name)
	}
	l, _ := filesystem.New(filesystem.Options{Root: dir, Scope: core.ScopeExecution})
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}})
	s, _ := rt.Start(ctx, core.RunOptions{})
	_ = s.Append(ctx, core.UserMessage(strings.Join(mentions, " ")))
	if v, err := s.Assemble(ctx); err != nil || len(v.Band(core.BandAnchor)) != 12 {
		b.Fatalf("setup: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Assemble(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDelta measures the renderDelta of one changed file of twelve.
func BenchmarkDelta(b *testing.B) {
	var prev, next []core.Item
	for i := range 12 {
		body := []byte(strings.Repeat(fmt.Sprintf("// line of file %d\n", i), 110))
		it := core.DeveloperMessage(filesystem.RenderFile(fmt.Sprintf("f%02d.go", i), body, false, int64(len(body))))
		prev = append(prev, it)
		if i == 7 {
			body = append(body, "// edited\n"...)
			it = core.DeveloperMessage(filesystem.RenderFile("f07.go", body, false, int64(len(body))))
		}
		next = append(next, it)
	}
	b.ReportAllocs()
	for b.Loop() {
		if d, ok := filesystem.Delta(prev, next); !ok || !strings.HasPrefix(d, "## f07.go") {
			b.Fatal("bad delta")
		}
	}
}
