package vecmath

import "golang.org/x/sys/cpu"

// useSIMD selects the AVX2+FMA kernels. A variable, not a constant, so that
// tests can run the portable kernels too.
var useSIMD = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotAVX2 returns Σ a[i]·b[i] for i < n; n must be a positive multiple of 16.
//
//go:noescape
func dotAVX2(a, b *float32, n int) float32

// sqDistAVX2 returns Σ (a[i]-b[i])² for i < n; n must be a positive
// multiple of 16.
//
//go:noescape
func sqDistAVX2(a, b *float32, n int) float32

// dotInt8AVX2 returns Σ q[i]·c[i] for i < n; n must be a positive multiple
// of 32.
//
//go:noescape
func dotInt8AVX2(q *float32, c *int8, n int) float32

// dotInt8RowsAVX2 sets out[i] = dotInt8AVX2(q, c + i*n, n) for i < rows;
// n must be a positive multiple of 32, rows positive.
//
//go:noescape
func dotInt8RowsAVX2(q *float32, c *int8, n int, out *float32, rows int)
