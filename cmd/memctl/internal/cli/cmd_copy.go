package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/cmd/memctl/internal/embedspec"
	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
)

// Reindex work state of an embedded directory, in <dir>/.reindex.
const (
	reindexStateFile = "state.json"
	phaseCopy        = "copy"
	phaseSwap        = "swap"
)

type reindexState struct {
	Embedder  string `json:"embedder"`
	Dimension int    `json:"dimension"`
	Phase     string `json:"phase"`
}

func readReindexState(dir string) (reindexState, error) {
	var st reindexState
	raw, err := os.ReadFile(filepath.Join(reindexDir(dir), reindexStateFile))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("reindex state %s: %w", filepath.Join(reindexDir(dir), reindexStateFile), err)
	}
	return st, nil
}

func writeReindexState(dir string, st reindexState) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := filepath.Join(reindexDir(dir), reindexStateFile+".tmp")
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(reindexDir(dir), reindexStateFile))
}

type reindexFlags struct {
	to        string
	restart   bool
	batch     int
	skipEmpty bool
	prune     bool
}

func (a *app) reindexCmd() *cobra.Command {
	var f reindexFlags
	cmd := &cobra.Command{
		Use:   "reindex EMBEDDER",
		Short: "Re-embed every memory with another embedder (resumable)",
		Long: `Re-embed every memory of the store with EMBEDDER (uselite, hash:DIM,
openai:MODEL, ollama:MODEL); the new dimension may differ. No record is lost:
ids, text, metadata, times and validity are kept, the vectors are new (and a
semantic record's "embedding" metadata names the new model).

For an embedded directory the new vectors go to <dir>/.reindex; once every
record is there and the counts agree, the directory switches to them and
strata.json records the new embedder. For a server store, give --to URL: the
re-embedded collection is written there and the source is left as it was.

Interrupted (Ctrl-C, a crash), run the same command again: records already
re-embedded are kept and the work goes on where it stopped; --restart
discards it. Stop the agents writing to the store while it runs.

Every source record is then read back from the target and compared; a
mismatch exits 1. Records the target holds that the source does not (ones
deleted from the source since an interrupted run) are deleted from an
embedded directory's work collection; in a --to store they may be someone
else's, so reindex lists them and exits 1 unless --prune deletes them.

  memctl reindex hash:256
  memctl --store postgres://db/x?collection=memories reindex uselite --to 'postgres://db/x?collection=memories_v2'`,
		Args: exactArgs(1, "one EMBEDDER"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runReindex(cmd.Context(), args[0], &f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.to, "to", "", "write the re-embedded collection to this store instead (required for server stores)")
	fs.BoolVar(&f.restart, "restart", false, "discard the work of an interrupted reindex")
	fs.IntVar(&f.batch, "batch", 64, "texts per embedding call")
	fs.BoolVar(&f.skipEmpty, "skip-empty", false, "drop records whose text is blank (they cannot be embedded) instead of failing")
	fs.BoolVar(&f.prune, "prune", false, "with --to, delete the target's records that the source does not hold")
	return cmd
}

func (a *app) runReindex(ctx context.Context, arg string, f *reindexFlags) error {
	target, err := embedspec.Parse(arg)
	if err != nil {
		return err
	}
	if f.batch < 1 || f.batch > 4096 {
		return usageErrorf("--batch must be in 1..4096")
	}
	ref, err := resolveStore(a.flags.store, a.cfg, a.cfgPath)
	if err != nil {
		return err
	}
	if ref.Dir == "" && f.to == "" {
		return usageErrorf("%s is a server store: give --to URL for the re-embedded collection", ref)
	}
	if f.prune && f.to == "" {
		return usageErrorf("--prune applies to --to only (an embedded directory's reindex deletes such records itself)")
	}
	if ref.Dir != "" && f.to == "" {
		return a.reindexDir(ctx, ref, target, f)
	}
	toRef, err := parseStoreRef(f.to)
	if err != nil {
		return err
	}
	src, err := a.openRef(ctx, ref, openRead, nil, false)
	if err != nil {
		return err
	}
	defer src.Close()
	lz := embedspec.NewLazy(target, 0)
	dim, err := lz.Resolve(ctx)
	if err != nil {
		return err
	}
	dst, err := a.openRef(ctx, toRef, openCreate, &createSpec{Dim: dim, Distance: src.Info().Distance, Embedder: target.ID(), Spec: &target}, false)
	if err != nil {
		return err
	}
	defer dst.Close()
	res, err := a.reembed(ctx, src.coll, dst.coll, lz, f)
	if err != nil {
		return err
	}
	if err := a.report(res, fmt.Sprintf("re-embedded %s with %s into %s", src.ref, target.ID(), dst.ref)); err != nil {
		return err
	}
	switch {
	case res.Extra > 0:
		ids := strings.Join(quoteAll(res.extraIDs), ", ")
		if n := res.Extra - len(res.extraIDs); n > 0 {
			ids += fmt.Sprintf(" and %d more", n)
		}
		return fmt.Errorf("%w: %s holds %s the source does not (%s), perhaps deleted from the source since an interrupted reindex; "+
			"check them (memctl --store TARGET ls --id ID), then run again with --prune to delete them",
			ErrVerify, dst.ref, plural(res.Extra, "record", "records"), ids)
	case res.Verified != res.Source || res.Target != res.Source:
		return fmt.Errorf("%w: the source holds %d records, %s %d (%d verified); run reindex again",
			ErrVerify, res.Source, dst.ref, res.Target, res.Verified)
	}
	return nil
}

// copyResult is what reindex and migrate report.
type copyResult struct {
	Source  int `json:"source"`
	Written int `json:"written"`
	Skipped int `json:"skipped"`
	Removed int `json:"removed,omitempty"`
	// Extra counts the target's records the source does not hold, left
	// in place (reindex --to without --prune).
	Extra    int `json:"extra,omitempty"`
	Verified int `json:"verified"`
	Target   int `json:"target"`
	// UpToDate is set when reindex had nothing to do.
	UpToDate bool `json:"up_to_date,omitempty"`

	extraIDs []string // the first few, for the message
}

func (a *app) report(r copyResult, what string) error {
	if a.flags.json {
		return writeJSON(a.io.Out, r)
	}
	fmt.Fprintf(a.io.Out, "%s: %d records, %d written, %d already there, verified %d/%d (target holds %d)\n",
		esc(what), r.Source, r.Written, r.Skipped, r.Verified, r.Source, r.Target)
	return nil
}

func (a *app) reindexDir(ctx context.Context, ref storeRef, target embedspec.Spec, f *reindexFlags) error {
	dir, work := ref.Dir, reindexDir(ref.Dir)
	meta, err := embedded.ReadMeta(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w at %s", ErrNoStore, dir)
	}
	if err != nil {
		return err
	}
	st, err := readReindexState(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st = reindexState{}
	case err != nil:
		return err
	}
	if st.Phase != "" && (f.restart || st.Embedder != target.ID()) {
		if st.Phase == phaseSwap {
			return fmt.Errorf("store %s: an interrupted reindex to %s was switching collections; finish it first with memctl reindex %s", dir, st.Embedder, st.Embedder)
		}
		if err := os.RemoveAll(work); err != nil {
			return err
		}
		st = reindexState{}
	}
	if st.Phase == phaseSwap {
		return a.finishSwap(dir, st)
	}
	if meta.Embedder == target.ID() && st.Phase == "" {
		fmt.Fprintf(a.io.Err, "store %s is embedded with %s already: nothing to do\n", esc(dir), esc(target.ID()))
		if !a.flags.json {
			return nil
		}
		// Scripts read the result: every record is where it should be.
		s, err := a.openRef(ctx, ref, openRead, nil, false)
		if err != nil {
			return err
		}
		defer s.Close()
		n, err := s.coll.Count(ctx, vectorstore.Filter{})
		if err != nil {
			return err
		}
		return a.report(copyResult{Source: n, Skipped: n, Verified: n, Target: n, UpToDate: true}, "")
	}
	src, err := a.openRef(ctx, ref, openRead, nil, true)
	if err != nil {
		return err
	}
	defer src.Close()
	lz := embedspec.NewLazy(target, 0)
	dim, err := lz.Resolve(ctx)
	if err != nil {
		return err
	}
	if st.Phase == "" {
		if err := os.MkdirAll(work, 0o755); err != nil {
			return err
		}
		st = reindexState{Embedder: target.ID(), Dimension: dim, Phase: phaseCopy}
		if err := writeReindexState(dir, st); err != nil {
			return err
		}
	}
	dst, err := chromem.OpenCollection(ctx, filepath.Join(work, "records"), embedded.Collection,
		&vectorstore.Options{Dimension: dim, Distance: src.Info().Distance})
	if err != nil {
		return fmt.Errorf("reindex work collection: %w", err)
	}
	res, err := a.reembed(ctx, src.coll, dst, lz, f)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if res.Target != res.Source || res.Verified != res.Source {
		return fmt.Errorf("%w: the source holds %d records, the re-embedded collection %d (%d verified); run reindex again", ErrVerify, res.Source, res.Target, res.Verified)
	}
	st.Phase = phaseSwap
	if err := writeReindexState(dir, st); err != nil {
		return err
	}
	if err := src.Close(); err != nil {
		return err
	}
	if err := a.finishSwap(dir, st); err != nil {
		return err
	}
	return a.report(res, fmt.Sprintf("re-embedded %s with %s (%d-d)", dir, target.ID(), dim))
}

// finishSwap switches an embedded directory to the re-embedded records.
// Each step is a rename or an idempotent write, so a crash anywhere leaves
// a state this function completes when run again.
func (a *app) finishSwap(dir string, st reindexState) error {
	work := reindexDir(dir)
	live, next, old := filepath.Join(dir, "records"), filepath.Join(work, "records"), filepath.Join(work, "records.old")
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if exists(next) {
		if exists(live) {
			if exists(old) {
				return fmt.Errorf("reindex of %s: %s, %s and %s all exist; move one aside by hand", dir, live, next, old)
			}
			if err := os.Rename(live, old); err != nil {
				return err
			}
		}
		if err := os.Rename(next, live); err != nil {
			return err
		}
	}
	if err := embedded.WriteMeta(dir, embedded.Meta{Embedder: st.Embedder, Dimension: st.Dimension}); err != nil {
		return err
	}
	return os.RemoveAll(work)
}

// reembed copies every record of src into dst with a vector from emb,
// skipping records dst holds already with the same content (a resumed
// run), deleting from dst what src no longer holds, and verifying.
func (a *app) reembed(ctx context.Context, src, dst *vectorstore.Collection, emb embed.Embedder, f *reindexFlags) (copyResult, error) {
	var res copyResult
	total, err := src.Count(ctx, vectorstore.Filter{})
	if err != nil {
		return res, err
	}
	bar := a.bar("reindex", int64(total), "records")
	defer bar.Clear()
	ids := map[string]bool{}
	var batch []vectorstore.Record
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		have, err := byIDs(ctx, dst, batch, false)
		if err != nil {
			return err
		}
		var todo []vectorstore.Record
		for _, r := range batch {
			if h, ok := have[r.ID]; ok && sameContent(&r, &h, emb.Model()) {
				res.Skipped++
				continue
			}
			todo = append(todo, r)
		}
		if len(todo) > 0 {
			texts := make([]string, len(todo))
			for i := range todo {
				texts[i] = todo[i].Text
			}
			vs, err := emb.Embed(ctx, texts)
			if err != nil {
				return fmt.Errorf("embed: %w", err)
			}
			for i := range todo {
				todo[i].Vector = vs[i]
				// The semantic layer searches only records whose
				// "embedding" names the current model.
				if _, ok := todo[i].Metadata["embedding"]; ok {
					todo[i].Metadata["embedding"] = emb.Model()
				}
			}
			if err := dst.Upsert(ctx, todo...); err != nil {
				return err
			}
			res.Written += len(todo)
		}
		bar.Add(len(batch))
		batch = batch[:0]
		return nil
	}
	for r, err := range src.All(ctx, vectorstore.ListOptions{Limit: 1000}) {
		if err != nil {
			return res, err
		}
		res.Source++
		if isBlank(r.Text) {
			if f.skipEmpty {
				res.Source--
				continue
			}
			return res, fmt.Errorf("record %s has no text to embed; give it text (memctl edit) or pass --skip-empty to drop such records", r.ID)
		}
		ids[r.ID] = true
		batch = append(batch, r)
		if len(batch) >= f.batch {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	if err := flush(); err != nil {
		return res, err
	}
	bar.Finish()
	// Records deleted from the source since an interrupted run.
	var extra []string
	for r, err := range dst.All(ctx, vectorstore.ListOptions{Limit: 1000}) {
		if err != nil {
			return res, err
		}
		if !ids[r.ID] {
			extra = append(extra, r.ID)
		}
	}
	switch {
	case len(extra) == 0:
	case f.to == "" || f.prune:
		// An embedded directory's work collection is reindex's own; a --to
		// store only with --prune.
		for lo := 0; lo < len(extra); lo += 1000 {
			if err := dst.Delete(ctx, extra[lo:min(lo+1000, len(extra))]...); err != nil {
				return res, err
			}
		}
		res.Removed = len(extra)
	default:
		res.Extra = len(extra)
		res.extraIDs = extra[:min(len(extra), 5)]
	}
	include := func(r *vectorstore.Record) bool { return !isBlank(r.Text) }
	return res, verifyCopy(ctx, src, dst, vectorstore.Filter{}, include, &res, func(s, d *vectorstore.Record) bool {
		return sameContent(s, d, emb.Model()) && len(d.Vector) == dst.Info().Dimension
	})
}

func isBlank(s string) bool {
	for _, c := range s {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// sameContent reports whether two records agree on everything but the
// vector (and, when model is not "", the semantic "embedding" marker,
// expected to name model in d).
func sameContent(s, d *vectorstore.Record, model string) bool {
	if s.ID != d.ID || s.Layer != d.Layer || s.Kind != d.Kind || s.Scope != d.Scope || s.Text != d.Text ||
		!s.CreatedAt.Equal(d.CreatedAt) || !s.ValidFrom.Equal(d.ValidFrom) || !s.ValidTo.Equal(d.ValidTo) ||
		len(s.Metadata) != len(d.Metadata) {
		return false
	}
	for k, v := range s.Metadata {
		w, ok := d.Metadata[k]
		if k == "embedding" && model != "" {
			v = model
		}
		if !ok || w != v {
			return false
		}
	}
	return true
}

// byIDs reads the records of dst with the ids of batch.
func byIDs(ctx context.Context, dst *vectorstore.Collection, batch []vectorstore.Record, vectors bool) (map[string]vectorstore.Record, error) {
	ids := make([]string, len(batch))
	for i := range batch {
		ids[i] = batch[i].ID
	}
	recs, _, err := dst.List(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{IDs: ids}, Limit: len(ids), WithVectors: vectors})
	if err != nil {
		return nil, err
	}
	out := make(map[string]vectorstore.Record, len(recs))
	for _, r := range recs {
		out[r.ID] = r
	}
	return out, nil
}

// verifyCopy checks that every source record (matching flt and match) is
// in dst as same says, and counts dst.
func verifyCopy(ctx context.Context, src, dst *vectorstore.Collection, flt vectorstore.Filter, include func(*vectorstore.Record) bool,
	res *copyResult, same func(s, d *vectorstore.Record) bool) error {
	var batch []vectorstore.Record
	check := func() error {
		if len(batch) == 0 {
			return nil
		}
		have, err := byIDs(ctx, dst, batch, true)
		if err != nil {
			return err
		}
		for i := range batch {
			if h, ok := have[batch[i].ID]; ok && same(&batch[i], &h) {
				res.Verified++
			}
		}
		batch = batch[:0]
		return nil
	}
	for r, err := range src.All(ctx, vectorstore.ListOptions{Filter: flt, Limit: 1000, WithVectors: true}) {
		if err != nil {
			return err
		}
		if !include(&r) {
			continue
		}
		batch = append(batch, r)
		if len(batch) == 500 {
			if err := check(); err != nil {
				return err
			}
		}
	}
	if err := check(); err != nil {
		return err
	}
	n, err := dst.Count(ctx, vectorstore.Filter{})
	res.Target = n
	return err
}

type migrateFlags struct {
	filterFlags
	from, to string
	batch    int
}

func (a *app) migrateCmd() *cobra.Command {
	var f migrateFlags
	cmd := &cobra.Command{
		Use:   "migrate --to URL",
		Short: "Copy memories between backends (resumable, verified)",
		Long: `Copy the memories of one store (--from, default the configured store) to
another (--to): embedded directory <-> postgres <-> qdrant. Vectors, times,
validity and metadata are copied as they are; a target that does not exist is
created with the source's dimension and distance (an embedded directory
records the source's embedder). A target whose dimension or distance
differs from the source's is refused before anything is written (exit
status 1); an embedded directory is always cosine, so a dot or euclidean
source goes to a postgres or qdrant target. Filters copy a subset.

Records the target holds already with the same content are skipped, so an
interrupted migrate resumes when run again. At the end every source record
is read back from the target and compared, and the counts are printed; a
mismatch exits 1.

  memctl migrate --from ./.strata/data --to 'postgres://user@db/strata?collection=memories'`,
		Args: exactArgs(0, "no arguments (use --from and --to)"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runMigrate(cmd.Context(), &f) },
	}
	f.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&f.from, "from", "", "source store (default: --store, $STRATA_STORE, the config file, ./.strata/data)")
	fs.StringVar(&f.to, "to", "", "target store (required)")
	fs.IntVar(&f.batch, "batch", 500, "records per write")
	return cmd
}

func (a *app) runMigrate(ctx context.Context, f *migrateFlags) error {
	if f.to == "" {
		return usageErrorf("--to is required")
	}
	if f.batch < 1 || f.batch > vectorstore.MaxListLimit {
		return usageErrorf("--batch must be in 1..%d", vectorstore.MaxListLimit)
	}
	flt, match, err := f.build(a.now())
	if err != nil {
		return err
	}
	var fromRef storeRef
	if f.from != "" {
		fromRef, err = parseStoreRef(f.from)
	} else {
		fromRef, err = resolveStore(a.flags.store, a.cfg, a.cfgPath)
	}
	if err != nil {
		return err
	}
	toRef, err := parseStoreRef(f.to)
	if err != nil {
		return err
	}
	if fromRef.Raw == toRef.Raw || fromRef.Dir != "" && fromRef.Dir == toRef.Dir {
		return usageErrorf("--from and --to are the same store")
	}
	src, err := a.openRef(ctx, fromRef, openRead, nil, false)
	if err != nil {
		return err
	}
	defer src.Close()
	info := src.Info()
	dst, err := a.openRef(ctx, toRef, openCreate, &createSpec{Dim: info.Dimension, Distance: info.Distance, Embedder: src.embID}, false)
	if err != nil {
		return err
	}
	defer dst.Close()
	total, err := src.coll.Count(ctx, flt)
	if err != nil {
		return err
	}
	var res copyResult
	bar := a.bar("migrate", int64(total), "records")
	defer bar.Clear()
	var batch []vectorstore.Record
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		have, err := byIDs(ctx, dst.coll, batch, true)
		if err != nil {
			return err
		}
		var todo []vectorstore.Record
		for i := range batch {
			if h, ok := have[batch[i].ID]; ok && sameRecord(&batch[i], &h) {
				res.Skipped++
				continue
			}
			todo = append(todo, batch[i])
		}
		if err := dst.coll.Upsert(ctx, todo...); err != nil {
			return err
		}
		res.Written += len(todo)
		bar.Add(len(batch))
		batch = batch[:0]
		return nil
	}
	for r, err := range src.coll.All(ctx, vectorstore.ListOptions{Filter: flt, Limit: 1000, WithVectors: true}) {
		if err != nil {
			return err
		}
		if !matchText(&r, match) {
			continue
		}
		res.Source++
		batch = append(batch, r)
		if len(batch) >= f.batch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	bar.Finish()
	include := func(r *vectorstore.Record) bool { return matchText(r, match) }
	if err := verifyCopy(ctx, src.coll, dst.coll, flt, include, &res, sameRecord); err != nil {
		return err
	}
	if err := a.report(res, fmt.Sprintf("migrated %s to %s", src.ref, dst.ref)); err != nil {
		return err
	}
	if res.Verified != res.Source {
		return fmt.Errorf("%w: %d of %d source records are not in %s as they are in the source", ErrVerify, res.Source-res.Verified, res.Source, dst.ref)
	}
	return nil
}

// sameRecord compares records, vectors within float32 rounding (a
// backend may store a unit vector renormalised in its last bit).
func sameRecord(x, y *vectorstore.Record) bool {
	return sameContent(x, y, "") && len(x.Vector) == len(y.Vector) && vectorsClose(x.Vector, y.Vector)
}

func vectorsClose(x, y []float32) bool {
	for i := range x {
		if x[i] != y[i] && math.Abs(float64(x[i])-float64(y[i])) > 1e-6 {
			return false
		}
	}
	return true
}
