package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/vectorstore"
)

type migrateFlags struct {
	filterFlags
	stateFlags
	from, to           string
	fromState, toState string
	batch              int
	// batchSet and timeoutSet say that --batch and --timeout were given.
	batchSet, timeoutSet bool
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

The runtime's state moves with the records: every key of the source's
state store (the layers' state such as a todo list or the temporal layer's
call-id replay protection, the bindings of threads to their resources, the
recorded assemblies memctl inspect shows), values byte for byte, into the
target's. The state store of an embedded directory is <dir>/state, of a
postgres store its database (one state table per database, whatever the
collection); --from-state and --to-state name others (a qdrant or bare
chromem store has none). A source with state and a target without a state
store is refused before anything is written; --no-state moves the records
only, --no-assemblies leaves the recorded assemblies behind. Filters select
records only: with a filter no state moves (memctl says so).

Records and state values the target holds already with the same content
are skipped, so an interrupted migrate resumes when run again. At the end
every source record and state value is read back from the target and
compared, and the counts are printed; a mismatch exits 1.

Records are written --batch at a time (default 10000 into postgres, whose
bulk path loads a batch of its copy_threshold, 1000 by default, or more with
COPY; 500 into the others). Into a postgres collection that is new or empty
(or whose indexes an interrupted migrate left out), memctl loads with
defer_index=true: the first batch drops the collection's HNSW and term
indexes and memctl builds them once, after the last batch (memctl says so
on stderr); a failed build fails the migrate (exit 1) and a migrate run
again builds them. A --timeout given on the command line also bounds each
bulk batch and that build (bulk_timeout; without it the driver's default,
10 minutes). A target URL that sets defer_index or bulk_timeout keeps them:
defer_index=false loads with the indexes in place (a collection in use),
defer_index=true defers them whatever the collection holds.

An embedded source another process holds (a running agent) is read from a
snapshot of its records taken when the migrate starts, and its state as it
is then; run the migrate again once the agent is stopped to take what it
wrote meanwhile.

  memctl migrate --from ./.strata/data --to 'postgres://user@db/strata?collection=memories'`,
		Args: exactArgs(0, "no arguments (use --from and --to)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.batchSet, f.timeoutSet = cmd.Flags().Changed("batch"), cmd.Flags().Changed("timeout")
			return a.runMigrate(cmd.Context(), &f)
		},
	}
	f.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&f.from, "from", "", "source store (default: --store, $STRATA_STORE, the config file, ./.strata/data)")
	fs.StringVar(&f.to, "to", "", "target store (required)")
	fs.IntVar(&f.batch, "batch", 0, "records per write, at most 10000 (default 10000 into postgres, 500 into the others)")
	fs.StringVar(&f.fromState, "from-state", "", "the source's state store (default: <dir>/state, the postgres database, the config file's for the configured store)")
	fs.StringVar(&f.toState, "to-state", "", "the target's state store (default: <dir>/state, the postgres database)")
	f.registerState(fs, "move")
	return cmd
}

func (a *app) runMigrate(ctx context.Context, f *migrateFlags) (err error) {
	if f.to == "" {
		return usageErrorf("--to is required")
	}
	if f.batchSet && f.batch < 1 || f.batch < 0 || f.batch > vectorstore.MaxListLimit {
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
	src, err := a.openRef(ctx, fromRef, openReadOnly, nil, false)
	if err != nil {
		return err
	}
	defer src.Close()
	info := src.Info()
	spec := &createSpec{Dim: info.Dimension, Distance: info.Distance, Embedder: src.embID}
	dst, err := a.openRef(ctx, toRef, openCreate, spec, false)
	if err != nil {
		return err
	}
	// The drivers log their progress (pgvector: "building the indexes of
	// a deferred bulk load") through log/slog; memctl says it in its own
	// words on stderr and keeps only their warnings.
	prevLog := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(a.io.Err, &slog.HandlerOptions{Level: slog.LevelWarn})))
	defer slog.SetDefault(prevLog)
	var deferred bool
	if dst, deferred, err = a.bulkTarget(ctx, f, dst, spec); err != nil {
		return err
	}
	// The target is closed before the report: closing a deferred load
	// builds its indexes, and a build that fails fails the migrate.
	defer func() {
		if dst != nil {
			err = errors.Join(err, dst.Close())
		}
	}()
	total, err := src.coll.Count(ctx, flt)
	if err != nil {
		return err
	}
	srcState, dstState, err := a.migrateStates(ctx, f, src, dst, !flt.IsZero() || match != "")
	if err != nil {
		return err
	}
	defer srcState.close()
	defer dstState.close()
	bar := a.bar("migrate", int64(total), "records")
	defer bar.Clear()
	include := func(r *vectorstore.Record) bool { return matchText(r, match) }
	copts := environment.CopyOptions{Filter: flt, Include: include, Batch: f.batch, Progress: bar.Add}
	cr, err := environment.CopyRecords(ctx, src.coll, dst.coll, copts)
	if err != nil {
		return err
	}
	bar.Finish()
	res := copyResult{Source: cr.Source, Written: cr.Written, Skipped: cr.Skipped, Batch: f.batch, DeferredIndex: deferred}
	if res.Batch == 0 {
		res.Batch = environment.DefaultBatch(dst.coll)
	}
	var stateErr error
	if srcState != nil {
		sc, err := environment.CopyState(ctx, srcState.st, dstState.st, environment.StateCopyOptions{Include: f.include()})
		if err != nil {
			return fmt.Errorf("migrate the layer state from %s to %s: %w", srcState.name, dstState.name, err)
		}
		res.State = &stateResult{Keys: sc.Source, Assemblies: sc.Assemblies, Written: sc.Written, Skipped: sc.Skipped}
	}
	copts.Progress = nil
	res.Verified, res.Target, err = environment.VerifyCopy(ctx, src.coll, dst.coll, copts, environment.SameRecord)
	if err != nil {
		return err
	}
	if srcState != nil {
		stateErr = verifyState(ctx, srcState, dstState, f.include(), res.State)
		if stateErr != nil && !errors.Is(stateErr, ErrVerify) {
			return stateErr
		}
	}
	if deferred {
		fmt.Fprintf(a.io.Err, "memctl: migrate: building the indexes of %s (deferred during the load)\n", esc(dst.ref.String()))
	}
	what := fmt.Sprintf("migrated %s to %s", src.ref, dst.ref)
	cerr := dst.Close()
	dst = nil
	if cerr != nil {
		if deferred {
			return fmt.Errorf("migrate: the records are in %s, but building its indexes after the load failed (run the migrate again to build them): %w", toRef, cerr)
		}
		return fmt.Errorf("migrate: close %s: %w", toRef, cerr)
	}
	if err := a.report(res, what); err != nil {
		return err
	}
	if res.Verified != res.Source {
		return fmt.Errorf("%w: %d of %d source records are not in %s as they are in the source", ErrVerify, res.Source-res.Verified, res.Source, toRef)
	}
	return stateErr
}

// migrateStates opens the source's state store and, when it holds keys
// to move, the target's: nil, nil when no state moves (--no-state, a
// filter, no state store known for the source). A source with state and
// a target with no state store memctl knows of is refused before
// anything is written.
func (a *app) migrateStates(ctx context.Context, f *migrateFlags, src, dst *store, filtered bool) (*openedState, *openedState, error) {
	switch {
	case f.noState:
		return nil, nil, nil
	case filtered:
		fmt.Fprintln(a.io.Err, "memctl: migrate: the filters select records: no layer state moves (migrate without filters to move it)")
		return nil, nil, nil
	}
	from := f.fromState
	if from == "" && f.from == "" {
		from = a.stateLoc(src.ref) // the configured store's, config file included
	} else if from == "" {
		from = defaultStateLoc(src.ref)
	}
	srcState, err := a.stateOf(ctx, src, from, false)
	if err != nil {
		return nil, nil, fmt.Errorf("migrate: the source's layer state: %w", err)
	}
	if srcState == nil {
		fmt.Fprintf(a.io.Err, "memctl: migrate: %s keeps no layer state memctl knows of: records only (pass --from-state to move the state too)\n", esc(src.ref.String()))
		return nil, nil, nil
	}
	keys, err := environment.StateKeys(ctx, srcState.st)
	if err != nil {
		srcState.close()
		return nil, nil, fmt.Errorf("migrate: list the layer state in %s: %w", srcState.name, err)
	}
	if len(keys) == 0 {
		srcState.close()
		return nil, nil, nil
	}
	to := f.toState
	if to == "" {
		to = defaultStateLoc(dst.ref)
	}
	if to == "" {
		srcState.close()
		return nil, nil, usageErrorf("migrate: %s holds %s, and %s keeps no layer state: nothing migrated; "+
			"pass --to-state DIR|postgres://... to move it there, or --no-state to move the records only",
			srcState.name, plural(len(keys), "layer state value", "layer state values"), dst.ref)
	}
	dstState, err := a.stateOf(ctx, dst, to, true)
	if err != nil {
		srcState.close()
		return nil, nil, fmt.Errorf("migrate: the target's layer state: %w", err)
	}
	return srcState, dstState, nil
}
