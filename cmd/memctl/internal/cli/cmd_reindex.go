package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/memory/semantic"
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
	target, err := embed.ParseSpec(arg)
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
	src, lz, dim, err := a.openReembed(ctx, ref, target, false)
	if err != nil {
		return err
	}
	defer src.Close()
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

func (a *app) reindexDir(ctx context.Context, ref storeRef, target embed.Spec, f *reindexFlags) error {
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
	src, lz, dim, err := a.openReembed(ctx, ref, target, true)
	if err != nil {
		return err
	}
	defer src.Close()
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

// openReembed opens the source store of a reindex (allowPending as for
// openRef) and the target embedder, resolving its dimension.
func (a *app) openReembed(ctx context.Context, ref storeRef, target embed.Spec, allowPending bool) (*store, *embed.Lazy, int, error) {
	src, err := a.openRef(ctx, ref, openRead, nil, allowPending)
	if err != nil {
		return nil, nil, 0, err
	}
	lz := embed.NewLazy(target, 0, nil)
	dim, err := lz.Resolve(ctx)
	if err != nil {
		_ = src.Close()
		return nil, nil, 0, err
	}
	return src, lz, dim, nil
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
		have, err := environment.RecordsByID(ctx, dst, idsOf(batch), false)
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
				if _, ok := todo[i].Metadata[semantic.MetaEmbedding]; ok {
					todo[i].Metadata[semantic.MetaEmbedding] = emb.Model()
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
