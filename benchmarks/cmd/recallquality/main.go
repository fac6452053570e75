// Command recallquality measures the retrieval quality of memory/semantic
// on the benchmark corpora of benchmarks/internal/recallquality and on the LoCoMo
// conversations when present, and writes
// benchmarks/results/recall-quality.md.
//
//	go run ./benchmarks/cmd/recallquality            # from the repository root
//	go run ./benchmarks/cmd/recallquality -corpus dev -locomo none -out - -misses
//	go run ./benchmarks/cmd/recallquality -locomo /data/locomo-heldout -corpus none -embedders uselite
//
// It needs the default offline model (make model). The LoCoMo
// conversations (Maharana et al., ACL 2024) are read from -locomo, by
// default $STRATA_LOCOMO or the shared evaluation folder beside the
// repository (shared/data/locomo-dev); they are never copied into it, and the report names their
// questions by number only. The ranking and rendering flags exist to
// explore (with -cache, a corpus is embedded once and reused); the
// committed report uses the layer's defaults.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/stratamem/strata/benchmarks/internal/asof"
	"github.com/stratamem/strata/benchmarks/internal/recallquality"
	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
)

func main() {
	corpora := flag.String("corpus", strings.Join(recallquality.Corpora, ","), "hand-written corpora to measure, comma-separated; none for none")
	locomo := flag.String("locomo", recallquality.LoCoMoDir(), "folder of LoCoMo conversations (<name>.json) to measure; none to skip (default $"+recallquality.LoCoMoEnv+", else shared/data/locomo-dev beside the repository when present)")
	embedders := flag.String("embedders", "uselite,hashing", "embedders: uselite (the default offline model) and/or hashing; LoCoMo is measured with uselite only")
	out := flag.String("out", "benchmarks/results/recall-quality.md", "report file; - for stdout")
	misses := flag.Bool("misses", false, "list the questions the hybrid default model ranking misses (LoCoMo's by number)")
	cache := flag.String("cache", "", "explore: keep the recorded corpora in this folder and reuse them (see recallquality.OpenCached)")
	fusion := flag.String("fusion", "", "explore: fusion (\"\" score, rrf)")
	denseW := flag.Float64("dense-weight", 0, "explore: Ranking.DenseWeight")
	ctxW := flag.Float64("context-weight", 0, "explore: Ranking.ContextWeight")
	denseCtx := flag.Float64("dense-context", 0, "explore: Ranking.DenseContext")
	speaker := flag.Float64("speaker-prior", 0, "explore: Ranking.SpeakerPrior")
	date := flag.Float64("date-prior", 0, "explore: Ranking.DatePrior")
	topK := flag.Int("top-k", 0, "explore: Options.TopK, the hits the recall hook renders (shown)")
	rng := flag.String("range", "", "explore: Options.MessageRange as before,after (e.g. 1,0), the neighbours the recall hook renders")
	flag.Parse()

	ctx := context.Background()
	opts := semantic.Options{TopK: *topK, Ranking: semantic.Ranking{Fusion: semantic.Fusion(*fusion), DenseWeight: *denseW,
		ContextWeight: *ctxW, DenseContext: *denseCtx, SpeakerPrior: *speaker, DatePrior: *date}}
	if *rng != "" {
		b, a, ok := strings.Cut(*rng, ",")
		before, err1 := strconv.Atoi(b)
		after, err2 := strconv.Atoi(a)
		if !ok || err1 != nil || err2 != nil {
			log.Fatalf("-range %q: want before,after", *rng)
		}
		opts.MessageRange = &semantic.MessageRange{Before: before, After: after}
	}
	rep := &recallquality.Report{Command: "go run ./benchmarks/cmd/recallquality " + strings.Join(os.Args[1:], " ")}
	if len(os.Args) == 1 {
		rep.Command = "go run ./benchmarks/cmd/recallquality"
	}
	var cs []*recallquality.Corpus
	if *corpora != "" && *corpora != "none" {
		for _, name := range strings.Split(*corpora, ",") {
			c, err := recallquality.Load(name)
			if err != nil {
				log.Fatal(err)
			}
			cs = append(cs, c)
		}
	}
	locomoName := ""
	if *locomo != "" && *locomo != "none" {
		lc, err := recallquality.LoadLoCoMo(*locomo)
		if err != nil {
			log.Fatal(err)
		}
		cs = append(cs, lc...)
		locomoName = filepath.Base(filepath.Clean(*locomo))
	}
	for _, c := range cs {
		rep.Corpora = append(rep.Corpora, c)
		for _, en := range strings.Split(*embedders, ",") {
			if c.Restricted && en != "uselite" {
				continue // the real conversations measure the default model
			}
			emb, err := embedder(en)
			if err != nil {
				log.Fatal(err)
			}
			b, done, err := open(ctx, *cache, c, emb, opts)
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
				fmt.Fprintf(os.Stderr, "%s %s %s: R@5 %.3f R@10 %.3f R@20 %.3f shown %.3f\n", c.Name, res.Embedder, mode, res.Recall[5], res.Recall[10], res.Recall[20], res.Shown)
			}
			done()
		}
	}
	rep.Results = append(rep.Results, pooled(rep.Results, locomoName)...)
	rep.Notes = append(rep.Notes, targetNotes(rep.Results, locomoName)...)
	rep.Notes = append(rep.Notes, notes...)
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

// open records c for emb in a throw-away folder, or with cache in
// cache/<corpus>-<embedder>, kept and reused; done closes it.
func open(ctx context.Context, cache string, c *recallquality.Corpus, emb embed.Embedder, opts semantic.Options) (*recallquality.Bench, func(), error) {
	if cache != "" {
		b, err := recallquality.OpenCached(ctx, filepath.Join(cache, c.Name+"-"+emb.Model()), c, emb, opts)
		if err != nil {
			return nil, nil, err
		}
		return b, func() { _ = b.Close() }, nil
	}
	dir, err := os.MkdirTemp("", "recallquality-")
	if err != nil {
		return nil, nil, err
	}
	b, err := recallquality.Open(ctx, dir, c, emb, opts)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	return b, func() { _ = b.Close(); _ = os.RemoveAll(dir) }, nil
}

// pooled are the pooled rows, each question weighing the same, per
// embedder and mode: "all" the hand-written corpora, "held-out" those no
// parameter was chosen on, and the LoCoMo conversations under the name
// of their folder. The two kinds are never pooled together: their
// question types differ, and a figure over both would hide that the
// ranking must hold on each.
func pooled(results []*recallquality.Result, locomoName string) []*recallquality.Result {
	type key struct {
		emb  string
		mode semantic.Mode
	}
	var keys []key
	hand, held, loco := map[key][]*recallquality.Result{}, map[key][]*recallquality.Result{}, map[key][]*recallquality.Result{}
	for _, r := range results {
		k := key{r.Embedder, r.Mode}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		switch {
		case r.Restricted:
			loco[k] = append(loco[k], r)
		default:
			hand[k] = append(hand[k], r)
			if slices.Contains(recallquality.HeldOut, r.Corpus) {
				held[k] = append(held[k], r)
			}
		}
	}
	var out []*recallquality.Result
	for _, g := range []struct {
		name string
		m    map[key][]*recallquality.Result
	}{{"all", hand}, {"held-out", held}, {locomoName, loco}} {
		for _, k := range keys {
			if len(g.m[k]) > 1 {
				out = append(out, recallquality.Pool(g.name, g.m[k]))
			}
		}
	}
	return out
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

// targetNotes states the targets against the results: hybrid R@10 >= 0.8
// with the default model on the hand-written corpora, clearly above
// lexical-only; on the LoCoMo conversations pooled, hybrid R@10 >= 0.80
// and at least lexical-only + 0.03, and evidence shown by the recall hook
// >= 0.72.
func targetNotes(results []*recallquality.Result, locomoName string) []string {
	lex, dense := map[string]float64{}, map[string]float64{}
	for _, r := range results {
		if r.Embedder != uselite.ModelID {
			continue
		}
		switch r.Mode {
		case semantic.ModeLexical:
			lex[r.Corpus] = r.Recall[10]
		case semantic.ModeDense:
			dense[r.Corpus] = r.Recall[10]
		}
	}
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	var hand, loco []string
	for _, r := range results {
		if r.Mode != semantic.ModeHybrid || r.Embedder != uselite.ModelID {
			continue
		}
		best := max(lex[r.Corpus], dense[r.Corpus])
		if r.Restricted {
			if r.Corpus == locomoName {
				loco = append(loco, fmt.Sprintf("pooled %s: R@10 %.3f (>= 0.80 %s; lexical-only %.3f, + 0.03 %s), shown %.3f (>= 0.72 %s)",
					r.Corpus, r.Recall[10], met(r.Recall[10] >= 0.8), lex[r.Corpus], met(r.Recall[10] >= lex[r.Corpus]+0.03), r.Shown, met(r.Shown >= 0.72)))
			} else {
				loco = append(loco, fmt.Sprintf("%s %.3f (best single side %.3f)", r.Corpus, r.Recall[10], best))
			}
			continue
		}
		hand = append(hand, fmt.Sprintf("%s %.3f (%s; lexical-only %.3f, dense-only %.3f)", r.Corpus, r.Recall[10], met(r.Recall[10] >= 0.8 && r.Recall[10] > best), lex[r.Corpus], dense[r.Corpus]))
	}
	var out []string
	if len(hand) > 0 {
		out = append(out, "Target on the hand-written corpora: hybrid recall@10 >= 0.8 with the default model, above each side alone. Hybrid R@10: "+strings.Join(hand, "; ")+".")
	}
	if len(loco) > 0 {
		out = append(out, "Target on LoCoMo: hybrid recall@10 >= 0.80 and at least lexical-only + 0.03, evidence shown by the default recall hook >= 0.72, hybrid above each side alone on every conversation. Hybrid: "+strings.Join(loco, "; ")+".")
	}
	return out
}

// notes explain the method; they quote nothing of LoCoMo.
var notes = []string{
	"Corpora. dev, dev2, test, test2 and test3 are hand-written conversations between one user and an assistant (10 to 13 sessions over four to six months, English), embedded in the repository. " +
		"The locomo-* rows are real conversations of LoCoMo (Maharana et al., \"Evaluating Very Long-Term Conversational Memory of LLM Agents\", ACL 2024; public release of the authors), read from a folder outside the repository and never copied into it: two people over 19 to 32 dated sessions; " +
		"each conversation is one resource, each session one run on a thread of its own at the session's date (the layer recalls with resource scope), the first speaker's turns appended as user messages and the second's recorded as assistant messages, each text \"Name: text\"; " +
		"malformed evidence ids are normalised (a colon after the D, leading zeros, several ids in one string) and ids naming no turn dropped; category 5 (adversarial, no evidence) and questions left with no evidence are left out. Their misses are listed by question number only.",
	"Question types. Hand-written: direct (shares key words with the evidence), paraphrase (asks in other words), temporal (asks when; the layer renders each message's date), multi (evidence in several sessions; all of it is needed). " +
		"LoCoMo's categories: single-hop, multi-hop (evidence in several turns or sessions), temporal, open-domain (inference from what was said).",
	"Lexical-only does not depend on the embedder and is listed once. Hashing is the deterministic test embedder (feature hashing of words and word pairs, no stopwords): not a semantic model; its rows show that the vector side needs one.",
	"Method, rounds 1-3 (hand-written corpora only). The ranking defaults were first chosen on dev (round 1: BM25 with neighbour context, query stopwords, score fusion with calibrated scales, vector smoothing with the neighbours), dev2 (round 2: the context records, re-chosen weights) and both (round 3: a speaker prior for the user's own messages). " +
		"Three corpora are held out, each written before it was first measured: test (written with the first version of the method), test2 and test3 by authors who saw only the file format, never the method or a figure. test was measured after each round and its misses read once after round 1, so it is the least independent; test3 was first measured after round 3. " +
		"Round 3's defaults gave hybrid R@10 0.873 / 0.917 / 0.789 / 0.819 / 0.784 on dev / dev2 / test / test2 / test3, and on the three LoCoMo conversations 0.689 pooled, below lexical-only (0.746): the hand-written corpora reward paraphrase, which favours the vector side, while real conversations are small talk between the same two people, where the offline model's similarities are compressed (their spread among the 100 nearest messages is half that of the hand-written corpora) and words decide.",
	"Method, round 4: every constant chosen on the union of the five hand-written corpora and the three LoCoMo conversations, never on one alone, and reported per corpus (so test, test2 and test3 are no longer held out from the method; seven more LoCoMo conversations are, measured independently). " +
		"Kept, in the order they were added (pooled hybrid R@10 hand-written / LoCoMo, then shown hand-written / LoCoMo): " +
		"round 3: 0.832 / 0.689, 0.737 / 0.612; " +
		"(1) the vector score floored at 0, one-sided evidence that lifts the messages standing out and no longer sinks exact word matches the model places below the crowd's mean: 0.832 / 0.718, 0.737 / 0.625; " +
		"(2) DenseWeight 0.3 (was 0.5): 0.849 / 0.745, 0.722 / 0.702; " +
		"(3) the speaker prior reads names: a question naming one of the conversation's speakers (speaker labels \"Name:\" starting at least 3 messages, or a short form of at least three letters that begins one of them) favours that speaker's messages, whichever role recorded them, and in a conversation between named people a question naming none favours nobody (96% of the evidence of LoCoMo's questions naming one speaker is that speaker's own turns; the role prior had favoured the first speaker for every question): 0.849 / 0.791, 0.722 / 0.696; " +
		"(4) SpeakerPrior 0.25 (was 0.07; once the vector side is floored, a larger prior no longer lifts the user's filler replies above the evidence): 0.881 / 0.804, 0.737 / 0.701; " +
		"(5) DatePrior 0.25 for the messages of a day, month or year the question names (9% of the LoCoMo questions name one; their R@10 was 0.71 against 0.80 overall): 0.881 / 0.822, 0.737 / 0.735. " +
		"Each removed from the final ranking: no floor 0.882 / 0.793, 0.745 / 0.706; no names 0.881 / 0.732; no date prior 0.881 / 0.804; DenseWeight 0.5 0.865 / 0.800, 0.742 / 0.672. " +
		"Plateaus on the union: DenseWeight 0.25-0.35 and SpeakerPrior 0.15-0.3 keep both pooled figures within 0.01 (hand-written 0.870-0.886, LoCoMo 0.812-0.823); DatePrior 0.15-0.4 gives the same LoCoMo figure (0.822).",
	"Tried and not kept (pooled R@10 hand-written / LoCoMo against the final 0.881 / 0.822; the fusion variants were computed by re-scoring the same candidates offline, shown approximated the same way): " +
		"rank fusion 0.755 / 0.710; the dense weight scaled by the spread of the vector scores among the 100 nearest (0.882 / 0.828, shown 0.755 on LoCoMo: the best figures, but the reference spread, 0.07, is a property of this model, and a model with compressed cosines would lose its vector side everywhere); " +
		"the dense weight from lexical confidence (0.4 / (1 + the top message's share of the ideal score): 0.880 / 0.819) or from the overlap of the two sides' top 10 (0.878 / 0.824); the vector score divided by the top one's (0.880 / 0.823); " +
		"dense as a re-ranker of lexical candidates (vector-only candidates kept only above z 2: 0.869 / 0.822; above 2.5: 0.843 / 0.822; none: 0.817 / 0.822): it costs the paraphrase questions of the hand-written corpora and gives nothing on LoCoMo, where the floor already keeps vector-only candidates low; " +
		"max-normalised lexical scores (0.785 / 0.814); the floor at z -1, 0.5 or 1 instead of 0 (0.886 / 0.807, 0.871 / 0.820, 0.844 / 0.814); a penalty of 0.03 or 0.1 for a hit next to a better one (0.877 / 0.824, 0.871 / 0.808); " +
		"the named speaker removed from the query vector (dense-only LoCoMo 0.545 to 0.584, hybrid 0.822 to 0.811); lexical context weight 0.3 or 0.7, no vector context (within 0.01 either way); no role prior for questions without a first or second person (hand-written down: a question to the agent is about its user whatever its grammar).",
}

// temporalAsOf replays the temporal ledger's labelled as-of set (facts recorded
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
	r, err := asof.Evaluate(ctx, &memory.Store{Records: col, Embedder: model}, asof.Default())
	if err != nil {
		return "", err
	}
	body := fmt.Sprintf("As-of answers of the temporal ledger on its labelled set %q (benchmarks/internal/asof/testdata/asof.json): "+
		"%d events recorded over time through the layer's record function (supersessions, corrections, relative dates such as "+
		"\"yesterday\" and \"last Friday\" resolved against each message's time), then %d queries \"what was X's Y on date D\" "+
		"answered with Layer.AsOf: **%d/%d correct (%.0f%%)**.", r.Set, r.Events, r.Queries, r.Correct, r.Queries, 100*r.Accuracy)
	for _, f := range r.Failures {
		body += fmt.Sprintf("\n- wrong: %+v got %v", f.Query, f.Got)
	}
	return body, nil
}
