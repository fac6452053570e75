package core

import (
	"fmt"
	"math"
	"sort"

	"github.com/stratamem/strata/projector"
)

// budgetMode is the kind of a Budget.
type budgetMode int

// Budget modes. The zero value is budgetAuto.
const (
	budgetAuto budgetMode = iota
	budgetFixed
	budgetRange
)

// Budget is how many tokens a layer may render. The zero value is auto:
// the layer splits what the finite layers leave with the other auto layers.
// Amounts are float64 so that NaN can be rejected and +Inf means uncapped:
// Fixed(+Inf) and Range(min, +Inf) take no fixed share and split what the
// finite budgets leave with the auto layers (the whole layer pool when it
// is Unlimited). Finite amounts are whole tokens (fractions are floored)
// and saturate at math.MaxInt.
//
// Build one with Fixed or Range; the zero value is auto.
type Budget struct {
	mode budgetMode
	// tokens is the fixed amount of a budgetFixed.
	tokens float64
	// min and max bound a budgetRange.
	min, max float64
}

// Fixed is a budget of exactly n tokens.
func Fixed(n float64) Budget { return Budget{mode: budgetFixed, tokens: n} }

// Range is a budget of at least min and at most max tokens.
func Range(min, max float64) Budget { return Budget{mode: budgetRange, min: min, max: max} }

// Validate reports a NaN, negative or inverted budget with code
// INVALID_BUDGET_INPUT.
func (b Budget) Validate() error {
	bad := func(field, reason string) error {
		return &ConfigError{Code: CodeInvalidBudgetInput, Field: field, Reason: reason}
	}
	check := func(field string, v float64) error {
		switch {
		case math.IsNaN(v):
			return bad(field, "NaN")
		case v < 0:
			return bad(field, fmt.Sprintf("negative (%v)", v))
		}
		return nil
	}
	switch b.mode {
	case budgetAuto:
		return nil
	case budgetFixed:
		return check("Budget.Tokens", b.tokens)
	case budgetRange:
		if err := check("Budget.Min", b.min); err != nil {
			return err
		}
		if err := check("Budget.Max", b.max); err != nil {
			return err
		}
		if math.IsInf(b.min, 1) {
			return bad("Budget.Min", "cannot be infinite")
		}
		if b.min > b.max {
			return bad("Budget.Max", fmt.Sprintf("max %v is below min %v", b.max, b.min))
		}
		return nil
	}
	return bad("Budget.Mode", fmt.Sprintf("unknown mode %d", b.mode))
}

func (b Budget) String() string {
	switch b.mode {
	case budgetFixed:
		return fmt.Sprintf("fixed(%v)", b.tokens)
	case budgetRange:
		return fmt.Sprintf("range(%v..%v)", b.min, b.max)
	}
	return "auto"
}

// min and max of a budget in the allocator's terms. An infinite amount is
// uncapped: no minimum, no maximum.
func (b Budget) bounds() (lo, hi float64) {
	switch b.mode {
	case budgetFixed:
		if math.IsInf(b.tokens, 1) {
			return 0, math.Inf(1)
		}
		return b.tokens, b.tokens
	case budgetRange:
		return b.min, b.max
	}
	return 0, math.Inf(1)
}

// tokensOf converts a finite, non-negative amount to whole tokens,
// saturating at math.MaxInt: int() of a float64 at or past 2^63 is not
// defined to saturate (on amd64 it gives math.MinInt).
func tokensOf(v float64) int {
	if v >= float64(math.MaxInt) {
		return math.MaxInt
	}
	return int(v)
}

// allocation is the allocator's answer.
type allocation struct {
	// tokens[i] is the budget of the i-th layer; projector.Unlimited when
	// uncapped (only with an unlimited pool).
	tokens []int
	// unallocated is what no layer could take (all layers capped). The
	// pool is conserved: sum(tokens) + unallocated == pool.
	unallocated int
}

// allocate splits a pool of tokens between layer budgets:
//
//  1. every layer gets its minimum (a fixed budget's amount, a range's
//     min); the minimums must fit the pool (BUDGET_EXCEEDS_POOL);
//  2. the spare goes to the ranges with a finite max, up to that max, in
//     proportion to their headroom when it is not enough for all;
//  3. what is left is split evenly between the auto layers and the ranges
//     with an infinite max (largest remainder, ties to the earlier layer).
//
// The pool is conserved exactly. A pool of projector.Unlimited gives each
// layer its max (Unlimited for auto and infinite ranges).
func allocate(pool int, budgets []Budget) (allocation, error) {
	for i, b := range budgets {
		if err := b.Validate(); err != nil {
			err.(*ConfigError).Field = fmt.Sprintf("budgets[%d].%s", i, err.(*ConfigError).Field)
			return allocation{}, err
		}
	}
	if pool < 0 {
		return allocation{}, &ConfigError{Code: CodeInvalidBudgetInput, Field: "pool", Reason: fmt.Sprintf("negative (%d)", pool)}
	}
	out := allocation{tokens: make([]int, len(budgets))}
	if pool == projector.Unlimited {
		for i, b := range budgets {
			_, hi := b.bounds()
			if math.IsInf(hi, 1) {
				out.tokens[i] = projector.Unlimited
			} else {
				out.tokens[i] = tokensOf(hi)
			}
		}
		return out, nil
	}

	// 1. minimums. Fractions are floored: a budget is whole tokens. The
	// sum is taken in float64 so that huge minimums cannot wrap around.
	minSum, minSumF := 0, 0.0
	for i, b := range budgets {
		lo, _ := b.bounds()
		out.tokens[i] = tokensOf(lo)
		minSumF += math.Floor(lo)
		if minSumF <= float64(pool) {
			minSum += out.tokens[i]
		}
	}
	if minSumF > float64(pool) {
		return allocation{}, &ConfigError{Code: CodeBudgetExceedsPool, Field: "Budget",
			Reason: fmt.Sprintf("layer minimums need %v tokens, the layer pool has %d", minSumF, pool)}
	}
	spare := pool - minSum

	// 2. finite ranges up to their max.
	var headIdx []int
	var headroom []float64
	totalHead := 0.0
	for i, b := range budgets {
		lo, hi := b.bounds()
		if b.mode == budgetRange && !math.IsInf(hi, 1) && tokensOf(hi) > tokensOf(lo) {
			headIdx = append(headIdx, i)
			h := float64(tokensOf(hi) - tokensOf(lo))
			headroom = append(headroom, h)
			totalHead += h
		}
	}
	if totalHead > 0 {
		if float64(spare) >= totalHead {
			for k, i := range headIdx {
				out.tokens[i] += int(headroom[k])
			}
			spare -= int(totalHead)
		} else {
			shares := splitProportional(spare, headroom)
			for k, i := range headIdx {
				out.tokens[i] += shares[k]
			}
			spare = 0
		}
	}

	// 3. auto layers and uncapped ranges split the rest evenly.
	var open []int
	for i, b := range budgets {
		if _, hi := b.bounds(); math.IsInf(hi, 1) {
			open = append(open, i)
		}
	}
	if len(open) > 0 && spare > 0 {
		weights := make([]float64, len(open))
		for k := range weights {
			weights[k] = 1
		}
		shares := splitProportional(spare, weights)
		for k, i := range open {
			out.tokens[i] += shares[k]
		}
		spare = 0
	}
	out.unallocated = spare
	return out, nil
}

// splitProportional splits n into integer shares proportional to weights
// with the largest-remainder method, so the shares sum to n exactly.
func splitProportional(n int, weights []float64) []int {
	total := 0.0
	for _, w := range weights {
		total += w
	}
	shares := make([]int, len(weights))
	if total <= 0 || n <= 0 {
		return shares
	}
	type rem struct {
		i int
		r float64
	}
	rems := make([]rem, len(weights))
	given := 0
	for i, w := range weights {
		exact := float64(n) * w / total
		shares[i] = int(math.Floor(exact))
		given += shares[i]
		rems[i] = rem{i, exact - float64(shares[i])}
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].r > rems[b].r })
	for k := 0; given < n; k++ {
		shares[rems[k%len(rems)].i]++
		given++
	}
	return shares
}
