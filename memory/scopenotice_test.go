package memory_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/memory/memtest"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/storage"
)

// logged is a slog.Handler that keeps what it is given, each record's
// attributes rendered as key=value.
type logged struct {
	mu   sync.Mutex
	recs []loggedRecord
}

type loggedRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (h *logged) Enabled(context.Context, slog.Level) bool { return true }
func (h *logged) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logged) WithGroup(string) slog.Handler            { return h }

func (h *logged) Handle(_ context.Context, r slog.Record) error {
	rec := loggedRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, rec)
	return nil
}

// warnings are the records at slog.LevelWarn or above.
func (h *logged) warnings() []loggedRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []loggedRecord
	for _, r := range h.recs {
		if r.level >= slog.LevelWarn {
			out = append(out, r)
		}
	}
	return out
}

func (r loggedRecord) String() string { return fmt.Sprintf("%s %q %v", r.level, r.msg, r.attrs) }

// noticeLayer builds one memory layer with these common options.
type noticeLayer struct {
	id string
	// threadDefault says whether the layer's default scope is thread, the
	// one the notice is about.
	threadDefault bool
	build         func(*memory.Store, memory.Common) (core.AnyLayer, error)
}

var noticeLayers = []noticeLayer{
	{entity.DefaultID, true, func(st *memory.Store, c memory.Common) (core.AnyLayer, error) {
		return entity.New(st, entity.Options{Common: c})
	}},
	{scratchpad.DefaultID, true, func(st *memory.Store, c memory.Common) (core.AnyLayer, error) {
		return scratchpad.New(st, scratchpad.Options{Common: c})
	}},
	{semantic.DefaultID, true, func(st *memory.Store, c memory.Common) (core.AnyLayer, error) {
		return semantic.New(st, semantic.Options{Common: c, Mode: semantic.ModeLexical})
	}},
	{observations.DefaultID, true, func(st *memory.Store, c memory.Common) (core.AnyLayer, error) {
		return observations.New(st, observations.Options{Common: c})
	}},
	{temporal.DefaultID, true, func(st *memory.Store, c memory.Common) (core.AnyLayer, error) {
		return temporal.New(st, temporal.Options{Common: c})
	}},
	{episodic.DefaultID, false, func(st *memory.Store, c memory.Common) (core.AnyLayer, error) {
		return episodic.New(st, episodic.Options{Common: c})
	}},
}

// visit runs one session of rt on thread of resource and completes it.
func visit(t *testing.T, rt *core.Runtime, resource, thread string) {
	t.Helper()
	ctx := context.Background()
	s := memtest.Start(t, rt, core.RunOptions{ThreadID: thread, ResourceID: resource})
	if err := s.Append(ctx, core.UserMessage("hello again")); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
}

// A memory layer left at its default thread scope tells the host, once,
// through its Logger, that a new thread of a resource starts without the
// resource's memories, and how to share them; a host that chose the scope,
// or a run without a resource, hears nothing.
func TestScopeNoticeEveryLayer(t *testing.T) {
	for _, nl := range noticeLayers {
		t.Run(nl.id, func(t *testing.T) {
			runtime := func(t *testing.T, c memory.Common) (*core.Runtime, *logged) {
				t.Helper()
				h := &logged{}
				c.Logger = slog.New(h)
				l, err := nl.build(memtest.NewStore(t, "", nil), c)
				if err != nil {
					t.Fatal(err)
				}
				return memtest.Runtime(t, core.Config{Store: storage.NewMemory(), Layers: []core.AnyLayer{l}}), h
			}

			rt, h := runtime(t, memory.Common{})
			if nl.threadDefault {
				// A resource-scoped layer refuses a run without one.
				visit(t, rt, "", "anonymous")
				if w := h.warnings(); len(w) != 0 {
					t.Fatalf("a run without a resource was noticed: %v", w)
				}
			}
			visit(t, rt, "ada", "visit-1")
			visit(t, rt, "ada", "visit-2")
			visit(t, rt, "ada", "visit-1")
			visit(t, rt, "bob", "visit-3")
			w := h.warnings()
			if !nl.threadDefault {
				if len(w) != 0 {
					t.Fatalf("a layer whose default is not thread scope was noticed: %v", w)
				}
			} else {
				if len(w) != 1 {
					t.Fatalf("%d warnings, want exactly 1: %v", len(w), w)
				}
				got := w[0]
				if got.attrs["layer"] != nl.id || got.attrs["resource"] != "ada" || got.attrs["thread"] != "visit-1" {
					t.Errorf("the notice does not name the layer, resource and thread: %v", got)
				}
				if !strings.Contains(got.attrs["fix"], "Scope: core.ScopeResource") {
					t.Errorf("the notice does not name the fix: %v", got)
				}
			}

			for _, scope := range []core.Scope{core.ScopeResource, core.ScopeThread} {
				rt, h := runtime(t, memory.Common{Scope: scope})
				visit(t, rt, "ada", "visit-1")
				visit(t, rt, "ada", "visit-2")
				if w := h.warnings(); len(w) != 0 {
					t.Errorf("scope %s set by the host was noticed: %v", scope, w)
				}
			}
		})
	}
}

// With no Logger the notice, and only it, goes to slog.Default(): the
// host that configured nothing is the one it is for.
func TestScopeNoticeNilLoggerIsDefault(t *testing.T) {
	h := &logged{}
	prev := slog.Default()
	slog.SetDefault(slog.New(h))
	t.Cleanup(func() { slog.SetDefault(prev) })

	st := memtest.NewStore(t, "", nil)
	var layers []core.AnyLayer
	for _, nl := range noticeLayers {
		l, err := nl.build(st, memory.Common{})
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, l)
	}
	rt := memtest.Runtime(t, core.Config{Store: storage.NewMemory(), Layers: layers})
	visit(t, rt, "ada", "visit-1")
	visit(t, rt, "ada", "visit-2")

	named := map[string]int{}
	for _, w := range h.warnings() {
		named[w.attrs["layer"]]++
	}
	for _, nl := range noticeLayers {
		want := 0
		if nl.threadDefault {
			want = 1
		}
		if named[nl.id] != want {
			t.Errorf("layer %s: %d notices on slog.Default, want %d (all: %v)", nl.id, named[nl.id], want, h.warnings())
		}
	}
}
