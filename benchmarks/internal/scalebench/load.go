package scalebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
)

// LayerID is the semantic layer's id (its default).
const LayerID = "semantic"

// DefaultDimension is the hashing embedder's dimension: the default
// model's (embed/uselite, 512), so vectors cost what they would.
const DefaultDimension = 512

// LoadStats describe how a cached store was built.
type LoadStats struct {
	Layout        Layout  `json:"layout"`
	Messages      int     `json:"messages"`
	Conversations int     `json:"conversations"`
	Records       int     `json:"records"`
	Workers       int     `json:"workers"`
	Embedder      string  `json:"embedder"`
	Seconds       float64 `json:"seconds"` // summed over resumed attempts
	Rate          float64 `json:"rate"`    // messages per second
	Resumes       int     `json:"resumes"`
	// Built is true when this run built (or finished) the store, false
	// when it was already complete in the cache.
	Built bool `json:"built"`
}

// BuildOptions configure Build.
type BuildOptions struct {
	// Dir is the store's directory (an embedded.Open data directory).
	Dir       string
	Layout    Layout
	Total     int
	Dimension int // 0 means DefaultDimension
	// Workers is the number of sessions loading at once; 0 means 4.
	Workers int
	Logf    func(format string, args ...any)
	// scope is the loading layer's scope; "" means core.ScopeThread (see
	// Build). Tests compare the two.
	scope core.Scope
}

const (
	progressFile = "scalebench-progress.json"
	completeFile = "scalebench-complete.json"
)

type progress struct {
	// Watermark: every conversation of the plan before it is complete.
	Watermark int     `json:"watermark"`
	Seconds   float64 `json:"seconds"`
	Resumes   int     `json:"resumes"`
}

// CacheDir is where the store of layout and total lives under root.
func CacheDir(root string, l Layout, total, dim int) string {
	if dim == 0 {
		dim = DefaultDimension
	}
	return filepath.Join(root, fmt.Sprintf("%s-%d-hash%d-v1", l, total, dim))
}

// ReadStats reads the stats of a complete store; ok is false when the
// store in dir is missing or incomplete.
func ReadStats(dir string) (LoadStats, bool) {
	raw, err := os.ReadFile(filepath.Join(dir, completeFile))
	if err != nil {
		return LoadStats{}, false
	}
	var s LoadStats
	if json.Unmarshal(raw, &s) != nil {
		return LoadStats{}, false
	}
	return s, true
}

// Build writes the plan's conversations into the embedded store at
// o.Dir through the public API, one session per conversation: Start, then
// each message with Append (user) or Record (assistant), then Complete,
// with the store clock at the message's time. It is resumable: progress
// is saved every few seconds, a rerun continues from the last complete
// conversation, and conversations run again write the same records
// (messages carry deterministic item ids). A complete store is not
// touched.
//
// The loading sessions use a semantic layer of thread scope (the same
// layer, id and records; only its mirror differs): a resource-scoped
// session would load the whole growing resource at every Start, which is
// exactly the cost this benchmark measures and would make a 200k load
// take hours. The records are byte for byte those a resource-scoped layer
// writes (TestThreadScopedLoadWritesResourceRecords checks it), so
// resource-scoped sessions read them as their own.
func Build(ctx context.Context, o BuildOptions) (LoadStats, error) {
	if s, ok := ReadStats(o.Dir); ok {
		s.Built = false
		return s, nil
	}
	if o.Dimension == 0 {
		o.Dimension = DefaultDimension
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.scope == "" {
		o.scope = core.ScopeThread
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	emb := hashing.New(o.Dimension)
	env, err := embedded.Open(ctx, o.Dir, embedded.Options{Embedder: emb})
	if err != nil {
		return LoadStats{}, err
	}
	defer env.Close()

	plan := Plan(o.Layout, o.Total)
	var prog progress
	if raw, err := os.ReadFile(filepath.Join(o.Dir, progressFile)); err == nil {
		if err := json.Unmarshal(raw, &prog); err != nil {
			return LoadStats{}, fmt.Errorf("scalebench: %s: %w", progressFile, err)
		}
		prog.Resumes++
		logf("resuming the load of %s at conversation %d of %d", o.Dir, prog.Watermark, len(plan))
	}
	begin := time.Now()
	prior := prog.Seconds
	msgsBefore := 0
	for _, c := range plan[:prog.Watermark] {
		msgsBefore += c.Msgs
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	todo := make(chan Conversation)
	done := make(chan int, o.Workers)
	errc := make(chan error, o.Workers)
	var wg sync.WaitGroup
	for w := 0; w < o.Workers; w++ {
		wl, err := newLoader(env, emb, o.scope)
		if err != nil {
			return LoadStats{}, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range todo {
				if err := wl.load(ctx, c); err != nil {
					errc <- fmt.Errorf("scalebench: load %s: %w", c.Thread, err)
					cancel()
					return
				}
				done <- c.Index
			}
		}()
	}
	go func() {
		defer close(todo)
		for _, c := range plan[prog.Watermark:] {
			select {
			case todo <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(done) }()

	finished := map[int]bool{}
	wm := prog.Watermark
	msgs := msgsBefore
	lastSave, lastLog := time.Now(), time.Now()
	save := func() error {
		p := progress{Watermark: wm, Seconds: prior + time.Since(begin).Seconds(), Resumes: prog.Resumes}
		return writeJSON(filepath.Join(o.Dir, progressFile), p)
	}
	for idx := range done {
		finished[idx] = true
		for finished[wm] {
			delete(finished, wm)
			msgs += plan[wm].Msgs
			wm++
		}
		if time.Since(lastSave) > 3*time.Second {
			if err := save(); err != nil {
				cancel()
				return LoadStats{}, err
			}
			lastSave = time.Now()
		}
		if time.Since(lastLog) > 15*time.Second {
			el := time.Since(begin).Seconds()
			logf("  load %s: %d/%d messages, %.0f msg/s", filepath.Base(o.Dir), msgs, o.Total, float64(msgs-msgsBefore)/el)
			lastLog = time.Now()
		}
	}
	select {
	case err := <-errc:
		_ = save()
		return LoadStats{}, err
	default:
	}
	if err := ctx.Err(); err != nil {
		_ = save()
		return LoadStats{}, err
	}
	n, err := env.Memory.Records.Count(context.Background(), vectorstore.Filter{Layer: LayerID})
	if err != nil {
		return LoadStats{}, err
	}
	secs := prior + time.Since(begin).Seconds()
	st := LoadStats{Layout: o.Layout, Messages: o.Total, Conversations: len(plan), Records: n, Workers: o.Workers,
		Embedder: emb.Model(), Seconds: secs, Rate: float64(o.Total) / secs, Resumes: prog.Resumes}
	if err := writeJSON(filepath.Join(o.Dir, completeFile), st); err != nil {
		return LoadStats{}, err
	}
	_ = os.Remove(filepath.Join(o.Dir, progressFile))
	st.Built = true
	return st, nil
}

// loader is one loading worker: its own store clock (the conversation's
// time), its own layer and runtime over the shared collection and state.
type loader struct {
	clk *clock
	rt  *core.Runtime
}

func newLoader(env *embedded.Env, emb *hashing.Embedder, scope core.Scope) (*loader, error) {
	clk := &clock{}
	store := &memory.Store{Records: env.Memory.Records, Embedder: emb, Now: clk.now}
	l, err := semantic.New(store, semantic.Options{Common: memory.Common{Scope: scope}})
	if err != nil {
		return nil, err
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}, Store: env.State})
	if err != nil {
		return nil, err
	}
	return &loader{clk: clk, rt: rt}, nil
}

func (w *loader) load(ctx context.Context, c Conversation) error {
	w.clk.set(c.Start)
	s, err := w.rt.Start(ctx, core.RunOptions{RunID: "load-" + c.Thread, ThreadID: c.Thread, ResourceID: c.Resource})
	if err != nil {
		return err
	}
	for j, it := range c.Items() {
		w.clk.set(c.MessageTime(j))
		if it.Role == core.RoleUser {
			err = s.Append(ctx, it)
		} else {
			err = s.Record(ctx, it)
		}
		if err != nil {
			_ = s.Close(ctx)
			return err
		}
	}
	return s.Complete(ctx, "ok")
}

// clock is a settable store clock, safe for the hooks' goroutines.
type clock struct{ ns atomic.Int64 }

func (c *clock) set(t time.Time) { c.ns.Store(t.UnixNano()) }
func (c *clock) now() time.Time  { return time.Unix(0, c.ns.Load()).UTC() }

func writeJSON(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// errSkipped marks a case that was not run.
var errSkipped = errors.New("not run")

// BuildCached makes sure the cache under root holds the store of (l,
// total): if not, it is built under scratch (a tmpfs such as /dev/shm
// makes the load several times faster: nothing waits for fsync), then
// copied into root and renamed into place. A load interrupted in scratch
// resumes there. scratch "" builds in place.
func BuildCached(ctx context.Context, root, scratch string, l Layout, total, dim, workers int, logf func(string, ...any)) (LoadStats, error) {
	final := CacheDir(root, l, total, dim)
	if s, ok := ReadStats(final); ok {
		return s, nil
	}
	if scratch == "" {
		return Build(ctx, BuildOptions{Dir: final, Layout: l, Total: total, Dimension: dim, Workers: workers, Logf: logf})
	}
	tmp := CacheDir(scratch, l, total, dim)
	st, err := Build(ctx, BuildOptions{Dir: tmp, Layout: l, Total: total, Dimension: dim, Workers: workers, Logf: logf})
	if err != nil {
		return st, err
	}
	staging := final + ".copying"
	_ = os.RemoveAll(staging)
	if err := copyTree(tmp, staging); err != nil {
		return st, err
	}
	_ = os.RemoveAll(final)
	if err := os.Rename(staging, final); err != nil {
		return st, err
	}
	st.Built = true
	return st, os.RemoveAll(tmp)
}

// copyTree copies the regular files and directories under src to dst,
// syncing each file.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return errors.Join(out.Sync(), out.Close())
	})
}
