// Package driverutil holds what the network drivers under vectorstore/
// (pgvector, qdrant) share: the As of a driver that records its embedder,
// the top K of a query widened until ties are settled, and server version
// checks.
package driverutil

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

// As implements driver.Aser for a driver collection that hands out its
// client, native, as a *T, and its embedder methods, rec, as a
// vectorstore.EmbedderRecorder: it sets the value target points to and
// reports whether target is one of those.
func As[T any](target any, native T, rec vectorstore.EmbedderRecorder) bool {
	switch t := target.(type) {
	case *T:
		*t = native
		return true
	case *vectorstore.EmbedderRecorder:
		*t = embedderRecorder{rec}
		return true
	}
	return false
}

// embedderRecorder is what As hands out as a vectorstore.EmbedderRecorder:
// the embedder methods only, not the driver collection.
type embedderRecorder struct{ r vectorstore.EmbedderRecorder }

func (e embedderRecorder) EmbedderRecord(ctx context.Context) (string, int, error) {
	return e.r.EmbedderRecord(ctx)
}

func (e embedderRecorder) RecordEmbedder(ctx context.Context, model string, dim int) (string, int, error) {
	return e.r.RecordEmbedder(ctx, model, dim)
}

// TopK sorts ms, the candidates a server returned for a query of the k
// nearest, best first (driver.CompareMatches), and returns the first k of
// them and true when they are the answer: when all the server's candidates
// were returned (all), or when the k-th scores strictly better than the
// last, so that no candidate left unseen could tie it. Otherwise the
// caller asks for more candidates.
func TopK(ms []driver.Match, k int, all bool) ([]driver.Match, bool) {
	slices.SortFunc(ms, func(a, b driver.Match) int { return driver.CompareMatches(&a, &b) })
	if all || ms[k-1].Score > ms[len(ms)-1].Score {
		if len(ms) > k {
			ms = ms[:k]
		}
		return ms, true
	}
	return ms, false
}

// VersionAtLeast reports whether a version "major.minor[.patch...]" is at
// least major.minor; an unparsable version is not. Anything after the
// minor number's digits ("1.17-dev") is ignored.
func VersionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
