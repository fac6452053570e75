package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/vectorstore"
)

// scoredRecord is a search result in JSON: the record's fields plus score.
type scoredRecord struct {
	Score float64 `json:"score"`
	vectorstore.Record
}

type searchFlags struct {
	filterFlags
	limit    int
	minScore float64
	vectors  bool
}

func (a *app) searchCmd() *cobra.Command {
	var f searchFlags
	cmd := &cobra.Command{
		Use:   "search TEXT",
		Short: "Semantic search with the store's embedder",
		Long: `Embed TEXT with the store's embedder and list the nearest memories with
their scores (cosine similarity for the default collections), best first.
Filters restrict the candidates before ranking.

  memctl search "where does the user live" --resource alice -n 5`,
		Args: exactArgs(1, "one TEXT"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runSearch(cmd.Context(), args[0], &f) },
	}
	f.register(cmd)
	fs := cmd.Flags()
	fs.IntVarP(&f.limit, "limit", "n", 10, "number of results (1.."+strconv.Itoa(vectorstore.MaxK)+")")
	fs.Float64Var(&f.minScore, "min-score", -1e308, "drop results scoring below this")
	fs.BoolVar(&f.vectors, "vectors", false, "include vectors in --json output")
	return cmd
}

func (a *app) runSearch(ctx context.Context, text string, f *searchFlags) error {
	if strings.TrimSpace(text) == "" {
		return usageErrorf("empty search text")
	}
	flt, match, err := f.build(a.now())
	if err != nil {
		return err
	}
	if f.limit < 1 || f.limit > vectorstore.MaxK {
		return usageErrorf("--limit must be in 1..%d", vectorstore.MaxK)
	}
	if rc, err := a.remoteClient(); err != nil || rc != nil {
		if err != nil {
			return err
		}
		return a.remoteSearch(ctx, rc, text, f)
	}
	s, err := a.openStore(ctx, openReadOnly, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	emb, err := s.embedder(ctx)
	if err != nil {
		return err
	}
	vs, err := emb.Embed(ctx, []string{text})
	if err != nil {
		return fmt.Errorf("embed the query: %w", err)
	}
	k := f.limit
	if match != "" {
		// The text match applies after ranking: ask for more.
		k = min(vectorstore.MaxK, k*10)
	}
	ms, err := s.coll.Query(ctx, vs[0], vectorstore.QueryOptions{K: k, Filter: flt, WithVectors: f.vectors && a.flags.json})
	if err != nil {
		return err
	}
	var recs []vectorstore.Record
	var scores []float64
	for _, m := range ms {
		if m.Score < f.minScore || !matchText(&m.Record, match) {
			continue
		}
		recs = append(recs, m.Record)
		scores = append(scores, m.Score)
		if len(recs) == f.limit {
			break
		}
	}
	if scores == nil {
		scores = []float64{}
	}
	return a.printRecords(recs, scores)
}
