// Package history caps the conversation history a model sees, while
// keeping the front of the history still so the prompt cache keeps
// hitting.
//
// A window that slides by one message per turn moves the front of the
// history every turn, so the provider re-bills all of it every turn (see
// the spec's "where the cache still breaks"). This layer caps by item
// count and by tokens with a high and a low watermark: once the history
// grows past the cap it cuts back to the low watermark in one step, then
// holds that front still while the history grows back to the cap. The
// front is a pure function of the log (no state), so the same log always
// gives the same view.
//
// A function call is never separated from its output: the front moves
// forward past an output whose call it would leave behind.
package history

import (
	"context"
	"fmt"

	"github.com/stratamem/strata/core"
)

// Options configure the cap. At least one of MaxItems and MaxTokens must
// be set.
type Options struct {
	// ID names the layer; "history" by default.
	ID string
	// MaxItems caps the number of history items shown. Zero: no item cap.
	MaxItems int
	// MaxTokens caps the tokens of the history shown. Zero: no token cap.
	MaxTokens int
	// LowWatermark is the share of the cap the history is cut back to
	// when it overflows. Zero means 0.5; it must be in (0, 1).
	LowWatermark float64
}

// Layer returns the history layer. Its only hook is projectHistory; it
// renders nothing.
func Layer(opts Options) (core.Layer[struct{}], error) {
	if opts.ID == "" {
		opts.ID = "history"
	}
	if opts.MaxItems < 0 {
		return core.Layer[struct{}]{}, &core.ConfigError{Code: core.CodeInvalidLayer, Layer: opts.ID, Field: "MaxItems", Reason: "negative"}
	}
	if opts.MaxTokens < 0 {
		return core.Layer[struct{}]{}, &core.ConfigError{Code: core.CodeInvalidLayer, Layer: opts.ID, Field: "MaxTokens", Reason: "negative"}
	}
	if opts.MaxItems == 0 && opts.MaxTokens == 0 {
		return core.Layer[struct{}]{}, &core.ConfigError{Code: core.CodeInvalidLayer, Layer: opts.ID, Field: "MaxItems", Reason: "set MaxItems or MaxTokens"}
	}
	if opts.LowWatermark == 0 {
		opts.LowWatermark = 0.5
	}
	if !(opts.LowWatermark > 0 && opts.LowWatermark < 1) {
		return core.Layer[struct{}]{}, &core.ConfigError{Code: core.CodeInvalidLayer, Layer: opts.ID, Field: "LowWatermark", Reason: fmt.Sprintf("must be in (0,1), got %v", opts.LowWatermark)}
	}
	return core.Layer[struct{}]{
		ID: opts.ID, Name: "History cap", Scope: core.ScopeExecution, Budget: core.Fixed(0),
		Hooks: core.Hooks[struct{}]{ProjectHistory: func(_ context.Context, p core.ProjectHistoryParams[struct{}]) (core.HistoryProjection, error) {
			return core.HistoryProjection{Start: Front(p.History, p.TokensOf, opts)}, nil
		}},
	}, nil
}

// Front returns the index of the first history item to show under opts.
// tokensOf may be nil when only MaxItems is set.
func Front(history []core.Item, tokensOf func(int) int, opts Options) int {
	low := opts.LowWatermark
	if low == 0 {
		low = 0.5
	}
	start := 0
	if opts.MaxItems > 0 {
		start = max(start, steppedFront(len(history), opts.MaxItems, low, func(i int) int { return 1 }))
	}
	if opts.MaxTokens > 0 && tokensOf != nil {
		start = max(start, steppedFront(len(history), opts.MaxTokens, low, tokensOf))
	}
	// Never leave an output without its call.
	for start < len(history) && history[start].Type == core.TypeFunctionCallOutput {
		start++
	}
	return start
}

// steppedFront places the front on a grid of steps of (1-low)*limit units
// of cumulative size: the front moves only when the shown part would
// exceed limit, and then by whole steps, so between moves it holds still.
func steppedFront(n, limit int, low float64, size func(int) int) int {
	total := 0
	for i := 0; i < n; i++ {
		total += size(i)
	}
	if total <= limit {
		return 0
	}
	step := max(1, int(float64(limit)*(1-low)))
	// Smallest k with total - k*step <= limit, measured in units: cut
	// k*step units from the front, rounding up to whole items.
	k := (total - limit + step - 1) / step
	cut := k * step
	acc := 0
	for i := 0; i < n; i++ {
		if acc >= cut {
			return i
		}
		acc += size(i)
	}
	return n
}
