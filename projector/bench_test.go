package projector_test

import (
	"fmt"
	"testing"

	"github.com/stratamem/strata/projector"
)

// BenchmarkAssemble measures AssembleView over n history entries with a
// budget policy that fits them all (the common case) and one that cuts
// half of them.
func BenchmarkAssemble(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		var hist []projector.Entry[item]
		total := 0
		for i := 0; i < n; i++ {
			en := e(fmt.Sprint("h", i), 20)
			if i%4 == 1 {
				en = call(fmt.Sprint(i), 20)
			} else if i%4 == 2 {
				en = output(fmt.Sprint(i-1), 20)
			}
			hist = append(hist, en)
			total += 20
		}
		in := projector.Input[item]{
			System: []projector.Entry[item]{e("sys", 500)}, Anchor: []projector.Entry[item]{e("a", 300), e("b", 300)},
			History: hist, Live: []projector.Entry[item]{e("l", 50)}, Tail: []projector.Entry[item]{e("t", 20)},
		}
		for _, c := range []struct {
			name   string
			budget int
		}{{"fits", total + 5000}, {"cut-half", total/2 + 1170}} {
			p := &projector.Policy[item]{TokenBudget: c.budget}
			b.Run(fmt.Sprintf("history=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := projector.Assemble(in, p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
