package ctxutil_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratamem/strata/internal/ctxutil"
)

func TestBoundAddsTimeout(t *testing.T) {
	start := time.Now()
	ctx, cancel := ctxutil.Bound(context.Background(), time.Hour)
	dl, ok := ctx.Deadline()
	if !ok || dl.Before(start.Add(time.Hour)) || dl.After(time.Now().Add(time.Hour)) {
		t.Fatalf("deadline %v, %v; want an hour from now", dl, ok)
	}
	cancel()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("after cancel: %v", ctx.Err())
	}
}

func TestBoundExpires(t *testing.T) {
	ctx, cancel := ctxutil.Bound(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("err %v", ctx.Err())
	}
	ctx0, cancel0 := ctxutil.Bound(context.Background(), 0)
	defer cancel0()
	if !errors.Is(ctx0.Err(), context.DeadlineExceeded) {
		t.Fatalf("zero timeout: err %v, want DeadlineExceeded at once", ctx0.Err())
	}
}

func TestBoundNegative(t *testing.T) {
	parent, pcancel := context.WithCancel(context.Background())
	defer pcancel()
	ctx, cancel := ctxutil.Bound(parent, -1)
	if ctx != parent {
		t.Fatal("negative timeout: context replaced")
	}
	if _, ok := ctx.Deadline(); ok {
		t.Fatal("negative timeout: deadline added")
	}
	cancel()
	if ctx.Err() != nil {
		t.Fatal("no-op cancel ended the parent")
	}
}

func TestBoundKeepsDeadline(t *testing.T) {
	for _, d := range []time.Duration{time.Millisecond, time.Hour} {
		want := time.Now().Add(time.Minute)
		parent, pcancel := context.WithDeadline(context.Background(), want)
		ctx, cancel := ctxutil.Bound(parent, d)
		if ctx != parent {
			t.Fatalf("timeout %v: context replaced", d)
		}
		if dl, _ := ctx.Deadline(); !dl.Equal(want) {
			t.Fatalf("timeout %v: deadline %v, want %v", d, dl, want)
		}
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("timeout %v: no-op cancel ended the parent", d)
		}
		pcancel()
	}
}
