package core

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/stratamem/strata/projector"
	"github.com/stratamem/strata/tokens"
)

// View is one assembled model input: the items band by band, with what
// the provider adapters and the host need to know about them. The history
// band shares memory with the session's log; treat a View as read-only
// and do not keep it past the next Record.
type View struct {
	// Tools are the provided functions to offer the model, sorted.
	Tools []ToolSpec
	bands [6][]Item
	// Usage is the report of this assembly: its turn, the token count of
	// the view (Total) and of each band (BandTokens), per layer.
	Usage *Usage
	// Breakpoints say where a provider adapter should ask for the cache:
	// the end of the system prompt, of the anchor band and of history,
	// never after the volatile bands. None when anchoring is disabled.
	Breakpoints []Breakpoint
	// PrefixHash is sha256 over the canonical bytes of the system items
	// and tool schemas, hex.
	PrefixHash string
	// updates is the context-updates message published by this assembly.
	updates []Item
}

// Updates returns the context-updates message this assembly published: the
// trailing message after the live band, or (inline, the default) the
// message appended to the end of history this turn (or, when a tool round
// trip is open there, placed after its outputs once they are in; see
// Session.Assemble). Empty when no anchored layer drifted since its last
// publication.
func (v *View) Updates() []Item { return v.updates }

// Band returns the items of band b.
func (v *View) Band(b Band) []Item { return v.bands[b] }

// Items returns the whole view in order, in a new slice.
func (v *View) Items() []Item {
	out := make([]Item, 0, v.Len())
	for _, b := range v.bands {
		out = append(out, b...)
	}
	return out
}

// All iterates over the view in order without copying it.
func (v *View) All() iter.Seq2[Band, Item] {
	return func(yield func(Band, Item) bool) {
		for b, items := range v.bands {
			for _, it := range items {
				if !yield(Band(b), it) {
					return
				}
			}
		}
	}
}

// Len is the number of items in the view.
func (v *View) Len() int {
	n := 0
	for _, b := range v.bands {
		n += len(b)
	}
	return n
}

// Served says where a layer's output in a view came from.
type Served string

// Served values.
const (
	// ServedFresh: rendered by this assembly's recall.
	ServedFresh Served = "fresh"
	// ServedPinned: the epoch's pinned bytes, re-sent.
	ServedPinned Served = "pinned"
	// ServedStale: an eventual recall had not answered; its previous
	// output was served.
	ServedStale Served = "stale"
	// ServedNone: the layer contributed nothing (no output, a failed hook,
	// or disabled).
	ServedNone Served = "none"
)

// LayerUsage reports one layer's part in an assembly.
type LayerUsage struct {
	LayerID   string
	Slot      Slot
	Placement Placement
	// Band is where the output landed: BandAnchor, BandLive or BandTail.
	Band   Band
	Served Served
	// Tokens the layer's output occupies in the view; Budget is its
	// allocation.
	Tokens int
	Budget int
	Items  int
	// Truncated counts items cut because the output exceeded the budget.
	Truncated int
	// Dropped counts items the projection left out because the view's
	// token budget could not hold them (possible only with an Unlimited
	// Config.LayerPool); Tokens and Items count only what was shown.
	Dropped int
	// Disabled is true for a layer whose init failed under
	// InitErrorDisable.
	Disabled bool
	// Update is the context-update action published for the layer this
	// assembly, or "" for none.
	Update UpdateAction
	// ChurnRate is the share of assemblies in which the layer's fresh
	// output changed.
	ChurnRate float64
	// RebillTokens estimates what the layer's changes would have cost had
	// it not been pinned: each change re-bills its own output and all of
	// the prefix behind it.
	RebillTokens int
}

// Usage is the report of one assembly.
type Usage struct {
	Turn   int
	Layers []LayerUsage
	// BandTokens[b] is the token count of band b.
	BandTokens [6]int
	Total      int
	// HistoryItems and HistoryDropped count the log items shown and left
	// out by the projection.
	HistoryItems   int
	HistoryDropped int
	// LayerDropped counts anchor and live items the projection left out
	// because the token budget could not hold them (LayerUsage.Dropped
	// per layer, with a diagnostic).
	LayerDropped int
	// UserMessageCut reports the newest user message when the view could
	// not hold it whole and it was cut to fit (with a KindOverBudget
	// diagnostic); nil when it was shown whole.
	UserMessageCut *MessageCut
	// Diagnostics are the hook failures of this assembly and of the calls
	// since the previous one.
	Diagnostics []Diagnostic
	// Epoch describes the cache epoch; nil when anchoring is disabled.
	Epoch *EpochUsage
	// Compaction reports compaction; nil when Config.Compaction is nil
	// and the log holds no compaction event.
	Compaction *CompactionUsage `json:",omitempty"`
	// Resident lists the resident content the view shows (Session.Activate),
	// in view order.
	Resident []ResidentUsage `json:",omitempty"`
	// Cleared are the tool outputs tail trimming cleared (Config.TailTrim).
	Cleared []ClearedOutput `json:",omitempty"`
	// Reminders names the reminders the view ends with (Config.Reminders
	// and the runtime's own).
	Reminders []string `json:",omitempty"`
	// Miss attributes the cache miss the host reported (Session.ReportCache)
	// for the call made with the previous view, nil when it hit or was
	// not reported: what changed, the TTL, a prefix under the minimum or
	// the provider's own eviction.
	Miss *MissAttribution `json:",omitempty"`
	// Cost is what the provider billed for the input of the call made with
	// the previous view, by band (Session.ReportCache, CacheConfig.Prices);
	// nil when the host reported no figures.
	Cost *RequestCost `json:",omitempty"`
}

// ResidentUsage is one resident content activation a view shows.
type ResidentUsage struct {
	ContentMark
	// Band is BandAnchor for content activated before the loop,
	// BandHistory for content shown where it was activated (or mounted
	// again at the front of history).
	Band Band
}

// MessageCut reports a message cut to fit the view's token budget.
type MessageCut struct {
	// Tokens is the message's size in the log, Shown the size of its cut
	// form in the view, marker included.
	Tokens, Shown int
}

// cutMarker is what a message cut to fit the budget says where its middle
// was: a model reading it knows the message was longer, and by how much.
const cutMarker = "\n[… %d tokens cut: the message was longer than the context budget]\n"

// Layer returns the usage of the layer with id, or nil.
func (u *Usage) Layer(id string) *LayerUsage {
	for i := range u.Layers {
		if u.Layers[i].LayerID == id {
			return &u.Layers[i]
		}
	}
	return nil
}

// Assemble runs every layer's recall, projects the history and assembles
// the view in bands. Anchored layers serve the epoch's pinned bytes; those
// whose fresh output drifted are published in one context-updates message,
// by default once at the end of history, where it stays for the epoch
// (after the live band on every turn with CacheConfig.TrailingUpdates;
// see the package documentation). An inline update never stands between
// a function call and its output: published while a call at the end of
// history still waits for its output (the host assembling between
// recording the call and appending the output), it is left out of that
// view and joins history right after the outputs of the calls open then,
// once they are appended (or after a user message that ends the round
// trip without them). A failing recall contributes nothing this turn (a
// diagnostic says why).
//
// Under a Policy, history that does not fit is dropped oldest first, but
// the newest user message, the one being answered, never silently: when
// it does not fit it keeps its place at the front of the history band,
// and when it is too large by itself it is cut to fit, its head and tail
// kept around a marker saying how many tokens were cut (the log keeps it
// whole). Usage.UserMessageCut and a KindOverBudget diagnostic report the
// cut; the same state cuts to the same bytes. It takes the room the items
// after it leave, or half of the history's room when those would fill it,
// so that the newest tool results of a long turn stay visible too. (A
// sliding window or a summary that leaves it out stands: that is the
// policy's choice.) Assemble fails only when the projection cannot hold
// the system prompt and tail (projector.ErrSystemOverBudget), or cannot
// hold even the cut message (a *projector.BudgetError, projector.ErrOverBudget).
func (s *Session) Assemble(ctx context.Context) (view *View, err error) {
	if s.disposed {
		return nil, ErrDisposed
	}
	rt := s.rt
	if rt.cfg.Tracer != nil {
		var end func(*Usage, error)
		ctx, end = rt.cfg.Tracer(ctx, s.info, s.turn)
		defer func() {
			if view != nil {
				end(view.Usage, err)
			} else {
				end(nil, err)
			}
		}()
	}
	s.mu.Lock()
	diagFrom := len(s.diagnostics)
	s.mu.Unlock()

	s.asm = assemblyScratch{res: s.readResident()}
	s.asm.head = s.headEntries(s.asm.res)
	outs := s.recallAll(ctx)
	hashes := s.observe(outs)
	logHistory, historyItems, start := s.projectedHistory(ctx)
	logHistory, historyItems, start, compaction, err := s.compactHistory(ctx, outs, logHistory, historyItems, start)
	if err != nil {
		return nil, err
	}
	logHistory, cleared := s.trimTail(outs, logHistory, start)
	if cleared != nil {
		historyItems = nil
	}
	var reminded []string
	s.asm.reminder, reminded, s.asm.reminded = s.reminders(ReminderInput{Session: s, Compaction: compaction,
		Tokens: s.reminderTokens(outs, logHistory), Window: s.rt.window()})

	reanchored := false
	reanchor := func(reason ReanchorReason) arrangement {
		s.startEpoch(reason, outs, hashes)
		reanchored = true
		return s.arrange(ctx, outs, hashes)
	}
	var arr arrangement
	if rt.cfg.Cache.Disabled {
		arr = s.arrange(ctx, outs, hashes)
	} else {
		if reason := s.reanchorReason(outs); reason != "" {
			arr = reanchor(reason)
		} else {
			arr = s.arrange(ctx, outs, hashes)
			if float64(s.pressure(arr)) > rt.cfg.Cache.pressureLimit(s.pressureBase(arr)) {
				arr = reanchor(ReasonUpdatePressure)
			}
		}
	}
	// Inline updates live in the conversation where they were published.
	history, firstUpdate, cut := s.foldedUpdates(logHistory, start)
	if cut {
		arr = reanchor(ReasonHistoryCut)
		history, firstUpdate, _ = s.foldedUpdates(logHistory, start)
	}
	pv, mounted, err := s.project(history, arr)
	if err != nil {
		return nil, err
	}
	switch {
	case pv.UpdatesDropped:
		// A dropped update would leave the model reading a block known to
		// be stale: fold the changes into fresh pins instead.
		arr = reanchor(ReasonUpdatesOverBudget)
	case firstUpdate >= 0 && firstUpdate < pv.HistoryFrom:
		// The history front moved past a published update: the history
		// cache is lost anyway, and the update must not be dropped.
		arr = reanchor(ReasonHistoryCut)
	}
	if reanchored && (pv.UpdatesDropped || firstUpdate >= 0) {
		history, firstUpdate, _ = s.foldedUpdates(logHistory, start)
		if pv, mounted, err = s.project(history, arr); err != nil {
			return nil, err
		}
	}
	if firstUpdate >= 0 || len(s.events) > 0 {
		historyItems = nil // interleaved: the band cannot share the log
	}
	var published []Item
	switch {
	case len(arr.updates) > 0:
		published = itemsOf(arr.updates)
	case arr.updateTokens > 0 && len(s.epoch.published) > 0:
		published = []Item{s.epoch.published[len(s.epoch.published)-1].entry.Item}
	}

	// Layer output the view could not hold (only with an Unlimited
	// LayerPool: a finite pool must fit the policy): per layer, what was
	// left out.
	droppedItems := make([]int, len(s.insts))
	droppedTokens := make([]int, len(s.insts))
	for _, i := range pv.AnchorDropped {
		if i -= len(s.asm.head); i < 0 {
			continue // resident content
		}
		droppedItems[arr.anchorOf[i]]++
		droppedTokens[arr.anchorOf[i]] += arr.anchor[i].Tokens
	}
	for _, i := range pv.LiveDropped {
		droppedItems[arr.liveOf[i]]++
		droppedTokens[arr.liveOf[i]] += arr.live[i].Tokens
	}
	for k, n := range droppedItems {
		if n > 0 {
			s.diagnose(s.insts[k].spec().ID, "assemble", KindOverBudget,
				fmt.Errorf("%d item(s), %d tokens, left out: the view's token budget could not hold them", n, droppedTokens[k]))
		}
	}
	usage := &Usage{Turn: s.turn, Layers: make([]LayerUsage, len(s.insts)), LayerDropped: pv.LayerDropped, Compaction: compaction,
		Resident: s.residentUsage(pv.Bands[projector.BandHistory]), Cleared: cleared, Reminders: reminded}
	if c := pv.Cut; c != nil {
		usage.UserMessageCut = &MessageCut{Tokens: c.Tokens, Shown: c.Shown}
		s.diagnose("_strata", "assemble", KindOverBudget, fmt.Errorf(
			"the newest user message (%d tokens) was cut to %d tokens, marker included: the view's token budget could not hold it whole",
			c.Tokens, c.Shown))
	}
	anchorAfter := sumTokens(arr.anchor)
	for k, inst := range s.insts {
		spec := inst.spec()
		o := outs[k]
		st := &s.stats[k]
		lu := LayerUsage{LayerID: spec.ID, Slot: spec.Slot, Placement: spec.Placement, Budget: rt.budgets[k],
			Served: arr.served[k], Disabled: s.states[k].disabled, Band: BandAnchor, Update: arr.actions[k],
			ChurnRate: st.churn(), Truncated: o.truncated}
		entries := o.fresh()
		if spec.Placement == PlacementTail {
			lu.Band = BandTail
		} else if !rt.cfg.Cache.Disabled {
			lu.Band = s.epoch.band[k]
			if lu.Band == BandAnchor {
				entries = s.epoch.pins[k]
			}
		}
		lu.Tokens = sumTokens(entries) - droppedTokens[k]
		lu.Items = len(entries) - droppedItems[k]
		lu.Dropped = droppedItems[k]
		if lu.Items == 0 {
			lu.Served = ServedNone
		}
		if lu.Band == BandAnchor {
			anchorAfter -= lu.Tokens
			// Had this layer re-rendered in place, everything after it in
			// the prefix would have been billed again.
			if st.changedNow {
				st.rebill += sumTokens(o.fresh()) + anchorAfter + s.logTokens
			}
		}
		lu.RebillTokens = st.rebill
		usage.Layers[k] = lu
	}
	s.epoch.age++
	view = &View{Tools: s.Tools(), Usage: usage, updates: published}
	for b := range pv.Bands {
		if Band(b) == BandHistory && pv.HistoryContiguous && historyItems != nil {
			// The kept history is a suffix of the log: share it.
			view.bands[b] = historyItems[pv.HistoryFrom:len(historyItems):len(historyItems)]
			continue
		}
		view.bands[b] = itemsOf(pv.Bands[b])
	}
	if s.prefix == "" {
		s.prefix = prefixHash(rt.system, view.Tools)
	}
	view.PrefixHash = s.prefix
	if !rt.cfg.Cache.Disabled {
		view.computeBreakpoints()
		usage.Epoch = &EpochUsage{ID: s.epoch.id, Age: s.epoch.age, AnchorTokens: pv.Tokens[BandAnchor],
			UpdateTokens: pv.Tokens[BandUpdates] + s.epoch.publishedTokens, ReanchorReason: s.epoch.reason,
			Reanchored: reanchored, Blind: s.feedback.blind, Updates: len(s.epoch.published)}
	}
	usage.BandTokens = pv.Tokens
	usage.Total = pv.TotalTokens()
	usage.HistoryItems = len(pv.Bands[BandHistory]) - mounted
	if firstUpdate >= 0 {
		usage.HistoryItems -= s.placedUpdates()
	}
	usage.HistoryDropped = max(0, len(s.log)-usage.HistoryItems)
	shown := usage.HistoryItems
	if pv.Kept >= 0 && pv.HistoryFrom > pv.Kept+1 {
		// The newest user message kept ahead of a gap: Visible is a
		// contiguous tail of the log, the part after the gap.
		shown--
	}
	s.visible = max(0, len(s.log)-shown)
	s.mu.Lock()
	usage.Diagnostics = append([]Diagnostic(nil), s.diagnostics[diagFrom:]...)
	s.mu.Unlock()
	usage.Miss, s.feedback.miss = s.feedback.miss, nil
	usage.Cost, s.feedback.cost = s.feedback.cost, nil
	s.signView(view)
	s.last = usage
	s.turn++
	s.recordAssembly(ctx, view)
	return view, nil
}

// project runs the projection of one assembly. Under a Policy that drops
// the oldest history to fit, content activated mid-task would go with
// the history around it: each activation the projection drops is mounted
// again at the front of the history it keeps (after a summary when one
// leads it), in activation order, its tokens taken from the history's
// room, as a compaction mounts what it folds. The room is taken by
// projecting again with the budget less the mounted tokens, until no
// further activation drops (each pass drops at least as much, so this
// ends). When that projection fails, or would cut the newest user
// message or drop the context updates, or the policy summarises what it
// drops (another pass would ask the summarizer again), the first
// projection stands, the content is left out with a KindOverBudget
// diagnostic, and Usage.Resident does not list it. It returns the
// projection and how many entries it mounted.
func (s *Session) project(history []projector.Entry[Item], arr arrangement) (projector.View[Item], int, error) {
	in := s.projectorInput(history, arr)
	pv, err := projector.Assemble(in, s.rt.policy)
	if err != nil || s.rt.policy == nil || len(s.asm.shownAt) == 0 {
		return pv, 0, err
	}
	dropped := func(v projector.View[Item]) (mounts []projector.Entry[Item], tokens int) {
		for _, i := range s.asm.shownAt {
			if i < v.HistoryFrom && i != v.Kept {
				mounts = append(mounts, history[i])
				tokens += history[i].Tokens
			}
		}
		return mounts, tokens
	}
	mounts, tokens := dropped(pv)
	if len(mounts) == 0 {
		return pv, 0, nil
	}
	giveUp := func(why string) (projector.View[Item], int, error) {
		s.diagnose("_strata", "assemble", KindOverBudget, fmt.Errorf(
			"%d resident content activation(s) left out with the history around them: %s", len(mounts), why))
		return pv, 0, nil
	}
	if s.rt.policy.Overflow == projector.OverflowSummarize {
		// Another pass would ask the host's summarizer again.
		return giveUp("the policy summarises what it drops")
	}
	for pass := 0; ; pass++ {
		cp := *s.rt.policy
		cp.TokenBudget -= tokens
		next, err := projector.Assemble(in, &cp)
		switch {
		case err != nil:
			return giveUp("the budget cannot hold them")
		case next.Cut != nil && (pv.Cut == nil || next.Cut.Shown < pv.Cut.Shown), next.UpdatesDropped && !pv.UpdatesDropped:
			// Their room would come from the user's message or the
			// context updates: those matter more.
			return giveUp("their room would cut the newest user message or drop the context updates")
		}
		m, t := dropped(next)
		if len(m) <= len(mounts) || pass > len(s.asm.shownAt) {
			pv, mounts, tokens = next, m, t
			break
		}
		mounts, tokens = m, t // dropped more: take their room too
	}
	band := pv.Bands[BandHistory]
	at := 0
	if pv.Summarized {
		at = 1
	}
	pv.Bands[BandHistory] = slices.Concat(band[:at:at], mounts, band[at:])
	pv.Tokens[BandHistory] += tokens
	pv.HistoryContiguous = false
	return pv, len(mounts), nil
}

// projectorInput is the projection of one assembly: the bands, and the
// newest user message as the history entry the view must keep, cut by
// cutEntry when it is too large.
func (s *Session) projectorInput(history []projector.Entry[Item], arr arrangement) projector.Input[Item] {
	anchor := arr.anchor
	if len(s.asm.head) > 0 {
		anchor = append(slices.Clip(s.asm.head), arr.anchor...)
	}
	tail := arr.tail
	if s.asm.reminded {
		tail = append(slices.Clip(tail), s.asm.reminder)
	}
	return projector.Input[Item]{System: s.rt.system, Anchor: anchor, History: history, Live: arr.live,
		Updates: arr.updates, Tail: tail, Keep: isUserMessage, Cut: s.rt.cutEntry}
}

func isUserMessage(e projector.Entry[Item]) bool {
	return e.Item.Type == TypeMessage && e.Item.Role == RoleUser
}

// cutEntry cuts a message to at most n tokens as the runtime counts them
// (projector.Input.Cut): one text part holding the head and the tail of
// its text around cutMarker. Head and tail get half the room each, since
// a long message commonly says what it wants at its start ("summarise
// this:") or at its end, after what it pasted ("why does this fail?").
func (rt *Runtime) cutEntry(e projector.Entry[Item], n int) (projector.Entry[Item], bool) {
	text, ok := cutText(rt.counter, e.Item.Text(), n-ItemOverhead)
	if !ok {
		return e, false
	}
	it := e.Item
	part := Part{Type: "input_text", Text: text}
	if len(it.Content) > 0 {
		part.Type = it.Content[0].Type
	}
	it.Content = []Part{part}
	cut := rt.entry(it)
	return cut, cut.Tokens <= n
}

// cutText returns text cut to at most room tokens: its longest head and
// tail of about room/2 tokens each, on rune boundaries, joined by
// cutMarker. ok is false when room cannot hold the marker. A BPE count is
// not additive (tokens can merge across the joins), so the whole is
// counted again and the parts shrunk until it fits. Deterministic.
func cutText(tk tokens.Tokenizer, text string, room int) (string, bool) {
	total := tk.Count(text)
	if total <= room {
		return text, true
	}
	// The marker for the largest number it can show bounds its size.
	budget := room - tk.Count(fmt.Sprintf(cutMarker, total))
	for try := 0; budget >= 0 && try < 8; try++ {
		head := text[:prefixWithin(tk, text, (budget+1)/2)]
		rest := text[len(head):]
		tail := rest[len(rest)-suffixWithin(tk, rest, budget-tk.Count(head)):]
		out := head + fmt.Sprintf(cutMarker, max(0, total-tk.Count(head)-tk.Count(tail))) + tail
		over := tk.Count(out) - room
		if over <= 0 {
			return out, true
		}
		budget -= over
	}
	if out := fmt.Sprintf(cutMarker, total); tk.Count(out) <= room {
		return out, true
	}
	return "", false
}

// prefixWithin is the byte length of the longest head of text, ending on
// a rune boundary, of at most budget tokens. The search range grows from
// a guess, so a huge text costs counts of about the head's size only.
func prefixWithin(tk tokens.Tokenizer, text string, budget int) int {
	if budget <= 0 {
		return 0
	}
	fits := func(i int) bool { return tk.Count(text[:runeFloor(text, i)]) <= budget }
	hi := min(len(text), 8*budget+8)
	for hi < len(text) && fits(hi) {
		hi = min(len(text), 2*hi)
	}
	return runeFloor(text, sort.Search(hi+1, func(i int) bool { return !fits(i) })-1)
}

// suffixWithin is the byte length of the longest tail of text, starting
// on a rune boundary, of at most budget tokens.
func suffixWithin(tk tokens.Tokenizer, text string, budget int) int {
	if budget <= 0 {
		return 0
	}
	start := func(l int) int { return runeCeil(text, len(text)-l) }
	fits := func(l int) bool { return tk.Count(text[start(l):]) <= budget }
	hi := min(len(text), 8*budget+8)
	for hi < len(text) && fits(hi) {
		hi = min(len(text), 2*hi)
	}
	return len(text) - start(sort.Search(hi+1, func(l int) bool { return !fits(l) })-1)
}

// runeFloor moves i back to the start of the rune it falls in.
func runeFloor(text string, i int) int {
	for i > 0 && i < len(text) && !utf8.RuneStart(text[i]) {
		i--
	}
	return max(i, 0)
}

// runeCeil moves i forward to the start of the next rune, if it falls
// inside one.
func runeCeil(text string, i int) int {
	for i > 0 && i < len(text) && !utf8.RuneStart(text[i]) {
		i++
	}
	return max(i, 0)
}

func sumTokens(entries []projector.Entry[Item]) int {
	n := 0
	for i := range entries {
		n += entries[i].Tokens
	}
	return n
}

// layerOutput is one layer's contribution to an assembly.
type layerOutput struct {
	entries   []projector.Entry[Item]
	served    Served
	stateful  bool
	truncated int
	// failed marks a recall that errored, panicked or timed out. entries
	// then hold the layer's last good output: a pinned layer keeps
	// serving its pin as if unchanged (no update, no churn), while a live
	// or tail layer contributes nothing this turn.
	failed bool
}

// fresh is what the layer renders outside the anchor band this turn:
// nothing when its recall failed.
func (o layerOutput) fresh() []projector.Entry[Item] {
	if o.failed {
		return nil
	}
	return o.entries
}

// recallAll starts every recall at once, then collects them in slot
// order: atomic ones are waited for; an eventual one that has not answered
// by then serves its previous output.
func (s *Session) recallAll(ctx context.Context) []layerOutput {
	outs := make([]layerOutput, len(s.insts))
	in := recallInput{turn: s.turn, history: s.conversationFrom(0), visible: s.conversationFrom(s.visible)}
	// One deadline per distinct timeout: usually one timer for the phase.
	type deadline struct {
		ctx    context.Context
		cancel context.CancelFunc
	}
	var deadlines []struct {
		d time.Duration
		deadline
	}
	deadlineFor := func(d time.Duration) deadline {
		for _, x := range deadlines {
			if x.d == d {
				return x.deadline
			}
		}
		c, cancel := context.WithTimeout(ctx, d)
		deadlines = append(deadlines, struct {
			d time.Duration
			deadline
		}{d, deadline{c, cancel}})
		return deadline{c, cancel}
	}
	noop := func() {}
	for k, inst := range s.insts {
		st := &s.states[k]
		outs[k].served = ServedNone
		if st.disabled || !inst.hasRecall() {
			continue
		}
		if st.pending == nil {
			in.budget = s.rt.budgets[k]
			if inst.spec().eventualRecall {
				// An eventual recall may outlive this assembly, so it
				// gets its own deadline, detached from the assembly's
				// cancellation: hosts commonly give each turn its own
				// context and cancel it when the turn ends, which would
				// otherwise cancel every recall meant to land next turn.
				// Values (trace spans) still flow through.
				c, cancel := context.WithTimeout(context.WithoutCancel(ctx), inst.recallTimeout())
				st.pending = inst.startRecall(c, cancel, in)
			} else {
				dl := deadlineFor(inst.recallTimeout())
				st.pending = inst.startRecall(dl.ctx, noop, in)
			}
		}
	}
	defer func() {
		for _, x := range deadlines {
			x.cancel()
		}
	}()
	collect := func(k int, wait bool) {
		st := &s.states[k]
		inst := s.insts[k]
		var (
			r    recallOutput
			kind DiagnosticKind
			err  error
			done bool
		)
		switch {
		case wait && inst.spec().eventualRecall:
			// An eventual recall's deadline ignores the caller's
			// cancellation; the wait for it does not (the recall goes
			// on, and is collected next turn).
			r, kind, err, done = st.pending.waitOr(ctx.Done())
		case wait:
			// An atomic recall's deadline derives from ctx: it ends with
			// the caller's cancellation.
			r, kind, err = st.pending.wait()
			done = true
		default:
			// poll reports a recall past its deadline as timed out, so
			// one that ignores its context is not waited for forever.
			r, kind, err, done = st.pending.poll()
		}
		if !done {
			outs[k] = layerOutput{entries: st.out, served: ServedStale}
			if len(st.out) == 0 {
				outs[k].served = ServedNone
			}
			return
		}
		st.pending = nil
		st.answered = true
		if err != nil {
			// No contribution for this phase. st.out keeps the last good
			// output: a pinned layer goes on serving its pin unchanged,
			// and a later eventual recall can serve it stale.
			s.diagnose(inst.spec().ID, HookRecall, kind, err)
			outs[k] = layerOutput{entries: st.out, served: ServedNone, failed: true}
			return
		}
		if r.commit != nil && inst.spec().eventualRecall {
			// Its state was computed from a state other hooks may have
			// replaced since it started: committing it could lose theirs.
			s.diagnose(inst.spec().ID, HookRecall, KindError, fmt.Errorf("an eventual recall may not return state; ignored"))
			r.commit = nil
		}
		if r.commit != nil {
			_ = r.commit(ctx) // a persistence failure is a diagnostic already
		}
		entries, cut := s.renderEntries(inst.spec(), r, s.rt.budgets[k])
		st.out = entries
		outs[k] = layerOutput{entries: entries, served: ServedFresh, stateful: r.commit != nil, truncated: cut}
		if len(entries) == 0 {
			outs[k].served = ServedNone
		}
	}
	for k, inst := range s.insts {
		if s.states[k].pending != nil && !inst.spec().eventualRecall {
			collect(k, true)
		}
	}
	for k, inst := range s.insts {
		if st := &s.states[k]; st.pending != nil && inst.spec().eventualRecall {
			collect(k, !st.answered)
		}
	}
	return outs
}

// renderEntries turns a recall into counted entries within budget. Items
// past the budget are cut from the end, with a diagnostic.
func (s *Session) renderEntries(spec *layerConfig, r recallOutput, budget int) ([]projector.Entry[Item], int) {
	items := r.items
	if len(items) == 0 {
		return nil, 0
	}
	entries := make([]projector.Entry[Item], 0, len(items))
	used := 0
	for n, it := range items {
		if err := it.Validate(); err != nil {
			s.diagnose(spec.ID, HookRecall, KindError, fmt.Errorf("item %d: %w", n, err))
			continue
		}
		e := s.rt.entry(it)
		e.Group, e.Opens = "", false // layer output is never paired
		if used+e.Tokens > budget {
			cut := len(items) - n
			s.diagnose(spec.ID, HookRecall, KindError, fmt.Errorf("output exceeds budget %d tokens: %d item(s) cut", budget, cut))
			return entries, cut
		}
		used += e.Tokens
		entries = append(entries, e)
	}
	return entries, 0
}

func itemsOf(entries []projector.Entry[Item]) []Item {
	if len(entries) == 0 {
		return nil
	}
	out := make([]Item, len(entries))
	for i := range entries {
		out[i] = entries[i].Item
	}
	return out
}

// projectedHistory applies the layers' projectHistory hooks in slot order
// to the log. It returns the history entries, the same history as items
// (sharing the log's memory), and the log index the history starts at (-1
// when a hook replaced the items).
func (s *Session) projectedHistory(ctx context.Context) ([]projector.Entry[Item], []Item, int) {
	history := s.log
	items := s.items
	start := 0
	for k, inst := range s.insts {
		if s.states[k].disabled || !inst.hasProjectHistory() {
			continue
		}
		entries := history
		proj, ok, _ := inst.projectHistory(ctx, items, func(i int) int { return entries[i].Tokens }, s.turn)
		if !ok {
			continue
		}
		if proj.items == nil {
			history = history[proj.start:]
			items = items[proj.start:]
			if start >= 0 {
				start += proj.start
			}
			continue
		}
		start = -1
		items = proj.items
		history = make([]projector.Entry[Item], len(items))
		for n, it := range items {
			history[n] = s.rt.entry(it)
		}
	}
	return history, items, start
}
