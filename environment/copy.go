package environment

import (
	"context"
	"math"

	"github.com/stratamem/strata/vectorstore"
)

// CopyOptions select and pace what CopyRecords copies.
type CopyOptions struct {
	// Filter and Include select the source records (Include nil: all
	// that match Filter).
	Filter  vectorstore.Filter
	Include func(*vectorstore.Record) bool
	// Batch is the number of records per write; 0 means 500.
	Batch int
	// Progress, when set, is told of every batch done (its size).
	Progress func(n int)
}

// CopyResult counts a copy: the source records selected, those written
// and those the target held already (SameRecord).
type CopyResult struct {
	Source, Written, Skipped int
}

// CopyRecords copies the selected records of src, vectors and times as
// they are, into dst, which must have the same dimension (and, for the
// vectors to mean the same, embedder and distance): a lossless move
// between backends. A record dst holds already (SameRecord) is not
// written again, so a copy that failed part-way is run again to finish.
// Check the result with VerifyCopy.
func CopyRecords(ctx context.Context, src, dst *vectorstore.Collection, opts CopyOptions) (CopyResult, error) {
	var res CopyResult
	size := opts.Batch
	if size <= 0 {
		size = 500
	}
	var err error
	res.Source, err = inBatches(ctx, src, dst, opts, size, func(batch []vectorstore.Record, have map[string]vectorstore.Record) error {
		var todo []vectorstore.Record
		for i := range batch {
			if h, ok := have[batch[i].ID]; ok && SameRecord(&batch[i], &h) {
				res.Skipped++
				continue
			}
			todo = append(todo, batch[i])
		}
		if err := dst.Upsert(ctx, todo...); err != nil {
			return err
		}
		res.Written += len(todo)
		if opts.Progress != nil {
			opts.Progress(len(batch))
		}
		return nil
	})
	return res, err
}

// VerifyCopy counts the selected records of src (opts.Filter and
// opts.Include) that dst holds as same says (nil: SameRecord), and the
// records dst holds in all.
func VerifyCopy(ctx context.Context, src, dst *vectorstore.Collection, opts CopyOptions, same func(s, d *vectorstore.Record) bool) (verified, target int, err error) {
	if same == nil {
		same = SameRecord
	}
	_, err = inBatches(ctx, src, dst, opts, 500, func(batch []vectorstore.Record, have map[string]vectorstore.Record) error {
		for i := range batch {
			if h, ok := have[batch[i].ID]; ok && same(&batch[i], &h) {
				verified++
			}
		}
		return nil
	})
	if err != nil {
		return verified, 0, err
	}
	target, err = dst.Count(ctx, vectorstore.Filter{})
	return verified, target, err
}

// inBatches reads the selected records of src (opts.Filter and
// opts.Include), vectors included, and calls fn with each batch of size
// of them (the last one smaller) and the records dst holds of their ids.
// It returns the number of records selected before it stopped.
func inBatches(ctx context.Context, src, dst *vectorstore.Collection, opts CopyOptions, size int,
	fn func(batch []vectorstore.Record, have map[string]vectorstore.Record) error) (selected int, err error) {
	var batch []vectorstore.Record
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		have, err := RecordsByID(ctx, dst, idsOf(batch), true)
		if err != nil {
			return err
		}
		if err := fn(batch, have); err != nil {
			return err
		}
		batch = batch[:0]
		return nil
	}
	for r, err := range src.All(ctx, vectorstore.ListOptions{Filter: opts.Filter, Limit: 1000, WithVectors: true}) {
		if err != nil {
			return selected, err
		}
		if opts.Include != nil && !opts.Include(&r) {
			continue
		}
		selected++
		batch = append(batch, r)
		if len(batch) >= size {
			if err := flush(); err != nil {
				return selected, err
			}
		}
	}
	return selected, flush()
}

// SameRecord compares two records field by field, vectors within float32
// rounding (a backend may store a unit vector renormalised in its last
// bit).
func SameRecord(x, y *vectorstore.Record) bool {
	return SameContent(x, y) && len(x.Vector) == len(y.Vector) && vectorsClose(x.Vector, y.Vector)
}

// SameContent reports whether two records agree on everything but the
// vector (and the revision, the version counter of their store).
func SameContent(x, y *vectorstore.Record) bool {
	if x.ID != y.ID || x.Layer != y.Layer || x.Kind != y.Kind || x.Scope != y.Scope || x.Text != y.Text ||
		!x.CreatedAt.Equal(y.CreatedAt) || !x.ValidFrom.Equal(y.ValidFrom) || !x.ValidTo.Equal(y.ValidTo) ||
		len(x.Metadata) != len(y.Metadata) {
		return false
	}
	for k, v := range x.Metadata {
		if w, ok := y.Metadata[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func vectorsClose(x, y []float32) bool {
	for i := range x {
		if x[i] != y[i] && math.Abs(float64(x[i])-float64(y[i])) > 1e-6 {
			return false
		}
	}
	return true
}

func idsOf(recs []vectorstore.Record) []string {
	ids := make([]string, len(recs))
	for i := range recs {
		ids[i] = recs[i].ID
	}
	return ids
}
