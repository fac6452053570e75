package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"strings"
	"time"

	"github.com/stratamem/strata/projector"
)

// ReanchorReason says why an epoch started (EpochUsage.ReanchorReason).
type ReanchorReason string

// Re-anchor reasons.
const (
	// ReasonInitial: the run's first assembly.
	ReasonInitial ReanchorReason = "initial"
	// ReasonCacheMiss: the provider reported a miss on the first round of
	// a call; the cache is already lost.
	ReasonCacheMiss ReanchorReason = "cache-miss"
	// ReasonCacheExpired: the host said the cache is lost before the
	// request was sent (Session.ExpectColdCache), e.g. after an idle time
	// longer than the provider's cache lifetime.
	ReasonCacheExpired ReanchorReason = "cache-expired"
	// ReasonMaxAge: the epoch reached CacheConfig.MaxEpochAssemblies.
	ReasonMaxAge ReanchorReason = "max-age"
	// ReasonUpdatePressure: the context updates outgrew half of what they
	// are weighed against (and 256 tokens).
	ReasonUpdatePressure ReanchorReason = "update-pressure"
	// ReasonUpdatesOverBudget: the context updates did not fit the token
	// budget; re-anchoring folds them into fresh pins instead of dropping
	// them.
	ReasonUpdatesOverBudget ReanchorReason = "updates-over-budget"
	// ReasonBandChange: a pinned layer must change band (its recall
	// returned state, so it can no longer be pinned).
	ReasonBandChange ReanchorReason = "band-change"
	// ReasonHistoryCut: the history front moved past a published update;
	// the history cache is lost with it, and an update is never dropped.
	ReasonHistoryCut ReanchorReason = "history-cut"
)

// UpdateAction is what a context update does to a pinned layer's block
// (LayerUsage.Update, the action attribute of an <update> element).
type UpdateAction string

// Update actions.
const (
	// ActionReplace: the layer's fresh output differs from its pin.
	ActionReplace UpdateAction = "replace"
	// ActionAdd: the layer had nothing when the epoch pinned it.
	ActionAdd UpdateAction = "add"
	// ActionRetract: the layer has nothing now.
	ActionRetract UpdateAction = "retract"
)

// retractText is what a retraction says.
const retractText = "This block no longer applies. Disregard it."

// epoch is a run of assemblies sharing one set of pins.
type epoch struct {
	started bool
	n       int
	id      string
	age     int // assemblies served by this epoch so far
	reason  ReanchorReason
	band    []Band                    // per layer, for this epoch
	pins    [][]projector.Entry[Item] // per anchored layer
	pinHash []uint64
	memo    []deltaMemo

	// Inline updates (the default): what each anchored layer last
	// published, and the update messages kept in history.
	lastHash        []uint64
	lastOut         [][]projector.Entry[Item]
	published       []publishedUpdate
	publishedTokens int
}

// publishedUpdate is a context-updates message kept in the conversation
// at the place it was published: before the log item at index at. An
// update published while a tool round trip is open at the end of the log
// (open; seg is where that round trip's items start) has no place yet:
// it takes one when the round trip closes (placeUpdate).
type publishedUpdate struct {
	at    int
	seg   int
	open  bool
	entry projector.Entry[Item]
}

// newUpdate is an inline update published now, at the end of the log. A
// host may assemble between recording a function call and appending its
// output: placed there, the update would stand between the call and its
// output for the rest of the epoch, a shape providers reject (Anthropic
// wants a tool_use answered by tool_result blocks first in the next user
// turn). Such an update is marked open instead, to be placed after the
// outputs of the calls open at that point once they are in (placeUpdate).
//
// Only the trailing round trip counts: the items after the newest message
// that is neither the assistant's nor a call or output, so that a call
// left unanswered before a user message does not hold later updates back.
func (s *Session) newUpdate(e projector.Entry[Item]) publishedUpdate {
	p := publishedUpdate{at: len(s.log), seg: len(s.log), entry: e}
	for p.seg > 0 && inRoundTrip(s.log[p.seg-1].Item) {
		p.seg--
	}
	open := map[string]bool{}
	for _, e := range s.log[p.seg:] {
		switch e.Item.Type {
		case TypeFunctionCall:
			open[e.Item.CallID] = true
		case TypeFunctionCallOutput:
			delete(open, e.Item.CallID)
		}
	}
	p.open = len(open) > 0
	return p
}

// inRoundTrip reports whether it can belong to a tool round trip: a call,
// an output, or the assistant's text around its calls.
func inRoundTrip(it Item) bool {
	return it.Type != TypeMessage || it.Role == RoleAssistant
}

// placeUpdate places an open update, when it can: at the first point at
// or after where it was published at which no call of its round trip is
// still waiting for its output, or after the first message that ends the
// round trip without the output (a user message). It reports
// false while the round trip is still open at the end of the log; the
// update is then left out of the view, which ends in an unanswered call
// and so is not a request a provider accepts anyway.
//
// After the outputs rather than before the call: the place depends only
// on the log up to it, which never changes once written, so the same log
// gives the same bytes on every later assembly, and each view is a prefix
// of the next, from the first view the call is in through the one the
// output arrives in and on. Before the call would rewrite the part of an
// earlier view the call was already in, and put the update ahead of the
// model's request it played no part in.
func (s *Session) placeUpdate(p *publishedUpdate) bool {
	if !p.open {
		return true
	}
	waiting := map[string]bool{}
	for q := p.seg; ; q++ {
		if q >= p.at && (len(waiting) == 0 || q > p.at && !inRoundTrip(s.log[q-1].Item)) {
			p.at, p.open = q, false
			return true
		}
		if q == len(s.log) {
			return false
		}
		switch it := &s.log[q].Item; it.Type {
		case TypeFunctionCall:
			waiting[it.CallID] = true
		case TypeFunctionCallOutput:
			delete(waiting, it.CallID)
		}
	}
}

// deltaMemo remembers a layer's last renderDelta answer so an unchanged
// drift does not call the hook every turn.
type deltaMemo struct {
	valid bool
	prev  uint64
	hash  uint64
	text  string
}

// layerStats is what the runtime observes of a layer across the run.
type layerStats struct {
	assemblies int
	changes    int
	lastHash   uint64
	hasLast    bool
	rebill     int
	stateful   bool
	changedNow bool // the output changed in the current assembly
}

func (st *layerStats) churn() float64 {
	if st.assemblies < 2 {
		return 0
	}
	return float64(st.changes) / float64(st.assemblies-1)
}

// CacheReport is what the provider said about the prompt cache for one
// model call. Provider adapters build it from the response's usage.
type CacheReport struct {
	// Reported is false when the response carried no cache figures.
	Reported bool
	// ReadTokens were served from the cache; WriteTokens were written to
	// it; UncachedTokens were neither.
	ReadTokens, WriteTokens, UncachedTokens int
	// FirstRound marks the first model call of a host turn. Later rounds
	// replay the same prefix and hit whatever the first did, so only the
	// first round's figures can reveal a lost cache.
	FirstRound bool
	// At is when the request was sent; zero when the host does not say.
	// Hosts read it back (LastCacheReport) to tell how long the provider's
	// cache has been idle.
	At time.Time
	// TTL is the cache lifetime the request asked for (provider.Request's
	// CacheTTL, e.g. Anthropic's one hour); zero means CacheConfig.TTL.
	// A miss after a pause within it is not an expiry.
	TTL time.Duration
	// Miss is the provider's account of a miss, when it gave one; nil
	// otherwise (no diagnostics asked for, or no divergence found).
	Miss *CacheMiss
}

// cacheFeedback is the runtime's reading of the provider's reports.
type cacheFeedback struct {
	pendingMiss bool
	// pendingCold is set by ExpectColdCache.
	pendingCold bool
	misses      int // consecutive first-round misses
	unreported  int // consecutive reports without figures
	blind       bool
	last        *CacheReport
	// prevAt is when the previous reported request was sent; miss the
	// attribution of the last first-round miss, for the next Usage.
	prevAt time.Time
	// prevTTL is the lifetime that request asked for (zero: the config's).
	prevTTL time.Duration
	miss    *MissAttribution
	cost    *RequestCost
	// prevShort is true when the previous request stored nothing and its
	// prefix was under the provider's minimum.
	prevShort bool
}

// ReportCache feeds the provider's cache figures of the last model call
// back to the runtime. Every first-round miss is attributed to its cause
// (Usage.Miss of the next assembly). A miss the runtime cannot explain
// (the same bytes, within the TTL: an eviction) re-anchors the next
// assembly (the cache is lost anyway, so fresh pins cost nothing); an
// expiry, a history the runtime cut or folded itself, and a prefix under
// the provider's minimum do not (the request that missed already wrote
// the prefix again, or nothing is cached at all). A provider that
// reports no figures three times in a row, or misses that many first
// rounds in a row, is marked blind and no longer consulted; epoch age and
// update pressure still bound the epoch.
func (s *Session) ReportCache(r CacheReport) {
	fb := &s.feedback
	fb.last = &r
	if s.rt.cfg.Cache.Disabled || fb.blind {
		return
	}
	if !r.Reported {
		fb.unreported++
		if fb.unreported >= s.rt.cfg.Cache.blindAfter() {
			fb.blind = true
			fb.pendingMiss = false
		}
		return
	}
	fb.unreported = 0
	if s.last != nil {
		fb.cost = costOf(s.rt.cfg.Cache.Prices, s.last.BandTokens, r)
	}
	if !r.FirstRound {
		return
	}
	missed := r.ReadTokens == 0 && r.WriteTokens+r.UncachedTokens > 0 && s.sigPrev.valid
	var a MissAttribution
	if missed {
		a = s.attribute(r)
		fb.miss = &a
	}
	if !r.At.IsZero() {
		fb.prevAt, fb.prevTTL = r.At, r.TTL
	}
	fb.prevShort = r.ReadTokens+r.WriteTokens == 0 && s.sigLast.prefix < s.rt.cfg.Cache.minPrefix()
	// The first request of an epoch writes its new prefix: a low read
	// there is expected, not a lost cache.
	if s.epoch.age <= 1 {
		return
	}
	switch {
	case missed && a.Cause == CauseBelowMinimum:
		// Nothing was stored to lose: neither a reason to re-anchor nor
		// evidence that the provider reports nothing useful.
		return
	case missed && (a.Cause == CauseExpired || a.Cause == CauseChanged && a.Band >= BandHistory):
		// An expiry is not a drifted byte, and a history the runtime cut,
		// folded or trimmed itself is an expected miss: either way the
		// request that missed wrote the prefix again, so re-anchoring now
		// would write it a second time. Neither counts toward blindness.
		fb.misses = 0
		return
	}
	if r.ReadTokens == 0 && r.WriteTokens+r.UncachedTokens > 0 {
		fb.misses++
		if fb.misses >= s.rt.cfg.Cache.blindAfter() {
			fb.blind = true
			fb.pendingMiss = false
			return
		}
		fb.pendingMiss = true
		return
	}
	fb.misses = 0
}

// LastCacheReport returns the last report given to ReportCache, and false
// when there was none.
func (s *Session) LastCacheReport() (CacheReport, bool) {
	if s.feedback.last == nil {
		return CacheReport{}, false
	}
	return *s.feedback.last, true
}

// ExpectColdCache tells the runtime that the provider's cache is already
// lost for the next request, typically because the run has been idle for
// longer than the provider's cache lifetime (agent.Options.CacheLifetime
// does this). The next assembly then re-anchors (ReasonCacheExpired),
// folding whatever drifted into fresh pins in the one full write that
// request costs anyway. Without it the request writes the old pins and
// their updates, the provider reports the miss, and the assembly after it
// re-anchors and writes the prompt a second time. Ignored when anchoring
// is off. Calling it when the cache is in fact warm costs one full write.
func (s *Session) ExpectColdCache() {
	if s.rt.cfg.Cache.Disabled {
		return
	}
	s.feedback.pendingCold = true
}

// arrangement is the banded layer output of one assembly.
type arrangement struct {
	anchor, live, updates, tail []projector.Entry[Item]
	// anchorOf and liveOf give the layer of each anchor and live entry,
	// to attribute what the projection leaves out.
	anchorOf, liveOf []int
	actions          []UpdateAction // per layer: update action or ""
	served           []Served
	updateTokens     int
}

func (a *arrangement) addAnchor(k int, entries []projector.Entry[Item]) {
	a.anchor = append(a.anchor, entries...)
	for range entries {
		a.anchorOf = append(a.anchorOf, k)
	}
}

func (a *arrangement) addLive(k int, entries []projector.Entry[Item]) {
	a.live = append(a.live, entries...)
	for range entries {
		a.liveOf = append(a.liveOf, k)
	}
}

var hashSeed = maphash.MakeSeed()

// hashEntries fingerprints a layer's output to detect drift and churn.
func hashEntries(entries []projector.Entry[Item]) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	// A 0 ends each field, a 1 each item.
	field := func(s string, end byte) {
		h.WriteString(s)
		h.WriteByte(end)
	}
	for i := range entries {
		it := &entries[i].Item
		field(string(it.Type), 0)
		field(it.ID, 0)
		field(string(it.Role), 0)
		for _, p := range it.Content {
			field(p.Type, 0)
			field(p.Text, 0)
		}
		field(it.CallID, 0)
		field(it.Name, 0)
		field(it.Arguments, 0)
		field(it.Output, 1)
	}
	return h.Sum64()
}

// observe updates each layer's churn statistics with this assembly's
// fresh output.
func (s *Session) observe(outs []layerOutput) []uint64 {
	hashes := make([]uint64, len(outs))
	for k := range outs {
		if s.states[k].disabled {
			continue
		}
		st := &s.stats[k]
		h := hashEntries(outs[k].entries)
		hashes[k] = h
		if outs[k].failed {
			// A failed recall says nothing about the layer's output: it
			// is neither a change nor a sample of its churn.
			st.changedNow = false
			continue
		}
		st.changedNow = st.hasLast && h != st.lastHash
		if st.changedNow {
			st.changes++
		}
		st.assemblies++
		st.lastHash, st.hasLast = h, true
		if outs[k].stateful {
			st.stateful = true
		}
	}
	return hashes
}

// reanchorReason says whether this assembly must start a new epoch before
// rendering.
func (s *Session) reanchorReason(outs []layerOutput) ReanchorReason {
	ep := &s.epoch
	switch {
	case !ep.started:
		return ReasonInitial
	case s.feedback.pendingMiss:
		return ReasonCacheMiss
	case s.feedback.pendingCold:
		return ReasonCacheExpired
	case ep.age >= s.rt.cfg.Cache.maxAssemblies():
		return ReasonMaxAge
	}
	for k := range outs {
		if ep.band[k] == BandAnchor && outs[k].stateful {
			return ReasonBandChange
		}
	}
	return ""
}

// bandFor decides a layer's band for a new epoch.
func (s *Session) bandFor(k int) Band {
	spec := s.insts[k].spec()
	st := &s.stats[k]
	switch {
	case spec.Placement == PlacementTail:
		return BandTail
	case spec.Placement == PlacementLive, st.stateful:
		return BandLive
	case spec.Placement == PlacementAnchor:
		return BandAnchor
	}
	// Auto: hysteresis between the two thresholds keeps the band it had.
	prev := BandAnchor
	if s.epoch.started {
		prev = s.epoch.band[k]
	}
	cfg := s.rt.cfg.Cache
	if st.assemblies < cfg.minChurnSamples() {
		return prev
	}
	churn := st.churn()
	switch {
	case churn >= cfg.demote():
		return BandLive
	case churn <= cfg.promote():
		return BandAnchor
	}
	return prev
}

// startEpoch pins this assembly's fresh output of every anchored layer.
func (s *Session) startEpoch(reason ReanchorReason, outs []layerOutput, hashes []uint64) {
	ep := &s.epoch
	n := 0
	if ep.started {
		n = ep.n + 1
	}
	band := make([]Band, len(s.insts))
	for k := range s.insts {
		band[k] = s.bandFor(k)
	}
	*ep = epoch{started: true, n: n, reason: reason, band: band,
		pins: make([][]projector.Entry[Item], len(s.insts)), pinHash: make([]uint64, len(s.insts)),
		memo: make([]deltaMemo, len(s.insts)), lastHash: make([]uint64, len(s.insts)),
		lastOut: make([][]projector.Entry[Item], len(s.insts))}
	if s.info.ThreadID != "" {
		ep.id = fmt.Sprintf("t:%s#%d", s.info.ThreadID, n)
	} else {
		ep.id = fmt.Sprintf("r:%s#%d", s.info.RunID, n)
	}
	for k := range s.insts {
		if band[k] == BandAnchor {
			ep.pins[k] = outs[k].entries
			ep.pinHash[k] = hashes[k]
			ep.lastHash[k] = hashes[k]
			ep.lastOut[k] = outs[k].entries
		}
	}
	// The miss is served. The count of consecutive misses stays: a
	// provider that misses again right after fresh pins is not caching.
	s.feedback.pendingMiss = false
	s.feedback.pendingCold = false
}

// arrange bands the layer output of one assembly: pinned anchors, live
// layers and the context updates for drifted anchors.
func (s *Session) arrange(ctx context.Context, outs []layerOutput, hashes []uint64) arrangement {
	a := arrangement{actions: make([]UpdateAction, len(s.insts)), served: make([]Served, len(s.insts))}
	inline := !s.rt.cfg.Cache.TrailingUpdates
	if s.rt.cfg.Cache.Disabled {
		for k := range outs {
			if s.insts[k].spec().Placement == PlacementTail {
				a.tail = append(a.tail, outs[k].fresh()...)
			} else {
				a.addAnchor(k, outs[k].fresh())
			}
			a.served[k] = outs[k].served
		}
		return a
	}
	ep := &s.epoch
	var b strings.Builder
	for k := range outs {
		if ep.band[k] == BandTail {
			a.tail = append(a.tail, outs[k].fresh()...)
			a.served[k] = outs[k].served
			continue
		}
		if ep.band[k] == BandLive {
			a.addLive(k, outs[k].fresh())
			a.served[k] = outs[k].served
			continue
		}
		pin := ep.pins[k]
		a.addAnchor(k, pin)
		a.served[k] = ServedPinned
		if len(pin) == 0 {
			a.served[k] = ServedNone
		}
		if s.states[k].disabled || (outs[k].failed && inline) {
			// A failed recall leaves the pin, and what was published
			// since, standing: the layer's last good output is what the
			// model should keep reading, not a retraction. (Trailing
			// updates restate the last good output's drift below: its
			// entries are the fresh output of a failed recall.)
			continue
		}
		fresh := outs[k].entries
		var action UpdateAction
		var text string
		if inline {
			// Publish what changed since the layer's last publication
			// (or its pin), once: the message stays in the conversation.
			if hashes[k] == ep.lastHash[k] {
				continue
			}
			prev := ep.lastOut[k]
			switch {
			case len(fresh) == 0:
				action, text = ActionRetract, retractText
			case len(pin) == 0 && ep.lastHash[k] == ep.pinHash[k]:
				action, text = ActionAdd, joinText(fresh)
			case len(prev) == 0:
				action, text = ActionReplace, joinText(fresh)
			default:
				action, text = ActionReplace, s.delta(ctx, k, prev, fresh, hashes[k])
			}
			ep.lastHash[k], ep.lastOut[k] = hashes[k], fresh
		} else {
			// Trailing: restate the drift from the pin every turn.
			if hashes[k] == ep.pinHash[k] {
				continue
			}
			switch {
			case len(pin) == 0:
				action, text = ActionAdd, joinText(fresh)
			case len(fresh) == 0:
				action, text = ActionRetract, retractText
			default:
				action, text = ActionReplace, s.delta(ctx, k, pin, fresh, hashes[k])
			}
		}
		a.actions[k] = action
		if b.Len() == 0 {
			fmt.Fprintf(&b, "<context_updates epoch=%q>\nThese supersede the blocks with the same layer id earlier in this context.\nWhere they disagree, these are correct.\n", ep.id)
		}
		fmt.Fprintf(&b, "<update layer=%q action=%q>", s.insts[k].spec().ID, action)
		if strings.Contains(text, "\n") {
			b.WriteString("\n" + text + "\n")
		} else {
			b.WriteString(text)
		}
		b.WriteString("</update>\n")
	}
	if b.Len() > 0 {
		b.WriteString("</context_updates>")
		e := s.rt.entry(DeveloperMessage(b.String()))
		e.Group, e.Opens = "", false
		a.updateTokens = e.Tokens
		if inline {
			ep.published = append(ep.published, s.newUpdate(e))
			ep.publishedTokens += e.Tokens
		} else {
			a.updates = []projector.Entry[Item]{e}
		}
	}
	return a
}

// pressureBase is what the update volume is weighed against: the anchor
// band for trailing updates (re-sent every turn, they should stay small
// next to what they correct); the whole cached prefix, anchors and history,
// for inline updates (cached like the history around them, they only
// cost context space, while re-anchoring re-bills that whole prefix).
func (s *Session) pressureBase(a arrangement) int {
	if s.rt.cfg.Cache.TrailingUpdates {
		return sumTokens(a.anchor)
	}
	return sumTokens(a.anchor) + s.logTokens
}

// pressure is the update volume the epoch carries: the published updates
// (inline) or this turn's message (trailing).
func (s *Session) pressure(a arrangement) int {
	if s.rt.cfg.Cache.TrailingUpdates {
		return a.updateTokens
	}
	return s.epoch.publishedTokens
}

// withUpdates interleaves the epoch's published updates into the projected
// history at the places they were published. start is the log index the
// history begins at, -1 when a projectHistory hook replaced the items (the
// updates then go at the end). An update waiting for its tool round trip
// to close (placeUpdate) is left out, with every update published after
// it. It returns the history, the index of the first update in it (-1
// without updates), and cut=true when an update would fall before the
// history's start.
func (s *Session) withUpdates(history []projector.Entry[Item], start int) ([]projector.Entry[Item], int, bool) {
	pub := s.epoch.published[:s.placedUpdates()]
	if len(pub) == 0 {
		return history, -1, false
	}
	out := make([]projector.Entry[Item], 0, len(history)+len(pub))
	if start < 0 {
		out = append(out, history...)
		first := len(out)
		for _, p := range pub {
			out = append(out, p.entry)
		}
		return out, first, false
	}
	first := -1
	next := 0
	for _, p := range pub {
		pos := p.at - start
		if pos < 0 {
			return history, -1, true
		}
		out = append(out, history[next:pos]...)
		next = pos
		if first < 0 {
			first = len(out)
		}
		out = append(out, p.entry)
	}
	out = append(out, history[next:]...)
	return out, first, false
}

// placedUpdates places what it can of the epoch's open updates and
// returns how many of the published updates, in order, have a place.
func (s *Session) placedUpdates() int {
	pub := s.epoch.published
	for i := range pub {
		if !s.placeUpdate(&pub[i]) {
			return i
		}
	}
	return len(pub)
}

// delta asks the layer's renderDelta for a compact change, falling back to
// the full fresh text when it has none, fails, panics or times out.
func (s *Session) delta(ctx context.Context, k int, pin, fresh []projector.Entry[Item], hash uint64) string {
	m := &s.epoch.memo[k]
	prevHash := hashEntries(pin)
	if m.valid && m.hash == hash && m.prev == prevHash {
		return m.text
	}
	text, kind, err := s.insts[k].renderDelta(ctx, itemsOf(pin), itemsOf(fresh))
	if err != nil {
		s.diagnose(s.insts[k].spec().ID, HookRenderDelta, kind, err)
	}
	if err != nil || text == "" {
		text = joinText(fresh)
	}
	*m = deltaMemo{valid: true, prev: prevHash, hash: hash, text: text}
	return text
}

func joinText(entries []projector.Entry[Item]) string {
	if len(entries) == 1 {
		return entries[0].Item.Text()
	}
	parts := make([]string, len(entries))
	for i := range entries {
		parts[i] = entries[i].Item.Text()
	}
	return strings.Join(parts, "\n")
}

// EpochUsage reports the epoch an assembly belonged to.
type EpochUsage struct {
	ID string
	// Age counts the assemblies of the epoch, this one included.
	Age int
	// AnchorTokens is the size of the pinned anchor band.
	AnchorTokens int
	// UpdateTokens is the size of the context updates the epoch carries:
	// every update message kept in the conversation (inline), or this
	// turn's trailing message.
	UpdateTokens int
	// Updates counts the update messages kept in the conversation.
	Updates int
	// ReanchorReason says why the epoch started.
	ReanchorReason ReanchorReason
	// Reanchored is true when this assembly started the epoch.
	Reanchored bool
	// Blind is true once the provider's cache figures are ignored.
	Blind bool
}

// Breakpoint marks where a provider adapter should ask for a cache entry:
// after the item at Index of View.Items, the last item of Band.
type Breakpoint struct {
	Band  Band
	Index int
}

// breakpoints are placed at the end of the system prompt (with the tools
// before it), of the anchor band and of history: never after the volatile
// bands.
func (v *View) computeBreakpoints() {
	pos := 0
	for b, items := range v.bands {
		pos += len(items)
		switch Band(b) {
		case BandSystem, BandAnchor, BandHistory:
			if len(items) > 0 {
				v.Breakpoints = append(v.Breakpoints, Breakpoint{Band: Band(b), Index: pos - 1})
			}
		}
	}
}

// prefixHash is sha256 over the canonical bytes of the system items and
// the tool schemas: it changes exactly when the stable prefix does.
func prefixHash(system []projector.Entry[Item], tools []ToolSpec) string {
	doc := struct {
		System []Item     `json:"system"`
		Tools  []ToolSpec `json:"tools"`
	}{System: itemsOf(system), Tools: tools}
	raw, err := marshalNoEscape(doc)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(canonicalJSON(raw))
	return hex.EncodeToString(sum[:])
}
