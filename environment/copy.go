package environment

import (
	"context"
	"math"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/pgvector"
)

// CopyOptions select and pace what CopyRecords copies.
type CopyOptions struct {
	// Filter and Include select the source records (Include nil: all
	// that match Filter).
	Filter  vectorstore.Filter
	Include func(*vectorstore.Record) bool
	// Batch is the number of records per write (and per read of the
	// target's copies); 0 means DefaultBatch(dst), more than
	// vectorstore.MaxListLimit means that many. The batch is held in
	// memory twice, the source's records and the target's copies of
	// them, vectors included: about 40 MB for 10,000 records of 512
	// dimensions.
	Batch int
	// Progress, when set, is told of every batch done (its size).
	Progress func(n int)
}

// Batch sizes of CopyRecords and VerifyCopy (CopyOptions.Batch).
const (
	// SmallBatch is the batch of a target without a bulk path: small
	// enough for any backend's request limits (a Qdrant request of 500
	// 512-d vectors is about 1 MB).
	SmallBatch = 500
	// BulkBatch is the batch of a pgvector target, whose Upsert loads a
	// batch of its copy threshold (1000 by default, URL copy_threshold)
	// or more with COPY instead of one INSERT: 10 times that, so the
	// per-batch costs (a transaction, a temporary table, the term
	// statistics merged once) are paid 10 times less, while a batch
	// stays a bounded amount of memory and one transaction of seconds.
	// It is vectorstore.MaxListLimit, the most ids one read of the
	// target's copies takes.
	BulkBatch = vectorstore.MaxListLimit
)

// DefaultBatch is the batch CopyRecords and VerifyCopy use for dst when
// CopyOptions.Batch is 0: BulkBatch for a pgvector collection, which has
// a bulk path, SmallBatch for the others.
func DefaultBatch(dst *vectorstore.Collection) int {
	if isPGVector(dst.Info()) {
		return BulkBatch
	}
	return SmallBatch
}

func batchSize(opts CopyOptions, dst *vectorstore.Collection) int {
	if opts.Batch > 0 {
		return min(opts.Batch, vectorstore.MaxListLimit)
	}
	return DefaultBatch(dst)
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
	var err error
	res.Source, err = inBatches(ctx, src, dst, opts, batchSize(opts, dst), func(batch []vectorstore.Record, have map[string]vectorstore.Record) error {
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
// records dst holds in all. It reads dst's copies opts.Batch ids at a
// time (see CopyOptions.Batch).
func VerifyCopy(ctx context.Context, src, dst *vectorstore.Collection, opts CopyOptions, same func(s, d *vectorstore.Record) bool) (verified, target int, err error) {
	if same == nil {
		same = SameRecord
	}
	_, err = inBatches(ctx, src, dst, opts, batchSize(opts, dst), func(batch []vectorstore.Record, have map[string]vectorstore.Record) error {
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

// isPGVector reports whether info is a pgvector collection's (its driver
// is named after its URL scheme, postgres).
func isPGVector(info vectorstore.Info) bool { return info.Driver == pgvector.Scheme }
