package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/vectorstore"
)

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
	bar := a.bar("migrate", int64(total), "records")
	defer bar.Clear()
	include := func(r *vectorstore.Record) bool { return matchText(r, match) }
	cr, err := environment.CopyRecords(ctx, src.coll, dst.coll, environment.CopyOptions{Filter: flt, Include: include, Batch: f.batch, Progress: bar.Add})
	if err != nil {
		return err
	}
	bar.Finish()
	res := copyResult{Source: cr.Source, Written: cr.Written, Skipped: cr.Skipped}
	if err := verifyCopy(ctx, src.coll, dst.coll, flt, include, &res, environment.SameRecord); err != nil {
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
