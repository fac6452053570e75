package core_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
)

// sink is a layer that writes each user message to an outside store that
// can be told to fail; it keeps what it could not write and retries it at
// its next write, as the memory layers do.
type sink struct {
	mu      sync.Mutex
	fail    bool
	delay   time.Duration
	stored  []string
	pending []string
}

func (k *sink) write(ctx context.Context, text string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if text != "" {
		k.pending = append(k.pending, text)
	}
	if k.delay > 0 {
		// A store that ignores the context: the runtime stops waiting.
		k.mu.Unlock()
		time.Sleep(k.delay)
		k.mu.Lock()
	}
	if k.fail {
		return &core.WriteError{Item: k.pending[0], Err: errors.New("disk full")}
	}
	k.stored = append(k.stored, k.pending...)
	k.pending = nil
	return nil
}

func (k *sink) layer() core.Layer[int] {
	return core.Layer[int]{
		ID: "sink", Scope: core.ScopeExecution, WritesRecords: true,
		Timeouts: core.Timeouts{core.HookOnItemAppend: 50 * time.Millisecond},
		Hooks: core.Hooks[int]{
			OnItemAppend: func(ctx context.Context, p core.ItemAppendParams[int]) (*int, error) {
				if p.Item.Role != core.RoleUser {
					return nil, k.write(ctx, "")
				}
				return nil, k.write(ctx, p.Item.Text())
			},
			OnComplete: func(ctx context.Context, p core.CompleteParams[int]) (*int, error) {
				return nil, k.write(ctx, "")
			},
		},
	}
}

// The reproduction through core: every call made while the store
// fails returns ErrNotStored naming layer and item; once it heals, the
// next write stores everything and Complete returns nil.
func TestUnstoredWriteIsNotAcknowledged(t *testing.T) {
	ctx := context.Background()
	k := &sink{fail: true}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{k.layer()}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.Start(ctx, core.RunOptions{})
	err = s.Append(ctx, core.UserMessage("one"))
	var we *core.WriteError
	if !errors.Is(err, core.ErrNotStored) || !errors.As(err, &we) || we.Layer != "sink" || we.Item != "one" {
		t.Fatalf("Append while failing: %v", err)
	}
	var he *core.HookError
	if !errors.As(err, &he) || he.Hook != "onItemAppend" {
		t.Fatalf("not a HookError naming the hook: %v", err)
	}
	if err := s.Record(ctx, core.UserMessage("two")); !errors.Is(err, core.ErrNotStored) {
		t.Fatalf("Record while failing: %v", err)
	}
	k.mu.Lock()
	k.fail = false
	k.mu.Unlock()
	if err := s.Append(ctx, core.UserMessage("three")); err != nil {
		t.Fatalf("Append after healing: %v", err)
	}
	if err := s.Complete(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
	if len(k.stored) != 3 {
		t.Fatalf("stored %q", k.stored)
	}
}

// A write hook of a layer that writes records and does not answer in
// time: the outcome is unknown, so the call is not acknowledged.
func TestTimedOutWriteIsNotAcknowledged(t *testing.T) {
	ctx := context.Background()
	k := &sink{delay: 300 * time.Millisecond}
	l := k.layer()
	rt, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}})
	s, _ := rt.Start(ctx, core.RunOptions{})
	err := s.Append(ctx, core.UserMessage("slow"))
	var he *core.HookError
	if !errors.Is(err, core.ErrNotStored) || !errors.As(err, &he) || he.Kind != core.KindTimeout {
		t.Fatalf("timed-out write: %v", err)
	}

	// The same timeout in a layer that does not write records is only a
	// missing contribution: a diagnostic.
	k2 := &sink{delay: time.Second}
	l2 := k2.layer()
	l2.WritesRecords = false
	l2.Hooks.OnItemAppend = func(ctx context.Context, p core.ItemAppendParams[int]) (*int, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	rt2, _ := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l2}})
	s2, _ := rt2.Start(ctx, core.RunOptions{})
	if err := s2.Append(ctx, core.UserMessage("slow")); err != nil {
		t.Fatalf("plain layer's timeout returned: %v", err)
	}
	if d := s2.Diagnostics(); len(d) != 1 || d[0].Kind != core.KindTimeout {
		t.Fatalf("diagnostics = %+v", d)
	}
}
