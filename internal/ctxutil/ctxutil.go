// Package ctxutil holds the context helpers strata's network drivers share.
package ctxutil

import (
	"context"
	"time"
)

// Bound gives ctx the timeout d unless d is negative (no bound beyond
// ctx) or ctx already has a deadline, which is then kept whether it is
// sooner or later. The returned CancelFunc must be called, as for
// context.WithTimeout; where nothing was added it does nothing. A zero d
// bounds as context.WithTimeout does, ending the context at once: callers
// replace a zero option with their default before calling.
func Bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d < 0 {
		return ctx, func() {}
	}
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
