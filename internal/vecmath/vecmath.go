// Package vecmath holds the float32 vector kernels shared by the embedded
// vector store and the bundled embedding model: a dot product, a squared
// Euclidean distance and the dot product of a float32 vector with int8
// codes, in AVX2+FMA assembly on amd64 CPUs that have it and in portable Go
// elsewhere.
//
// Every kernel is a pure function of its inputs on a given machine: the
// order of the floating-point operations depends on the length only, never
// on the alignment of the slices or on what else runs, so the same vectors
// always give the same bits. The SIMD and the portable kernels round
// differently (FMA, lane-wise partial sums), so the two may differ in the
// last bits; each agrees with a float64 reference to float32 accuracy.
package vecmath

// Dot returns the dot product of a and b[:len(a)]. It panics if b is
// shorter than a.
//
// With SIMD, the first len(a)&^15 elements are summed in two 8-lane
// accumulators (elements 16i..16i+7 in the first, 16i+8..16i+15 in the
// second) with fused multiply-adds, the accumulators added and reduced
// pairwise, and the remaining elements added one by one in increasing
// order. Without SIMD, it is dotGo.
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	n := len(a) &^ 15
	if !useSIMD || n == 0 {
		return dotGo(a, b)
	}
	s := dotAVX2(&a[0], &b[0], n)
	for i := n; i < len(a); i++ {
		s += a[i] * b[i]
	}
	return s
}

// SqDist returns the squared Euclidean distance between a and b[:len(a)],
// Σ (a[i]-b[i])². It panics if b is shorter than a. The order of operations
// is Dot's, on the differences.
func SqDist(a, b []float32) float32 {
	b = b[:len(a)]
	n := len(a) &^ 15
	if !useSIMD || n == 0 {
		return sqDistGo(a, b)
	}
	s := sqDistAVX2(&a[0], &b[0], n)
	for i := n; i < len(a); i++ {
		d := a[i] - b[i]
		s += d * d
	}
	return s
}

// DotInt8 returns Σ q[i]·float32(c[i]) over i < len(c), the dot product
// of q with a vector of int8 codes (a quantised vector, scaled by the
// caller). It panics if q is shorter than c.
//
// With SIMD, the first len(c)&^31 elements are summed in four 8-lane
// accumulators with fused multiply-adds, reduced pairwise, and the rest
// added one by one in increasing order; without, as dotGo. Each product of
// a float32 by an int8 rounds, so the result carries the rounding error of
// a float32 dot product of that length, like Dot.
func DotInt8(q []float32, c []int8) float32 {
	q = q[:len(c)]
	n := len(c) &^ 31
	if !useSIMD || n == 0 {
		return dotInt8Go(q, c)
	}
	s := dotInt8AVX2(&q[0], &c[0], n)
	for i := n; i < len(c); i++ {
		s += q[i] * float32(c[i])
	}
	return s
}

// DotInt8Rows sets out[i] to DotInt8(q, c[i*len(q):(i+1)*len(q)]), bit for
// bit, for every whole row of c, len(q) codes each, and returns the
// number of rows. It panics if out is too short, or if q is empty.
func DotInt8Rows(q []float32, c []int8, out []float32) int {
	dim := len(q)
	rows := len(c) / dim
	out = out[:rows]
	if !useSIMD || dim%32 != 0 || rows == 0 {
		for i := range out {
			out[i] = DotInt8(q, c[i*dim:(i+1)*dim])
		}
		return rows
	}
	dotInt8RowsAVX2(&q[0], &c[0], dim, &out[0], rows)
	return rows
}

// HasSIMD reports whether Dot and SqDist run the assembly kernels.
func HasSIMD() bool { return useSIMD }

// DotPortable returns the dot product of a and b[:len(a)] as Dot does
// without SIMD, on every machine: four independent accumulators over
// groups of four elements, the remainder added to the first, then summed
// as (s0+s1)+(s2+s3). It panics if b is shorter than a.
func DotPortable(a, b []float32) float32 { return dotGo(a, b) }

// dotGo is the portable dot product: four independent accumulators over
// groups of four elements, the remainder added to the first, then summed
// as (s0+s1)+(s2+s3).
func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotInt8Go is dotGo with b converted from int8.
func dotInt8Go(q []float32, c []int8) float32 {
	q = q[:len(c)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(c); i += 4 {
		s0 += q[i] * float32(c[i])
		s1 += q[i+1] * float32(c[i+1])
		s2 += q[i+2] * float32(c[i+2])
		s3 += q[i+3] * float32(c[i+3])
	}
	for ; i < len(c); i++ {
		s0 += q[i] * float32(c[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// sqDistGo is dotGo on the differences a[i]-b[i].
func sqDistGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		x0, x1, x2, x3 := a[i]-b[i], a[i+1]-b[i+1], a[i+2]-b[i+2], a[i+3]-b[i+3]
		s0 += x0 * x0
		s1 += x1 * x1
		s2 += x2 * x2
		s3 += x3 * x3
	}
	for ; i < len(a); i++ {
		x := a[i] - b[i]
		s0 += x * x
	}
	return (s0 + s1) + (s2 + s3)
}
