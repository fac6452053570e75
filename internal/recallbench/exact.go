package recallbench

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/stratamem/strata/internal/vecmath"
)

// Neighbor is one exact search result: the index of an indexed vector and
// its cosine similarity to the query.
type Neighbor struct {
	Index int
	Score float64
}

// better orders neighbours by score descending, ties by index ascending:
// record ids are zero-padded indexes, so this is the portable tie order
// (ascending id) every backend uses.
func better(a, b Neighbor) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Index < b.Index
}

// ExactTopK is the ground truth: the k nearest indexed vectors of each
// query by brute force (cosine of unit vectors, float64 sums), best first.
// Queries are split over workers goroutines (0 means 2), all joined before
// it returns; ctx is checked between queries.
func ExactTopK(ctx context.Context, vectors, queries [][]float32, k, workers int) ([][]Neighbor, error) {
	if workers <= 0 {
		workers = 2
	}
	out := make([][]Neighbor, len(queries))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for qi := w; qi < len(queries); qi += workers {
				if ctx.Err() != nil {
					return
				}
				out[qi] = topK(vectors, queries[qi], k)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func topK(vectors [][]float32, q []float32, k int) []Neighbor {
	k = min(k, len(vectors))
	// top is kept sorted best first; a candidate enters only when it beats
	// the current k-th, which after the first few hundred vectors is rare.
	top := make([]Neighbor, 0, k+1)
	for i, v := range vectors {
		n := Neighbor{Index: i, Score: dot(q, v)}
		if len(top) == k && !better(n, top[k-1]) {
			continue
		}
		pos, _ := slices.BinarySearchFunc(top, n, func(a, b Neighbor) int {
			if better(a, b) {
				return -1
			}
			if better(b, a) {
				return 1
			}
			return 0
		})
		top = slices.Insert(top, pos, n)
		if len(top) > k {
			top = top[:k]
		}
	}
	return top
}

// ScanLatency is a reference for the backends' latencies: the median time
// of a plain exact top-k scan in Go (one goroutine, float32 sums) over
// vectors, per query. A backend slower than this at the same size spends
// its time outside the arithmetic. Like the backends' figures it is the
// median over rounds, each over at most the first 50 queries.
func ScanLatency(ctx context.Context, vectors, queries [][]float32, k, rounds int) (time.Duration, error) {
	queries = queries[:min(len(queries), 50)]
	var p50s []time.Duration
	for range max(rounds, 1) {
		lat := make([]time.Duration, 0, len(queries))
		for _, q := range queries {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			t := time.Now()
			scanTopK(vectors, q, k)
			lat = append(lat, time.Since(t))
		}
		slices.Sort(lat)
		p50s = append(p50s, percentile(lat, 0.5))
	}
	return median(p50s), nil
}

// scanTopK is the straightforward exact top-k a store could run: float32
// dot products with four accumulators (the portable kernel, without SIMD)
// and a sorted insertion list.
func scanTopK(vectors [][]float32, q []float32, k int) []Neighbor {
	top := make([]Neighbor, 0, k+1)
	for i, v := range vectors {
		sc := float64(vecmath.DotPortable(q, v))
		if len(top) == k && sc <= top[k-1].Score {
			continue
		}
		pos := len(top)
		for pos > 0 && top[pos-1].Score < sc {
			pos--
		}
		top = slices.Insert(top, pos, Neighbor{Index: i, Score: sc})
		if len(top) > k {
			top = top[:k]
		}
	}
	return top
}

func dot(a, b []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
		s2 += float64(a[i+2]) * float64(b[i+2])
		s3 += float64(a[i+3]) * float64(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * float64(b[i])
	}
	return s0 + s1 + s2 + s3
}

// Shape summarises how clustered a dataset is, from the exact results:
// the mean cosine of a query to its nearest and to its k-th nearest
// indexed vector, and of random pairs of indexed vectors.
type Shape struct {
	Top1, TopK, RandomPair float64
}

// ShapeOf computes the Shape of vectors given the exact neighbours of the
// queries; the random pairs are drawn with a fixed seed.
func ShapeOf(vectors [][]float32, truth [][]Neighbor) Shape {
	var s Shape
	var n int
	for _, t := range truth {
		if len(t) == 0 {
			continue
		}
		s.Top1 += t[0].Score
		s.TopK += t[len(t)-1].Score
		n++
	}
	if n > 0 {
		s.Top1 /= float64(n)
		s.TopK /= float64(n)
	}
	if len(vectors) > 1 {
		r := rand.New(rand.NewPCG(7, 7))
		const pairs = 2000
		for range pairs {
			i := r.IntN(len(vectors))
			j := r.IntN(len(vectors) - 1)
			if j >= i {
				j++
			}
			s.RandomPair += dot(vectors[i], vectors[j])
		}
		s.RandomPair /= pairs
	}
	return s
}
