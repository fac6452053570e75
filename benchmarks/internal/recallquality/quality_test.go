package recallquality

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/memory/semantic"
)

// defaultModel is the default offline model, or a skip without it (make
// model) unless STRATA_REQUIRE_MODEL=1, when it fails.
func defaultModel(t *testing.T) *uselite.Model {
	t.Helper()
	m, err := uselite.Default()
	if err != nil {
		if errors.Is(err, uselite.ErrModelNotFound) && os.Getenv("STRATA_REQUIRE_MODEL") != "1" {
			t.Skipf("default model not installed (make model): %v", err)
		}
		t.Fatalf("default model: %v", err)
	}
	return m
}

// CorpusRaceEnv, set to 1, runs the corpus tests under the race detector
// too. By default they skip there: recording the corpora with the model is
// minutes of arithmetic under -race and exercises no concurrency the
// package's other tests (and memory/semantic's) do not, so scripts/test.sh
// runs this package a second time without -race for them.
const CorpusRaceEnv = "STRATA_QUALITY_RACE"

// corpusTest skips a corpus test under the race detector unless
// CorpusRaceEnv asks for it.
func corpusTest(t *testing.T) {
	t.Helper()
	if raceEnabled && os.Getenv(CorpusRaceEnv) != "1" {
		t.Skipf("corpus tests run without -race (scripts/test.sh runs them so; set %s=1 to run them here)", CorpusRaceEnv)
	}
}

// recordAll records the corpora with the default model, as many at a
// time as there are CPUs: recording (embedding every message and its
// context) is most of the time of these tests, and each corpus has its
// own store. The benches are closed when the test ends.
func recordAll(t *testing.T, m *uselite.Model, cs []*Corpus) []*Bench {
	t.Helper()
	ctx := context.Background()
	benches := make([]*Bench, len(cs))
	errs := make([]error, len(cs))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, c := range cs {
		dir := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			benches[i], errs[i] = Open(ctx, dir, c, m, semantic.Options{})
		}()
	}
	wg.Wait()
	for _, b := range benches {
		if b != nil {
			t.Cleanup(func() { _ = b.Close() })
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return benches
}

// The retrieval-quality targets of memory/semantic with the default
// offline model, on the hand-written benchmark corpora recorded through
// the real layer.
func TestQualityDefaultModel(t *testing.T) {
	corpusTest(t)
	t.Parallel()
	m := defaultModel(t)
	ctx := context.Background()
	var cs []*Corpus
	for _, name := range Corpora {
		c, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	results := map[semantic.Mode][]*Result{}
	for _, b := range recordAll(t, m, cs) {
		name := b.Corpus.Name
		for _, mode := range []semantic.Mode{semantic.ModeLexical, semantic.ModeHybrid} {
			// Shown (through the recall hook) only for hybrid on the
			// held-out corpora: it costs a session per question.
			r, err := b.Evaluate(ctx, mode, semantic.Options{}, mode == semantic.ModeHybrid && slices.Contains(HeldOut, name))
			if err != nil {
				t.Fatal(err)
			}
			results[mode] = append(results[mode], r)
			t.Logf("%s %s: R@5 %.3f R@10 %.3f R@20 %.3f shown %.3f", name, mode, r.Recall[5], r.Recall[10], r.Recall[20], r.Shown)
		}
	}
	lex, hyb := Pool("all", results[semantic.ModeLexical]), Pool("all", results[semantic.ModeHybrid])
	t.Logf("all: lexical R@10 %.3f, hybrid R@10 %.3f", lex.Recall[10], hyb.Recall[10])
	if hyb.Recall[10] < 0.85 {
		t.Errorf("hybrid recall@10 over all corpora %.3f, want >= 0.85 (measured 0.881)", hyb.Recall[10])
	}
	if lex.Recall[10] > 0.70 {
		t.Errorf("lexical-only recall@10 %.3f: the corpora are too easy (want <= 0.70)", lex.Recall[10])
	}
	if hyb.Recall[10] < lex.Recall[10]+0.15 {
		t.Errorf("hybrid recall@10 %.3f not clearly above lexical-only %.3f over all corpora (want +0.15)", hyb.Recall[10], lex.Recall[10])
	}
	for i, h := range results[semantic.ModeHybrid] {
		l := results[semantic.ModeLexical][i]
		// Measured margins +0.18 (test3) to +0.31.
		if h.Recall[10] < l.Recall[10]+0.15 {
			t.Errorf("%s: hybrid recall@10 %.3f not clearly above lexical-only %.3f (want +0.15)", h.Corpus, h.Recall[10], l.Recall[10])
		}
		// Regression guards under the measured levels (report:
		// benchmarks/results/recall-quality.md).
		floor := 0.88 // dev 0.920, dev2 0.963
		if slices.Contains(HeldOut, h.Corpus) {
			// Held out in rounds 1-3: measured 0.848, 0.846 and 0.850; shown 0.704,
			// 0.721 and 0.711 with model-embedded context windows, 0.699, 0.721
			// and 0.670 since contexts are computed from the message vectors.
			floor = 0.80
			if h.Shown < 0.65 {
				t.Errorf("%s: evidence shown by the recall hook %.3f, want >= 0.65", h.Corpus, h.Shown)
			}
		}
		if h.Recall[10] < floor {
			t.Errorf("%s: hybrid recall@10 %.3f below %.2f", h.Corpus, h.Recall[10], floor)
		}
	}
}

// The targets on real conversations: the LoCoMo conversations of
// LoCoMoDir ($STRATA_LOCOMO, else ../shared/data/locomo-dev), skipped
// when there are none. The full measurement is the benchmark command's
// (make bench-quality); this test guards it, on all the conversations
// with the pooled targets. Under the race detector it is skipped unless
// CorpusRaceEnv is set, and then measures the smallest conversation only
// (recording one takes most of a minute there).
func TestQualityLoCoMo(t *testing.T) {
	corpusTest(t)
	t.Parallel()
	dir := LoCoMoDir()
	if dir == "" {
		t.Skipf("no LoCoMo conversations (set %s or put them in %s)", LoCoMoEnv, locomoDefault)
	}
	m := defaultModel(t)
	cs, err := LoadLoCoMo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if raceEnabled {
		cs = []*Corpus{slices.MinFunc(cs, func(a, b *Corpus) int { return a.Turns() - b.Turns() })}
	}
	ctx := context.Background()
	results := map[semantic.Mode][]*Result{}
	for _, b := range recordAll(t, m, cs) {
		for _, mode := range Modes {
			r, err := b.Evaluate(ctx, mode, semantic.Options{}, mode == semantic.ModeHybrid)
			if err != nil {
				t.Fatal(err)
			}
			results[mode] = append(results[mode], r)
			t.Logf("%s %s: R@5 %.3f R@10 %.3f R@20 %.3f shown %.3f", b.Corpus.Name, mode, r.Recall[5], r.Recall[10], r.Recall[20], r.Shown)
		}
	}
	check := func(name string, lex, dense, hyb *Result, floor, shown float64) {
		t.Helper()
		for _, k := range Ks {
			if best := max(lex.Recall[k], dense.Recall[k]); hyb.Recall[k] < best+0.02 {
				t.Errorf("%s: hybrid recall@%d %.3f not above its best side %.3f (want +0.02)", name, k, hyb.Recall[k], best)
			}
		}
		if hyb.Recall[10] < floor {
			t.Errorf("%s: hybrid recall@10 %.3f, want >= %.2f", name, hyb.Recall[10], floor)
		}
		if hyb.Shown < shown {
			t.Errorf("%s: evidence shown by the recall hook %.3f, want >= %.2f", name, hyb.Shown, shown)
		}
	}
	// Per conversation, guards under the measured levels (R@10 0.806 to
	// 0.837, margins over lexical-only +0.047 to +0.098, shown 0.709 to
	// 0.772 on locomo-dev).
	for i, h := range results[semantic.ModeHybrid] {
		check(h.Corpus, results[semantic.ModeLexical][i], results[semantic.ModeDense][i], h, 0.78, 0.69)
	}
	if len(cs) > 1 {
		// The targets, on all the conversations pooled.
		pool := func(mode semantic.Mode) *Result { return Pool("locomo", results[mode]) }
		lex, hyb := pool(semantic.ModeLexical), pool(semantic.ModeHybrid)
		check(fmt.Sprintf("%d conversations pooled", len(cs)), lex, pool(semantic.ModeDense), hyb, 0.80, 0.72)
		if hyb.Recall[10] < lex.Recall[10]+0.03 {
			t.Errorf("pooled: hybrid recall@10 %.3f, want lexical-only %.3f + 0.03", hyb.Recall[10], lex.Recall[10])
		}
	}
}
