package recallquality

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/tokens"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
)

// Ks are the cut-offs recall is reported at.
var Ks = []int{5, 10, 20}

// Modes are the rankings compared.
var Modes = []semantic.Mode{semantic.ModeDense, semantic.ModeLexical, semantic.ModeHybrid}

// Resource is the resource id the corpora are recorded under.
const Resource = "recallquality-user"

// clock is the harness's settable clock: each turn is recorded at its
// corpus time, so records carry the dates a question may ask about.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// Bench is one corpus recorded in one store with one embedder, ready to
// be queried in any mode.
type Bench struct {
	Corpus *Corpus
	Store  *memory.Store
	// Options are the layer options the corpus was recorded with.
	Options semantic.Options
	col     *vectorstore.Collection
}

// Open opens a chromem collection under dir for emb and records the
// corpus into it through the semantic layer, one core.Session per
// corpus session: user turns are appended, assistant turns recorded as
// the model's answer, each at its corpus time, and every session is
// completed. opts.ID and opts.Scope are kept (an empty Scope is the
// corpus's, see Corpus.Scope); the rest of opts only matters for how the
// records are written.
func Open(ctx context.Context, dir string, c *Corpus, emb embed.Embedder, opts semantic.Options) (*Bench, error) {
	if opts.Scope == "" {
		opts.Scope = c.Scope
	}
	col, err := chromem.OpenCollection(ctx, dir, "memories", &vectorstore.Options{Dimension: emb.Dimension()})
	if err != nil {
		return nil, fmt.Errorf("recallquality: open collection: %w", err)
	}
	clk := &clock{}
	opts = patient(opts)
	b := &Bench{Corpus: c, Store: &memory.Store{Records: col, Embedder: emb, Now: clk.Now}, Options: opts, col: col}
	if err := b.record(ctx, clk); err != nil {
		_ = col.Close()
		return nil, err
	}
	return b, nil
}

// OpenCached is Open on a folder kept between runs: when dir holds the
// corpus recorded with the same embedder, layer id and scope (the
// marker file names them), the records are reused and nothing is
// embedded; otherwise dir is emptied and the corpus recorded. Records do
// not depend on the ranking options, so exploring them (the command's
// flags) need not re-embed a corpus each time.
func OpenCached(ctx context.Context, dir string, c *Corpus, emb embed.Embedder, opts semantic.Options) (*Bench, error) {
	if opts.Scope == "" {
		opts.Scope = c.Scope
	}
	mark := fmt.Sprintf("corpus %s %s\nembedder %s\nlayer %q scope %q\n", c.Name, c.Digest, emb.Model(), opts.ID, opts.Scope)
	markFile := filepath.Join(dir, "recorded")
	if got, err := os.ReadFile(markFile); err == nil && string(got) == mark {
		col, err := chromem.OpenCollection(ctx, dir, "memories", &vectorstore.Options{Dimension: emb.Dimension()})
		if err != nil {
			return nil, fmt.Errorf("recallquality: open collection: %w", err)
		}
		clk := &clock{t: lastTurn(c)}
		return &Bench{Corpus: c, Store: &memory.Store{Records: col, Embedder: emb, Now: clk.Now}, Options: patient(opts), col: col}, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	b, err := Open(ctx, dir, c, emb, opts)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(markFile, []byte(mark), 0o644); err != nil {
		_ = b.Close()
		return nil, err
	}
	return b, nil
}

// lastTurn is the time of the corpus's last turn: the clock Open leaves
// behind, at which the questions are asked.
func lastTurn(c *Corpus) time.Time {
	var t time.Time
	for _, s := range c.Sessions {
		for _, tr := range s.Turns {
			if tr.At.After(t) {
				t = tr.At
			}
		}
	}
	return t
}

// thread is the thread sess is recorded on: the corpus's one thread, or
// with core.ScopeResource a thread per session (a conversation spread
// over threads of one resource, which is what resource scope recalls
// across).
func (b *Bench) thread(sess Session) string {
	if b.Options.Scope == core.ScopeResource {
		return b.Corpus.Name + "-" + sess.ID
	}
	return b.Corpus.Name
}

// Close closes the collection.
func (b *Bench) Close() error { return b.col.Close() }

// runtime returns a semantic layer over the bench's store with opts and a
// runtime holding only it.
func (b *Bench) runtime(opts semantic.Options) (*semantic.Layer, *core.Runtime, error) {
	layer, err := semantic.New(b.Store, opts)
	if err != nil {
		return nil, nil, err
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}})
	if err != nil {
		return nil, nil, err
	}
	return layer, rt, nil
}

func (b *Bench) record(ctx context.Context, clk *clock) error {
	_, rt, err := b.runtime(b.Options)
	if err != nil {
		return err
	}
	for _, sess := range b.Corpus.Sessions {
		clk.set(sess.Start)
		s, err := rt.Start(ctx, core.RunOptions{RunID: b.Corpus.Name + "-" + sess.ID, ThreadID: b.thread(sess), ResourceID: Resource})
		if err != nil {
			return err
		}
		for _, t := range sess.Turns {
			clk.set(t.At)
			it := core.Message(t.Role, t.Text)
			it.ID = t.ID
			if t.Role == core.RoleUser {
				err = s.Append(ctx, it)
			} else {
				err = s.Record(ctx, it)
			}
			if err != nil {
				return fmt.Errorf("recallquality: record %s: %w", t.ID, err)
			}
			if d := s.Diagnostics(); len(d) > 0 {
				return fmt.Errorf("recallquality: record %s: layer diagnostic: %s %s: %s", t.ID, d[0].Hook, d[0].Kind, d[0].Message)
			}
		}
		if err := s.Complete(ctx, "done"); err != nil {
			return err
		}
		if d := s.Diagnostics(); len(d) > 0 {
			return fmt.Errorf("recallquality: complete %s: layer diagnostic: %s %s: %s", sess.ID, d[0].Hook, d[0].Kind, d[0].Message)
		}
	}
	return nil
}

// hookTimeout bounds every hook of the harness's sessions. The runtime's
// defaults are latency budgets for a live agent (an append within 2 s);
// the harness measures what is ranked, on a shared machine and under the
// race detector, and a hook cut by its deadline would fail the run.
const hookTimeout = 5 * time.Minute

// patient is opts with hookTimeout for the hooks opts leaves at the
// runtime's default.
func patient(opts semantic.Options) semantic.Options {
	t := maps.Clone(opts.Timeouts)
	if t == nil {
		t = core.Timeouts{}
	}
	for _, h := range []core.Hook{core.HookInit, core.HookRecall, core.HookOnItemAppend, core.HookStore, core.HookOnComplete, core.HookDispose} {
		if t[h] == 0 {
			t[h] = hookTimeout
		}
	}
	opts.Timeouts = t
	return opts
}

// Result is the recall of one configuration on one corpus.
type Result struct {
	Corpus   string
	Embedder string
	Mode     semantic.Mode
	// Recall[k] is the mean over questions of the share of evidence turns
	// among the first k hits.
	Recall map[int]float64
	// ByType[type][k] is the same per question type.
	ByType map[string]map[int]float64
	// Types are the corpus's question types in report order, and
	// Restricted its Restricted (see Corpus).
	Types      []string
	Restricted bool
	// Shown is the share of evidence in what the layer's recall hook
	// renders when the question is the latest user message of a new run
	// on the thread, with the options Evaluate was given (by default the
	// 4 best messages, each with one neighbour before and after), no
	// budget limit.
	Shown float64
	// ShownTokens is the mean size of what the recall hook renders, in
	// tokens.Estimate() tokens: the cost of Shown.
	ShownTokens float64
	// Questions is the per-question detail.
	Questions []QuestionResult
}

// QuestionResult is one question's outcome.
type QuestionResult struct {
	Question Question
	// Ranked are the item ids of the hits, best first.
	Ranked []string
	// Recall[k] as in Result.
	Recall map[int]float64
	// Shown and ShownTokens as in Result; 0 when not measured.
	Shown, ShownTokens float64
}

// Evaluate asks every question of the corpus through the layer's Go API
// (semantic.Layer.Search of the corpus thread: the ranking recall uses,
// as a new session of that thread ranks) in mode, with the layer options
// opts (their ID and scope must match those the corpus was recorded
// with; an empty Scope is the recorded one). With shown it also asks
// each question through the recall hook (Result.Shown), which costs a
// session per question.
func (b *Bench) Evaluate(ctx context.Context, mode semantic.Mode, opts semantic.Options, shown bool) (*Result, error) {
	opts = patient(opts)
	if opts.Scope == "" {
		opts.Scope = b.Options.Scope
	}
	layer, err := semantic.New(b.Store, opts)
	if err != nil {
		return nil, err
	}
	// The questions are asked on the corpus thread: with resource scope
	// a thread of the resource that holds no message, so no latest
	// message counts, as in a new session of it.
	scope := vectorstore.Scope{Thread: b.Corpus.Name, Resource: Resource}
	if msgs, err := layer.List(ctx, scope); err != nil || len(msgs) != b.Corpus.Turns() {
		return nil, fmt.Errorf("recallquality: layer holds %d messages (%v), corpus has %d turns", len(msgs), err, b.Corpus.Turns())
	}
	kmax := slices.Max(Ks)
	texts := map[string]string{} // turn id -> text
	for _, sess := range b.Corpus.Sessions {
		for _, t := range sess.Turns {
			texts[t.ID] = t.Text
		}
	}
	ropts := opts
	ropts.Mode = mode
	rlayer, rrt, err := b.runtime(ropts)
	if err != nil {
		return nil, err
	}
	res := &Result{Corpus: b.Corpus.Name, Embedder: b.Store.Embedder.Model(), Mode: mode,
		Recall: map[int]float64{}, ByType: map[string]map[int]float64{},
		Types: b.Corpus.QuestionTypes(), Restricted: b.Corpus.Restricted}
	count := map[string]int{}
	for _, q := range b.Corpus.Questions {
		hits, err := layer.Search(ctx, scope, q.Text, semantic.SearchOptions{K: kmax, Mode: mode})
		if err != nil {
			return nil, fmt.Errorf("recallquality: question %d: %w", q.N, err)
		}
		qr := QuestionResult{Question: q, Recall: map[int]float64{}}
		for _, h := range hits {
			qr.Ranked = append(qr.Ranked, h.ItemID)
		}
		for _, k := range Ks {
			qr.Recall[k] = recallAt(qr.Ranked, q.Evidence, k)
			res.Recall[k] += qr.Recall[k]
			if res.ByType[q.Type] == nil {
				res.ByType[q.Type] = map[int]float64{}
			}
			res.ByType[q.Type][k] += qr.Recall[k]
		}
		if shown {
			rendered, err := b.recall(ctx, rrt, rlayer.ID, q)
			if err != nil {
				return nil, err
			}
			found := 0
			for _, e := range q.Evidence {
				if strings.Contains(rendered, ": "+texts[e]+"\n") {
					found++
				}
			}
			qr.Shown = float64(found) / float64(len(q.Evidence))
			qr.ShownTokens = float64(estimate.Count(rendered))
			res.Shown += qr.Shown
			res.ShownTokens += qr.ShownTokens
		}
		count[q.Type]++
		res.Questions = append(res.Questions, qr)
	}
	res.Shown /= float64(len(b.Corpus.Questions))
	res.ShownTokens /= float64(len(b.Corpus.Questions))
	for _, k := range Ks {
		res.Recall[k] /= float64(len(b.Corpus.Questions))
		for t, n := range count {
			res.ByType[t][k] /= float64(n)
		}
	}
	return res, nil
}

// recall asks q as the latest user message of a new run on the corpus
// thread and returns what the layer renders; the question's record is
// deleted afterwards so it does not become evidence for the next one.
func (b *Bench) recall(ctx context.Context, rt *core.Runtime, layerID string, q Question) (string, error) {
	s, err := rt.Start(ctx, core.RunOptions{RunID: fmt.Sprintf("question-%d", q.N), ThreadID: b.Corpus.Name, ResourceID: Resource})
	if err != nil {
		return "", err
	}
	defer s.Close(ctx)
	it := core.UserMessage(q.Text)
	it.ID = fmt.Sprintf("question-%d", q.N)
	if err := s.Append(ctx, it); err != nil {
		return "", err
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		return "", err
	}
	if d := s.Diagnostics(); len(d) > 0 {
		return "", fmt.Errorf("recallquality: question %d: layer diagnostic: %s %s: %s", q.N, d[0].Hook, d[0].Kind, d[0].Message)
	}
	var out strings.Builder
	for _, item := range v.Band(core.BandLive) {
		if item.ID == layerID {
			out.WriteString(item.Text())
		}
	}
	if _, err := b.Store.Records.DeleteWhere(ctx, vectorstore.Filter{Layer: layerID, Metadata: map[string]string{semantic.MetaItemID: it.ID}}); err != nil {
		return "", err
	}
	return out.String(), nil
}

// estimate counts the rendered recall: the layer's default tokenizer.
var estimate = tokens.Estimate()

// recallAt is the share of evidence among the first k of ranked.
func recallAt(ranked, evidence []string, k int) float64 {
	if len(evidence) == 0 {
		return 0
	}
	top := ranked[:min(k, len(ranked))]
	found := 0
	for _, e := range evidence {
		if slices.Contains(top, e) {
			found++
		}
	}
	return float64(found) / float64(len(evidence))
}

// Pool merges results of the same embedder and mode on several corpora
// into one, every question weighing the same. Pool corpora of the same
// question types: the pooled per-type figures mix the types' meanings
// otherwise.
func Pool(name string, rs []*Result) *Result {
	if len(rs) == 0 {
		return nil
	}
	out := &Result{Corpus: name, Embedder: rs[0].Embedder, Mode: rs[0].Mode, Recall: map[int]float64{}, ByType: map[string]map[int]float64{},
		Types: rs[0].Types}
	count := map[string]int{}
	for _, r := range rs {
		out.Questions = append(out.Questions, r.Questions...)
		out.Restricted = out.Restricted || r.Restricted
		for _, t := range r.Types {
			if !slices.Contains(out.Types, t) {
				out.Types = append(slices.Clip(out.Types), t)
			}
		}
	}
	for _, q := range out.Questions {
		for _, k := range Ks {
			out.Recall[k] += q.Recall[k]
			if out.ByType[q.Question.Type] == nil {
				out.ByType[q.Question.Type] = map[int]float64{}
			}
			out.ByType[q.Question.Type][k] += q.Recall[k]
		}
		out.Shown += q.Shown
		out.ShownTokens += q.ShownTokens
		count[q.Question.Type]++
	}
	n := float64(max(len(out.Questions), 1))
	out.Shown /= n
	out.ShownTokens /= n
	for _, k := range Ks {
		out.Recall[k] /= n
		for t, c := range count {
			out.ByType[t][k] /= float64(c)
		}
	}
	return out
}
