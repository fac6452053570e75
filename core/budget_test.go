package core

import (
	"errors"
	"math"
	"testing"
)

func TestAllocate(t *testing.T) {
	cases := []struct {
		name    string
		pool    int
		budgets []Budget
		want    []int
		unalloc int
	}{
		{"fixed and auto", 1000, []Budget{Fixed(100), Budget{}, Budget{}}, []int{100, 450, 450}, 0},
		{"range to max", 1000, []Budget{Range(50, 200), Budget{}}, []int{200, 800}, 0},
		{"ranges share shortfall by headroom", 300, []Budget{Range(0, 200), Range(100, 300)}, []int{100, 200}, 0},
		{"nobody takes the rest", 1000, []Budget{Fixed(100), Range(10, 20)}, []int{100, 20}, 880},
		{"infinite max splits with auto", 1000, []Budget{Range(100, math.Inf(1)), Budget{}}, []int{550, 450}, 0},
		{"odd split conserves", 10, []Budget{Budget{}, Budget{}, Budget{}}, []int{4, 3, 3}, 0},
		{"unlimited pool gives max", Unlimited, []Budget{Fixed(7), Range(1, 9), Budget{}}, []int{7, 9, Unlimited}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := allocate(c.pool, c.budgets)
			if err != nil {
				t.Fatal(err)
			}
			for i := range c.want {
				if a.tokens[i] != c.want[i] {
					t.Fatalf("tokens = %v, want %v", a.tokens, c.want)
				}
			}
			if a.unallocated != c.unalloc {
				t.Fatalf("unallocated = %d, want %d", a.unallocated, c.unalloc)
			}
		})
	}
	_, err := allocate(100, []Budget{Range(math.NaN(), 10)})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Code != CodeInvalidBudgetInput {
		t.Fatalf("NaN: %v", err)
	}
	if _, err := allocate(100, []Budget{Fixed(60), Range(50, 70)}); !errors.As(err, &ce) || ce.Code != CodeBudgetExceedsPool {
		t.Fatalf("minimums over pool: %v", err)
	}
}

// FuzzAllocate checks that the pool is conserved, minimums are honoured
// and maximums never exceeded.
func FuzzAllocate(f *testing.F) {
	f.Add(uint16(1000), []byte{0, 10, 20, 1, 5, 50, 2, 0, 0})
	f.Fuzz(func(t *testing.T, pool uint16, spec []byte) {
		var budgets []Budget
		for i := 0; i+2 < len(spec) && len(budgets) < 16; i += 3 {
			lo, hi := float64(spec[i+1]), float64(spec[i+1])+float64(spec[i+2])
			switch spec[i] % 4 {
			case 0:
				budgets = append(budgets, Budget{})
			case 1:
				budgets = append(budgets, Fixed(lo))
			case 2:
				budgets = append(budgets, Range(lo, hi))
			case 3:
				budgets = append(budgets, Range(lo, math.Inf(1)))
			}
		}
		a, err := allocate(int(pool), budgets)
		minSum := 0
		for _, b := range budgets {
			switch b.mode {
			case budgetFixed:
				minSum += int(b.tokens)
			case budgetRange:
				minSum += int(b.min)
			}
		}
		if minSum > int(pool) {
			if err == nil {
				t.Fatalf("minimums %d over pool %d accepted", minSum, pool)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		sum := a.unallocated
		for i, b := range budgets {
			got := a.tokens[i]
			sum += got
			switch b.mode {
			case budgetFixed:
				if got != int(b.tokens) {
					t.Fatalf("fixed %v got %d", b.tokens, got)
				}
			case budgetRange:
				if got < int(b.min) || (!math.IsInf(b.max, 1) && got > int(b.max)) {
					t.Fatalf("range %v..%v got %d", b.min, b.max, got)
				}
			}
		}
		if sum != int(pool) {
			t.Fatalf("pool %d not conserved: %d (%v)", pool, sum, a)
		}
	})
}
