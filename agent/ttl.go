package agent

import (
	"cmp"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/pricing"
)

// TTLInput is what a cache-lifetime rule (Options.CacheTTL) sees at the
// start of a turn.
type TTLInput struct {
	// Session is the session the turn runs on.
	Session *core.Session
	// View is the turn's first view, assembled.
	View *core.View
	// Idle is the time since the session's last model call; zero on its
	// first.
	Idle time.Duration
}

// TTLByCost is the cache-lifetime rule strata ships: it asks for the
// provider's extended lifetime (Anthropic's one hour, OpenAI's 24-hour
// retention) for a turn when that bills less than letting the cache
// expire over the pause expected after the turn and writing the prefix
// again (pricing.Model.BestTTL). With the extended lifetime everything
// the turn writes costs the extended write premium (2x base on
// Anthropic, against 1.25x) and the prefix is read back at 0.1x after
// the pause; with the default it is written again at 1.25x.
//
// pause forecasts the pause after the turn; nil takes the pause before it
// (TTLInput.Idle) as the forecast, which is what the loop can see by
// itself. What the turn writes is estimated as the view's tokens not
// cached by the session's previous request (all of them on its first),
// and what the pause would make it rewrite as the view's prefix through
// history. A pause within the default five minutes keeps the default.
func TTLByCost(m pricing.Model, pause func(TTLInput) time.Duration) func(TTLInput) time.Duration {
	return func(in TTLInput) time.Duration {
		p := in.Idle
		if pause != nil {
			p = pause(in)
		}
		if p <= pricing.TTL5m.Duration() || in.View == nil || in.View.Usage == nil {
			return 0
		}
		u := in.View.Usage
		carried := u.BandTokens[core.BandSystem] + u.BandTokens[core.BandAnchor] + u.BandTokens[core.BandHistory]
		written := u.Total
		// Within the lifetime the previous request asked for, what it
		// cached is read back; past it (a cold cache) the turn writes
		// everything.
		if last, ok := in.Session.LastCacheReport(); ok && last.Reported && in.Idle <= cmp.Or(last.TTL, pricing.TTL5m.Duration()) {
			written = max(0, u.Total-last.ReadTokens-last.WriteTokens)
		}
		if ttl := m.BestTTL(written, carried, p); ttl != pricing.TTL5m {
			return ttl.Duration()
		}
		return 0
	}
}
