package agent_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/agent"
	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/toolcalls"
	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/scripted"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/filestore"
	"github.com/stratamem/strata/storage/postgres"
)

type addArgs struct {
	Text string `json:"text"`
}

// sharedNotesTool appends its argument to a resource-scoped list that
// every run of the resource shares.
func sharedNotesTool() core.Tool {
	return toolcalls.MustTool(toolcalls.ToolDef[addArgs, string]{
		Name: "add_note",
		State: &toolcalls.ToolState[[]string]{ID: "notes", Scope: core.ScopeResource,
			Recall: func(s []string) (string, bool) { return fmt.Sprintf("%d notes", len(s)), len(s) > 0 }},
		Execute: func(_ context.Context, in addArgs, tc core.ToolContext) (string, error) {
			notes, _ := toolcalls.GetState[[]string](tc, "notes")
			next := append(append([]string(nil), notes...), in.Text)
			if err := tc.Set("notes", next); err != nil {
				return "", err
			}
			return "added", nil
		},
	})
}

// TestSharedToolStateNeverMisreportsALostWrite: two runtimes (two
// processes' worth: each its own filestore handle on one directory) run
// agents whose tool appends to one resource-scoped ToolState. A write that
// loses the compare-and-swap used to be dropped after the tool's "added"
// was already the output, so the model read success for a change that was
// not kept (most of the calls, under this contention). Now every output
// that says "added" is an entry that is stored, and every other output
// says the change was not applied.
func TestSharedToolStateNeverMisreportsALostWrite(t *testing.T) {
	t.Run("filestore", func(t *testing.T) {
		dir := t.TempDir()
		sharedNotes(t, func() storage.Store {
			st, err := filestore.Open(dir, filestore.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			return st
		})
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv("STRATA_TEST_PG_DSN")
		if dsn == "" {
			if os.Getenv("STRATA_REQUIRE_PG") == "1" {
				t.Fatal("STRATA_TEST_PG_DSN is not set but STRATA_REQUIRE_PG=1; run: scripts/pg.sh up")
			}
			t.Skip("STRATA_TEST_PG_DSN is not set; run: scripts/pg.sh up")
		}
		ctx := context.Background()
		table := fmt.Sprintf("strata_agent_t%08x", rand.Uint32())
		t.Cleanup(func() {
			admin, err := pgxpool.New(ctx, dsn)
			if err != nil {
				t.Error(err)
				return
			}
			defer admin.Close()
			for _, q := range []string{"DROP TABLE IF EXISTS " + pgx.Identifier{table}.Sanitize(),
				"DROP SEQUENCE IF EXISTS " + pgx.Identifier{table + "_revision_seq"}.Sanitize()} {
				if _, err := admin.Exec(ctx, q); err != nil {
					t.Errorf("cleanup %s: %v", q, err)
				}
			}
		})
		sharedNotes(t, func() storage.Store {
			st, err := postgres.Open(ctx, dsn, postgres.Options{Table: table})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		})
	})
}

// sharedNotes runs 2 runtimes, each on its own store handle from open,
// with 8 goroutines each calling the tool 25 times through agent.Turn.
func sharedNotes(t *testing.T, open func() storage.Store) {
	const (
		runtimes   = 2
		goroutines = 8
		calls      = 25 // per goroutine: 400 in all
	)
	ctx := context.Background()
	tool := sharedNotesTool()
	rts := make([]*core.Runtime, runtimes)
	for i := range rts {
		rt, err := core.NewRuntime(core.Config{Store: open(), Tools: []core.Tool{tool}, Layers: toolcalls.Layers(tool)})
		if err != nil {
			t.Fatal(err)
		}
		rts[i] = rt
	}

	var (
		mu                    sync.Mutex
		succeeded, notApplied int
		other                 []string
	)
	var wg sync.WaitGroup
	for r := range runtimes {
		for g := range goroutines {
			wg.Go(func() {
				// The model calls the tool once per turn, then answers.
				model := &scripted.Model{Script: func(req provider.Request, call int) ([]core.Item, error) {
					// The last item but context updates (developer
					// messages the view may append to history).
					h := req.View.Band(core.BandHistory)
					last := len(h) - 1
					for last > 0 && h[last].Role == core.RoleDeveloper {
						last--
					}
					if h[last].Type == core.TypeFunctionCallOutput {
						return []core.Item{core.AssistantMessage("done")}, nil
					}
					return []core.Item{core.FunctionCall(fmt.Sprintf("c%d", call),
						"add_note", fmt.Sprintf(`{"text":"r%d-g%d-%d"}`, r, g, call))}, nil
				}}
				a, err := agent.New(agent.Options{Model: model})
				if err != nil {
					t.Error(err)
					return
				}
				s, err := rts[r].Start(ctx, core.RunOptions{ThreadID: fmt.Sprintf("t%d-%d", r, g), ResourceID: "user-1"})
				if err != nil {
					t.Error(err)
					return
				}
				for range calls {
					res, _ := a.Turn(ctx, s, core.UserMessage("add a note"))
					if res == nil {
						t.Error("no result")
						return
					}
					mu.Lock()
					for _, it := range res.Items {
						if it.Type != core.TypeFunctionCallOutput {
							continue
						}
						switch {
						case it.Output == "added":
							succeeded++
						case strings.HasPrefix(it.Output, "error: ") && strings.Contains(it.Output, "not applied"):
							notApplied++
						default:
							other = append(other, it.Output)
						}
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()

	s, err := rts[0].Start(ctx, core.RunOptions{ResourceID: "user-1"})
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := core.State[[]string](s, "notes")
	t.Logf("%d calls: %d outputs said added, %d said not applied; %d notes stored",
		runtimes*goroutines*calls, succeeded, notApplied, len(stored))
	if len(other) > 0 {
		t.Errorf("unexpected outputs: %q", other)
	}
	if succeeded != len(stored) {
		t.Errorf("%d outputs said added but %d notes are stored: %d misreported", succeeded, len(stored), succeeded-len(stored))
	}
	if seen := map[string]bool{}; true {
		for _, n := range stored {
			if seen[n] {
				t.Errorf("note %q stored twice", n)
			}
			seen[n] = true
		}
	}
	if succeeded+notApplied != runtimes*goroutines*calls {
		t.Errorf("%d outputs for %d calls", succeeded+notApplied, runtimes*goroutines*calls)
	}
}
