package cachebench_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"

	"github.com/stratamem/strata/benchmarks/internal/cachebench"
)

// longRun runs the long session for calls model calls and returns it with
// a digest of every request's blocks and breakpoints, in run order.
func longRun(t *testing.T, calls int) (*cachebench.LongResult, [32]byte) {
	t.Helper()
	h := sha256.New()
	res, err := cachebench.RunLongSession(context.Background(), cachebench.LongOptions{
		Calls:     calls,
		Tokenizer: tokenizer(t),
		OnRequest: func(r *cachebench.Request) {
			for _, b := range r.Blocks {
				h.Write(b.Bytes)
				if b.Breakpoint {
					h.Write([]byte{1})
				}
			}
			h.Write([]byte{0})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var d [32]byte
	copy(d[:], h.Sum(nil))
	return res, d
}

// TestLongSession checks that the long session is deterministic, that with
// no compaction the view outgrows the window while today's Policy keeps
// every view inside it, and that the arms this build cannot run are
// reported as pending.
func TestLongSession(t *testing.T) {
	calls := 80
	if testing.Short() {
		calls = 50
	}
	a, da := longRun(t, calls)
	b, db := longRun(t, calls)
	if da != db {
		t.Error("the two runs sent different requests")
	}
	if a.Calls != calls || a.ToolOutputs != b.ToolOutputs || a.OutputTokens != b.OutputTokens || a.Turns != b.Turns {
		t.Errorf("script differs between runs: %+v vs %+v", *a, *b)
	}
	for i, x := range a.Arms {
		y := b.Arms[i]
		if x.Arm.Name != y.Arm.Name || x.OverWindow != y.OverWindow || x.MaxInput != y.MaxInput || x.Optimum != y.Optimum ||
			x.ArmCounters != y.ArmCounters || (x.Series == nil) != (y.Series == nil) {
			t.Fatalf("arm %s differs between runs", x.Arm.Name)
		}
		if x.Series != nil && x.Series.Totals != y.Series.Totals {
			t.Errorf("arm %s: totals differ between runs: %+v vs %+v", x.Arm.Name, x.Series.Totals, y.Series.Totals)
		}
	}

	none, trunc := a.Arm(cachebench.ArmNoCompaction), a.Arm(cachebench.ArmTruncate)
	if none == nil || trunc == nil || none.Series == nil || trunc.Series == nil {
		t.Fatal("the no-compaction and policy-truncate arms must run")
	}
	for _, ar := range []*cachebench.ArmResult{none, trunc} {
		if ar.Series.Totals.Requests != calls {
			t.Errorf("%s: %d requests, want %d", ar.Arm.Name, ar.Series.Totals.Requests, calls)
		}
	}
	if none.OverWindow == 0 || none.MaxInput <= a.Window {
		t.Errorf("no-compaction: %d views over the window (max %d tokens, window %d), want some", none.OverWindow, none.MaxInput, a.Window)
	}
	if trunc.OverWindow != 0 || trunc.MaxInput > a.Window {
		t.Errorf("policy-truncate: %d views over the window (max %d tokens, window %d), want none", trunc.OverWindow, trunc.MaxInput, a.Window)
	}
	if trunc.HistoryCuts == 0 {
		t.Error("policy-truncate never cut history")
	}
	if a.FrontTokens < 1024 {
		t.Errorf("system prompt and tools are %d tokens, under the 1,024-token cache minimum", a.FrontTokens)
	}
	if c := a.Arm(cachebench.ArmCompaction); c != nil && c.Series != nil {
		if c.OverWindow != 0 || c.SummarizerCalls == 0 || c.Compactions == 0 {
			t.Errorf("compaction-event: %d views over the window, %d summarizer calls, %d compactions; want none, some, some",
				c.OverWindow, c.SummarizerCalls, c.Compactions)
		}
	}
	if tt := a.Arm(cachebench.ArmTailTrim); tt != nil && tt.Series != nil {
		if tt.OverWindow != 0 || tt.TrimmedViews == 0 || tt.Compactions != 0 {
			t.Errorf("tail-trim: %d views over the window, %d views with cleared outputs, %d compactions; want none, some, none",
				tt.OverWindow, tt.TrimmedViews, tt.Compactions)
		}
	}
	for _, name := range []string{cachebench.ArmCompaction, cachebench.ArmCompactionTailTrim} {
		if c := a.Arm(name); c != nil && c.SummarizerCalls != c.Compactions {
			t.Errorf("%s: %d summarizer calls for %d compactions", name, c.SummarizerCalls, c.Compactions)
		}
	}
	for _, ar := range a.Arms {
		if ar.Arm.Pending != "" && ar.Series != nil {
			t.Errorf("pending arm %s has figures", ar.Arm.Name)
		}
	}

	var md strings.Builder
	if err := cachebench.WriteMarkdown(&md, nil, cachebench.ReportOptions{LongSession: a}); err != nil {
		t.Fatal(err)
	}
	for _, ar := range a.Arms {
		if !strings.Contains(md.String(), "| "+ar.Arm.Name+" |") {
			t.Errorf("report has no row for arm %s", ar.Arm.Name)
		}
	}
}

func TestLongSessionOptions(t *testing.T) {
	ctx := context.Background()
	if _, err := cachebench.RunLongSession(ctx, cachebench.LongOptions{Calls: -1}); !errors.Is(err, cachebench.ErrInvalidOptions) {
		t.Errorf("Calls -1: %v, want ErrInvalidOptions", err)
	}
	if _, err := cachebench.RunLongSession(ctx, cachebench.LongOptions{Arms: []string{"nope"}}); !errors.Is(err, cachebench.ErrUnknownStrategy) {
		t.Errorf("unknown arm: %v, want ErrUnknownStrategy", err)
	}
	for _, a := range cachebench.LongArms() {
		if a.Pending == "" {
			continue
		}
		if _, err := cachebench.RunLongSession(ctx, cachebench.LongOptions{Arms: []string{a.Name}}); !errors.Is(err, cachebench.ErrUnavailable) {
			t.Errorf("pending arm %s: %v, want ErrUnavailable", a.Name, err)
		}
	}
}
