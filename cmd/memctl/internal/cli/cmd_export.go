package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/cmd/memctl/internal/progress"
	"github.com/stratamem/strata/exportfmt"
	"github.com/stratamem/strata/vectorstore"
)

type exportFlags struct {
	filterFlags
	noHeader, noVectors bool
}

func (a *app) exportCmd() *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export [FILE|-]",
		Short: "Write memories as JSON Lines, vectors included",
		Long: `Write the memories (all, or those the filters select) as JSON Lines to FILE
or stdout: a header line naming the embedder, dimension and distance, then
one record per line in creation order, with vectors and validity. The round
trip through memctl import is lossless, across backends:

  memctl export > memories.jsonl
  memctl --store postgres://db/strata import memories.jsonl`,
		Args: rangeArgs(0, 1, "at most one FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runExport(cmd.Context(), fileArg(args), &f)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&f.noHeader, "no-header", false, "write no header line")
	cmd.Flags().BoolVar(&f.noVectors, "no-vectors", false, "leave vectors out (an import then re-embeds the text)")
	return cmd
}

func (a *app) runExport(ctx context.Context, path string, f *exportFlags) error {
	s, flt, match, err := a.openFiltered(ctx, &f.filterFlags)
	if err != nil {
		return err
	}
	defer s.Close()
	total, err := s.coll.Count(ctx, flt)
	if err != nil {
		return err
	}
	out := a.io.Out
	var file *os.File
	if path != "-" {
		// Write next to the target and rename, so a failed export never
		// leaves a truncated file that looks complete.
		file, err = os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		defer os.Remove(file.Name())
		defer file.Close()
		out = file
	}
	w := exportfmt.NewWriter(out)
	info := s.Info()
	if !f.noHeader {
		h := exportfmt.Header{Embedder: s.embID, Dimension: info.Dimension, Distance: string(info.Distance)}
		if f.noVectors {
			// No vectors to compare: the records can go to a store of any
			// distance, re-embedded there.
			h.Distance = ""
		}
		if err := w.WriteHeader(h); err != nil {
			return err
		}
	}
	bar := a.bar("export", int64(total), "records")
	if path == "-" && progress.IsTerminal(a.io.Out) {
		bar = nil // the records themselves scroll by
	}
	for r, err := range s.coll.All(ctx, vectorstore.ListOptions{Filter: flt, Limit: 500, WithVectors: !f.noVectors}) {
		if err != nil {
			bar.Clear()
			return err
		}
		bar.Add(1)
		if !matchText(&r, match) {
			continue
		}
		if err := w.Write(&r); err != nil {
			bar.Clear()
			return fmt.Errorf("export: %w", err)
		}
	}
	bar.Finish()
	if err := w.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if file != nil {
		if err := file.Sync(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if err := file.Close(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if err := os.Rename(file.Name(), path); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		fmt.Fprintf(a.io.Err, "exported %s to %s\n", plural(w.Count(), "memory", "memories"), esc(path))
	}
	return nil
}
