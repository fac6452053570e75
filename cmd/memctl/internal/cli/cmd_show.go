package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
)

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
	var r vectorstore.Record
	if rc, err := a.remoteClient(); err != nil {
		return err
	} else if rc != nil {
		if r, err = a.remoteRecord(ctx, rc, id); err != nil {
			return err
		}
	} else {
		s, rec, err := a.openRecord(ctx, id, openReadOnly)
		if err != nil {
			return err
		}
		defer s.Close()
		r = rec
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
		for _, k := range slices.Sorted(maps.Keys(r.Metadata)) {
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
	if raw := r.Metadata[observations.MetaSources]; raw != "" {
		var src []string
		if json.Unmarshal([]byte(raw), &src) == nil {
			out = append(out, src...)
		}
	}
	if id := r.Metadata[semantic.MetaItemID]; id != "" {
		out = append(out, "item "+id)
	}
	if run := r.Metadata[episodic.MetaRun]; run != "" {
		out = append(out, "run "+run)
	}
	return out
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
