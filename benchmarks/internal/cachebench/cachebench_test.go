package cachebench_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stratamem/strata/benchmarks/internal/cachebench"
	"github.com/stratamem/strata/tokens"
	"github.com/stratamem/strata/tokens/tiktoken"
)

// shared tokenizer: building the BPE tables once keeps the tests fast.
// shared between the tests' runs, memoized: the workloads repeat texts.
var tok = sync.OnceValues(func() (tokens.Tokenizer, error) {
	t, err := tiktoken.New("o200k_base")
	if err != nil {
		return nil, err
	}
	return tokens.NewCache(t, 1<<16), nil
})

func tokenizer(t testing.TB) tokens.Tokenizer {
	t.Helper()
	tk, err := tok()
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func testTurns() int {
	if testing.Short() {
		return 30
	}
	return 60
}

func join(blocks []cachebench.Block) []byte {
	var b bytes.Buffer
	for _, bl := range blocks {
		b.Write(bl.Bytes)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// stability collects, per strategy and provider, each request's bytes with
// the markers stripped (Block.Bytes never carries a breakpoint) and checks
// the byte-stability property between consecutive requests.
type stability struct {
	prev map[string]*snapshot
	// checked counts request pairs within one epoch; historyChecked those
	// whose history front also held still; violations the pairs where
	// request N+1 did not start with request N's system+anchor bytes.
	checked, historyChecked, violations int
	firstViolation                      string
}

type snapshot struct {
	epoch               string
	dropped             int
	stable, throughHist []byte
}

func newStability() *stability { return &stability{prev: map[string]*snapshot{}} }

// observe checks req against the previous request of its series. With
// anyEpoch the epoch is ignored (single band has none): every pair counts.
func (s *stability) observe(t *testing.T, req *cachebench.Request, anyEpoch bool) {
	key := string(req.Strategy) + "/" + string(req.Provider) + "/" + req.Variant
	all := join(req.Blocks)
	cur := &snapshot{epoch: req.EpochID, dropped: req.HistoryDropped,
		stable: join(req.Blocks[:req.StableBlocks]), throughHist: join(req.Blocks[:req.HistoryEnd])}
	if p := s.prev[key]; p != nil && (anyEpoch || (p.epoch == req.EpochID && !req.Reanchored)) {
		s.checked++
		if !bytes.HasPrefix(all, p.stable) {
			s.violations++
			if s.firstViolation == "" {
				s.firstViolation = key + " " + req.EpochID
				t.Logf("%s request %d (turn %d round %d, epoch %s): does not start with the previous request's system+anchor bytes",
					key, req.Index, req.Turn, req.Round, req.EpochID)
			}
		}
		// History only grew when its front held still: then the whole
		// previous prefix through history must be there too.
		if p.dropped == req.HistoryDropped {
			s.historyChecked++
			if !bytes.HasPrefix(all, p.throughHist) && !anyEpoch {
				t.Errorf("%s request %d (turn %d round %d): history front held still but request N+1 does not start with request N's system+anchor+history bytes",
					key, req.Index, req.Turn, req.Round)
			}
		}
	}
	s.prev[key] = cur
}

// TestByteStability is the property the runtime promises: within an epoch,
// request N+1 with the markers stripped starts with request N's system and
// anchor bytes exactly, on every workload, anchored strategy and provider.
func TestByteStability(t *testing.T) {
	ctx := context.Background()
	for _, w := range cachebench.Workloads() {
		t.Run(w.Name, func(t *testing.T) {
			st := newStability()
			reanchored := 0
			_, err := cachebench.Run(ctx, w, cachebench.Options{
				Turns:      testTurns(),
				Strategies: []cachebench.Strategy{cachebench.Anchored, cachebench.AnchoredHistoryCap},
				Tokenizer:  tokenizer(t),
				OnRequest: func(r *cachebench.Request) {
					if r.Reanchored {
						reanchored++
					}
					st.observe(t, r, false)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if st.violations > 0 {
				t.Fatalf("%d of %d request pairs within an epoch broke the system+anchor prefix (first: %s)", st.violations, st.checked, st.firstViolation)
			}
			// The property must have been exercised, not skipped: most
			// requests continue an epoch.
			if st.checked < testTurns() || st.historyChecked < testTurns()/2 {
				t.Fatalf("only %d pairs checked (%d through history): the property was not exercised", st.checked, st.historyChecked)
			}
			if reanchored == 0 {
				t.Fatal("no epoch started: the run did not assemble anchored views")
			}
			t.Logf("%d request pairs checked, %d through history, %d epochs started", st.checked, st.historyChecked, reanchored)
		})
	}
}

// TestByteStabilityCheckerFails shows the check catches a moving prefix:
// the single band re-renders the churning layers before history, so its
// consecutive requests do not share their system+layer bytes.
func TestByteStabilityCheckerFails(t *testing.T) {
	w, err := cachebench.WorkloadByName("churn-heavy")
	if err != nil {
		t.Fatal(err)
	}
	st := newStability()
	_, err = cachebench.Run(context.Background(), w, cachebench.Options{
		Turns: 10, Strategies: []cachebench.Strategy{cachebench.SingleBand}, Providers: []cachebench.Provider{cachebench.Anthropic},
		Tokenizer: tokenizer(t),
		OnRequest: func(r *cachebench.Request) { st.observe(t, r, true) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.checked == 0 || st.violations != st.checked {
		t.Fatalf("single band: %d of %d pairs violated the prefix, want all (the clock changes every request)", st.violations, st.checked)
	}
}

// TestRequestsAreConsistent checks each simulated request: the simulator's
// partition covers the request, breakpoints are within Anthropic's limit
// and only where the strategy asks for them.
func TestRequestsAreConsistent(t *testing.T) {
	w, err := cachebench.WorkloadByName("coding-agent")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	_, err = cachebench.Run(context.Background(), w, cachebench.Options{Turns: testTurns() / 2, Tokenizer: tokenizer(t),
		OnRequest: func(r *cachebench.Request) {
			n++
			total, bps := 0, 0
			for _, b := range r.Blocks {
				total += b.Tokens
				if b.Breakpoint {
					bps++
				}
			}
			if got := r.Usage.InputTokens(); got != total {
				t.Errorf("%s/%s request %d: simulator billed %d tokens, request has %d", r.Strategy, r.Provider, r.Index, got, total)
			}
			switch r.Strategy {
			case cachebench.SingleBand:
				if bps != 0 {
					t.Errorf("single band request %d has %d breakpoints", r.Index, bps)
				}
				if r.Provider == cachebench.Anthropic && r.Usage.ReadTokens != 0 {
					t.Errorf("Anthropic cached a request without breakpoints: %+v", r.Usage)
				}
			case cachebench.Anchored, cachebench.AnchoredHistoryCap:
				if bps < 2 || bps > 4 {
					t.Errorf("anchored request %d has %d breakpoints, want 2..4", r.Index, bps)
				}
			}
			if r.StableBlocks > r.HistoryEnd || r.HistoryEnd > len(r.Blocks) {
				t.Errorf("request %d: stable %d, history end %d, %d blocks", r.Index, r.StableBlocks, r.HistoryEnd, len(r.Blocks))
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no request seen")
	}
}

// TestDeterministic runs a workload twice: every billed figure must match.
func TestDeterministic(t *testing.T) {
	w, err := cachebench.WorkloadByName("steady-assistant")
	if err != nil {
		t.Fatal(err)
	}
	opts := cachebench.Options{Turns: testTurns() / 2, Tokenizer: tokenizer(t)}
	a, err := cachebench.Run(context.Background(), w, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cachebench.Run(context.Background(), w, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Series) != len(b.Series) || len(a.Series) == 0 {
		t.Fatalf("series: %d vs %d", len(a.Series), len(b.Series))
	}
	for i := range a.Series {
		x, y := a.Series[i], b.Series[i]
		if x.Strategy != y.Strategy || x.Provider != y.Provider || x.Totals != y.Totals {
			t.Errorf("%s/%s: %+v vs %+v", x.Strategy, x.Provider, x.Totals, y.Totals)
		}
	}
}

// TestOptimumBoundsTheStrategies: the optimum reads at least as large a
// share as any strategy, and its first request reads nothing.
func TestOptimumBoundsTheStrategies(t *testing.T) {
	w, err := cachebench.WorkloadByName("churn-heavy")
	if err != nil {
		t.Fatal(err)
	}
	first := 0 // the single-band view's first request: the optimum's content
	res, err := cachebench.Run(context.Background(), w, cachebench.Options{Turns: testTurns() / 2, Tokenizer: tokenizer(t),
		OnRequest: func(r *cachebench.Request) {
			if r.Strategy == cachebench.SingleBand && r.Provider == cachebench.Anthropic && r.Index == 0 {
				first = r.Usage.InputTokens()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cachebench.AllProviders() {
		opt := res.Get(cachebench.Optimum, p)
		if opt == nil || opt.Totals.Requests != res.Requests {
			t.Fatalf("%s: optimum missing or incomplete: %+v", p, opt)
		}
		// Request 0 is all new: billed in full at the base price.
		if first == 0 || opt.Cumulative[0] != float64(first) {
			t.Fatalf("%s: first optimum request billed %v, its content is %d tokens", p, opt.Cumulative[0], first)
		}
		for _, s := range res.Series {
			if s.Provider == p && s.Totals.HitRatio() > opt.Totals.HitRatio() {
				t.Errorf("%s/%s hit ratio %.3f beats the optimum's %.3f", s.Strategy, p, s.Totals.HitRatio(), opt.Totals.HitRatio())
			}
		}
		anchored, single := res.Get(cachebench.Anchored, p), res.Get(cachebench.SingleBand, p)
		if anchored.Totals.BaseEquivalent >= single.Totals.BaseEquivalent {
			t.Errorf("%s: anchored billed %.0f, single band %.0f", p, anchored.Totals.BaseEquivalent, single.Totals.BaseEquivalent)
		}
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := cachebench.WorkloadByName("nope"); !errors.Is(err, cachebench.ErrUnknownWorkload) {
		t.Errorf("unknown workload: %v", err)
	}
	w, _ := cachebench.WorkloadByName("steady-assistant")
	for _, tc := range []struct {
		opts cachebench.Options
		want error
	}{
		{cachebench.Options{Turns: -1}, cachebench.ErrInvalidOptions},
		{cachebench.Options{Strategies: []cachebench.Strategy{"fastest"}}, cachebench.ErrUnknownStrategy},
		{cachebench.Options{Providers: []cachebench.Provider{"gemini"}}, cachebench.ErrUnknownStrategy},
	} {
		if _, err := cachebench.Run(ctx, w, tc.opts); !errors.Is(err, tc.want) {
			t.Errorf("%+v: err = %v, want %v", tc.opts, err, tc.want)
		}
	}
	if _, err := cachebench.Run(ctx, cachebench.Workload{Name: "hand-made"}, cachebench.Options{}); !errors.Is(err, cachebench.ErrInvalidOptions) {
		t.Errorf("workload without script: %v", err)
	}
}

func TestReportAndPlot(t *testing.T) {
	w, _ := cachebench.WorkloadByName("steady-assistant")
	res, err := cachebench.Run(context.Background(), w, cachebench.Options{Turns: 20, Tokenizer: tokenizer(t)})
	if err != nil {
		t.Fatal(err)
	}
	var md, svg bytes.Buffer
	if err := cachebench.WriteMarkdown(&md, []*cachebench.Result{res}, cachebench.ReportOptions{Command: "make bench-cache", Plot: "p.svg"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| anchored |", "| single-band |", "| all-in-system |", "| optimum |", "## Targets", "![cumulative billed input per strategy](p.svg)"} {
		if !bytes.Contains(md.Bytes(), []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
	if err := cachebench.WriteSVG(&svg, []*cachebench.Result{res}); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(svg.Bytes(), []byte("<svg")) || bytes.Count(svg.Bytes(), []byte("<polyline")) != len(res.Series) {
		t.Errorf("svg: %d polylines for %d series", bytes.Count(svg.Bytes(), []byte("<polyline")), len(res.Series))
	}
}

// BenchmarkRun measures a short anchored run of each workload on the
// Anthropic simulator: assembly, request building and simulation.
func BenchmarkRun(b *testing.B) {
	for _, w := range cachebench.Workloads() {
		b.Run(w.Name, func(b *testing.B) {
			opts := cachebench.Options{Turns: 20, Tokenizer: tokenizer(b),
				Strategies: []cachebench.Strategy{cachebench.Anchored}, Providers: []cachebench.Provider{cachebench.Anthropic}}
			for b.Loop() {
				if _, err := cachebench.Run(context.Background(), w, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
