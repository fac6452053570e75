package cachebench

import (
	"fmt"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/layers/history"
)

// historyCapAvailable reports whether this build has the history layer the
// AnchoredHistoryCap strategy needs (layers/history).
func historyCapAvailable() bool { return true }

// historyCapLayer is layers/history capped at maxTokens with its default
// cut rule, by cost: once history would pass the cap it is cut back to the
// point that bills least for provider p's model (never under half the cap,
// never leaving the prefix under the model's minimum), and its front then
// holds still until the next cut. prefix is the tokens ahead of history.
func historyCapLayer(maxTokens int, p Provider, prefix int) (core.AnyLayer, error) {
	l, err := history.Layer(history.Options{MaxTokens: maxTokens, Model: p.Model(), PrefixTokens: prefix})
	if err != nil {
		return nil, fmt.Errorf("cachebench: history cap: %w", err)
	}
	return l, nil
}
