package uselite

import "math"

// panelWidth is the number of output columns a matmul micro-kernel computes
// at once; weight matrices are repacked into panels of this many columns.
const panelWidth = 16

// rowChunk is how many rows of A a matmul keeps hot in cache while the weight
// panels stream past (64 rows of up to 1536 floats is 384 KiB, within a
// per-core L2 alongside one 96 KiB panel).
const rowChunk = 64

// packed is a k×n weight matrix repacked as n/16 column panels, each k rows
// of 16 contiguous floats, so the micro-kernel reads weights sequentially.
type packed struct {
	k, n int
	data []float32
}

// pack repacks a row-major k×n matrix; n must be a multiple of panelWidth.
func pack(b []float32, k, n int) (packed, bool) {
	if n%panelWidth != 0 || len(b) != k*n {
		return packed{}, false
	}
	out := make([]float32, k*n)
	for jp := 0; jp < n/panelWidth; jp++ {
		panel := out[jp*k*panelWidth:]
		for p := 0; p < k; p++ {
			copy(panel[p*panelWidth:(p+1)*panelWidth], b[p*n+jp*panelWidth:])
		}
	}
	return packed{k: k, n: n, data: out}, true
}

// matmul sets c[m×n] = a[m×k]·b + bias[n] (row-major a and c), then applies
// ReLU when relu is set. Every output is a sum over k in increasing order,
// computed by the same 4-row micro-kernel whatever m is (leftover rows are
// padded with zeros), so a row's result never depends on the rows around it:
// a text's vector is the same alone or in any batch. pad must hold 4·k + 64
// floats.
func matmul(c, a []float32, b packed, bias []float32, m int, relu bool, pad []float32) {
	k, n := b.k, b.n
	c = c[:m*n]
	a = a[:m*k]
	bias = bias[:n]
	full := m &^ 3
	var padA, padC []float32
	if full < m {
		padA = pad[:4*k]
		padC = pad[4*k : 4*k+4*panelWidth]
		clear(padA)
		copy(padA, a[full*k:])
	}
	for i0 := 0; i0 < m; i0 += rowChunk {
		i1 := min(i0+rowChunk, m)
		for jp := 0; jp < n/panelWidth; jp++ {
			panel := b.data[jp*k*panelWidth : (jp+1)*k*panelWidth]
			col := jp * panelWidth
			i := i0
			for ; i+4 <= i1; i += 4 {
				kernel4x16(k, a[i*k:], k, panel, c[i*n+col:], n)
			}
			if i < i1 { // the last 1-3 rows of the matrix
				kernel4x16(k, padA, k, panel, padC, panelWidth)
				for r := 0; r < i1-i; r++ {
					copy(c[(i+r)*n+col:][:panelWidth], padC[r*panelWidth:])
				}
			}
		}
	}
	for i := 0; i < m; i++ {
		row := c[i*n : i*n+n]
		if relu {
			for j, v := range row {
				v += bias[j]
				if v < 0 {
					v = 0
				}
				row[j] = v
			}
		} else {
			for j := range row {
				row[j] += bias[j]
			}
		}
	}
}

// kernel4x16Go sets c[r][j] = Σ_p a[r·lda+p]·panel[p·16+j] for 4 rows and
// 16 columns (c row stride ldc). It is the portable micro-kernel: the output
// tile stays in L1 and each row skips the zeros ReLU leaves in its input.
func kernel4x16Go(k int, a []float32, lda int, panel []float32, c []float32, ldc int) {
	panel = panel[:k*panelWidth]
	for r := 0; r < 4; r++ {
		ar := a[r*lda:][:k]
		acc := c[r*ldc:][:panelWidth]
		clear(acc)
		for p, x := range ar {
			if x == 0 {
				continue // adding 0·b changes nothing
			}
			bp := panel[p*panelWidth:][:panelWidth]
			acc[0] += x * bp[0]
			acc[1] += x * bp[1]
			acc[2] += x * bp[2]
			acc[3] += x * bp[3]
			acc[4] += x * bp[4]
			acc[5] += x * bp[5]
			acc[6] += x * bp[6]
			acc[7] += x * bp[7]
			acc[8] += x * bp[8]
			acc[9] += x * bp[9]
			acc[10] += x * bp[10]
			acc[11] += x * bp[11]
			acc[12] += x * bp[12]
			acc[13] += x * bp[13]
			acc[14] += x * bp[14]
			acc[15] += x * bp[15]
		}
	}
}

// layerNorm writes to dst the layer normalisation of each d-wide row of x,
// in the graph's order of operations: (scale·rsqrt(var+eps))·(x-mean)+bias.
func layerNorm(dst, x, scale, bias []float32, rows, d int, eps float32) {
	scale = scale[:d]
	bias = bias[:d]
	for r := 0; r < rows; r++ {
		xr := x[r*d:][:d]
		dr := dst[r*d:][:d]
		var sum float64
		for _, v := range xr {
			sum += float64(v)
		}
		mean := float32(sum / float64(d))
		var ss float64
		for j, v := range xr {
			c := v - mean
			dr[j] = c
			ss += float64(c) * float64(c)
		}
		variance := float32(ss / float64(d))
		inv := float32(1 / math.Sqrt(float64(variance+eps)))
		for j, c := range dr {
			dr[j] = scale[j]*inv*c + bias[j]
		}
	}
}

func axpyGo(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	for i, v := range x {
		y[i] += a * v
	}
}
