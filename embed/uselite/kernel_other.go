//go:build !amd64

package uselite

import "github.com/stratamem/strata/internal/vecmath"

// useAVX2 is always false off amd64; the portable Go kernels run.
var useAVX2 = false

func kernel4x16(k int, a []float32, lda int, panel []float32, c []float32, ldc int) {
	kernel4x16Go(k, a, lda, panel, c, ldc)
}

func dot(a, b []float32) float32 { return vecmath.DotPortable(a, b) }

func axpy(y []float32, alpha float32, x []float32) { axpyGo(y, alpha, x) }
