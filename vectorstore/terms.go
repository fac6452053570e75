package vectorstore

import (
	"context"
	"math"
	"slices"
	"strconv"

	"github.com/stratamem/strata/vectorstore/driver"
)

// Terms is a record's lexical document (analysed term -> weighted
// frequency); see driver.Terms.
type Terms = driver.Terms

// TermResult is the answer of SearchTerms; see driver.TermResult.
type TermResult = driver.TermResult

// TermOptions configure SearchTerms.
type TermOptions struct {
	// Terms are the query's analysed terms with their weights (finite,
	// > 0); at least one, at most MaxTerms.
	Terms map[string]float64
	// K is the maximum number of matches, 1..MaxK.
	K int
	// Filter names the corpus by Layer (required), Kind, Thread and
	// Resource, and narrows the matches by its other fields; see
	// driver.TermQuery for how statistics and candidates differ.
	Filter Filter
	// K1 is BM25's term-frequency saturation; 0 means 1.2.
	K1 float64
	// B is BM25's length normalisation in [0, 1]; 0 means 0.75 (there is
	// no way to ask for 0 here: a writer that wants no length
	// normalisation gives every document the same length).
	B float64
	// WithVectors fills Record.Vector in the matches.
	WithVectors bool
}

// SearchTerms ranks the records of a corpus by Okapi BM25 over their
// Terms, best first: Score descending, ties broken by ascending ID. The
// store does no text analysis: the query's terms must come from the same
// analysis as the documents' (memory/lexical's analyzer, for strata's
// layers). A driver that implements driver.TermSearcher ranks in the
// backend (chromem, pgvector); for any other the corpus is read and
// ranked in process, which is correct but costs the corpus' size.
func (c *Collection) SearchTerms(ctx context.Context, opts TermOptions) (TermResult, error) {
	const op = "search_terms"
	if err := c.enter(op); err != nil {
		return TermResult{}, err
	}
	defer c.leave()
	q, err := c.prepareTermQuery(op, opts)
	if err != nil {
		return TermResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return TermResult{}, wrap(op, err)
	}
	var res TermResult
	if ts, ok := c.drv.(driver.TermSearcher); ok {
		res, err = ts.SearchTerms(ctx, q)
	} else {
		res, err = c.rankInProcess(ctx, q)
	}
	if err != nil {
		return TermResult{}, wrap(op, err)
	}
	slices.SortStableFunc(res.Matches, func(a, b Match) int { return driver.CompareMatches(&a, &b) })
	if len(res.Matches) > q.K {
		res.Matches = res.Matches[:q.K]
	}
	for i := range res.Matches {
		res.Matches[i].Record.Terms = nil
		if !opts.WithVectors {
			res.Matches[i].Record.Vector = nil
		}
	}
	if res.DocFreq == nil {
		res.DocFreq = map[string]int{}
	}
	for t := range q.Terms {
		if _, ok := res.DocFreq[t]; !ok {
			res.DocFreq[t] = 0
		}
	}
	return res, nil
}

func (c *Collection) prepareTermQuery(op string, opts TermOptions) (driver.TermQuery, error) {
	if opts.K <= 0 || opts.K > MaxK {
		return driver.TermQuery{}, &Error{Code: CodeInvalidArgument, Op: op, Field: "k", Msg: "k must be in 1.." + strconv.Itoa(MaxK) + ", got " + strconv.Itoa(opts.K)}
	}
	if len(opts.Terms) == 0 || len(opts.Terms) > MaxTerms {
		return driver.TermQuery{}, &Error{Code: CodeInvalidArgument, Op: op, Field: "terms", Msg: "want 1.." + strconv.Itoa(MaxTerms) + " terms, got " + strconv.Itoa(len(opts.Terms))}
	}
	terms := make(map[string]float64, len(opts.Terms))
	for t, w := range opts.Terms {
		if err := checkTerm(op, "", "terms", t, CodeInvalidArgument); err != nil {
			return driver.TermQuery{}, err
		}
		if !(w > 0) || math.IsInf(w, 0) {
			return driver.TermQuery{}, &Error{Code: CodeInvalidArgument, Op: op, Field: "terms." + t, Msg: "weight must be finite and > 0, got " + strconv.FormatFloat(w, 'g', -1, 64)}
		}
		terms[t] = w
	}
	k1, b := opts.K1, opts.B
	if k1 == 0 {
		k1 = 1.2
	}
	if b == 0 {
		b = 0.75
	}
	if !(k1 > 0) || math.IsInf(k1, 0) {
		return driver.TermQuery{}, &Error{Code: CodeInvalidArgument, Op: op, Field: "k1", Msg: "k1 must be finite and > 0, got " + strconv.FormatFloat(opts.K1, 'g', -1, 64)}
	}
	if !(b >= 0 && b <= 1) {
		return driver.TermQuery{}, &Error{Code: CodeInvalidArgument, Op: op, Field: "b", Msg: "b must be in [0, 1], got " + strconv.FormatFloat(opts.B, 'g', -1, 64)}
	}
	f, err := c.prepareFilter(op, opts.Filter)
	if err != nil {
		return driver.TermQuery{}, err
	}
	if f.Layer == "" {
		return driver.TermQuery{}, &Error{Code: CodeInvalidFilter, Op: op, Field: "layer", Msg: "a term search names the layer whose documents it ranks"}
	}
	return driver.TermQuery{Terms: terms, K: opts.K, Filter: f, K1: k1, B: b, WithVectors: opts.WithVectors}, nil
}

// rankInProcess is SearchTerms for a driver without a term index: it
// reads the corpus and ranks it with the reference scorer.
func (c *Collection) rankInProcess(ctx context.Context, q driver.TermQuery) (TermResult, error) {
	corpus := driver.Filter{Layer: q.Filter.Layer, Kind: q.Filter.Kind, Thread: q.Filter.Thread, Resource: q.Filter.Resource}
	var recs []*driver.Record
	var after *driver.Cursor
	for {
		page, err := c.drv.List(ctx, driver.ListQuery{Filter: corpus, Limit: MaxListLimit, After: after, WithVectors: q.WithVectors})
		if err != nil {
			return TermResult{}, err
		}
		for i := range page {
			recs = append(recs, &page[i])
		}
		if len(page) < MaxListLimit {
			break
		}
		last := page[len(page)-1]
		after = &driver.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	return driver.RankTerms(recs, q, q.Filter.Matches), nil
}
