package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/stratamem/strata/core/internal/keys"
	"github.com/stratamem/strata/storage"
)

// AssemblyRecordVersion is the version of the AssemblyRecord format the
// runtime writes.
const AssemblyRecordVersion = 1

// AssemblyRecord is the plan of one assembly of a thread, kept with
// Config.RecordAssemblies and a non-zero Config.AssemblyRetention under
// the thread's turn number: what the model
// was shown, band by band, why, and enough to render it again byte for
// byte (View). Package core/inspect reads the records back.
//
// The record holds the items of every band itself, history included: the
// runtime does not persist a run's log (the host seeds it with
// RunOptions.History), so a record that only pointed into the log could
// not be rendered again from the store alone. History.Spans says which
// log items the history band shows, for a host that keeps the log.
type AssemblyRecord struct {
	Version int `json:"version"`
	// Turn is the thread's turn number: 0 for the first assembly of the
	// thread recorded in the store, counting on across the runs (and
	// sessions) of the thread. RunTurn is the run's own assembly counter
	// (Usage.Turn).
	Turn       int    `json:"turn"`
	RunID      string `json:"run_id"`
	RunTurn    int    `json:"run_turn"`
	ThreadID   string `json:"thread_id"`
	ResourceID string `json:"resource_id,omitempty"`
	// Hashes identify the segments of the view, for comparing turns.
	Hashes SegmentHashes `json:"hashes"`
	// Bands are the view's non-empty bands, in view order.
	Bands []RecordedBand `json:"bands,omitempty"`
	// Tools are the tools the view offered, with their schemas.
	Tools       []ToolSpec   `json:"tools,omitempty"`
	Breakpoints []Breakpoint `json:"breakpoints,omitempty"`
	// Updates is View.Updates: the context-updates message of this
	// assembly (also in its band).
	Updates []Item `json:"updates,omitempty"`
	// History says which log items the history band shows.
	History HistoryPlan `json:"history"`
	// Compaction is the compaction boundary of this assembly, when one
	// was reported; nil otherwise.
	Compaction *RecordedCompaction `json:"compaction,omitempty"`
	// ClearedOutputs are the tool outputs the view showed cleared
	// (Config.TailTrim), each with the log reference of its full body.
	ClearedOutputs []ClearedOutput `json:"cleared_outputs,omitempty"`
	// Usage is the assembly's usage report (which layers rendered what).
	Usage *Usage `json:"usage"`
	// Cache is the host's cache report of the model call made with this
	// view (Session.ReportCache), nil when the host reported none. The
	// runtime learns of a report only after the call, so it is stored
	// with the thread's next record (PrevCache there) and filled in when
	// the records are read (core/inspect); the newest record has none yet.
	Cache *CacheReport `json:"cache,omitempty"`
	// PrevCache is the cache report given since the previous assembly of
	// the run: the report of the previous turn's call.
	PrevCache *CacheReport `json:"prev_cache,omitempty"`
}

// SegmentHashes are sha256 digests, hex, of the canonical bytes of a
// view's segments: the stable prefix (system items and sorted tool
// schemas, View.PrefixHash), the anchor band, and the dynamic rest
// (history, live, updates and tail bands).
type SegmentHashes struct {
	Prefix  string `json:"prefix"`
	Anchor  string `json:"anchor"`
	Dynamic string `json:"dynamic"`
}

// RecordedBand is one band of a recorded view.
type RecordedBand struct {
	// Band is the band's name (projector.Band.String).
	Band   string `json:"band"`
	Tokens int    `json:"tokens"`
	Items  []Item `json:"items"`
}

// HistoryPlan describes the history band against the run's log (the
// session's Items when the assembly ran, LogLen of them).
type HistoryPlan struct {
	LogLen int `json:"log_len"`
	// Spans are the log items the band shows, as half-open index ranges
	// [From, To) in band order.
	Spans []LogSpan `json:"spans,omitempty"`
	// Inline are the positions in the band of items that are not log
	// items as they are: published context updates, a summary, a cut
	// user message.
	Inline []int `json:"inline,omitempty"`
	// Dropped counts log items the band leaves out (Usage.HistoryDropped).
	Dropped int `json:"dropped"`
	// Summarized is true when the band starts with a summary of the
	// dropped history (Policy.Overflow summarize).
	Summarized bool `json:"summarized,omitempty"`
	// Cut reports the newest user message cut to fit (Usage.UserMessageCut).
	Cut *MessageCut `json:"cut,omitempty"`
}

// LogSpan is a half-open range [From, To) of log indices.
type LogSpan struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// RecordedCompaction is the compaction boundary of an assembly: the log
// items before Boundary were replaced by a summary.
type RecordedCompaction struct {
	Boundary  int    `json:"boundary"`
	SummaryID string `json:"summary_id,omitempty"`
}

// View renders the recorded assembly again: the same bands, tools,
// breakpoints, updates and usage report, so a provider adapter builds the
// same request from it, byte for byte.
func (r *AssemblyRecord) View() (*View, error) {
	v := &View{Tools: r.Tools, Usage: r.Usage, Breakpoints: r.Breakpoints, PrefixHash: r.Hashes.Prefix, updates: r.Updates}
	for _, b := range r.Bands {
		k, ok := bandByName(b.Band)
		if !ok {
			return nil, fmt.Errorf("core: recorded assembly %d of thread %q: unknown band %q", r.Turn, r.ThreadID, b.Band)
		}
		v.bands[k] = b.Items
	}
	return v, nil
}

func bandByName(name string) (Band, bool) {
	for b := BandSystem; b <= BandTail; b++ {
		if b.String() == name {
			return b, true
		}
	}
	return 0, false
}

// assemblyIndex is what a thread keeps next to its records: the next turn
// number, the oldest record kept and the last cache report recorded.
type assemblyIndex struct {
	Next      int          `json:"next"`
	First     int          `json:"first"`
	LastCache *CacheReport `json:"last_cache,omitempty"`
}

// retention is the number of records a thread keeps; 0 means no limit.
// (Zero AssemblyRetention records none: recordAssembly does not get here.)
func (c *Config) retention() int { return max(c.AssemblyRetention, 0) }

// recordPlan appends the view as the thread's next assembly record and
// drops the records past the retention bound, oldest first.
func (s *Session) recordPlan(ctx context.Context, v *View, bands []encodedBand, plan HistoryPlan) error {
	rec := AssemblyRecord{Version: AssemblyRecordVersion, RunID: s.info.RunID, RunTurn: v.Usage.Turn, ThreadID: s.info.ThreadID,
		ResourceID: s.info.ResourceID, Tools: v.Tools, Breakpoints: v.Breakpoints, Updates: v.updates, Usage: v.Usage,
		ClearedOutputs: v.Usage.Cleared}
	if c := v.Usage.Compaction; c != nil && c.Folded > 0 {
		rec.Compaction = &RecordedCompaction{Boundary: c.Folded}
	}
	rec.Hashes.Prefix = v.PrefixHash
	dyn := sha256.New()
	for _, b := range bands {
		switch {
		case b.band == BandAnchor:
			sum := sha256.Sum256(b.items)
			rec.Hashes.Anchor = hex.EncodeToString(sum[:])
		case b.band > BandAnchor:
			fmt.Fprintf(dyn, "%d:%d\n", b.band, len(b.items))
			dyn.Write(b.items)
		}
	}
	rec.Hashes.Dynamic = hex.EncodeToString(dyn.Sum(nil))
	rec.History = plan

	ik := keys.AssemblyIndex(s.info.ResourceID, s.info.ThreadID)
	st := s.rt.store
	var idx assemblyIndex
	for attempt := 0; ; attempt++ {
		idx = assemblyIndex{}
		rev := int64(0)
		e, err := st.Get(ctx, ik)
		switch {
		case errors.Is(err, storage.ErrNotFound):
		case err != nil:
			return err
		default:
			if err := json.Unmarshal(e.Value, &idx); err != nil {
				return fmt.Errorf("core: decode the assembly index of thread %q: %w", s.info.ThreadID, err)
			}
			rev = e.Revision
		}
		rec.Turn = idx.Next
		idx.Next++
		rec.PrevCache = nil
		if r, ok := s.LastCacheReport(); ok && (idx.LastCache == nil || !sameReport(*idx.LastCache, r)) {
			rec.PrevCache = &r
			idx.LastCache = &r
		}
		raw, err := marshalNoEscape(idx)
		if err != nil {
			return err
		}
		if _, err = st.Put(ctx, ik, raw, rev); err == nil {
			break
		}
		if !errors.Is(err, storage.ErrConflict) || attempt == 2 {
			return err
		}
	}
	raw, err := withBands(rec, bands)
	if err != nil {
		return err
	}
	rk := keys.Assembly(s.info.ResourceID, s.info.ThreadID, rec.Turn)
	if err := putOver(ctx, st, rk, raw); err != nil {
		return err
	}
	// Retention: drop the records past the bound, oldest first. A record
	// already gone (another run of the thread dropped it) is skipped.
	n := s.rt.cfg.retention()
	if n == 0 || idx.Next-idx.First <= n {
		return nil
	}
	first := idx.First
	for t := first; t < idx.Next-n; t++ {
		k := keys.Assembly(s.info.ResourceID, s.info.ThreadID, t)
		e, err := st.Get(ctx, k)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if err := st.Delete(ctx, k, e.Revision); err != nil && !errors.Is(err, storage.ErrConflict) {
			return err
		}
	}
	return updateIndex(ctx, st, ik, func(x *assemblyIndex) { x.First = max(x.First, idx.Next-n) })
}

// putOver writes value at k whatever revision is there.
func putOver(ctx context.Context, st storage.Store, k storage.Key, value []byte) error {
	rev := int64(0)
	for attempt := 0; ; attempt++ {
		_, err := st.Put(ctx, k, value, rev)
		if err == nil || !errors.Is(err, storage.ErrConflict) || attempt == 2 {
			return err
		}
		e, gerr := st.Get(ctx, k)
		switch {
		case errors.Is(gerr, storage.ErrNotFound):
			rev = 0
		case gerr != nil:
			return gerr
		default:
			rev = e.Revision
		}
	}
}

// updateIndex applies f to the stored index, retrying on a conflict.
func updateIndex(ctx context.Context, st storage.Store, k storage.Key, f func(*assemblyIndex)) error {
	for attempt := 0; ; attempt++ {
		var idx assemblyIndex
		rev := int64(0)
		e, err := st.Get(ctx, k)
		switch {
		case errors.Is(err, storage.ErrNotFound):
		case err != nil:
			return err
		default:
			if err := json.Unmarshal(e.Value, &idx); err != nil {
				return err
			}
			rev = e.Revision
		}
		f(&idx)
		raw, err := marshalNoEscape(idx)
		if err != nil {
			return err
		}
		_, err = st.Put(ctx, k, raw, rev)
		if err == nil || !errors.Is(err, storage.ErrConflict) || attempt == 2 {
			return err
		}
	}
}

// sameReport compares two reports, their times as instants.
func sameReport(a, b CacheReport) bool {
	return a.Reported == b.Reported && a.ReadTokens == b.ReadTokens && a.WriteTokens == b.WriteTokens &&
		a.UncachedTokens == b.UncachedTokens && a.FirstRound == b.FirstRound && a.At.Equal(b.At)
}

// planHistory maps the history band onto the log: it walks both in order,
// taking each band item as the next equal log item, or as an inline item
// (an update, a summary, a cut message) when the log has none ahead.
func planHistory(log, band []Item, u *Usage) HistoryPlan {
	p := HistoryPlan{LogLen: len(log), Dropped: u.HistoryDropped, Cut: u.UserMessageCut}
	j := 0
	// The band is usually a suffix of the log: start where it would.
	if n := len(log) - len(band); n > 0 {
		j = n
	}
	// A kept user message ahead of a gap, or a summary, sits before the
	// suffix: search from the start for the first item.
	start := func(it Item) int {
		if j < len(log) && sameItem(log[j], it) {
			return j
		}
		for k := range log {
			if sameItem(log[k], it) {
				return k
			}
		}
		return -1
	}
	for i, it := range band {
		var k int
		if i == 0 {
			k = start(it)
		} else {
			k = -1
			for m := j; m < len(log); m++ {
				if sameItem(log[m], it) {
					k = m
					break
				}
			}
		}
		if k < 0 {
			p.Inline = append(p.Inline, i)
			if i == 0 && u.HistoryDropped > 0 && it.Type == TypeMessage && u.UserMessageCut == nil {
				p.Summarized = true
			}
			continue
		}
		if n := len(p.Spans); n > 0 && p.Spans[n-1].To == k {
			p.Spans[n-1].To = k + 1
		} else {
			p.Spans = append(p.Spans, LogSpan{From: k, To: k + 1})
		}
		j = k + 1
	}
	return p
}

// sameItem compares two items field by field.
func sameItem(a, b Item) bool {
	return a.Type == b.Type && a.ID == b.ID && a.Role == b.Role && a.CallID == b.CallID && a.Name == b.Name &&
		a.Arguments == b.Arguments && a.Output == b.Output && slices.Equal(a.Content, b.Content)
}
