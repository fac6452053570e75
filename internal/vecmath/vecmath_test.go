package vecmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// withKernels runs f with the SIMD kernels (when the CPU has them) and with
// the portable ones.
func withKernels(t *testing.T, f func(t *testing.T)) {
	saved := useSIMD
	t.Cleanup(func() { useSIMD = saved })
	for _, simd := range []bool{true, false} {
		if simd && !saved {
			continue
		}
		useSIMD = simd
		name := "go"
		if simd {
			name = "simd"
		}
		t.Run(name, f)
	}
}

var lengths = []int{0, 1, 2, 3, 5, 7, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 127, 255, 383, 384, 511, 512, 513, 767, 1023, 1536, 1537}

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// bound is the worst-case error of a float32 sum of n products whose
// magnitudes sum to abs, with margin.
func bound(n int, abs float64) float64 {
	return float64(n+2)*0x1p-23*abs + 1e-30
}

func TestDotAgainstFloat64(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, n := range lengths {
			for range 20 {
				a, b := randVec(r, n), randVec(r, n+r.IntN(3)) // b may be longer
				var want, abs float64
				for i := range a {
					p := float64(a[i]) * float64(b[i])
					want += p
					abs += math.Abs(p)
				}
				if got := Dot(a, b); math.Abs(float64(got)-want) > bound(n, abs) {
					t.Fatalf("Dot n=%d = %v, float64 %v (bound %g)", n, got, want, bound(n, abs))
				}
			}
		}
	})
}

func TestSqDistAgainstFloat64(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		for _, n := range lengths {
			for range 20 {
				a, b := randVec(r, n), randVec(r, n)
				var want float64
				for i := range a {
					// The difference is rounded to float32 first, as the
					// kernels do; the sum is then exact in float64.
					d := float64(a[i] - b[i])
					want += d * d
				}
				if got := SqDist(a, b); math.Abs(float64(got)-want) > bound(n, want) {
					t.Fatalf("SqDist n=%d = %v, float64 %v", n, got, want)
				}
				if d := SqDist(a, a); d != 0 {
					t.Fatalf("SqDist(a, a) n=%d = %v", n, d)
				}
			}
		}
	})
}

func TestDotInt8AgainstFloat64(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		for _, n := range lengths {
			for range 20 {
				q := randVec(r, n+r.IntN(3)) // q may be longer
				c := make([]int8, n)
				for i := range c {
					c[i] = int8(r.IntN(256) - 128)
				}
				var want, abs float64
				for i := range c {
					p := float64(q[i]) * float64(c[i])
					want += p
					abs += math.Abs(p)
				}
				if got := DotInt8(q, c); math.Abs(float64(got)-want) > bound(n, abs) {
					t.Fatalf("DotInt8 n=%d = %v, float64 %v (bound %g)", n, got, want, bound(n, abs))
				}
				// Alignment: the same values elsewhere give the same bits.
				q2 := append(make([]float32, 3), q...)[3:]
				c2 := append(make([]int8, 5), c...)[5:]
				if got, again := DotInt8(q, c), DotInt8(q2, c2); math.Float32bits(got) != math.Float32bits(again) {
					t.Fatalf("DotInt8 n=%d: %v, at other addresses %v", n, got, again)
				}
			}
		}
	})
}

// TestDotInt8Rows: the batch kernel gives DotInt8's bits, row by row.
func TestDotInt8Rows(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 14))
		for _, dim := range []int{1, 7, 31, 32, 33, 64, 96, 384, 512, 513} {
			for _, rows := range []int{0, 1, 2, 5, 17} {
				q := randVec(r, dim)
				c := make([]int8, rows*dim+r.IntN(dim)) // a partial row is ignored
				for i := range c {
					c[i] = int8(r.IntN(256) - 128)
				}
				out := make([]float32, rows+1)
				out[rows] = 42
				if n := DotInt8Rows(q, c, out); n != rows {
					t.Fatalf("dim %d: %d rows, want %d", dim, n, rows)
				}
				for i := range rows {
					if want := DotInt8(q, c[i*dim:(i+1)*dim]); math.Float32bits(out[i]) != math.Float32bits(want) {
						t.Fatalf("dim %d row %d: %v, DotInt8 %v", dim, i, out[i], want)
					}
				}
				if out[rows] != 42 {
					t.Fatalf("dim %d: wrote past the rows", dim)
				}
			}
		}
	})
}

// TestAlignmentIndependent: the same values at any address give the same
// bits, so that a score never depends on where a vector was allocated.
func TestAlignmentIndependent(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, n := range lengths {
			a, b := randVec(r, n), randVec(r, n)
			d0, s0 := Dot(a, b), SqDist(a, b)
			for off := 1; off < 9; off++ {
				ba := make([]float32, n+off)[off:]
				bb := make([]float32, n+2*off)[2*off:]
				copy(ba, a)
				copy(bb, b)
				if d, s := Dot(ba, bb), SqDist(ba, bb); math.Float32bits(d) != math.Float32bits(d0) || math.Float32bits(s) != math.Float32bits(s0) {
					t.Fatalf("n=%d offset %d: Dot %v SqDist %v, aligned %v %v", n, off, d, s, d0, s0)
				}
			}
		}
	})
}

// TestSIMDOrder pins the documented order of the SIMD dot product, which
// embed/uselite relies on for its golden outputs: two 8-lane accumulators,
// pairwise reduction, then the tail in order.
func TestSIMDOrder(t *testing.T) {
	if !useSIMD {
		t.Skip("no AVX2+FMA")
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range lengths {
		a, b := randVec(r, n), randVec(r, n)
		var acc [2][8]float32
		m := n &^ 15
		for i := 0; i < m; i += 16 {
			for j := range 8 {
				acc[0][j] = fma32(a[i+j], b[i+j], acc[0][j])
				acc[1][j] = fma32(a[i+8+j], b[i+8+j], acc[1][j])
			}
		}
		var y [8]float32
		for j := range y {
			y[j] = acc[0][j] + acc[1][j]
		}
		var x [4]float32
		for j := range x {
			x[j] = y[j] + y[j+4]
		}
		h := [2]float32{x[0] + x[1], x[2] + x[3]}
		want := h[0] + h[1]
		for i := m; i < n; i++ {
			want += a[i] * b[i]
		}
		if m == 0 {
			want = dotGo(a, b) // too short for the SIMD kernel
		}
		if got := Dot(a, b); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("n=%d: Dot %v, documented order %v", n, got, want)
		}
	}
}

func fma32(x, y, z float32) float32 {
	return float32(math.FMA(float64(x), float64(y), float64(z)))
}

func TestShortB(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Dot with a short b did not panic")
		}
	}()
	Dot(make([]float32, 32), make([]float32, 31))
}

func BenchmarkDotInt8_512(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	x := randVec(r, 512)
	c := make([]int8, 512)
	for i := range c {
		c[i] = int8(r.IntN(255) - 127)
	}
	var s float32
	for b.Loop() {
		s += DotInt8(x, c)
	}
	_ = s
}

func BenchmarkDotInt8Rows512(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	x := randVec(r, 512)
	c := make([]int8, 512*1024)
	for i := range c {
		c[i] = int8(r.IntN(255) - 127)
	}
	out := make([]float32, 1024)
	for b.Loop() {
		DotInt8Rows(x, c, out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1024, "ns/row")
}

func BenchmarkDot512(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	x, y := randVec(r, 512), randVec(r, 512)
	var s float32
	for b.Loop() {
		s += Dot(x, y)
	}
	_ = s
}
