package recallbench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Dataset kinds.
const (
	// Clustered is synthetic: a two-level mixture of topics and sub-topics
	// around a shared mean direction (see ClusterParams). Real embeddings
	// are clustered and anisotropic; independent Gaussian vectors, where
	// every point is about equally far from every other, are a worst case
	// no real workload has.
	Clustered = "clustered"
	// Text is the default embedding model's vectors of real English
	// sentences (see Corpus).
	Text = "text"
)

// Dataset is one benchmark input: Vectors are indexed, Queries are drawn
// from the same distribution but are not in the index.
type Dataset struct {
	Kind    string // Clustered or Text
	Dim     int
	Vectors [][]float32 // unit length
	Queries [][]float32 // unit length
	// Texts are the indexed sentences of a Text dataset (nil otherwise);
	// QueryTexts the query sentences.
	Texts, QueryTexts []string
	// Sources counts the indexed sentences per Source* constant.
	Sources map[string]int
	// Note describes how the dataset was made, for the report.
	Note string
}

// Name is the dataset's label in the report, e.g. "clustered-10k".
func (d *Dataset) Name() string { return d.Kind + "-" + SizeLabel(len(d.Vectors)) }

// SizeLabel prints 1000 as "1k" and 100000 as "100k".
func SizeLabel(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// ClusterParams shape the clustered generator, a hierarchy of clusters
// (topics, sub-topics, near-paraphrase groups) around a shared mean
// direction. A vector is
//
//	normalise(Mean·g + Σ Levels[i].Weight·c_i + Noise·e)
//
// with g one direction shared by all vectors, c_i the direction of its
// cluster at level i and e its own. Every direction is an independent
// uniformly random unit vector, so in high dimension they are nearly
// orthogonal and the squared weights set the cosine of two vectors: the
// sum of the squares they share (Mean², plus Weight² of every level whose
// cluster they share) over the sum of all squares. Real embeddings are like
// this: anisotropic (a random pair of sentence vectors is far from
// orthogonal) and clustered at several scales.
type ClusterParams struct {
	Mean   float64 // weight of the shared direction
	Levels []Level // outermost first
	Noise  float64 // weight of each vector's own direction; must be > 0
	// Skew is the Zipf exponent with which a cluster picks its parent
	// (weight 1/rank^Skew): some topics are much more popular than others,
	// as subjects are in real collections. 0 means uniform.
	Skew float64
}

// Level is one level of the cluster hierarchy.
type Level struct {
	// Size is the average number of vectors per cluster of this level: the
	// number of clusters grows with the collection (a larger collection
	// covers more subjects, not only more copies of the same ones).
	Size   int
	Weight float64
}

// DefaultClusterParams were chosen so that clustered vectors resemble the
// default model's vectors of real text at 10k records in the three
// statistics the report prints for both datasets (mean cosine of a random
// pair, and of a query to its nearest and to its 10th nearest neighbour).
var DefaultClusterParams = ClusterParams{
	Mean: 0.632, // 0.40 of the squared norm
	// 0.11, 0.15 and 0.09 of the squared norm
	Levels: []Level{{Size: 250, Weight: 0.332}, {Size: 25, Weight: 0.387}, {Size: 5, Weight: 0.3}},
	Noise:  0.5, // 0.25
	Skew:   0.8,
}

// GenerateClustered makes n indexed vectors and q queries of dimension dim
// from seed; the queries come from the same mixture (same clusters) but are
// not indexed. The same arguments always give the same vectors.
func GenerateClustered(n, q, dim int, p ClusterParams, seed uint64) (*Dataset, error) {
	if n <= 0 || q <= 0 || dim < 2 {
		return nil, fmt.Errorf("%w: clustered dataset needs n > 0, q > 0, dim >= 2 (got %d, %d, %d)", ErrInvalidConfig, n, q, dim)
	}
	if p.Mean < 0 || p.Noise <= 0 || p.Skew < 0 || math.IsNaN(p.Mean+p.Noise+p.Skew) {
		return nil, fmt.Errorf("%w: cluster weights must be >= 0 and Noise > 0", ErrInvalidConfig)
	}
	for _, l := range p.Levels {
		if l.Size <= 0 || l.Weight < 0 || math.IsNaN(l.Weight) {
			return nil, fmt.Errorf("%w: cluster level needs Size > 0 and Weight >= 0", ErrInvalidConfig)
		}
	}
	r := rand.New(rand.NewPCG(seed, 0xc1a5))
	unit := func() []float64 {
		v := make([]float64, dim)
		var s float64
		for i := range v {
			v[i] = r.NormFloat64()
			s += v[i] * v[i]
		}
		s = 1 / math.Sqrt(s)
		for i := range v {
			v[i] *= s
		}
		return v
	}
	mean := unit()
	total := n + q
	// dirs[l][c] is the direction of cluster c of level l, parent[l][c] its
	// cluster at level l-1.
	dirs := make([][][]float64, len(p.Levels))
	parent := make([][]int, len(p.Levels))
	counts := make([]int, len(p.Levels))
	for l, lv := range p.Levels {
		cnt := max(1, (total+lv.Size-1)/lv.Size)
		if l > 0 {
			cnt = max(cnt, counts[l-1])
		}
		counts[l] = cnt
		dirs[l] = make([][]float64, cnt)
		parent[l] = make([]int, cnt)
		var pick zipf
		if l > 0 {
			pick = newZipf(counts[l-1], p.Skew)
		}
		for c := range cnt {
			dirs[l][c] = unit()
			if l > 0 {
				// Every parent gets at least one child; the rest go by
				// popularity.
				if c < counts[l-1] {
					parent[l][c] = c
				} else {
					parent[l][c] = pick.draw(r)
				}
			}
		}
	}
	point := func() []float32 {
		v := make([]float64, dim)
		for i := range v {
			v[i] = p.Mean * mean[i]
		}
		if L := len(p.Levels); L > 0 {
			c := r.IntN(counts[L-1])
			for l := L - 1; l >= 0; l-- {
				w, d := p.Levels[l].Weight, dirs[l][c]
				for i := range v {
					v[i] += w * d[i]
				}
				c = parent[l][c]
			}
		}
		e := unit()
		var norm float64
		for i := range v {
			v[i] += p.Noise * e[i]
			norm += v[i] * v[i]
		}
		norm = 1 / math.Sqrt(norm)
		out := make([]float32, dim)
		for i := range v {
			out[i] = float32(v[i] * norm)
		}
		return out
	}
	var lv []string
	for l, x := range p.Levels {
		lv = append(lv, fmt.Sprintf("%d clusters of ~%d (weight %.3g)", counts[l], x.Size, x.Weight))
	}
	d := &Dataset{Kind: Clustered, Dim: dim, Vectors: make([][]float32, n), Queries: make([][]float32, q),
		Note: fmt.Sprintf("mean weight %.3g; %s; noise %.3g; parent popularity skew %.2g; seed %d",
			p.Mean, strings.Join(lv, ", "), p.Noise, p.Skew, seed)}
	for i := range d.Vectors {
		d.Vectors[i] = point()
	}
	for i := range d.Queries {
		d.Queries[i] = point()
	}
	return d, nil
}

// zipf draws 0..n-1 with probability proportional to 1/(i+1)^s.
type zipf struct{ cdf []float64 }

func newZipf(n int, s float64) zipf {
	cdf := make([]float64, n)
	var sum float64
	for i := range cdf {
		sum += 1 / math.Pow(float64(i+1), s)
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	return zipf{cdf}
}

func (z zipf) draw(r *rand.Rand) int {
	u := r.Float64()
	lo, hi := 0, len(z.cdf)-1
	for lo < hi {
		m := (lo + hi) / 2
		if z.cdf[m] < u {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
