package layerkit_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"github.com/stratamem/strata/storage"
)

// A layer left at its default thread scope says once, through its
// logger, that a new thread of a resource starts without the resource's
// memories; a host that chose the scope hears nothing.
func TestScopeNotice(t *testing.T) {
	ctx := context.Background()
	defaults := layerkit.Defaults{ID: "notes", Scopes: []core.Scope{core.ScopeThread, core.ScopeResource}}
	build := func(t *testing.T, given memory.Common) (*core.Runtime, *bytes.Buffer) {
		t.Helper()
		var logs bytes.Buffer
		given.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		resolved, err := layerkit.Resolve(given, defaults)
		if err != nil {
			t.Fatal(err)
		}
		l := layerkit.Spec[int](resolved)
		l.Hooks.Init = layerkit.WithScopeNotice(layerkit.NewScopeNotice(given, resolved),
			func(context.Context, core.InitParams) (int, error) { return 0, nil })
		rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}, Store: storage.NewMemory()})
		if err != nil {
			t.Fatal(err)
		}
		return rt, &logs
	}
	start := func(t *testing.T, rt *core.Runtime, run core.RunOptions) {
		t.Helper()
		s, err := rt.Start(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(ctx, "ok"); err != nil {
			t.Fatal(err)
		}
	}

	rt, logs := build(t, memory.Common{})
	start(t, rt, core.RunOptions{ThreadID: "t0"}) // no resource: nothing to share
	if logs.Len() != 0 {
		t.Fatalf("a run without a resource was noticed: %s", logs)
	}
	start(t, rt, core.RunOptions{ThreadID: "visit-1", ResourceID: "ada"})
	got := logs.String()
	for _, want := range []string{"level=WARN", "layer=notes", "resource=ada", "thread=visit-1", "core.ScopeResource"} {
		if !strings.Contains(got, want) {
			t.Errorf("notice lacks %q: %s", want, got)
		}
	}
	start(t, rt, core.RunOptions{ThreadID: "visit-2", ResourceID: "ada"})
	start(t, rt, core.RunOptions{ThreadID: "visit-1", ResourceID: "ada"})
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Fatalf("%d notices, want 1: %s", n, logs)
	}

	for _, scope := range []core.Scope{core.ScopeThread, core.ScopeResource} {
		rt, logs := build(t, memory.Common{Scope: scope})
		start(t, rt, core.RunOptions{ThreadID: "visit-1", ResourceID: "ada"})
		if logs.Len() != 0 {
			t.Errorf("scope %s set by the host was noticed: %s", scope, logs)
		}
	}
	if n := layerkit.NewScopeNotice(memory.Common{}, memory.Common{ID: "x", Scope: core.ScopeResource}); n != nil {
		t.Error("a resource-scoped default got a notice")
	}
}
