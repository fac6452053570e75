package core_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stratamem/strata/core"
)

func TestAllocate(t *testing.T) {
	cases := []struct {
		name    string
		pool    int
		budgets []core.Budget
		want    []int
		unalloc int
	}{
		{"fixed and auto", 1000, []core.Budget{core.Fixed(100), core.Auto(), core.Auto()}, []int{100, 450, 450}, 0},
		{"range to max", 1000, []core.Budget{core.Range(50, 200), core.Auto()}, []int{200, 800}, 0},
		{"ranges share shortfall by headroom", 300, []core.Budget{core.Range(0, 200), core.Range(100, 300)}, []int{100, 200}, 0},
		{"nobody takes the rest", 1000, []core.Budget{core.Fixed(100), core.Range(10, 20)}, []int{100, 20}, 880},
		{"infinite max splits with auto", 1000, []core.Budget{core.Range(100, math.Inf(1)), core.Auto()}, []int{550, 450}, 0},
		{"odd split conserves", 10, []core.Budget{core.Auto(), core.Auto(), core.Auto()}, []int{4, 3, 3}, 0},
		{"unlimited pool gives max", core.Unlimited, []core.Budget{core.Fixed(7), core.Range(1, 9), core.Auto()}, []int{7, 9, core.Unlimited}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := core.Allocate(c.pool, c.budgets)
			if err != nil {
				t.Fatal(err)
			}
			for i := range c.want {
				if a.Tokens[i] != c.want[i] {
					t.Fatalf("tokens = %v, want %v", a.Tokens, c.want)
				}
			}
			if a.Unallocated != c.unalloc {
				t.Fatalf("unallocated = %d, want %d", a.Unallocated, c.unalloc)
			}
		})
	}
	_, err := core.Allocate(100, []core.Budget{core.Range(math.NaN(), 10)})
	var ce *core.ConfigError
	if !errors.As(err, &ce) || ce.Code != core.CodeInvalidBudgetInput {
		t.Fatalf("NaN: %v", err)
	}
	if _, err := core.Allocate(100, []core.Budget{core.Fixed(60), core.Range(50, 70)}); !errors.As(err, &ce) || ce.Code != core.CodeBudgetExceedsPool {
		t.Fatalf("minimums over pool: %v", err)
	}
}

// FuzzAllocate checks that the pool is conserved, minimums are honoured
// and maximums never exceeded.
func FuzzAllocate(f *testing.F) {
	f.Add(uint16(1000), []byte{0, 10, 20, 1, 5, 50, 2, 0, 0})
	f.Fuzz(func(t *testing.T, pool uint16, spec []byte) {
		var budgets []core.Budget
		for i := 0; i+2 < len(spec) && len(budgets) < 16; i += 3 {
			lo, hi := float64(spec[i+1]), float64(spec[i+1])+float64(spec[i+2])
			switch spec[i] % 4 {
			case 0:
				budgets = append(budgets, core.Auto())
			case 1:
				budgets = append(budgets, core.Fixed(lo))
			case 2:
				budgets = append(budgets, core.Range(lo, hi))
			case 3:
				budgets = append(budgets, core.Range(lo, math.Inf(1)))
			}
		}
		a, err := core.Allocate(int(pool), budgets)
		minSum := 0
		for _, b := range budgets {
			switch b.Mode {
			case core.BudgetFixed:
				minSum += int(b.Tokens)
			case core.BudgetRange:
				minSum += int(b.Min)
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
		sum := a.Unallocated
		for i, b := range budgets {
			got := a.Tokens[i]
			sum += got
			switch b.Mode {
			case core.BudgetFixed:
				if got != int(b.Tokens) {
					t.Fatalf("fixed %v got %d", b.Tokens, got)
				}
			case core.BudgetRange:
				if got < int(b.Min) || (!math.IsInf(b.Max, 1) && got > int(b.Max)) {
					t.Fatalf("range %v..%v got %d", b.Min, b.Max, got)
				}
			}
		}
		if sum != int(pool) {
			t.Fatalf("pool %d not conserved: %d (%v)", pool, sum, a)
		}
	})
}
