package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
)

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
	// Batch is the records per write (migrate); DeferredIndex says the
	// target's indexes were built once after the load (migrate into an
	// empty postgres collection).
	Batch         int  `json:"batch,omitempty"`
	DeferredIndex bool `json:"deferred_index,omitempty"`
	// State is what moved of the layer state (migrate), nil when none did.
	State *stateResult `json:"state,omitempty"`

	extraIDs []string // the first few, for the message
}

func (a *app) report(r copyResult, what string) error {
	if a.flags.json {
		return writeJSON(a.io.Out, r)
	}
	fmt.Fprintf(a.io.Out, "%s: %d records, %d written, %d already there, verified %d/%d (target holds %d)\n",
		esc(what), r.Source, r.Written, r.Skipped, r.Verified, r.Source, r.Target)
	if s := r.State; s != nil {
		fmt.Fprintf(a.io.Out, "layer state: %d values (%d recorded assemblies), %d written, %d already there, verified %d/%d\n",
			s.Keys, s.Assemblies, s.Written, s.Skipped, s.Verified, s.Keys)
	}
	return nil
}

// sameContent reports whether two records agree on everything but the
// vector (and, when model is not "", the semantic "embedding" marker,
// expected to name model in d).
func sameContent(s, d *vectorstore.Record, model string) bool {
	if _, ok := s.Metadata[semantic.MetaEmbedding]; ok && model != "" {
		c := *s
		c.Metadata = maps.Clone(s.Metadata)
		c.Metadata[semantic.MetaEmbedding] = model
		s = &c
	}
	return environment.SameContent(s, d)
}

// idsOf lists the ids of recs.
func idsOf(recs []vectorstore.Record) []string {
	ids := make([]string, len(recs))
	for i := range recs {
		ids[i] = recs[i].ID
	}
	return ids
}

// verifyCopy checks that every source record (matching flt and include)
// is in dst as same says, and counts dst.
func verifyCopy(ctx context.Context, src, dst *vectorstore.Collection, flt vectorstore.Filter, include func(*vectorstore.Record) bool,
	res *copyResult, same func(s, d *vectorstore.Record) bool) (err error) {
	res.Verified, res.Target, err = environment.VerifyCopy(ctx, src, dst, environment.CopyOptions{Filter: flt, Include: include}, same)
	return err
}

// recordsEqual compares two records field by field, vectors included.
func recordsEqual(x, y *vectorstore.Record) bool {
	return environment.SameContent(x, y) && slices.Equal(x.Vector, y.Vector)
}
