package core

import (
	"encoding/json"
	"fmt"
	"slices"
)

// AssemblyRecordVersion is the version of the AssemblyRecord format the
// runtime writes.
const AssemblyRecordVersion = 2

// AssemblyRecord is the plan of one assembly of a thread, kept with
// Config.RecordAssemblies under the thread's turn number (at most
// Config.AssemblyRetention per thread): what the model was shown, band by
// band, why, and enough to render it again byte for byte (View). Package
// core/inspect reads the records back.
//
// A record is small and its cost does not grow with the conversation: the
// history band is stored as spans of the run's log (History.Spans) plus
// the few items that are not log items as they are (summaries, updates,
// cleared outputs, a cut message), and the log itself is stored once, in
// chunks written as it grows; the system and anchor bands and the tools,
// which change rarely, are stored once per distinct content. Stored says
// where the parts are; Hydrate (core/inspect does it) reads them back into
// Bands and Tools.
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
	// Usage is the assembly's usage report (which layers rendered what,
	// the resident content and reminders the view showed).
	Usage *Usage `json:"usage"`
	// Stored says where the record's bands, tools and log are kept; nil
	// once hydrated is not required: Hydrate leaves it.
	Stored *StoredParts `json:"stored,omitempty"`
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
	Boundary int `json:"boundary"`
	// Event is the log reference ("log:N") of the compaction event that
	// holds the summary.
	Event string `json:"event,omitempty"`
}

// StoredParts says where the parts of a record are kept in the store.
type StoredParts struct {
	// Log is the run's log as stored: chunks of LogChunk items under the
	// run's tag, the last one partial.
	Log StoredLog `json:"log"`
	// Bands are the view's non-empty bands: by content digest (Blob) for
	// the system and anchor bands, as items for the others, and for
	// history as the HistoryPlan's spans of the log plus Inline items.
	Bands []StoredBand `json:"bands"`
	// Tools is the content digest of the tools offered.
	Tools string `json:"tools,omitempty"`
}

// StoredLog names a run's stored log.
type StoredLog struct {
	Run string `json:"run"`
	Len int    `json:"len"`
}

// StoredBand is one band of a record as stored.
type StoredBand struct {
	Band   string          `json:"band"`
	Tokens int             `json:"tokens"`
	Count  int             `json:"count"`
	Blob   string          `json:"blob,omitempty"`
	Items  json.RawMessage `json:"items,omitempty"`
	// Inline are the history band's items that are not log items as they
	// are, in band order (their positions are History.Inline).
	Inline []Item `json:"inline,omitempty"`
}

// LogChunk is the number of log items a stored log chunk holds.
const LogChunk = 8

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
