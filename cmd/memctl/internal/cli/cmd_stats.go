package cli

import (
	"context"
	"fmt"
	"github.com/stratamem/strata/memory/semantic"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/cmd/memctl/internal/progress"
	"github.com/stratamem/strata/vectorstore"
)

// storeStats is what stats reports.
type storeStats struct {
	Store       string         `json:"store"`
	StoreSource string         `json:"store_source"`
	Backend     string         `json:"backend"`
	Collection  string         `json:"collection"`
	Embedder    string         `json:"embedder"`
	EmbedderSrc string         `json:"embedder_source"`
	Dimension   int            `json:"dimension"`
	Distance    string         `json:"distance"`
	Records     int            `json:"records"`
	ByLayer     map[string]int `json:"by_layer"`
	ByKind      map[string]int `json:"by_kind"`
	ByScope     map[string]int `json:"by_scope"`
	Threads     int            `json:"threads"`
	Resources   int            `json:"resources"`
	// DataBytes sums the records' text, metadata and vectors; DiskBytes
	// is the size of an embedded directory on disk (0 for servers).
	DataBytes int64 `json:"data_bytes"`
	DiskBytes int64 `json:"disk_bytes,omitempty"`
	// Embeddings counts records by the model their "embedding" metadata
	// names (the semantic layer's records).
	Embeddings map[string]int `json:"embeddings,omitempty"`
}

func (a *app) statsCmd() *cobra.Command {
	var f filterFlags
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Counts by layer, scope and kind; store size; embedder in use",
		Long: `Count the memories (all, or those the filters select) by layer, scope and
kind, with the number of threads and resources, the size of the data, the
store in use and where that choice came from (flag, environment, config file
or the default), and the embedder and vector dimension.

With --server, the counts are the server's (GET /v1/stats) for one resource
(--resource, or the API key's only one) or, with an admin key and no
--resource, the whole store; the other filters do not apply, and the size on
disk is not known.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runStats(cmd.Context(), &f) },
	}
	f.register(cmd)
	return cmd
}

func (a *app) runStats(ctx context.Context, f *filterFlags) error {
	if rc, err := a.remoteClient(); err != nil {
		return err
	} else if rc != nil {
		return a.remoteStats(ctx, rc, f)
	}
	s, flt, match, err := a.openFiltered(ctx, f)
	if err != nil {
		return err
	}
	defer s.Close()
	info := s.Info()
	st := storeStats{Store: s.ref.String(), StoreSource: s.ref.Source, Backend: info.Driver, Collection: info.Name,
		Embedder: s.emb.Model(), EmbedderSrc: s.embSource, Dimension: info.Dimension, Distance: string(info.Distance),
		ByLayer: map[string]int{}, ByKind: map[string]int{}, ByScope: map[string]int{}, Embeddings: map[string]int{}}
	if s.env != nil {
		st.Backend = "embedded (" + info.Driver + ")"
	}
	threads, resources := map[string]bool{}, map[string]bool{}
	for r, err := range s.coll.All(ctx, vectorstore.ListOptions{Filter: flt, Limit: 1000, WithVectors: true}) {
		if err != nil {
			return err
		}
		if !matchText(&r, match) {
			continue
		}
		st.Records++
		st.ByLayer[r.Layer]++
		st.ByKind[r.Kind]++
		st.ByScope[string(scopeOf(&r))]++
		if r.Scope.Thread != "" {
			threads[r.Scope.Thread] = true
		}
		if r.Scope.Resource != "" {
			resources[r.Scope.Resource] = true
		}
		if m := r.Metadata[semantic.MetaEmbedding]; m != "" {
			st.Embeddings[m]++
		}
		st.DataBytes += int64(len(r.ID) + len(r.Text) + 4*len(r.Vector))
		for k, v := range r.Metadata {
			st.DataBytes += int64(len(k) + len(v))
		}
	}
	st.Threads, st.Resources = len(threads), len(resources)
	if s.ref.Dir != "" {
		_ = filepath.WalkDir(s.ref.Dir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					st.DiskBytes += fi.Size()
				}
			}
			return nil
		})
	}
	return a.printStats(&st)
}

// printStats prints st as JSON or as the stats table.
func (a *app) printStats(st *storeStats) error {
	if a.flags.json {
		return writeJSONIndent(a.io.Out, st)
	}
	tw := newTable(a.io.Out)
	fmt.Fprintf(tw, "Store:\t%s\n", cell(st.Store))
	fmt.Fprintf(tw, "  chosen by:\t%s\n", cell(st.StoreSource))
	fmt.Fprintf(tw, "  backend:\t%s, collection %q\n", cell(st.Backend), st.Collection)
	fmt.Fprintf(tw, "Embedder:\t%s\n", cell(st.Embedder))
	fmt.Fprintf(tw, "  chosen by:\t%s\n", cell(st.EmbedderSrc))
	fmt.Fprintf(tw, "  dimension:\t%d (%s)\n", st.Dimension, st.Distance)
	fmt.Fprintf(tw, "Memories:\t%d in %s and %s\n", st.Records, plural(st.Threads, "thread", "threads"), plural(st.Resources, "resource", "resources"))
	size := fmt.Sprintf("%s of data", progress.Bytes(st.DataBytes, " "))
	if st.DiskBytes > 0 {
		size += fmt.Sprintf(", %s on disk", progress.Bytes(st.DiskBytes, " "))
	}
	fmt.Fprintf(tw, "Size:\t%s\n", size)
	section := func(title string, m map[string]int) {
		if len(m) == 0 {
			return
		}
		fmt.Fprintf(tw, "%s:\n", title)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			name := k
			if name == "" {
				name = "(none)"
			}
			fmt.Fprintf(tw, "  %s\t%d\n", cell(name), m[k])
		}
	}
	section("By layer", st.ByLayer)
	section("By scope", st.ByScope)
	section("By kind", st.ByKind)
	section("By embedding model (semantic metadata)", st.Embeddings)
	return tw.Flush()
}
