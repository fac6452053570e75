package cli

import (
	"context"
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
	if rc, err := a.remoteClient(); err != nil || rc != nil {
		if err != nil {
			return err
		}
		return a.remoteLs(ctx, rc, f)
	}
	native := f.sort == "created" || f.sort == "-created"
	if !native && f.pageToken != "" {
		return usageErrorf("--page-token works with --sort created or -created only")
	}
	s, err := a.openStore(ctx, openReadOnly, nil)
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
	if err := a.printRecords(recs, nil); err != nil {
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
// nil, adds a SCORE column / "score" field. The table fits 80 columns
// (the text and scope shortened, kind and creation time left out as
// needed) unless --wide, which shows every column whole.
func (a *app) printRecords(recs []vectorstore.Record, scores []float64) error {
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
	// Ids are never shortened (they are what show, edit and rm take), so
	// the text keeps room: the creation time, kind, scope and layer go
	// in that order when 80 columns cannot hold them.
	cols := []column{{name: "ID"}, {name: "LAYER", min: 6, drop: 1}, {name: "KIND", min: 6, drop: 3}, {name: "SCOPE", min: 10, drop: 2},
		{name: "CREATED", drop: 4}, {name: "TEXT", min: 16}}
	if scores != nil {
		cols = append([]column{{name: "SCORE", right: true}}, cols...)
	}
	rows := make([][]string, 0, len(recs))
	for i, r := range recs {
		row := []string{cell(r.ID), cell(r.Layer), cell(r.Kind), cell(scopeCell(r.Scope)), fmtTime(r.CreatedAt), cell(clip(r.Text, 0))}
		if scores != nil {
			row = append([]string{strconv.FormatFloat(scores[i], 'f', 4, 64)}, row...)
		}
		rows = append(rows, row)
	}
	return fitTable(a.io.Out, a.width(), cols, rows)
}
