package driver

import (
	"context"
	"math"
	"slices"
)

// Terms is a record's lexical document: each analysed term (a word after
// the writer's own analysis: case folding, stemming, stop words) with its
// weighted frequency. The store does not analyse text; it indexes the
// terms it is given, so that every backend ranks the same documents the
// same way. A writer may weigh words of other texts into a record's
// document (a message's neighbours at a lower weight, say): the document
// is whatever makes the record findable, not necessarily Record.Text.
//
// The document's length is the sum of the weights. Every weight is finite
// and > 0 (the portable layer checks).
type Terms map[string]float32

// Len is the document length: the sum of the weights.
func (t Terms) Len() float64 {
	// Summed in sorted order so that every backend, and every run, gets
	// the same bits.
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var n float64
	for _, k := range keys {
		n += float64(t[k])
	}
	return n
}

// TermQuery asks a TermSearcher for the BM25 ranking of a corpus.
//
// The corpus is the records that hold Terms and match the filter's
// Layer, Kind, Thread and Resource (Layer is always set; an empty field
// matches any value, as in every filter). Its statistics (document
// count, average length, each term's document frequency) are those of
// the whole corpus. The filter's other fields (IDs, Metadata, the time
// bounds) only narrow which of the corpus' records are returned: asking
// for the scores of a few known ids gives the same scores they have in
// the full ranking.
type TermQuery struct {
	// Terms are the query's terms with their weights (finite, > 0); at
	// least one.
	Terms map[string]float64
	// K is the maximum number of matches; always > 0.
	K      int
	Filter Filter
	// K1 (> 0, finite) and B (in [0, 1]) are the BM25 parameters.
	K1, B float64
	// WithVectors asks for Record.Vector to be filled.
	WithVectors bool
}

// TermResult is a TermSearcher's answer.
type TermResult struct {
	// Matches are the records holding at least one query term, best
	// first (Score descending, then ID; see CompareMatches), at most K.
	// Score is the BM25 score (see BM25), always > 0.
	Matches []Match
	// Docs is the number of documents in the corpus and AvgLen their
	// average length (0 for an empty corpus).
	Docs   int
	AvgLen float64
	// DocFreq holds, for every query term, the number of corpus
	// documents holding it (0 included).
	DocFreq map[string]int
}

// IDF is the inverse document frequency of a term that df of n documents
// hold: ln(1 + (n-df+0.5)/(df+0.5)), the always-positive form (a term in
// most documents still counts a little instead of penalising).
func (r TermResult) IDF(term string) float64 { return IDF(r.Docs, r.DocFreq[term]) }

// TermSearcher is implemented by drivers that index Record.Terms and rank
// them in the backend. The portable layer ranks the corpus in process
// for a driver without it (correct, but it reads the whole corpus).
type TermSearcher interface {
	SearchTerms(ctx context.Context, q TermQuery) (TermResult, error)
}

// IDF is the inverse document frequency of a term held by df of n
// documents: ln(1 + (n-df+0.5)/(df+0.5)).
func IDF(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// BM25 is the Okapi BM25 score of a document of length dl (average length
// avgdl) for a query: the sum over the query terms t the document holds,
// in sorted order of t, of
//
//	w(t) · IDF(t) · tf(t)·(k1+1) / (tf(t) + k1·(1 - b + b·dl/avgdl))
//
// where w is the query weight and tf the document's weight of t. An
// avgdl <= 0 counts as 1. Drivers that score in memory use it; it is the
// reference the conformance suite compares every backend against.
func BM25(q map[string]float64, doc Terms, dl, avgdl float64, idf func(term string) float64, k1, b float64) float64 {
	if avgdl <= 0 {
		avgdl = 1
	}
	keys := make([]string, 0, len(q))
	for t := range q {
		keys = append(keys, t)
	}
	slices.Sort(keys)
	norm := k1 * (1 - b + b*dl/avgdl)
	var s float64
	for _, t := range keys {
		tf := float64(doc[t])
		if tf <= 0 {
			continue
		}
		s += q[t] * idf(t) * tf * (k1 + 1) / (tf + norm)
	}
	return s
}

// RankTerms is the reference ranking of q over corpus, the records of the
// corpus q names (the caller selects them by the corpus fields; records
// without Terms are skipped here). keep narrows the returned records by
// the filter's other fields; nil keeps all. Drivers without an index of
// their own, and the portable fallback, use it.
func RankTerms(corpus []*Record, q TermQuery, keep func(*Record) bool) TermResult {
	res := TermResult{DocFreq: make(map[string]int, len(q.Terms))}
	for t := range q.Terms {
		res.DocFreq[t] = 0
	}
	var total float64
	lens := make([]float64, len(corpus))
	for i, r := range corpus {
		if len(r.Terms) == 0 {
			continue
		}
		res.Docs++
		lens[i] = r.Terms.Len()
		total += lens[i]
		for t := range q.Terms {
			if r.Terms[t] > 0 {
				res.DocFreq[t]++
			}
		}
	}
	if res.Docs == 0 {
		return res
	}
	res.AvgLen = total / float64(res.Docs)
	idf := res.IDF
	for i, r := range corpus {
		if len(r.Terms) == 0 || (keep != nil && !keep(r)) {
			continue
		}
		if s := BM25(q.Terms, r.Terms, lens[i], res.AvgLen, idf, q.K1, q.B); s > 0 {
			res.Matches = append(res.Matches, Match{Record: *r, Score: s})
		}
	}
	slices.SortFunc(res.Matches, func(a, b Match) int { return CompareMatches(&a, &b) })
	if len(res.Matches) > q.K {
		res.Matches = res.Matches[:q.K]
	}
	return res
}
