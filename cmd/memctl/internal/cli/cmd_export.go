package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/cmd/memctl/internal/progress"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/exportfmt"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

type exportFlags struct {
	filterFlags
	stateFlags
	noHeader, noVectors bool
}

func (a *app) exportCmd() *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export [FILE|-]",
		Short: "Write memories and layer state as JSON Lines, vectors included",
		Long: `Write the memories (all, or those the filters select) as JSON Lines to FILE
or stdout: a header line naming the embedder, dimension and distance, then
one record per line in creation order, with vectors and validity, then one
line per value of the runtime's state store: the layers' state (a todo
list, the temporal layer's call-id replay protection), the binding of each
thread to its resource and the recorded assemblies memctl inspect shows,
each value byte for byte. The round trip through memctl import is lossless,
across backends:

  memctl export > memories.jsonl
  memctl --store postgres://db/strata import memories.jsonl

The state store is the one inspect reads (--state, the config file's
"state", <dir>/state of an embedded directory, the database of a postgres
store); a qdrant or bare chromem store has none unless --state names one.
Filters select records only: with a filter, no state is written (memctl
says so). --no-state leaves the state out, --no-assemblies the recorded
assemblies only.

An embedded directory another process holds (a running agent) is exported
from a snapshot of its records taken when the export starts.

With --server, the export goes through the server, page by page (GET
/v1/memories with vectors, GET /v1/state with the stored bytes): the records
of one resource (--resource, or the API key's only one; --layer, --kind and
--thread filter, the other filters do not apply), then, unless filtered, the
layer state and recorded assemblies of that resource and its threads. It
does not carry what no resource owns: global records and state, the
binding of threads to resources and other resources' data; the header names
no embedder (the server reports its model, not the --embedder to open the
store with), and the records are read page by page, not from one snapshot:
a record written during the export may or may not be in it.`,
		Args: rangeArgs(0, 1, "at most one FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runExport(cmd.Context(), fileArg(args), &f)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&f.noHeader, "no-header", false, "write no header line")
	cmd.Flags().BoolVar(&f.noVectors, "no-vectors", false, "leave vectors out (an import then re-embeds the text)")
	f.registerState(cmd.Flags(), "export")
	return cmd
}

func (a *app) runExport(ctx context.Context, path string, f *exportFlags) error {
	if rc, err := a.remoteClient(); err != nil {
		return err
	} else if rc != nil {
		return a.remoteExport(ctx, rc, path, f)
	}
	s, flt, match, err := a.openFiltered(ctx, &f.filterFlags)
	if err != nil {
		return err
	}
	defer s.Close()
	total, err := s.coll.Count(ctx, flt)
	if err != nil {
		return err
	}
	// The state store is opened before anything is written, so a state
	// store that fails leaves no partial file.
	var state *openedState
	filtered := !flt.IsZero() || match != ""
	switch {
	case f.noState:
	case filtered:
		fmt.Fprintln(a.io.Err, "memctl: export: the filters select records: no layer state exported (export without filters to move it)")
	default:
		if state, err = a.stateOf(ctx, s, a.stateLoc(s.ref), false); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		defer state.close()
		if state == nil {
			fmt.Fprintf(a.io.Err, "memctl: export: %s keeps no layer state memctl knows of: records only (pass --state to export the state too)\n", esc(s.ref.String()))
		}
	}
	out, file, err := a.openExport(path)
	if err != nil {
		return err
	}
	if file != nil {
		defer os.Remove(file.Name())
		defer file.Close()
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
	var sr stateResult
	if state != nil {
		if err := exportState(ctx, w, state, f.include(), &sr); err != nil {
			return fmt.Errorf("export: layer state from %s: %w", state.name, err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if file != nil {
		if err := placeExport(file, path); err != nil {
			return err
		}
		fmt.Fprintf(a.io.Err, "exported %s to %s\n", exported(w.Count(), state != nil, sr), esc(path))
	}
	return nil
}

// exportState writes every selected key of the state store as a state
// line, after the records.
func exportState(ctx context.Context, w *exportfmt.Writer, state *openedState, include func(storage.Key) bool, res *stateResult) error {
	keys, err := environment.StateKeys(ctx, state.st)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if include != nil && !include(k) {
			continue
		}
		e, err := state.st.Get(ctx, k)
		if errors.Is(err, storage.ErrNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", k, err)
		}
		if err := w.WriteState(k, e.Value); err != nil {
			return err
		}
		res.Keys++
		if inspect.IsAssemblyKey(k) {
			res.Assemblies++
		}
	}
	return nil
}

// openExport is where an export to path writes: standard output for "-",
// else a temporary file next to path (the caller removes it when done),
// which placeExport renames into place once the export is complete, so a
// failed export never leaves a truncated file that looks complete.
func (a *app) openExport(path string) (io.Writer, *os.File, error) {
	if path == "-" {
		return a.io.Out, nil, nil
	}
	file, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, nil, fmt.Errorf("export: %w", err)
	}
	return file, file, nil
}

// placeExport makes an export written to a temporary file durable and
// puts it at path, so a failed export never leaves a partial file there.
func placeExport(file *os.File, path string) error {
	if err := file.Sync(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(file.Name(), path); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// exported says what an export wrote: its memories, and with the layer
// state the state values and recorded assemblies among them.
func exported(memories int, withState bool, sr stateResult) string {
	what := plural(memories, "memory", "memories")
	if withState {
		what += fmt.Sprintf(" and %s (%d recorded assemblies)", plural(sr.Keys, "state value", "state values"), sr.Assemblies)
	}
	return what
}
