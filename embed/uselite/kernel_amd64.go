package uselite

import (
	"golang.org/x/sys/cpu"

	"github.com/stratamem/strata/internal/vecmath"
)

// useAVX2 selects the AVX2+FMA micro-kernel; Go code without SIMD runs
// elsewhere. Both compute each output as a sum over k in increasing order;
// the FMA kernel rounds once per step instead of twice, a difference far
// below the 1e-5 golden tolerance.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func kernel4x16AVX2(k int, a *float32, lda int, panel *float32, c *float32, ldc int)

func kernel4x16(k int, a []float32, lda int, panel []float32, c []float32, ldc int) {
	if useAVX2 && k > 0 {
		// Bounds the assembly relies on, checked once per call.
		_ = a[3*lda+k-1]
		_ = panel[k*panelWidth-1]
		_ = c[3*ldc+panelWidth-1]
		kernel4x16AVX2(k, &a[0], lda, &panel[0], &c[0], ldc)
		return
	}
	kernel4x16Go(k, a, lda, panel, c, ldc)
}

//go:noescape
func axpyAVX2(y *float32, alpha float32, x *float32, n int)

// dot runs vecmath's AVX2 dot product on multiples of 16 elements (two
// 8-lane FMA accumulators, reduced pairwise) and vecmath.DotPortable on
// other lengths, where vecmath.Dot would add a scalar tail to a SIMD prefix
// instead.
func dot(a, b []float32) float32 {
	if useAVX2 && vecmath.HasSIMD() && len(a) > 0 && len(a)%16 == 0 {
		return vecmath.Dot(a, b)
	}
	return vecmath.DotPortable(a, b)
}

func axpy(y []float32, alpha float32, x []float32) {
	if useAVX2 && len(y) > 0 && len(y)%16 == 0 {
		_ = x[len(y)-1]
		axpyAVX2(&y[0], alpha, &x[0], len(y))
		return
	}
	axpyGo(y, alpha, x)
}
