package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/vectorstore"
)

type lsFlags struct {
	filterFlags
	limit     int
	pageToken string
	all       bool
	sort      string
	vectors   bool
	wide      bool
}

var sortKeys = []string{"created", "-created", "id", "-id", "layer", "kind", "thread", "resource", "valid_from", "-valid_from"}

func (a *app) lsCmd() *cobra.Command {
	var f lsFlags
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List memories",
		Long: `List memories, oldest first, with filters. A page holds --limit records;
the token of the next page is printed on stderr (pass it back with
--page-token), or list everything with --all.

  memctl ls --layer observations --thread t1
  memctl ls --resource alice --since 7d --match berlin
  memctl ls --json --all | jq -r .id`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runLs(cmd.Context(), &f) },
	}
	f.register(cmd)
	fs := cmd.Flags()
	fs.IntVarP(&f.limit, "limit", "n", 50, "records per page (1.."+strconv.Itoa(vectorstore.MaxListLimit)+")")
	fs.StringVar(&f.pageToken, "page-token", "", "continue a listing where the previous page ended")
	fs.BoolVarP(&f.all, "all", "A", false, "list every matching record (no paging)")
	fs.StringVar(&f.sort, "sort", "created", "order: created, -created (newest first), or id, layer, kind, thread, resource, valid_from (prefix - to reverse; these read every match)")
	fs.BoolVar(&f.vectors, "vectors", false, "include vectors in --json output")
	fs.BoolVarP(&f.wide, "wide", "w", false, "show the whole text and the scope keys")
	_ = cmd.RegisterFlagCompletionFunc("sort", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return sortKeys, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func (a *app) runLs(ctx context.Context, f *lsFlags) error {
	flt, match, err := f.build(a.now())
	if err != nil {
		return err
	}
	if f.limit < 1 || f.limit > vectorstore.MaxListLimit {
		return usageErrorf("--limit must be in 1..%d", vectorstore.MaxListLimit)
	}
	if !slices.Contains(sortKeys, f.sort) {
		return usageErrorf("--sort %q: want one of %s", f.sort, strings.Join(sortKeys, ", "))
	}
	native := f.sort == "created" || f.sort == "-created"
	if !native && f.pageToken != "" {
		return usageErrorf("--page-token works with --sort created or -created only")
	}
	s, err := a.openStore(ctx, openRead, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	opts := vectorstore.ListOptions{Filter: flt, PageToken: f.pageToken, WithVectors: f.vectors && a.flags.json}
	if f.sort == "-created" {
		opts.Order = vectorstore.Descending
	}
	var recs []vectorstore.Record
	next := ""
	if native && !f.all {
		recs, next, err = listMatching(ctx, s.coll, opts, match, f.limit)
		if err != nil {
			return pageTokenErr(err)
		}
	} else {
		opts.Limit = 1000
		for r, err := range s.coll.All(ctx, opts) {
			if err != nil {
				return pageTokenErr(err)
			}
			if matchText(&r, match) {
				recs = append(recs, r)
			}
		}
		if !native {
			sortRecords(recs, f.sort)
			if !f.all && len(recs) > f.limit {
				recs = recs[:f.limit]
			}
		}
	}
	if err := a.printRecords(recs, f.wide, nil); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(a.io.Err, "more records: --page-token %s\n", esc(next))
	}
	return nil
}

func pageTokenErr(err error) error {
	var e *vectorstore.Error
	if errors.As(err, &e) && e.Field == "page_token" {
		return usageErrorf("--page-token: %s", e.Msg)
	}
	return err
}

// listMatching returns up to limit records matching opts and the text
// match, and the token after the last record scanned. Each store page asks
// for exactly the records still needed, so no scanned match is ever
// skipped by the next token.
func listMatching(ctx context.Context, c *vectorstore.Collection, opts vectorstore.ListOptions, match string, limit int) ([]vectorstore.Record, string, error) {
	var out []vectorstore.Record
	for {
		opts.Limit = limit - len(out)
		recs, next, err := c.List(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		for _, r := range recs {
			if matchText(&r, match) {
				out = append(out, r)
			}
		}
		if next == "" || len(out) >= limit {
			return out, next, nil
		}
		opts.PageToken = next
	}
}

func sortRecords(recs []vectorstore.Record, key string) {
	desc := strings.HasPrefix(key, "-")
	key = strings.TrimPrefix(key, "-")
	field := func(r *vectorstore.Record) string {
		switch key {
		case "id":
			return r.ID
		case "layer":
			return r.Layer
		case "kind":
			return r.Kind
		case "thread":
			return r.Scope.Thread
		case "resource":
			return r.Scope.Resource
		}
		return ""
	}
	slices.SortStableFunc(recs, func(x, y vectorstore.Record) int {
		var c int
		if key == "valid_from" {
			c = x.ValidFrom.Compare(y.ValidFrom)
		} else {
			c = strings.Compare(field(&x), field(&y))
		}
		if c == 0 {
			c = x.CreatedAt.Compare(y.CreatedAt)
		}
		if c == 0 {
			c = strings.Compare(x.ID, y.ID)
		}
		if desc {
			c = -c
		}
		return c
	})
}

// printRecords prints records as a table or JSON lines; scores, when not
// nil, adds a SCORE column / "score" field.
func (a *app) printRecords(recs []vectorstore.Record, wide bool, scores []float64) error {
	if a.flags.json {
		for i := range recs {
			var v any = &recs[i]
			if scores != nil {
				v = scoredRecord{Score: scores[i], Record: recs[i]}
			}
			if err := writeJSON(a.io.Out, v); err != nil {
				return err
			}
		}
		return nil
	}
	if len(recs) == 0 {
		fmt.Fprintln(a.io.Err, "no memories match")
		return nil
	}
	tw := newTable(a.io.Out)
	head := "ID\tLAYER\tKIND\tSCOPE\tCREATED\tTEXT"
	if scores != nil {
		head = "SCORE\t" + head
	}
	fmt.Fprintln(tw, head)
	for i, r := range recs {
		text := clip(r.Text, 60)
		scope := clip(scopeCell(r.Scope), 32)
		if wide {
			text, scope = clip(r.Text, 0), scopeCell(r.Scope)
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", cell(r.ID), cell(r.Layer), cell(r.Kind), cell(scope), fmtTime(r.CreatedAt), cell(text))
		if scores != nil {
			row = strconv.FormatFloat(scores[i], 'f', 4, 64) + "\t" + row
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

// scoredRecord is a search result in JSON: the record's fields plus score.
type scoredRecord struct {
	Score float64 `json:"score"`
	vectorstore.Record
}

func (a *app) showCmd() *cobra.Command {
	var vectors bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one memory in full",
		Long: `Show one memory in full: layer, kind, scope, text, metadata, validity, the
source items it came from (when its layer records them) and its vector's
dimension (the values with --vectors).`,
		Args:              exactArgs(1, "one ID"),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runShow(cmd.Context(), args[0], vectors)
		},
	}
	cmd.Flags().BoolVar(&vectors, "vectors", false, "print the vector's values")
	return cmd
}

func (a *app) runShow(ctx context.Context, id string, vectors bool) error {
	if err := checkID(id); err != nil {
		return err
	}
	s, err := a.openStore(ctx, openRead, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	r, err := s.coll.Get(ctx, id)
	if errors.Is(err, vectorstore.ErrNotFound) {
		return notFoundf("no memory with id %q in %s", id, s.ref)
	}
	if err != nil {
		return err
	}
	if a.flags.json {
		if !vectors {
			r.Vector = nil
		}
		return writeJSONIndent(a.io.Out, &r)
	}
	tw := newTable(a.io.Out)
	// Every value is a cell: escaped, on one line.
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, cell(v)) }
	row("ID", r.ID)
	row("Layer", r.Layer)
	row("Kind", r.Kind)
	row("Scope", scopeCell(r.Scope))
	row("Created", fmtTimeFull(r.CreatedAt))
	row("Valid", validity(&r))
	if !r.ValidFrom.IsZero() {
		row("Valid from", fmtTimeFull(r.ValidFrom))
	}
	if !r.ValidTo.IsZero() {
		row("Valid to", fmtTimeFull(r.ValidTo))
	}
	row("Vector", fmt.Sprintf("%d values", len(r.Vector)))
	if src := sourcesOf(&r); len(src) > 0 {
		row("Sources", strings.Join(src, ", "))
	}
	if len(r.Metadata) > 0 {
		fmt.Fprintln(tw, "Metadata:")
		for _, k := range slices.Sorted(mapKeys(r.Metadata)) {
			fmt.Fprintf(tw, "  %s\t%s\n", cell(k), cell(r.Metadata[k]))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(a.io.Out, "Text:\n%s\n", indent(escText(r.Text)))
	if vectors {
		vs := make([]string, len(r.Vector))
		for i, v := range r.Vector {
			vs[i] = strconv.FormatFloat(float64(v), 'g', -1, 32)
		}
		fmt.Fprintf(a.io.Out, "Vector values:\n  [%s]\n", strings.Join(vs, ", "))
	}
	return nil
}

// sourcesOf reads the source items a record names: the sources metadata
// (observations, temporal: a JSON list of item ids), else the run and item
// the record came from (episodic, semantic).
func sourcesOf(r *vectorstore.Record) []string {
	var out []string
	if raw := r.Metadata["sources"]; raw != "" {
		var src []string
		if json.Unmarshal([]byte(raw), &src) == nil {
			out = append(out, src...)
		}
	}
	if id := r.Metadata["item_id"]; id != "" {
		out = append(out, "item "+id)
	}
	if run := r.Metadata["run"]; run != "" {
		out = append(out, "run "+run)
	}
	return out
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

type searchFlags struct {
	filterFlags
	limit    int
	minScore float64
	wide     bool
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
	fs.BoolVarP(&f.wide, "wide", "w", false, "show the whole text")
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
	s, err := a.openStore(ctx, openRead, nil)
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
	return a.printRecords(recs, f.wide, scores)
}
