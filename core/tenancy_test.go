package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/filestore"
)

// pad is a thread-scoped layer that remembers every user message of the
// thread in its state and renders them.
func pad() core.Layer[notes] {
	return core.Layer[notes]{
		ID: "pad", Slot: core.SlotScratchpad, Scope: core.ScopeThread,
		Hooks: core.Hooks[notes]{
			OnItemAppend: func(_ context.Context, p core.ItemAppendParams[notes]) (*notes, error) {
				if p.Item.Role != core.RoleUser {
					return nil, nil
				}
				next := notes{Lines: append(append([]string(nil), p.State.Lines...), p.Item.Text())}
				return &next, nil
			},
			Recall: func(_ context.Context, p core.RecallParams[notes]) (core.Recall[notes], error) {
				return core.Text[notes]("<pad>" + strings.Join(p.State.Lines, "|") + "</pad>")
			},
		},
	}
}

func viewText(t *testing.T, s *core.Session) string {
	t.Helper()
	v, err := s.Assemble(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, it := range v.Items() {
		b.WriteString(it.Text())
		b.WriteByte('\n')
	}
	return b.String()
}

// Two resources naming a thread alike: the second is refused, and even a
// runtime over another state store (no shared binding) keys the thread's
// state by resource, so nothing of the first shows.
func TestThreadBelongsToOneResource(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemory()
	rt, err := core.NewRuntime(core.Config{Store: store, RecordAssemblies: true, Layers: []core.AnyLayer{pad()}})
	if err != nil {
		t.Fatal(err)
	}
	carol, err := rt.Start(ctx, core.RunOptions{ThreadID: "main", ResourceID: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	if err := carol.Append(ctx, core.UserMessage("carol's PIN is 4711")); err != nil {
		t.Fatal(err)
	}
	viewText(t, carol)
	if err := carol.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}

	for _, res := range []string{"dave", ""} {
		_, err = rt.Start(ctx, core.RunOptions{ThreadID: "main", ResourceID: res})
		var tb *core.ThreadBoundError
		if !errors.As(err, &tb) || tb.Bound != "carol" || tb.Requested != res {
			t.Fatalf("resource %q on carol's thread: %v", res, err)
		}
		if !strings.Contains(err.Error(), `"carol"`) {
			t.Fatalf("error does not name the owner: %v", err)
		}
	}

	// The owner comes back and sees her state.
	again, err := rt.Start(ctx, core.RunOptions{ThreadID: "main", ResourceID: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	if v := viewText(t, again); !strings.Contains(v, "4711") {
		t.Fatalf("carol's own view lost her note:\n%s", v)
	}

	// The state and the recorded assembly are keyed by (resource, thread).
	if _, err := store.Get(ctx, storage.Key{Scope: "thread", ScopeID: storage.ThreadScopeID("carol", "main"), Layer: "pad", Name: "state"}); err != nil {
		t.Fatalf("state not under (carol, main): %v", err)
	}
	if _, err := store.Get(ctx, storage.Key{Scope: "thread", ScopeID: "main", Layer: "pad", Name: "state"}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("state under the bare thread id: %v", err)
	}
	if rec, err := inspect.LastAssembly(ctx, store, "carol", "main"); err != nil || rec.ResourceID != "carol" {
		t.Fatalf("last assembly of (carol, main): %+v %v", rec, err)
	}
	if _, err := inspect.LastAssembly(ctx, store, "dave", "main"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("dave reads carol's last assembly: %v", err)
	}
	if owner, ok, err := inspect.ThreadOwner(ctx, store, "main"); err != nil || !ok || owner != "carol" {
		t.Fatalf("owner = %q %v %v", owner, ok, err)
	}

	// Without the shared binding (another process with its own state
	// store over the same keys' namespace), keys alone still isolate.
	other := storage.NewMemory()
	for _, k := range mustKeys(t, store, "thread", storage.ThreadScopeID("carol", "main")) {
		e, _ := store.Get(ctx, k)
		if _, err := other.Put(ctx, k, e.Value, 0); err != nil {
			t.Fatal(err)
		}
	}
	rt2, _ := core.NewRuntime(core.Config{Store: other, Layers: []core.AnyLayer{pad()}})
	dave, err := rt2.Start(ctx, core.RunOptions{ThreadID: "main", ResourceID: "dave"})
	if err != nil {
		t.Fatal(err)
	}
	if v := viewText(t, dave); strings.Contains(v, "4711") {
		t.Fatalf("dave sees carol's note:\n%s", v)
	}
}

func mustKeys(t *testing.T, st storage.Store, scope, id string) []storage.Key {
	t.Helper()
	keys, err := st.(storage.Lister).Keys(context.Background(), scope, id)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// A store written before threads were keyed by resource: the thread's
// state sits under the bare thread id. The first run of its resource
// adopts it; no other resource can.
func TestLegacyThreadStateIsAdopted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := filestore.Open(dir, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// What today's code wrote for carol's run on thread "main".
	legacy, _ := json.Marshal(notes{Lines: []string{"carol's PIN is 4711"}})
	if _, err := store.Put(ctx, storage.Key{Scope: "thread", ScopeID: "main", Layer: "pad", Name: "state"}, legacy, 0); err != nil {
		t.Fatal(err)
	}
	rt, _ := core.NewRuntime(core.Config{Store: store, Layers: []core.AnyLayer{pad()}})
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: "main", ResourceID: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	if v := viewText(t, s); !strings.Contains(v, "4711") {
		t.Fatalf("legacy state not adopted:\n%s", v)
	}
	_ = s.Complete(ctx, "ok")
	if _, err := store.Get(ctx, storage.Key{Scope: "thread", ScopeID: "main", Layer: "pad", Name: "state"}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("legacy copy left behind: %v", err)
	}
	if _, err := rt.Start(ctx, core.RunOptions{ThreadID: "main", ResourceID: "dave"}); !errors.As(err, new(*core.ThreadBoundError)) {
		t.Fatalf("dave on an adopted thread: %v", err)
	}
}

func TestRunIDsWithControlsAreRefused(t *testing.T) {
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{pad()}})
	for _, opts := range []core.RunOptions{
		{ThreadID: "a\x1fb", ResourceID: "r"},
		{ThreadID: "main", ResourceID: "r\x1b[2J"},
		{ThreadID: "bad\xff"},
	} {
		_, err := rt.Start(context.Background(), opts)
		var ce *core.ConfigError
		if !errors.As(err, &ce) || ce.Code != core.CodeInvalidRun {
			t.Fatalf("%+v: %v", opts, err)
		}
	}
}
