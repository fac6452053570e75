package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/cmd/memctl/internal/progress"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/exportfmt"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

type importFlags struct {
	stateFlags
	keepGoing, lastWins bool
	batch               int
}

func (a *app) importCmd() *cobra.Command {
	var f importFlags
	cmd := &cobra.Command{
		Use:   "import [FILE|-]",
		Short: "Read memories and layer state from JSON Lines (idempotent)",
		Long: `Read memories written by memctl export (or by hand, one record per line) from
FILE or stdin and upsert them by id, and the layer state lines into the
store's state store (the one inspect reads: --state, the config file's
"state", <dir>/state of an embedded directory, the database of a postgres
store), each value byte for byte. Re-running an import changes nothing: a
record or state value the store holds already as the input has it is left
as it is (a cosine store keeps its vectors at unit length: an input vector
is compared after the same normalisation). An input with state lines for a
store that has no state store memctl knows of (qdrant, bare chromem) is
refused before anything is written: pass --state, or --no-state to import
the records only. --no-assemblies leaves out the recorded assemblies.

A store that does not exist yet is created with the header's embedder,
dimension and distance (an embedded directory is always created with
distance cosine). A header whose dimension, distance or embedder differs
from the store's stops the import before anything is written (exit status
1): a cosine collection stores vectors normalised, so dot or euclidean
vectors imported into it would change. Records without a vector are
embedded with the store's embedder (export --no-vectors writes no distance
in its header).

A line that does not parse or is refused by the store is reported with its
line number and nothing of it is imported; by default the import stops
there (the lines before it are imported), with --keep-going it goes on and
reports every bad line, and exits 1 at the end.

One id (or state key) on two lines is refused before anything is written
(exit status 1, naming the id and both lines): a later line would otherwise
silently replace the earlier one. --last-wins imports it anyway, the last
line of each id winning. (The input is read twice; stdin is kept in a
temporary file for the second reading.)`,
		Args: rangeArgs(0, 1, "at most one FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runImport(cmd.Context(), fileArg(args), &f)
		},
	}
	cmd.Flags().BoolVar(&f.keepGoing, "keep-going", false, "skip bad lines and go on (default: stop at the first)")
	cmd.Flags().BoolVar(&f.lastWins, "last-wins", false, "let a later line of an id replace an earlier one (default: refuse duplicate ids, import nothing)")
	cmd.Flags().IntVar(&f.batch, "batch", 500, "records per write")
	f.registerState(cmd.Flags(), "import")
	return cmd
}

// importStats counts what an import did.
type importStats struct {
	Added     int `json:"added"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	BadLines  int `json:"bad_lines"`
	Embedded  int `json:"embedded"`
	// The state lines: written new, replaced, left as they were, and
	// left out (--no-state, --no-assemblies).
	StateAdded     int `json:"state_added"`
	StateUpdated   int `json:"state_updated"`
	StateUnchanged int `json:"state_unchanged"`
	StateSkipped   int `json:"state_skipped,omitempty"`
}

func (a *app) runImport(ctx context.Context, path string, f *importFlags) error {
	if f.batch < 1 || f.batch > vectorstore.MaxListLimit {
		return usageErrorf("--batch must be in 1..%d", vectorstore.MaxListLimit)
	}
	in := a.io.In
	var size int64
	if path != "-" {
		file, err := os.Open(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return notFoundf("import: no file %s", path)
			}
			return fmt.Errorf("import: %w", err)
		}
		defer file.Close()
		if fi, err := file.Stat(); err == nil {
			size = fi.Size()
		}
		in = file
	}
	// Read the input once before writing anything: to refuse one id on
	// two lines, and to know whether it holds layer state.
	in, size, done, sum, err := prescan(in, size, !f.lastWins)
	if err != nil {
		return err
	}
	defer done()
	rd := exportfmt.NewReader(in)
	im := &importer{a: a, keepGoing: f.keepGoing, batch: f.batch, include: f.include(), noState: f.noState}
	// The first line decides how a missing store is created.
	first, ferr := rd.Next()
	if errors.Is(ferr, io.EOF) {
		fmt.Fprintln(a.io.Err, "import: empty input, nothing imported")
		return nil
	}
	if ferr != nil && !errors.As(ferr, new(*exportfmt.LineError)) {
		return fmt.Errorf("import: %w", ferr)
	}
	cs := &createSpec{}
	switch {
	case ferr == nil && first.Header != nil:
		cs.Dim, cs.Embedder = first.Header.Dimension, first.Header.Embedder
		if first.Header.Distance != "" {
			d, err := vectorstore.ParseDistance(first.Header.Distance)
			if err != nil {
				return fmt.Errorf("import: line %d: %w", first.Line, err)
			}
			cs.Distance = d
		}
	case ferr == nil && len(first.Record.Vector) > 0:
		cs.Dim = len(first.Record.Vector)
	}
	s, err := a.openStore(ctx, openCreate, cs)
	if err != nil {
		return err
	}
	defer s.Close()
	im.s = s
	if sum.States > 0 && !f.noState {
		if im.state, err = a.stateOf(ctx, s, a.stateLoc(s.ref), true); err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer im.state.close()
		if im.state == nil {
			return usageErrorf("import: the input holds %s, and memctl knows no state store of %s: nothing imported; "+
				"pass --state DIR|postgres://... to import it, or --no-state to import the records only",
				plural(sum.States, "layer state value", "layer state values"), s.ref)
		}
	}
	im.bar = a.bar("import", size, "bytes")
	if path == "-" {
		im.bar = a.bar("import", 0, "records")
	}
	im.rd = rd
	switch {
	case ferr != nil:
		if err := im.badLine(ctx, ferr); err != nil {
			return err
		}
	case first.Record != nil:
		if err := im.add(ctx, first.Line, first.Record); err != nil {
			return err
		}
	case first.State != nil:
		if err := im.putState(ctx, first.State); err != nil {
			return err
		}
	}
	for {
		it, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if !errors.As(err, new(*exportfmt.LineError)) {
				im.bar.Clear()
				return fmt.Errorf("import: %w", err)
			}
			if err := im.badLine(ctx, err); err != nil {
				return err
			}
			continue
		}
		switch {
		case it.Header != nil:
		case it.State != nil:
			if err := im.putState(ctx, it.State); err != nil {
				return err
			}
		default:
			if err := im.add(ctx, it.Line, it.Record); err != nil {
				return err
			}
		}
	}
	if err := im.flush(ctx); err != nil {
		return err
	}
	im.bar.Finish()
	st := im.stats
	if a.flags.json {
		if err := writeJSON(a.io.Out, st); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.io.Out, "imported into %s: %d added, %d updated, %d unchanged", esc(s.ref.String()), st.Added, st.Updated, st.Unchanged)
		if st.Embedded > 0 {
			fmt.Fprintf(a.io.Out, ", %d embedded", st.Embedded)
		}
		if st.BadLines > 0 {
			fmt.Fprintf(a.io.Out, ", %d bad lines skipped", st.BadLines)
		}
		if n := st.StateAdded + st.StateUpdated + st.StateUnchanged; n > 0 {
			fmt.Fprintf(a.io.Out, "; layer state in %s: %d added, %d updated, %d unchanged", esc(im.state.name), st.StateAdded, st.StateUpdated, st.StateUnchanged)
		}
		if st.StateSkipped > 0 {
			fmt.Fprintf(a.io.Out, "; %d state values left out", st.StateSkipped)
		}
		fmt.Fprintln(a.io.Out)
	}
	if st.BadLines > 0 {
		return fmt.Errorf("%w: %d line(s) were not imported (reported above)", ErrBadLines, st.BadLines)
	}
	return nil
}

// prescan reads the whole input and, when dups is set, refuses it when
// one id (or state key) is on two lines (lines that do not parse are the
// import's to report). It returns the input to import, read again from
// the start: the file rewound, or stdin kept in a temporary file (removed
// by done), and what the input holds.
func prescan(in io.Reader, size int64, dups bool) (io.Reader, int64, func(), exportfmt.Summary, error) {
	var spool *os.File
	src := in
	file, seekable := in.(*os.File)
	if seekable {
		// A pipe or terminal cannot be read again.
		_, err := file.Seek(0, io.SeekCurrent)
		seekable = err == nil
	}
	var sum exportfmt.Summary
	if !seekable {
		var err error
		if spool, err = os.CreateTemp("", "memctl-import-*.jsonl"); err != nil {
			return nil, 0, nil, sum, fmt.Errorf("import: %w", err)
		}
		// Unlinked at once where the system allows it: the open file is
		// then the only reference.
		_ = os.Remove(spool.Name())
		src = io.TeeReader(in, spool)
	}
	fail := func(err error) (io.Reader, int64, func(), exportfmt.Summary, error) {
		if spool != nil {
			_ = spool.Close()
			_ = os.Remove(spool.Name())
		}
		return nil, 0, nil, sum, err
	}
	sum, err := exportfmt.Scan(src, func(id string) bool { return checkID(id) != nil })
	if err != nil {
		return fail(fmt.Errorf("import: %w", err))
	}
	if dups && len(sum.Duplicates) > 0 {
		d := sum.Duplicates
		more := ""
		if n := len(d) - 1 + len(sum.DuplicateStates); n > 0 {
			more = fmt.Sprintf(" (and %s)", plural(n, "more id", "more ids"))
		}
		return fail(fmt.Errorf("import: %w %q on line %d and on line %d%s: nothing imported (pass --last-wins to let the last line of each id win)",
			ErrDuplicateID, d[0].ID, d[0].Lines[0], d[0].Lines[1], more))
	}
	if dups && len(sum.DuplicateStates) > 0 {
		d := sum.DuplicateStates
		more := ""
		if len(d) > 1 {
			more = fmt.Sprintf(" (and %s)", plural(len(d)-1, "more key", "more keys"))
		}
		return fail(fmt.Errorf("import: %w: state key %s on line %d and on line %d%s: nothing imported (pass --last-wins to let the last line of each key win)",
			ErrDuplicateID, d[0].Key.Key(), d[0].Lines[0], d[0].Lines[1], more))
	}
	if spool != nil {
		if _, err := spool.Seek(0, io.SeekStart); err != nil {
			return fail(fmt.Errorf("import: %w", err))
		}
		fi, err := spool.Stat()
		if err != nil {
			return fail(fmt.Errorf("import: %w", err))
		}
		return spool, fi.Size(), func() { _ = spool.Close(); _ = os.Remove(spool.Name()) }, sum, nil
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return nil, 0, nil, sum, fmt.Errorf("import: %w", err)
	}
	return file, size, func() {}, sum, nil
}

// stored reports whether the store's record old is r as the store would
// keep it: a cosine collection keeps its vectors at unit length, so an
// input vector that is not (an export of another backend, a hand-made
// file) is compared after the collection's normalisation, within float32
// rounding, or every re-import would count it updated.
func (im *importer) stored(old, r *vectorstore.Record) bool {
	if len(r.Vector) == 0 || im.s.coll.Info().Distance != vectorstore.Cosine {
		return recordsEqual(old, r)
	}
	c := *r
	c.Vector = unitVector(r.Vector)
	return environment.SameRecord(old, &c)
}

// unitVector is v scaled to unit length as a cosine collection scales it
// (the norm in float64); v itself when it has no length.
func unitVector(v []float32) []float32 {
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return v
	}
	n := math.Sqrt(norm)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}

// importer batches records and writes them idempotently.
type importer struct {
	a         *app
	s         *store
	rd        *exportfmt.Reader
	bar       *progress.Bar
	keepGoing bool
	batch     int
	pending   []pendingRec
	stats     importStats
	// state is the state store the state lines go to (nil: none); include
	// and noState select them.
	state   *openedState
	include func(storage.Key) bool
	noState bool
}

// putState writes one state line's value, byte for byte, unless the flags
// leave it out.
func (im *importer) putState(ctx context.Context, st *exportfmt.State) error {
	k := st.Key.Key()
	if im.noState || im.state == nil || im.include != nil && !im.include(k) {
		im.stats.StateSkipped++
		return nil
	}
	act, err := environment.PutState(ctx, im.state.st, k, st.Value)
	if err != nil {
		im.bar.Clear()
		return fmt.Errorf("import: state %s into %s: %w", k, im.state.name, err)
	}
	switch act {
	case environment.StateAdded:
		im.stats.StateAdded++
	case environment.StateUpdated:
		im.stats.StateUpdated++
	default:
		im.stats.StateUnchanged++
	}
	return nil
}

type pendingRec struct {
	line int
	rec  vectorstore.Record
}

// bad reports a bad line: stop, or count it and go on.
func (im *importer) bad(err error) error {
	im.bar.Clear()
	im.stats.BadLines++
	if !im.keepGoing {
		done := im.stats.Added + im.stats.Updated + im.stats.Unchanged
		return fmt.Errorf("import: %v; stopped, nothing imported from that line on (%d record(s) before it were; --keep-going skips bad lines)", err, done)
	}
	fmt.Fprintf(im.a.io.Err, "memctl: import: %s\n", esc(oneLine(err.Error())))
	return nil
}

// badLine reports a line the reader refused: in stop mode the records
// read before it are written first.
func (im *importer) badLine(ctx context.Context, err error) error {
	if !im.keepGoing {
		if ferr := im.flush(ctx); ferr != nil {
			return ferr
		}
	}
	return im.bad(err)
}

func (im *importer) add(ctx context.Context, line int, r *vectorstore.Record) error {
	if err := checkID(r.ID); err != nil {
		return im.badLine(ctx, &exportfmt.LineError{Line: line, Msg: Message(err)})
	}
	im.pending = append(im.pending, pendingRec{line: line, rec: *r})
	if len(im.pending) >= im.batch {
		return im.flush(ctx)
	}
	return nil
}

// flush writes the pending records. Records equal to the stored ones are
// skipped, a record without created_at keeps the stored one (so re-running
// changes nothing), a record without a vector reuses the stored vector
// when the text is unchanged and is embedded otherwise. A record the store
// refuses is reported by line and left out; the rest are written.
func (im *importer) flush(ctx context.Context) error {
	if im.rd != nil {
		im.bar.Set(im.rd.Bytes)
	}
	batch := im.pending
	im.pending = nil
	if len(batch) == 0 {
		return nil
	}
	// Within a batch a repeated id keeps its last line, as Upsert does.
	last := map[string]int{}
	for i, p := range batch {
		last[p.rec.ID] = i
	}
	ids := make([]string, 0, len(last))
	for id := range last {
		ids = append(ids, id)
	}
	existing := map[string]vectorstore.Record{}
	recs, _, err := im.s.coll.List(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{IDs: ids}, Limit: len(ids), WithVectors: true})
	if err != nil {
		var ve *vectorstore.Error
		if !errors.As(err, &ve) || ve.Code != vectorstore.CodeInvalidFilter {
			return err
		}
		// An id no store can hold: found line by line below.
	}
	for _, r := range recs {
		existing[r.ID] = r
	}
	var toEmbed []int
	var write []pendingRec
	for i, p := range batch {
		if last[p.rec.ID] != i {
			continue
		}
		r := &batch[i].rec
		old, found := existing[r.ID]
		if found && r.CreatedAt.IsZero() {
			r.CreatedAt = old.CreatedAt
		}
		if len(r.Vector) == 0 {
			if found && old.Text == r.Text {
				r.Vector = old.Vector
			} else {
				toEmbed = append(toEmbed, len(write))
			}
		}
		if found && im.stored(&old, r) {
			im.stats.Unchanged++
			continue
		}
		write = append(write, batch[i])
	}
	if len(toEmbed) > 0 {
		emb, err := im.s.embedder(ctx)
		if err != nil {
			return fmt.Errorf("import: line %d has no vector and: %w", write[toEmbed[0]].line, err)
		}
		texts := make([]string, len(toEmbed))
		for j, k := range toEmbed {
			texts[j] = write[k].rec.Text
		}
		vs, err := emb.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("import: embed records without vectors (lines %d..): %w", write[toEmbed[0]].line, err)
		}
		for j, k := range toEmbed {
			write[k].rec.Vector = vs[j]
		}
		im.stats.Embedded += len(toEmbed)
	}
	for len(write) > 0 {
		recs := make([]vectorstore.Record, len(write))
		for i := range write {
			recs[i] = write[i].rec
		}
		err := im.s.coll.Upsert(ctx, recs...)
		if err == nil {
			for _, p := range write {
				if _, found := existing[p.rec.ID]; found {
					im.stats.Updated++
				} else {
					im.stats.Added++
				}
			}
			return nil
		}
		var ve *vectorstore.Error
		if !errors.As(err, &ve) || ve.ID == "" && ve.Field != "id" {
			return fmt.Errorf("import: %w", err)
		}
		// Find the refused record's line; Upsert wrote nothing, so write
		// the records before it (in stop mode) or all the others.
		bad := -1
		for i := range write {
			if write[i].rec.ID == ve.ID {
				bad = i
				break
			}
		}
		if bad < 0 {
			return fmt.Errorf("import: %w", err)
		}
		lerr := &exportfmt.LineError{Line: write[bad].line, Msg: err.Error()}
		if !im.keepGoing {
			im.pending = nil
			before := write[:bad]
			write = nil
			if len(before) > 0 {
				im.pending = before
				if ferr := im.flush(ctx); ferr != nil {
					return ferr
				}
			}
			return im.bad(lerr)
		}
		if berr := im.bad(lerr); berr != nil {
			return berr
		}
		write = append(write[:bad:bad], write[bad+1:]...)
	}
	return nil
}
