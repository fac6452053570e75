package instructions

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratamem/strata/core"
)

// BenchmarkDiscoveryHook measures the item hook on the output of one
// allowed read of a file four directories deep, each with an AGENTS.md:
// "steady" when every directory contributed already (the cost discovery
// adds to every later read), "cold" when all four are read and
// activated.
func BenchmarkDiscoveryHook(b *testing.B) {
	dir := b.TempDir()
	for _, name := range []string{"a/AGENTS.md", "a/b/AGENTS.md", "a/b/c/AGENTS.md", "a/b/c/d/AGENTS.md", "a/b/c/d/f.go"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("Run the tests before you finish.\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	l, err := NewDiscovery(DiscoveryOptions{Workspace: dir, ReadTools: []ReadTool{{Name: "read_file", Arg: "path"}}})
	if err != nil {
		b.Fatal(err)
	}
	call := core.FunctionCall("c1", "read_file", `{"path":"a/b/c/d/f.go"}`)
	for _, c := range []struct {
		name string
		st   DiscoveryState
		want int
	}{
		{"steady", DiscoveryState{Dirs: []string{"a", "a/b", "a/b/c", "a/b/c/d"}}, 0},
		{"cold", DiscoveryState{}, 4},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			n := 0
			p := core.ItemAppendParams[DiscoveryState]{State: c.st, Item: core.FunctionCallOutput("c1", "package d"),
				Call: &call, CallAllowed: true, Activate: func(core.Content) error { n++; return nil }}
			for b.Loop() {
				n = 0
				if _, err := l.Hooks.OnItemAppend(ctx, p); err != nil {
					b.Fatal(err)
				}
				if n != c.want {
					b.Fatalf("%d activations, want %d", n, c.want)
				}
			}
		})
	}
}
