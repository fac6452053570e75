package lexical

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Field is one weighted part of a document. A document made of the
// message itself at weight 1 and its neighbours at a lower weight lets a
// query match a turn through the context that explains it, without the
// neighbours outranking the turn they describe.
type Field struct {
	Text   string
	Weight float64
}

// Options configure an Index. The zero value is Okapi BM25 with k1 = 1.2,
// b = 0.75 and the default analyzer.
type Options struct {
	// K1 is the term-frequency saturation; zero means 1.2.
	K1 float64
	// B is the length normalisation in [0, 1]; zero means 0.75 (use
	// NoLengthNorm for 0).
	B float64
	// NoLengthNorm sets B to 0.
	NoLengthNorm bool
	// Analyzer turns text into terms; nil means DefaultAnalyzer().
	Analyzer *Analyzer
}

// ErrInvalidOptions is wrapped by New's errors.
var ErrInvalidOptions = errors.New("lexical: invalid options")

// Index is an in-memory BM25 index over documents made of weighted
// fields. It is safe for concurrent use. Scores and result order are
// deterministic: the same documents and query give the same hits in the
// same order, ties broken by ascending ID.
type Index struct {
	k1, b float64
	an    *Analyzer

	mu       sync.RWMutex
	ids      map[string]int32 // id -> slot
	docs     []doc            // by slot; a free slot has id ""
	free     []int32
	postings map[string]map[int32]float64 // term -> slot -> weighted tf
	totalLen float64
	n        int
}

type doc struct {
	id    string
	len   float64
	terms []string // distinct terms, to remove the postings
}

// New returns an empty index.
func New(opts Options) (*Index, error) {
	ix := &Index{k1: opts.K1, b: opts.B, an: opts.Analyzer,
		ids: map[string]int32{}, postings: map[string]map[int32]float64{}}
	if ix.k1 == 0 {
		ix.k1 = 1.2
	}
	if ix.b == 0 {
		ix.b = 0.75
	}
	if opts.NoLengthNorm {
		ix.b = 0
	}
	if ix.an == nil {
		ix.an = DefaultAnalyzer()
	}
	switch {
	case math.IsNaN(ix.k1) || ix.k1 < 0 || math.IsInf(ix.k1, 0):
		return nil, fmt.Errorf("%w: K1 must be a finite non-negative number, got %v", ErrInvalidOptions, opts.K1)
	case math.IsNaN(ix.b) || ix.b < 0 || ix.b > 1:
		return nil, fmt.Errorf("%w: B must be in [0, 1], got %v", ErrInvalidOptions, opts.B)
	}
	return ix, nil
}

// Analyzer returns the index's analyzer.
func (ix *Index) Analyzer() *Analyzer { return ix.an }

// Len is the number of documents.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.n
}

// Has reports whether a document with id is indexed.
func (ix *Index) Has(id string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	_, ok := ix.ids[id]
	return ok
}

// Put indexes the document id, replacing any previous version. Fields
// with a weight <= 0 (or NaN) are ignored. A document with no terms is
// still counted (it can never match).
func (ix *Index) Put(id string, fields ...Field) {
	tf := map[string]float64{}
	var length float64
	for _, f := range fields {
		if !(f.Weight > 0) || math.IsInf(f.Weight, 0) {
			continue
		}
		ix.an.each(f.Text, func(t string) {
			tf[t] += f.Weight
			length += f.Weight
		})
	}
	terms := make([]string, 0, len(tf))
	for t := range tf {
		terms = append(terms, t)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.removeLocked(id)
	var slot int32
	if n := len(ix.free); n > 0 {
		slot = ix.free[n-1]
		ix.free = ix.free[:n-1]
	} else {
		slot = int32(len(ix.docs))
		ix.docs = append(ix.docs, doc{})
	}
	ix.docs[slot] = doc{id: id, len: length, terms: terms}
	ix.ids[id] = slot
	for t, w := range tf {
		p := ix.postings[t]
		if p == nil {
			p = map[int32]float64{}
			ix.postings[t] = p
		}
		p[slot] = w
	}
	ix.totalLen += length
	ix.n++
}

// Delete removes the document id and reports whether it was indexed.
func (ix *Index) Delete(id string) bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.removeLocked(id)
}

func (ix *Index) removeLocked(id string) bool {
	slot, ok := ix.ids[id]
	if !ok {
		return false
	}
	d := ix.docs[slot]
	for _, t := range d.terms {
		p := ix.postings[t]
		delete(p, slot)
		if len(p) == 0 {
			delete(ix.postings, t)
		}
	}
	ix.totalLen -= d.len
	ix.n--
	if ix.n == 0 {
		ix.totalLen = 0 // no drift from float rounding
	}
	delete(ix.ids, id)
	ix.docs[slot] = doc{}
	ix.free = append(ix.free, slot)
	return true
}

// Query is an analyzed query: a weight per term. Build one with
// Analyzer.Query, combine with Add.
type Query map[string]float64

// Query analyzes text into a query where each occurrence of a term adds
// 1 to its weight.
func (a *Analyzer) Query(text string) Query {
	q := Query{}
	a.each(text, func(t string) { q[t]++ })
	return q
}

// Add adds every term of o to q with its weight times w, and returns q.
func (q Query) Add(o Query, w float64) Query {
	for t, x := range o {
		q[t] += x * w
	}
	return q
}

// Terms returns the query's terms, sorted.
func (q Query) Terms() []string {
	ts := make([]string, 0, len(q))
	for t := range q {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	return ts
}

// String renders the query deterministically, e.g. "book:1 flight:0.5".
func (q Query) String() string {
	var b strings.Builder
	for i, t := range q.Terms() {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%g", t, q[t])
	}
	return b.String()
}

// Hit is one search result.
type Hit struct {
	ID    string
	Score float64
}

// IDF is the inverse document frequency of term: ln(1 + (N-n+0.5)/(n+0.5))
// where n documents of N hold it (the always-positive form, so a term in
// most documents still counts a little instead of penalising).
func (ix *Index) IDF(term string) float64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.idfLocked(len(ix.postings[term]))
}

func (ix *Index) idfLocked(n int) float64 {
	N := float64(ix.n)
	return math.Log(1 + (N-float64(n)+0.5)/(float64(n)+0.5))
}

// Search returns the k best documents for q (all matching ones when k <=
// 0), best first, ties broken by ascending ID. keep, when not nil, filters
// the candidates (it is called under the index's read lock: it must not
// call the index).
func (ix *Index) Search(q Query, k int, keep func(id string) bool) []Hit {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.n == 0 || len(q) == 0 {
		return nil
	}
	avg := ix.totalLen / float64(ix.n)
	if avg <= 0 {
		avg = 1
	}
	scores := map[int32]float64{}
	// Terms in sorted order: every document's score is summed in the same
	// order on every call, so equal inputs give bit-identical scores.
	for _, t := range q.Terms() {
		qw := q[t]
		p := ix.postings[t]
		if !(qw > 0) || len(p) == 0 {
			continue
		}
		idf := ix.idfLocked(len(p))
		for slot, tf := range p {
			dl := ix.docs[slot].len
			norm := ix.k1 * (1 - ix.b + ix.b*dl/avg)
			scores[slot] += qw * idf * tf * (ix.k1 + 1) / (tf + norm)
		}
	}
	hits := make([]Hit, 0, len(scores))
	for slot, s := range scores {
		id := ix.docs[slot].id
		if keep != nil && !keep(id) {
			continue
		}
		hits = append(hits, Hit{ID: id, Score: s})
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	if k > 0 && len(hits) > k {
		hits = hits[:k]
	}
	return hits
}
