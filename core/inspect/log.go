package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/internal/keys"
	"github.com/stratamem/strata/storage"
)

// LogRangeError is returned for a range of log items a record's stored
// log does not hold: From below zero, To past Len, or From past To.
type LogRangeError struct {
	// Turn is the record's thread turn, Run its stored log's tag.
	Turn int
	Run  string
	// From and To are the half-open range asked for; Len is the number
	// of items the record's stored log holds.
	From, To, Len int
}

func (e *LogRangeError) Error() string {
	return fmt.Sprintf("log items [%d, %d) of assembly %d: out of range, the stored log holds %d items", e.From, e.To, e.Turn, e.Len)
}

// ErrNoStoredLog is returned (wrapping storage.ErrNotFound) for a record
// that keeps no stored log: written before the log was stored with the
// records, or already hydrated from a source that dropped it.
var ErrNoStoredLog = fmt.Errorf("no stored log: %w", storage.ErrNotFound)

// LogChunkKey is the key of chunk c of the stored log of a run, by the
// run's tag (AssemblyRecord.Stored.Log.Run): the chunk holds log items
// c*core.LogChunk up to (c+1)*core.LogChunk, as a JSON array of items,
// the last chunk of a run partial. Tools that read the log through
// another API than a storage.Store (a server's state endpoint) name the
// chunks by it.
func LogChunkKey(resource, thread, run string, c int) storage.Key {
	return keys.LogChunk(resource, thread, run, c)
}

// ReadLogItems reads the log items [from, to) of the run whose assembly
// rec records, from the chunks stored under the record's log tag in st
// (the runtime's store), keyed by the thread of resource ("" for a
// thread of no resource) that rec was read from. These are the items as
// the run logged them: a tool output a view showed cleared
// (rec.ClearedOutputs) has its full body here, and a compaction event
// (rec.Compaction.Event) its summary. The range is bounded by the log as
// the record saw it (rec.Stored.Log.Len), even when later records of the
// run stored more; a range outside it yields a *LogRangeError, a record
// without a stored log ErrNoStoredLog, and a chunk the store no longer
// holds an error wrapping storage.ErrNotFound.
func ReadLogItems(ctx context.Context, st storage.Store, resource, thread string, rec *core.AssemblyRecord, from, to int) ([]core.Item, error) {
	if rec.Stored == nil || rec.Stored.Log.Run == "" {
		return nil, fmt.Errorf("assembly %d of thread %q: %w", rec.Turn, thread, ErrNoStoredLog)
	}
	lg := rec.Stored.Log
	if from < 0 || to > lg.Len || from > to {
		return nil, &LogRangeError{Turn: rec.Turn, Run: lg.Run, From: from, To: to, Len: lg.Len}
	}
	out := make([]core.Item, 0, to-from)
	for c := from / core.LogChunk; c*core.LogChunk < to; c++ {
		e, err := st.Get(ctx, keys.LogChunk(resource, thread, lg.Run, c))
		if err != nil {
			return nil, fmt.Errorf("stored log chunk %d of assembly %d of thread %q: %w", c, rec.Turn, thread, err)
		}
		var items []core.Item
		if err := json.Unmarshal(e.Value, &items); err != nil {
			return nil, fmt.Errorf("decode stored log chunk %d of assembly %d of thread %q: %w", c, rec.Turn, thread, err)
		}
		base := c * core.LogChunk
		lo, hi := max(from, base)-base, min(to, base+core.LogChunk)-base
		if hi > len(items) {
			// The record counted more items than the chunk holds: the
			// chunk was rewritten by another run of the same tag, or cut.
			return nil, fmt.Errorf("stored log chunk %d of assembly %d of thread %q holds %d items, not item %d: %w",
				c, rec.Turn, thread, len(items), base+hi-1, storage.ErrNotFound)
		}
		out = append(out, items[lo:hi]...)
	}
	return out, nil
}

// ParseLogRef parses a log reference, "log:N" (ClearedOutput.Ref,
// RecordedCompaction.Event), into the log index N.
func ParseLogRef(ref string) (int, error) {
	s, ok := strings.CutPrefix(ref, "log:")
	if !ok {
		return 0, fmt.Errorf("log reference %q: want log:N", ref)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strconv.Itoa(n) != s {
		return 0, fmt.Errorf("log reference %q: want log:N with N a log index", ref)
	}
	return n, nil
}
