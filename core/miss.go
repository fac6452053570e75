package core

import (
	"cmp"
	"hash/maphash"
	"slices"
)

// MissReason is why a provider says its prompt cache could not reuse the
// previous request's prefix (CacheMiss.Reason), normalised across
// providers.
type MissReason string

// The miss reasons providers report.
const (
	// MissModelChanged: the request named another model.
	MissModelChanged MissReason = "model_changed"
	// MissSystemChanged: the system prompt differs.
	MissSystemChanged MissReason = "system_changed"
	// MissToolsChanged: the tool definitions differ.
	MissToolsChanged MissReason = "tools_changed"
	// MissMessagesChanged: the message history diverged.
	MissMessagesChanged MissReason = "messages_changed"
	// MissPreviousNotFound: the provider no longer holds the previous
	// request to compare with (expired or evicted).
	MissPreviousNotFound MissReason = "previous_not_found"
	// MissUnavailable: the provider could not say.
	MissUnavailable MissReason = "unavailable"
)

// CacheMiss is a provider's own account of a cache miss (CacheReport.Miss),
// when the provider gives one (Anthropic's cache diagnostics, OpenAI's
// prompt-cache diagnostics).
type CacheMiss struct {
	Reason MissReason
	// Detail is the provider's own reason code or text, as sent.
	Detail string
	// MissedTokens is the input the provider could not serve from the
	// cache because of the divergence, when it says (0: not given).
	MissedTokens int
	// Pending is true when the provider had not finished comparing the
	// requests: no evidence either way.
	Pending bool
}

// MissCause is what a cache miss is attributed to (MissAttribution.Cause).
type MissCause string

// The causes of a miss.
const (
	// CauseChanged: bytes in the cached prefix changed; Band (and for the
	// anchor band Layer) says where first.
	CauseChanged MissCause = "changed"
	// CauseExpired: the request came after the cache's lifetime
	// (CacheConfig.TTL) since the previous one.
	CauseExpired MissCause = "ttl_expired"
	// CauseBelowMinimum: the cacheable prefix was shorter than the
	// provider caches (CacheConfig.MinPrefixTokens): nothing was lost,
	// nothing had been stored.
	CauseBelowMinimum MissCause = "below_minimum"
	// CauseLookback: the prefix was cached, but the request added more
	// items after its last cache breakpoint than the provider looks back
	// over (Anthropic: 20 content blocks) to find it.
	CauseLookback MissCause = "lookback"
	// CauseEvicted: the prefix was the same bytes, within the lifetime and
	// long enough: the provider dropped it on its own.
	CauseEvicted MissCause = "evicted"
)

// MissAttribution is the runtime's account of a first-round cache miss
// (Usage.Miss of the next assembly, Session.LastMiss): its cause, the band
// and layer whose bytes changed, and the provider's own reason when it
// gave one.
type MissAttribution struct {
	Cause MissCause
	// Band is the first band whose bytes changed (CauseChanged).
	Band Band `json:",omitempty"`
	// Layer is the anchored layer whose pinned bytes changed, when the
	// anchor band is the one.
	Layer string `json:",omitempty"`
	// Provider is the provider's own reason (CacheReport.Miss), "" when it
	// gave none.
	Provider MissReason `json:",omitempty"`
	// PrefixTokens is the cacheable prefix of the request that missed.
	PrefixTokens int `json:",omitempty"`
}

// providerLookback is how many content blocks before a breakpoint
// Anthropic searches for a cached prefix; items stand in for blocks.
const providerLookback = 20

// viewSig fingerprints an assembled view, band by band, for attributing
// a miss of the request made with it to what changed since the previous.
type viewSig struct {
	valid bool
	bands [BandTail + 1]uint64
	// layers are the anchored layers' pinned output, by layer id.
	layers map[string]uint64
	// history's first and last item and its length: the next history
	// extends this one when it starts with the same item and holds the
	// same last item at the same place.
	histFirst uint64
	histLen   int
	// cleared and folded change when tail trimming or a compaction
	// rewrote history in place.
	cleared, folded int
	// prefix is the cacheable prefix in tokens (through history).
	prefix int
}

func itemHash(it *Item) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	writeItemHash(&h, it)
	return h.Sum64()
}

func itemsHash(items []Item) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	for i := range items {
		writeItemHash(&h, &items[i])
	}
	return h.Sum64()
}

// signView fingerprints the view just assembled and keeps the previous
// view's fingerprint beside it.
func (s *Session) signView(v *View) {
	sig := viewSig{valid: true, layers: map[string]uint64{}}
	for b := range v.bands {
		if Band(b) != BandHistory {
			sig.bands[b] = itemsHash(v.bands[b])
		}
	}
	if h := v.bands[BandHistory]; len(h) > 0 {
		sig.histFirst, sig.histLen = itemHash(&h[0]), len(h)
	}
	sig.cleared = len(v.Usage.Cleared)
	if c := v.Usage.Compaction; c != nil {
		sig.folded = c.Folded
	}
	for k, inst := range s.insts {
		if !s.rt.cfg.Cache.Disabled && s.epoch.started && s.epoch.band[k] == BandAnchor {
			sig.layers[inst.spec().ID] = hashEntries(s.epoch.pins[k])
		}
	}
	u := v.Usage
	sig.prefix = u.BandTokens[BandSystem] + u.BandTokens[BandAnchor] + u.BandTokens[BandHistory]
	s.sigPrev, s.sigLast = s.sigLast, sig
}

// attribute says why the request made with the last view missed.
func (s *Session) attribute(r CacheReport) MissAttribution {
	a := MissAttribution{PrefixTokens: s.sigLast.prefix}
	cfg := s.rt.cfg.Cache
	if r.Miss != nil && !r.Miss.Pending {
		a.Provider = r.Miss.Reason
	}
	prev := s.feedback.prevAt
	idle := !prev.IsZero() && !r.At.IsZero() && r.At.Sub(prev) > cmp.Or(s.feedback.prevTTL, cfg.ttl())
	switch {
	case a.Provider == MissModelChanged, a.Provider == MissSystemChanged, a.Provider == MissToolsChanged:
		a.Cause, a.Band = CauseChanged, BandSystem
		return a
	case idle:
		a.Cause = CauseExpired
		return a
	case r.WriteTokens == 0 && s.sigLast.prefix < cfg.minPrefix(), s.feedback.prevShort:
		// A provider that wrote nothing for a prefix this short does not
		// cache it at all; the previous request's was too short to store,
		// so there was nothing to serve this one.
		a.Cause = CauseBelowMinimum
		return a
	}
	if band, layer, ok := s.changedBand(); ok {
		a.Cause, a.Band, a.Layer = CauseChanged, band, layer
		return a
	}
	if s.sigPrev.valid && s.sigLast.histLen-s.sigPrev.histLen > providerLookback {
		a.Cause = CauseLookback
		return a
	}
	a.Cause = CauseEvicted
	return a
}

// changedBand finds the first band of the last view whose bytes differ
// from the view before it, in prefix order.
func (s *Session) changedBand() (Band, string, bool) {
	p, l := &s.sigPrev, &s.sigLast
	if !p.valid || !l.valid {
		return 0, "", false
	}
	if p.bands[BandSystem] != l.bands[BandSystem] {
		return BandSystem, "", true
	}
	if p.bands[BandAnchor] != l.bands[BandAnchor] {
		ids := make([]string, 0, len(l.layers))
		for id := range l.layers {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			if h, ok := p.layers[id]; !ok || h != l.layers[id] {
				return BandAnchor, id, true
			}
		}
		return BandAnchor, "", true
	}
	if p.histLen > 0 && (l.histLen < p.histLen || p.histFirst != l.histFirst || p.cleared != l.cleared || p.folded != l.folded) {
		return BandHistory, "", true
	}
	return 0, "", false
}
