package core

import (
	"cmp"
	"fmt"
	"time"
)

// CacheConfig tunes prompt-cache anchoring. The zero value is anchoring on
// with the defaults below.
type CacheConfig struct {
	// Disabled turns anchoring off: every layer renders before history in
	// one band, nothing is pinned, and the view asks for no cache
	// breakpoints.
	Disabled bool
	// MaxEpochAssemblies re-anchors an epoch after this many assemblies.
	// Zero means 100.
	MaxEpochAssemblies int
	// TrailingUpdates restates every drifted anchor in one message after
	// the live band on every turn, so the model always finds the latest
	// drift in one place, next to the live band. By default (false) an
	// update is published once, at the end of history before the live
	// band (after an open tool round trip's outputs, never between a
	// call and its output), and stays in the conversation there for the
	// rest of the epoch:
	// written to the cache once and read from it after, instead of
	// re-billed every turn. A retraction then stands as long as its pin
	// does without being repeated.
	TrailingUpdates bool
	// HistoryStep is the share of the token budget by which history is
	// cut when it overflows (Policy.TruncateStep), so the history front
	// holds still between cuts instead of sliding, and re-billing, every
	// turn. Zero means 0.25; a negative value cuts item by item. It applies
	// when anchoring is on, the policy truncates and sets no step itself.
	// The step never drops the newest message that fits (see
	// projector.Policy.TruncateStep).
	HistoryStep float64
	// TTL is the provider's cache lifetime, for attributing a miss to its
	// expiry (MissAttribution); zero means 5 minutes (Anthropic's default
	// and OpenAI's usual retention).
	TTL time.Duration
	// MinPrefixTokens is the shortest prefix the provider caches, for
	// attributing a miss to a prefix under it; zero means 1,024 (the
	// minimum of Anthropic's Sonnet and Opus models and OpenAI's).
	MinPrefixTokens int
	// Prices bill each reported request by band (Usage.Cost); the zero
	// value is Anthropic's Sonnet list price.
	Prices Prices

	// The thresholds of the anchoring heuristics. Hosts get the defaults
	// (zero means the default); the tests set them to pin a behaviour.

	// autoDemoteChurn moves an auto layer to the live band at an epoch
	// boundary when its churn is at or above it. Zero means 0.4.
	autoDemoteChurn float64
	// autoPromoteChurn moves an auto layer back to the anchor band when its
	// churn is at or below it. Zero means 0.1.
	autoPromoteChurn float64
	// maxUpdateShare re-anchors when the context updates grow past this
	// share of what they are weighed against: for inline updates (cached
	// once written, so they only cost context space) all the updates of
	// the epoch against the anchors and history they sit in; for trailing
	// updates (re-sent every turn) this turn's message against the anchor
	// band. Zero means 0.5.
	maxUpdateShare float64
	// minUpdateTokens is a floor under the update-pressure threshold, so a
	// small anchor band is not re-anchored for every short update. Zero
	// means 256.
	minUpdateTokens int
	// churnSamples is how many assemblies an auto layer must have been
	// observed before its churn moves it. Zero means 4.
	churnSamples int
	// blindReports marks the provider blind after this many consecutive
	// reports without cache figures, or first-round misses. Zero means 3.
	blindReports int
}

func (c CacheConfig) validate() error {
	bad := func(field, reason string) error {
		return &ConfigError{Code: CodeInvalidCacheConfig, Field: "Cache." + field, Reason: reason}
	}
	if c.MaxEpochAssemblies < 0 {
		return bad("MaxEpochAssemblies", fmt.Sprintf("negative (%d)", c.MaxEpochAssemblies))
	}
	if c.maxUpdateShare < 0 || c.maxUpdateShare != c.maxUpdateShare {
		return bad("MaxUpdateShare", fmt.Sprintf("must be positive, got %v", c.maxUpdateShare))
	}
	if c.HistoryStep >= 1 || c.HistoryStep != c.HistoryStep {
		return bad("HistoryStep", fmt.Sprintf("must be below 1, got %v", c.HistoryStep))
	}
	if c.minUpdateTokens < 0 {
		return bad("MinUpdateTokens", fmt.Sprintf("negative (%d)", c.minUpdateTokens))
	}
	if c.churnSamples < 0 {
		return bad("MinChurnSamples", fmt.Sprintf("negative (%d)", c.churnSamples))
	}
	if c.blindReports < 0 {
		return bad("BlindAfter", fmt.Sprintf("negative (%d)", c.blindReports))
	}
	d, p := c.demote(), c.promote()
	if !(d > 0 && d <= 1) {
		return bad("AutoDemoteChurn", fmt.Sprintf("must be in (0,1], got %v", c.autoDemoteChurn))
	}
	if !(p >= 0 && p < d) {
		return bad("AutoPromoteChurn", fmt.Sprintf("must be in [0, AutoDemoteChurn), got %v", c.autoPromoteChurn))
	}
	return nil
}

// The zero value of each tuning field means its default.

func (c CacheConfig) demote() float64      { return cmp.Or(c.autoDemoteChurn, 0.4) }
func (c CacheConfig) promote() float64     { return cmp.Or(c.autoPromoteChurn, 0.1) }
func (c CacheConfig) maxAssemblies() int   { return cmp.Or(c.MaxEpochAssemblies, 100) }
func (c CacheConfig) updateShare() float64 { return cmp.Or(c.maxUpdateShare, 0.5) }
func (c CacheConfig) historyStep() float64 { return cmp.Or(c.HistoryStep, 0.25) }
func (c CacheConfig) blindAfter() int      { return cmp.Or(c.blindReports, 3) }
func (c CacheConfig) ttl() time.Duration   { return cmp.Or(c.TTL, 5*time.Minute) }
func (c CacheConfig) minPrefix() int       { return cmp.Or(c.MinPrefixTokens, 1024) }

// pressureLimit is the update size past which the epoch re-anchors.
func (c CacheConfig) pressureLimit(anchorTokens int) float64 {
	floor := cmp.Or(c.minUpdateTokens, 256)
	return max(float64(floor), c.updateShare()*float64(anchorTokens))
}

func (c CacheConfig) minChurnSamples() int { return cmp.Or(c.churnSamples, 4) }
