package memtest

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/storage/filestore"
	"github.com/stratamem/strata/vectorstore"
)

// Layer builds a layer on store with its package's New (entity.New,
// observations.New, ...), failing the test on error.
func Layer[O, L any](t testing.TB, newLayer func(*memory.Store, O) (L, error), store *memory.Store, opts O) L {
	t.Helper()
	l, err := newLayer(store, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

// Session starts a session of a new runtime built from cfg, failing the
// test on error.
func Session(t testing.TB, cfg core.Config, run core.RunOptions) *core.Session {
	t.Helper()
	return Start(t, Runtime(t, cfg), run)
}

// Runtime builds a runtime from cfg, failing the test on error.
func Runtime(t testing.TB, cfg core.Config) *core.Runtime {
	t.Helper()
	rt, err := core.NewRuntime(cfg)
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
	return rt
}

// Start starts a session of rt, failing the test on error.
func Start(t testing.TB, rt *core.Runtime, run core.RunOptions) *core.Session {
	t.Helper()
	s, err := rt.Start(context.Background(), run)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return s
}

// StateStore opens the file store of the runtime's scoped state in dir,
// closed when the test ends; close it earlier to reopen dir.
func StateStore(t testing.TB, dir string) *filestore.Store {
	t.Helper()
	st, err := filestore.Open(dir, filestore.Options{NoSync: true})
	if err != nil {
		t.Fatalf("open state store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// Shutdown completes s, then closes what the process held open (the
// store's collection, the runtime's state store), so that the test can
// reopen them as the next process would.
func Shutdown(t testing.TB, s *core.Session, open ...io.Closer) {
	t.Helper()
	if err := s.Complete(context.Background(), "done"); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	for _, c := range open {
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
}

// Block assembles s and returns the text of the item a layer recalled
// with this item id, in either band; "" when there is none.
func Block(t testing.TB, s *core.Session, id string) string {
	t.Helper()
	text, err := Assembled(s, id)
	if err != nil {
		t.Fatalf("Assemble: %v", err)
	}
	return text
}

// Assembled is Block for a goroutine (which cannot fail the test): it
// returns the error.
func Assembled(s *core.Session, id string) (string, error) {
	v, err := s.Assemble(context.Background())
	if err != nil {
		return "", err
	}
	for _, b := range []core.Band{core.BandAnchor, core.BandLive} {
		for _, it := range v.Band(b) {
			if it.ID == id {
				return it.Text(), nil
			}
		}
	}
	return "", nil
}

// Tagged assembles s and returns the developer message that starts with
// tag (a layer's opening tag); "" when there is none. A diagnostic of the
// assembly fails the test.
func Tagged(t testing.TB, s *core.Session, tag string) string {
	t.Helper()
	v, err := s.Assemble(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range v.Usage.Diagnostics {
		t.Errorf("diagnostic: %+v", d)
	}
	for _, it := range v.Items() {
		if it.Role == core.RoleDeveloper && strings.HasPrefix(it.Text(), tag) {
			return it.Text()
		}
	}
	return ""
}

// Records lists the records of store that f selects.
func Records(t testing.TB, store *memory.Store, f vectorstore.Filter) []vectorstore.Record {
	t.Helper()
	var out []vectorstore.Record
	for r, err := range store.Records.All(context.Background(), vectorstore.ListOptions{Filter: f, Limit: 1000}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// Deny is a steering layer that denies every call whose arguments contain
// word, giving reason, as a policy layer would.
func Deny(word, reason string) core.Layer[struct{}] {
	return core.Layer[struct{}]{ID: "policy", Slot: core.SlotSteering, Scope: core.ScopeExecution,
		Hooks: core.Hooks[struct{}]{
			BeforeToolCall: func(_ context.Context, p core.CallParams[struct{}]) (core.ToolDecision[struct{}], error) {
				if strings.Contains(p.Call.Arguments, word) {
					return core.ToolDecision[struct{}]{Deny: true, Reason: reason}, nil
				}
				return core.ToolDecision[struct{}]{}, nil
			},
		}}
}

// Turn plays the usual host loop for one call of the model: Record it,
// then Route it.
func Turn(t testing.TB, s *core.Session, call core.Item) core.Item {
	t.Helper()
	if err := s.Record(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	return Route(t, s, call)
}

// Route plays the host's part for a recorded call: ask BeforeToolCall,
// ExecuteTool what is allowed, and Append the output (or the denial),
// which it returns.
func Route(t testing.TB, s *core.Session, call core.Item) core.Item {
	t.Helper()
	ctx := context.Background()
	d, err := s.BeforeToolCall(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	out := d.Output
	if d.Allowed {
		if out, err = s.ExecuteTool(ctx, d.Call); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Concurrently runs fn once per name, each in a goroutine of its own (as
// concurrent sessions on one store), and fails the test with the errors
// they return.
func Concurrently(t testing.TB, names []string, fn func(name string) error) {
	t.Helper()
	Collect(t, names, func(name string) (struct{}, error) { return struct{}{}, fn(name) })
}

// Collect is Concurrently for functions with a result: it returns the
// results by name.
func Collect[R any](t testing.TB, names []string, fn func(name string) (R, error)) map[string]R {
	t.Helper()
	results := make([]R, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = fn(name)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]R, len(names))
	for i, name := range names {
		out[name] = results[i]
	}
	return out
}

// ConfigCase is options a layer's New must refuse, and the field its
// *core.ConfigError must name.
type ConfigCase[O any] struct {
	Opts  O
	Field string
}

// ConfigErrors checks that newLayer refuses the options of every case with
// a *core.ConfigError that names the case's field.
func ConfigErrors[O any](t testing.TB, newLayer func(O) error, cases []ConfigCase[O]) {
	t.Helper()
	for _, c := range cases {
		err := newLayer(c.Opts)
		var ce *core.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.Field {
			t.Errorf("%+v: %v, want a ConfigError on %s", c.Opts, err, c.Field)
		}
	}
}
