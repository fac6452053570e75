package uselite

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// withKernels runs f with the SIMD kernels on (when the CPU has them) and
// with the portable Go kernels.
func withKernels(t *testing.T, f func(t *testing.T)) {
	saved := useAVX2
	t.Cleanup(func() { useAVX2 = saved })
	for _, simd := range []bool{true, false} {
		if simd && !saved {
			continue
		}
		useAVX2 = simd
		name := "go"
		if simd {
			name = "simd"
		}
		t.Run(name, f)
	}
}

func TestMatmulMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	withKernels(t, func(t *testing.T) {
		for _, m := range []int{1, 2, 3, 4, 5, 13, 64, 65, 70, 131} {
			for _, kn := range [][2]int{{16, 16}, {256, 48}, {37, 32}} {
				k, n := kn[0], kn[1]
				a := make([]float32, m*k)
				b := make([]float32, k*n)
				bias := make([]float32, n)
				for i := range a {
					a[i] = rng.Float32()*2 - 1
				}
				for i := range b {
					b[i] = rng.Float32()*2 - 1
				}
				for i := range bias {
					bias[i] = rng.Float32() - 0.5
				}
				p, ok := pack(b, k, n)
				if !ok {
					t.Fatal("pack refused")
				}
				for _, relu := range []bool{false, true} {
					c := make([]float32, m*n)
					matmul(c, a, p, bias, m, relu, make([]float32, 4*k+4*panelWidth))
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							var want float64
							for q := 0; q < k; q++ {
								want += float64(a[i*k+q]) * float64(b[q*n+j])
							}
							want += float64(bias[j])
							if relu {
								want = max(want, 0)
							}
							if d := math.Abs(float64(c[i*n+j]) - want); d > 1e-4 {
								t.Fatalf("m=%d k=%d n=%d relu=%v: c[%d,%d] = %v, want %v", m, k, n, relu, i, j, c[i*n+j], want)
							}
						}
					}
				}
			}
		}
	})
}

func TestDotAxpy(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		for _, n := range []int{1, 15, 16, 64, 128, 130} {
			a := make([]float32, n)
			b := make([]float32, n)
			var want float64
			for i := range a {
				a[i], b[i] = float32(i%7)-3, float32(i%5)*0.5
				want += float64(a[i]) * float64(b[i])
			}
			if got := dot(a, b); math.Abs(float64(got)-want) > 1e-3 {
				t.Errorf("dot n=%d = %v, want %v", n, got, want)
			}
			y := make([]float32, n)
			copy(y, b)
			axpy(y, 2, a)
			for i := range y {
				if y[i] != b[i]+2*a[i] {
					t.Fatalf("axpy n=%d: y[%d] = %v, want %v", n, i, y[i], b[i]+2*a[i])
				}
			}
		}
	})
}

func TestPackRejectsOddWidths(t *testing.T) {
	if _, ok := pack(make([]float32, 3*10), 3, 10); ok {
		t.Error("pack accepted n=10")
	}
	if _, ok := pack(make([]float32, 5), 3, 16); ok {
		t.Error("pack accepted a short matrix")
	}
}

// TestGoldenBothKernels checks the portable kernels (what arm64 and older
// x86 run) against the TF.js reference too, not just the SIMD ones.
//
// It is model arithmetic with no concurrency, several times slower under
// the race detector: it runs without -race only (scripts/test.sh runs it
// so, with the retrieval-quality corpora).
func TestGoldenBothKernels(t *testing.T) {
	if raceEnabled {
		t.Skip("numeric only: runs without -race (scripts/test.sh runs it so)")
	}
	m := testModel(t)
	g := loadGolden(t)
	texts := make([]string, len(g.Cases))
	for i, c := range g.Cases {
		texts[i] = c.Text
	}
	withKernels(t, func(t *testing.T) {
		got, err := m.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		var worst float64
		for i, c := range g.Cases {
			worst = max(worst, maxAbsDiff(got[i], c.Embedding), maxAbsDiff(got[i], c.EmbeddingCPU))
		}
		if worst > goldenTol {
			t.Errorf("max |diff| %.3g > %g", worst, goldenTol)
		}
		t.Logf("max |Go - TF.js| = %.3g", worst)
	})
}
