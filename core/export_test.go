package core

import "github.com/stratamem/strata/tokens"

// Test-only views of unexported runtime details.

// ToolConflictRetries is toolConflictRetries.
const ToolConflictRetries = toolConflictRetries

// Budgets returns each layer's allocated token budget, by layer id.
func (rt *Runtime) Budgets() map[string]int {
	out := make(map[string]int, len(rt.specs))
	for k, s := range rt.specs {
		out[s.ID] = rt.budgets[k]
	}
	return out
}

// Allocation is allocation with its fields visible to the tests.
type Allocation struct {
	Tokens      []int
	Unallocated int
}

// Allocate is allocate for the tests.
func Allocate(pool int, budgets []Budget) (Allocation, error) {
	a, err := allocate(pool, budgets)
	return Allocation{Tokens: a.tokens, Unallocated: a.unallocated}, err
}

// Tuning holds the thresholds of the anchoring heuristics, which hosts
// cannot set, for tests that pin a behaviour.
type Tuning struct {
	AutoDemoteChurn, AutoPromoteChurn, MaxUpdateShare float64
	MinUpdateTokens, MinChurnSamples, BlindAfter      int
}

// Tuned returns c with the thresholds of t.
func Tuned(c CacheConfig, t Tuning) CacheConfig {
	c.autoDemoteChurn, c.autoPromoteChurn, c.maxUpdateShare = t.AutoDemoteChurn, t.AutoPromoteChurn, t.MaxUpdateShare
	c.minUpdateTokens, c.churnSamples, c.blindReports = t.MinUpdateTokens, t.MinChurnSamples, t.BlindAfter
	return c
}

// Tokenizer returns the runtime's token counter.
func (rt *Runtime) Tokenizer() tokens.Tokenizer { return rt.counter }
