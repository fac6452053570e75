package scalebench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
)

// maxStarts bounds Config.Starts.
const maxStarts = 100

// Config describes one case: a backend, a layout and a size.
type Config struct {
	Backend string
	Layout  Layout
	Size    int
	// CacheRoot holds the loaded stores (see CacheDir).
	CacheRoot string
	// Dimension of the hashing embedder; 0 means DefaultDimension.
	Dimension int
	// PGDSN is the PostgreSQL database of backend pgvector.
	PGDSN string
	// Starts is the number of session starts timed (at most maxStarts),
	// Turns the user+assistant exchanges, Queries the searches. Zero
	// means 20, 20 and 50.
	Starts, Turns, Queries int
	// PhaseCap stops a phase (starts, turns, searches) once it has run
	// this long with at least its minimum of samples (3 starts, 5 turns,
	// 10 searches): a 200k history makes each call slow. Zero means 60 s.
	PhaseCap time.Duration
	// ProfileDir, when set, is a directory to write CPU profiles to:
	// start-<backend>-<size>.pprof of one session start (with the init
	// timeout raised, so it completes) and search-<backend>-<size>.pprof
	// of the search phase.
	ProfileDir string
	Logf       func(format string, args ...any) `json:"-"`
}

func (c *Config) defaults() {
	if c.Dimension == 0 {
		c.Dimension = DefaultDimension
	}
	if c.Starts <= 0 {
		c.Starts = 20
	}
	c.Starts = min(c.Starts, maxStarts)
	if c.Turns <= 0 {
		c.Turns = 20
	}
	if c.Queries <= 0 {
		c.Queries = 50
	}
	if c.PhaseCap <= 0 {
		c.PhaseCap = 60 * time.Second
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// UnboundedInit is the init timeout of the runtime used once the default
// one (core.Timeouts: Init 10 s) made starts fail: long enough to measure
// what a start costs and to go on measuring turns and searches.
const UnboundedInit = 10 * time.Minute

// Result is what one case measured.
type Result struct {
	Backend   string `json:"backend"`
	Layout    Layout `json:"layout"`
	Size      int    `json:"size"`
	Resources int    `json:"resources"`
	// ResourceMessages is the probe resource's loaded message count.
	ResourceMessages int `json:"resource_messages"`

	Load LoadStats `json:"load"`
	PG   *PGStats  `json:"pg,omitempty"`

	// OpenMs is embedded.Open (replaying the records log) or opening the
	// pgvector collection and state store.
	OpenMs float64 `json:"open_ms"`
	// Start is rt.Start of a new thread of the probe resource (semantic
	// init: loading the resource's records and building BM25), each
	// session Completed, under the default init timeout; Fail counts
	// starts that failed (StartTimeouts of them by the timeout).
	Start         Dist `json:"start"`
	StartTimeouts int  `json:"start_timeouts"`
	// StartUnboundedMs is one start with the init timeout raised to
	// UnboundedInit, measured when a start failed: what loading costs.
	// The rest of the case then runs on that runtime.
	StartUnboundedMs float64 `json:"start_unbounded_ms,omitempty"`
	// IdleWaitMs is how long the case waited, in all, for timed-out
	// inits to finish on their goroutines before measuring on.
	IdleWaitMs float64 `json:"idle_wait_ms,omitempty"`

	// One exchange per turn: Append(user), Assemble, Record(assistant).
	Append       Dist `json:"append"`
	Assemble     Dist `json:"assemble"`
	Record       Dist `json:"record"`
	AppendRecord Dist `json:"append_record"`
	// RecallTimeouts counts assemblies whose semantic recall timed out.
	RecallTimeouts int `json:"recall_timeouts"`
	// Search is Layer.Search(resource, query, SearchOptions{}), with the
	// turns session open.
	Search Dist `json:"search"`

	// Memory: before opening the store, with the store open, and with
	// the turns session open after the searches. SessionHeapMiB is the
	// heap one started session adds (its mirror and BM25 index).
	MemBase        Mem     `json:"mem_base"`
	MemOpen        Mem     `json:"mem_open"`
	MemSession     Mem     `json:"mem_session"`
	SessionHeapMiB float64 `json:"session_heap_mib"`

	Seconds float64  `json:"seconds"`
	Notes   []string `json:"notes,omitempty"`
	Err     string   `json:"error,omitempty"`
	// Skipped says why a case was not run ("" when it ran).
	Skipped string `json:"skipped,omitempty"`
}

// Run measures one case. The store of the case is built first if the
// cache does not hold it (see Build), and for pgvector copied into its
// collection (see PreparePG); the command does both in processes of their
// own, so that their memory is not counted here.
func Run(ctx context.Context, c Config) (Result, error) {
	c.defaults()
	begin := time.Now()
	res := ProbeResource(c.Layout)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	r := Result{Backend: c.Backend, Layout: c.Layout, Size: c.Size, Resources: Resources(c.Layout)}
	for _, conv := range Plan(c.Layout, c.Size) {
		if conv.Resource == res {
			r.ResourceMessages += conv.Msgs
		}
	}
	r.MemBase = readMem()
	dir := CacheDir(c.CacheRoot, c.Layout, c.Size, c.Dimension)
	ls, err := Build(ctx, BuildOptions{Dir: dir, Layout: c.Layout, Total: c.Size, Dimension: c.Dimension, Logf: c.Logf})
	if err != nil {
		return r, err
	}
	r.Load = ls
	emb := hashing.New(c.Dimension)
	var be *backend
	t0 := time.Now()
	switch c.Backend {
	case Embedded:
		be, err = openEmbedded(ctx, dir, emb)
	case PGVector:
		if c.PGDSN == "" {
			return r, fmt.Errorf("scalebench: backend pgvector needs a PostgreSQL DSN (STRATA_TEST_PG_DSN)")
		}
		ps, perr := PreparePG(ctx, c.CacheRoot, c.PGDSN, c.Layout, c.Size, c.Dimension, c.Logf)
		if perr != nil {
			return r, perr
		}
		r.PG = &ps
		t0 = time.Now()
		be, err = openPG(ctx, c.PGDSN, PGCollection(c.Layout, c.Size), emb)
	default:
		return r, fmt.Errorf("scalebench: unknown backend %q", c.Backend)
	}
	if err != nil {
		return r, err
	}
	r.OpenMs = ms(time.Since(t0))
	defer be.close()
	if err := deleteProbes(ctx, be.mem.Records, res); err != nil {
		return r, err
	}
	defer deleteProbes(context.WithoutCancel(ctx), be.mem.Records, res)
	r.MemOpen = readMem()

	layer, err := semantic.New(be.mem, semantic.Options{Common: memory.Common{Scope: core.ScopeResource}})
	if err != nil {
		return r, err
	}
	newRT := func(init time.Duration) (*core.Runtime, error) {
		return core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}, Store: be.state,
			Timeouts: core.Timeouts{core.HookInit: init}})
	}
	rt, err := newRT(0) // the defaults: what every host gets
	if err != nil {
		return r, err
	}

	// Starts.
	var starts []time.Duration
	fails := 0
	phase := time.Now()
	for i := 0; i < c.Starts; i++ {
		n := len(starts) + fails
		if n >= 3 && time.Since(phase) > c.PhaseCap {
			r.Notes = append(r.Notes, fmt.Sprintf("starts: stopped after %d of %d (phase cap %s)", n, c.Starts, c.PhaseCap))
			break
		}
		if fails >= 2 && len(starts) == 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("starts: stopped after %d failures in a row", fails))
			break
		}
		t := time.Now()
		s, err := rt.Start(ctx, core.RunOptions{ThreadID: probeThread(res, run, fmt.Sprintf("start-%02d", i)), ResourceID: res})
		d := time.Since(t)
		if err != nil {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			fails++
			if isTimeout(err) {
				r.StartTimeouts++
			} else {
				r.Notes = append(r.Notes, fmt.Sprintf("start %d failed after %s: %v", i, d.Round(time.Millisecond), err))
			}
			c.Logf("    start %d failed after %s: %v", i, d.Round(time.Millisecond), err)
			// The init goes on running on its goroutine: let it finish.
			r.IdleWaitMs += ms(waitIdle(5 * time.Minute))
			continue
		}
		starts = append(starts, d)
		if err := s.Complete(ctx, "ok"); err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("start %d: Complete: %v", i, err))
		}
	}
	r.Start = dist(starts, fails)
	c.Logf("    start p50 %.1f ms (%d ok, %d failed)", r.Start.P50, len(starts), fails)
	use := rt
	if fails > 0 {
		if use, err = newRT(UnboundedInit); err != nil {
			return r, err
		}
		t := time.Now()
		s, err := use.Start(ctx, core.RunOptions{ThreadID: probeThread(res, run, "unbounded"), ResourceID: res})
		if err != nil {
			return r, fmt.Errorf("scalebench: start with a %s init timeout: %w", UnboundedInit, err)
		}
		r.StartUnboundedMs = ms(time.Since(t))
		_ = s.Complete(ctx, "ok")
		c.Logf("    start with the init timeout raised: %.0f ms", r.StartUnboundedMs)
		r.Notes = append(r.Notes, fmt.Sprintf("turns and searches ran with the init timeout raised to %s", UnboundedInit))
	}
	if c.ProfileDir != "" {
		prt, err := newRT(UnboundedInit)
		if err != nil {
			return r, err
		}
		if err := profileStart(ctx, prt, c.profile("start"), probeThread(res, run, "profile"), res); err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("cpu profile: %v", err))
		}
	}

	// One session for the turns and the searches.
	heap0 := readMem().HeapMiB
	s, err := use.Start(ctx, core.RunOptions{ThreadID: probeThread(res, run, "turns"), ResourceID: res})
	if err != nil {
		return r, fmt.Errorf("scalebench: start the turns session: %w", err)
	}
	defer s.Close(context.WithoutCancel(ctx))
	r.SessionHeapMiB = readMem().HeapMiB - heap0
	items := probeItems(fmt.Sprintf("%s-%s-%d", c.Backend, c.Layout, c.Size), 2*c.Turns)
	var app, asm, rec, ar []time.Duration
	appFail, asmFail, recFail := 0, 0, 0
	phase = time.Now()
	for i := 0; i < c.Turns; i++ {
		if i >= 5 && time.Since(phase) > c.PhaseCap {
			r.Notes = append(r.Notes, fmt.Sprintf("turns: stopped after %d of %d (phase cap %s)", i, c.Turns, c.PhaseCap))
			break
		}
		t := time.Now()
		err := s.Append(ctx, items[2*i])
		da := time.Since(t)
		ok := err == nil
		if err != nil {
			appFail++
			c.Logf("    append %d: %v", i, err)
		} else {
			app = append(app, da)
		}
		t = time.Now()
		_, err = s.Assemble(ctx)
		if err != nil {
			asmFail++
			c.Logf("    assemble %d: %v", i, err)
		} else {
			asm = append(asm, time.Since(t))
		}
		t = time.Now()
		err = s.Record(ctx, items[2*i+1])
		dr := time.Since(t)
		ok = ok && err == nil
		if err != nil {
			recFail++
			c.Logf("    record %d: %v", i, err)
		} else {
			rec = append(rec, dr)
		}
		if ok {
			ar = append(ar, da+dr)
		}
	}
	r.Append, r.Assemble, r.Record = dist(app, appFail), dist(asm, asmFail), dist(rec, recFail)
	r.AppendRecord = dist(ar, 0)
	for _, d := range s.Diagnostics() {
		if d.Layer == LayerID && d.Kind == core.KindTimeout {
			if d.Hook == "recall" {
				r.RecallTimeouts++
			} else {
				r.Notes = append(r.Notes, fmt.Sprintf("hook %s timed out at turn %d", d.Hook, d.Turn))
			}
		}
	}
	c.Logf("    append+record p50 %.1f ms, assemble p50 %.1f ms", r.AppendRecord.P50, r.Assemble.P50)

	// Searches.
	// A host's search of the user's memory: the resource, no thread, so
	// no thread's latest messages are read or count.
	scope := vectorstore.Scope{Resource: res}
	var srch []time.Duration
	sFail := 0
	if c.ProfileDir != "" {
		if f, err := os.Create(c.profile("search")); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer f.Close()
				defer pprof.StopCPUProfile()
			} else {
				f.Close()
			}
		}
	}
	phase = time.Now()
	for i, q := range Queries(Seed, c.Queries) {
		if i >= 10 && time.Since(phase) > c.PhaseCap {
			r.Notes = append(r.Notes, fmt.Sprintf("searches: stopped after %d of %d (phase cap %s)", i, c.Queries, c.PhaseCap))
			break
		}
		t := time.Now()
		_, err := layer.Search(ctx, scope, q, semantic.SearchOptions{})
		if err != nil {
			sFail++
			c.Logf("    search %q: %v", q, err)
			continue
		}
		srch = append(srch, time.Since(t))
	}
	if c.ProfileDir != "" {
		pprof.StopCPUProfile()
	}
	r.Search = dist(srch, sFail)
	c.Logf("    search p50 %.1f ms p95 %.1f ms", r.Search.P50, r.Search.P95)
	r.MemSession = readMem()
	if err := s.Complete(ctx, "ok"); err != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("turns session: Complete: %v", err))
	}
	r.Seconds = time.Since(begin).Seconds()
	return r, nil
}

func (c *Config) profile(what string) string {
	return filepath.Join(c.ProfileDir, fmt.Sprintf("%s-%s-%s.pprof", what, c.Backend, SizeLabel(c.Size)))
}

func profileStart(ctx context.Context, rt *core.Runtime, file, thread, res string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	s, err := rt.Start(ctx, core.RunOptions{ThreadID: thread, ResourceID: res})
	pprof.StopCPUProfile()
	if err != nil {
		return err
	}
	return s.Complete(ctx, "ok")
}

// isTimeout reports an init that failed by its timeout.
func isTimeout(err error) bool {
	var he *core.HookError
	return errors.As(err, &he) && he.Kind == core.KindTimeout || errors.Is(err, context.DeadlineExceeded)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
