package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/semantic"
)

// openBackend is the code of docs/backends.md, "Opening one from Go".
func openBackend(ctx context.Context, target string) (*core.Runtime, func() error, error) {
	env, err := environment.Open(ctx, target, environment.Options{})
	if err != nil {
		return nil, nil, err
	}
	recall, err := semantic.New(env.Memory, semantic.Options{Common: memory.Common{Scope: core.ScopeResource}})
	if err != nil {
		env.Close()
		return nil, nil, err
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{recall}, Store: env.State})
	if err != nil {
		env.Close()
		return nil, nil, err
	}
	return rt, env.Close, nil
}

// The backends guide's code on an embedded directory, and on PostgreSQL
// with one URL when the test engine runs (STRATA_TEST_PG_DSN): a message
// of one run is recalled on another thread of the resource after the
// environment is opened again.
func TestGuideBackends(t *testing.T) {
	if _, err := uselite.Default(); err != nil {
		if os.Getenv("STRATA_REQUIRE_MODEL") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	targets := []string{filepath.Join(t.TempDir(), "data")}
	if dsn := os.Getenv("STRATA_TEST_PG_DSN"); dsn != "" {
		targets = append(targets, dsn+"&collection=guide_backends&state_table=guide_backends_state")
	} else if os.Getenv("STRATA_REQUIRE_PG") != "" {
		t.Fatal("STRATA_REQUIRE_PG is set but STRATA_TEST_PG_DSN is not")
	}
	ctx := context.Background()
	for _, target := range targets {
		say := func(thread, msg string) *core.View {
			t.Helper()
			rt, closeEnv, err := openBackend(ctx, target)
			if err != nil {
				t.Fatalf("%s: %v", target, err)
			}
			defer closeEnv()
			s, err := rt.Start(ctx, core.RunOptions{ThreadID: thread, ResourceID: "ada"})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, core.UserMessage(msg)); err != nil {
				t.Fatal(err)
			}
			v, err := s.Assemble(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Complete(ctx, "ok"); err != nil {
				t.Fatal(err)
			}
			return v
		}
		say("guide-1", "My sister Grace lives in Porto.")
		found := false
		for _, it := range say("guide-2", "Where does my sister live?").Band(core.BandLive) {
			found = found || strings.Contains(it.Text(), "Grace lives in Porto")
		}
		if !found {
			t.Errorf("%s: the second thread did not recall the first one's message", target)
		}
	}
}
