// Command recallquality measures the retrieval quality of memory/semantic
// on the benchmark corpora of benchmarks/recallquality and writes
// benchmarks/results/recall-quality.md.
//
//	go run ./benchmarks/cmd/recallquality            # from the repository root
//	go run ./benchmarks/cmd/recallquality -corpus dev -out - -misses
//
// It needs the default offline model (make model). The ranking flags
// exist to explore on the development corpus; the committed report uses
// the layer's defaults.
package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratamem/strata/benchmarks/recallquality"
	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/memory/semantic"
)

func main() {
	corpora := flag.String("corpus", "dev,dev2,test,test2,test3", "corpora to measure, comma-separated")
	embedders := flag.String("embedders", "uselite,hashing", "embedders: uselite (the default offline model) and/or hashing")
	out := flag.String("out", "benchmarks/results/recall-quality.md", "report file; - for stdout")
	misses := flag.Bool("misses", false, "list the questions the hybrid default model ranking misses")
	fusion := flag.String("fusion", "", "explore: fusion (\"\" score, rrf)")
	denseW := flag.Float64("dense-weight", 0, "explore: Ranking.DenseWeight")
	ctxW := flag.Float64("context-weight", 0, "explore: Ranking.ContextWeight")
	denseCtx := flag.Float64("dense-context", 0, "explore: Ranking.DenseContext")
	speaker := flag.Float64("speaker-prior", 0, "explore: Ranking.SpeakerPrior")
	flag.Parse()

	ctx := context.Background()
	opts := semantic.Options{Ranking: semantic.Ranking{Fusion: semantic.Fusion(*fusion), DenseWeight: *denseW, ContextWeight: *ctxW, DenseContext: *denseCtx, SpeakerPrior: *speaker}}
	rep := &recallquality.Report{Command: "go run ./benchmarks/cmd/recallquality " + strings.Join(os.Args[1:], " ")}
	if len(os.Args) == 1 {
		rep.Command = "go run ./benchmarks/cmd/recallquality"
	}
	for _, name := range strings.Split(*corpora, ",") {
		c, err := recallquality.Load(name)
		if err != nil {
			log.Fatal(err)
		}
		rep.Corpora = append(rep.Corpora, c)
		for _, en := range strings.Split(*embedders, ",") {
			emb, err := embedder(en)
			if err != nil {
				log.Fatal(err)
			}
			dir, err := os.MkdirTemp("", "recallquality-")
			if err != nil {
				log.Fatal(err)
			}
			b, err := recallquality.Open(ctx, dir, c, emb, opts)
			if err != nil {
				log.Fatal(err)
			}
			for _, mode := range recallquality.Modes {
				if mode == semantic.ModeLexical && en != "uselite" && strings.Contains(*embedders, "uselite") {
					continue // lexical ranking does not depend on the embedder
				}
				res, err := b.Evaluate(ctx, mode, opts, true)
				if err != nil {
					log.Fatal(err)
				}
				rep.Results = append(rep.Results, res)
				if *misses && mode == semantic.ModeHybrid && en == "uselite" {
					rep.Misses = append(rep.Misses, res)
				}
				fmt.Fprintf(os.Stderr, "%s %s %s: R@5 %.3f R@10 %.3f\n", name, res.Embedder, mode, res.Recall[5], res.Recall[10])
			}
			_ = b.Close()
			_ = os.RemoveAll(dir)
		}
	}
	if len(rep.Corpora) > 1 {
		// One pooled row per embedder and mode, every question weighing
		// the same.
		type key struct {
			emb  string
			mode semantic.Mode
		}
		groups := map[key][]*recallquality.Result{}
		var keys []key
		for _, r := range rep.Results {
			k := key{r.Embedder, r.Mode}
			if groups[k] == nil {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], r)
		}
		for _, k := range keys {
			rep.Results = append(rep.Results, recallquality.Pool("all", groups[k]))
		}
	}
	rep.Notes = append(rep.Notes, targetNotes(rep.Results)...)
	rep.Notes = append(rep.Notes,
		"Lexical-only does not depend on the embedder and is listed once. Hashing is the deterministic test embedder (feature hashing of words and word pairs, no stopwords): not a semantic model; its rows show that the vector side needs one, and its hybrid rows fall below lexical-only because the fusion gives equal weight to a ranking that is mostly noise.",
		"Method. The ranking defaults of memory/semantic were chosen on the development corpora only: dev (round 1: BM25 with neighbour context, query stopwords, score fusion with calibrated scales, vector smoothing with the neighbours) and dev2 (round 2: the context records, re-chosen weights; dev2 was written after the first test measurement, before the round-2 changes were tried on it). "+
			"The test corpus and its questions were written before any measurement and never changed (sha256 of conversation.txt 1da5aa12…, questions.txt 40914a86…). It was measured twice: after round 1 (hybrid R@10 0.699, dense 0.693, lexical 0.542) and after round 2 (the table). Its misses were read once, after the first measurement, to check the labels (none was wrong); they showed the pattern already seen on dev that round 2 addresses (answers that lack the words of their topic), which is the one way it may have informed the method. No parameter was chosen on it. It was measured a third time by an experiment that was then reverted (a prior favouring the user's own messages: test 0.868, but it leans on the corpora's habit of labelling user turns and lowered the evidence recall renders), so the table's method is the one measured twice. test2 is a second held-out corpus written at the end by another author who saw only the file format, never the method or any figure, labelling facts on whichever speaker states them; it was measured once with the method as it stands (the test2 row). The pooled row includes the development corpora: the held-out figures are the test and test2 rows.",
		"Questions are typed: direct (shares key words with the evidence), paraphrase (asks in other words), temporal (asks when; the layer renders each message's date, so finding the turn answers it), multi (evidence in several sessions; all of it is needed). The corpora are written in English, one user and one assistant each, 10 to 13 sessions over four to six months.",
	)
	// The temporal ledger's as-of correctness, measured by its own harness
	// through the real layer on a throw-away embedded collection.
	asOf, err := temporalAsOf(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	rep.Sections = append(rep.Sections, recallquality.Section{Title: "Temporal ledger (memory/temporal)", Body: asOf})
	md := rep.Markdown()
	if *out == "-" {
		fmt.Print(md)
		return
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
		log.Fatal(err)
	}
}

func embedder(name string) (embed.Embedder, error) {
	switch name {
	case "uselite":
		return uselite.Default()
	case "hashing":
		return hashing.New(512), nil
	}
	return nil, fmt.Errorf("unknown embedder %q (want uselite or hashing)", name)
}

// targetNotes states the target (hybrid R@10 >= 0.8 with the
// default model, clearly above lexical-only) against the results.
func targetNotes(results []*recallquality.Result) []string {
	lex := map[string]float64{}
	for _, r := range results {
		if r.Mode == semantic.ModeLexical {
			lex[r.Corpus] = r.Recall[10]
		}
	}
	var parts []string
	for _, r := range results {
		if r.Mode != semantic.ModeHybrid || r.Embedder != uselite.ModelID {
			continue
		}
		met := "met"
		if r.Recall[10] < 0.8 {
			met = "NOT met"
		}
		parts = append(parts, fmt.Sprintf("%s %.3f (%s; lexical-only %.3f)", r.Corpus, r.Recall[10], met, lex[r.Corpus]))
	}
	if len(parts) == 0 {
		return nil
	}
	return []string{"Target: hybrid recall@10 >= 0.8 with the default model, clearly above lexical-only. Hybrid R@10: " + strings.Join(parts, "; ") + "."}
}

// temporalAsOf replays memory/temporal's labelled as-of set (facts recorded
// over time, with supersessions and relative dates) through the real layer
// and reports how many "what was X's Y on date D" questions it answers
// right.
func temporalAsOf(ctx context.Context) (string, error) {
	dir, err := os.MkdirTemp("", "strata-asof-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	model, err := uselite.Default()
	if err != nil {
		return "", err
	}
	col, err := chromem.OpenCollection(ctx, dir, "memories", &vectorstore.Options{Dimension: model.Dimension()})
	if err != nil {
		return "", err
	}
	defer col.Close()
	r, err := temporal.EvaluateAsOf(ctx, &memory.Store{Records: col, Embedder: model}, temporal.DefaultAsOfSet())
	if err != nil {
		return "", err
	}
	body := fmt.Sprintf("As-of answers of the temporal ledger on its labelled set %q (memory/temporal/testdata/asof.json): "+
		"%d events recorded over time through the layer's record function (supersessions, corrections, relative dates such as "+
		"\"yesterday\" and \"last Friday\" resolved against each message's time), then %d queries \"what was X's Y on date D\" "+
		"answered with Layer.AsOf: **%d/%d correct (%.0f%%)**.", r.Set, r.Events, r.Queries, r.Correct, r.Queries, 100*r.Accuracy)
	for _, f := range r.Failures {
		body += fmt.Sprintf("\n- wrong: %+v got %v", f.Query, f.Got)
	}
	return body, nil
}
