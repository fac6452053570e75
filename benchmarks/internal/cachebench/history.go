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
// low watermark: once history passes the cap it is cut back to the
// watermark in one step and its front then holds still until the next cut.
func historyCapLayer(maxTokens int) (core.AnyLayer, error) {
	l, err := history.Layer(history.Options{MaxTokens: maxTokens})
	if err != nil {
		return nil, fmt.Errorf("cachebench: history cap: %w", err)
	}
	return l, nil
}
