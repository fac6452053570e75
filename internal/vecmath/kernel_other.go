//go:build !amd64

package vecmath

// useSIMD is always false off amd64; the portable Go kernels run.
var useSIMD = false

func dotAVX2(a, b *float32, n int) float32 { panic("vecmath: no SIMD kernel") }

func sqDistAVX2(a, b *float32, n int) float32 { panic("vecmath: no SIMD kernel") }

func dotInt8AVX2(q *float32, c *int8, n int) float32 { panic("vecmath: no SIMD kernel") }

func dotInt8RowsAVX2(q *float32, c *int8, n int, out *float32, rows int) {
	panic("vecmath: no SIMD kernel")
}
