package memory

import (
	"fmt"
	"maps"
	"slices"
)

// MaxPersistedCalls bounds the call ids a layer keeps in its persisted
// scoped state (CallLog.Trim): enough to catch a replay, small enough that
// the state stays small.
const MaxPersistedCalls = 256

// CallLog is a layer's record of the function calls it applied, so that a
// call sent again with the same call id (a host retrying, a model
// repeating itself) is answered with the first application's output
// instead of being applied twice.
//
// A CallLog is a value: With and Trim return a new log and leave the
// receiver, which an older state may still hold, as it was.
type CallLog struct {
	// IDs are the applied call ids, oldest first. A layer that must catch
	// replays across sessions persists them (trimmed to
	// MaxPersistedCalls) in its scoped state.
	IDs []string
	// Outputs holds the output of each call applied in this session, by
	// call id. It is not persisted.
	Outputs map[string]string
}

// Replay reports whether the call with this id was applied already and
// what to answer it with: the first application's output, or, for a call
// applied in an earlier session (whose output is gone), a note saying
// nothing was written again. An empty call id is never a replay.
func (c CallLog) Replay(callID string) (output string, ok bool) {
	if callID == "" {
		return "", false
	}
	if out, ok := c.Outputs[callID]; ok {
		return out, true
	}
	if slices.Contains(c.IDs, callID) {
		return fmt.Sprintf("Already applied: call %s was applied in an earlier session; nothing was written again.", callID), true
	}
	return "", false
}

// With returns the log with the call applied, answered with output. A call
// without an id cannot be replayed and is not logged.
func (c CallLog) With(callID, output string) CallLog {
	if callID == "" {
		return c
	}
	next := CallLog{IDs: append(slices.Clone(c.IDs), callID), Outputs: make(map[string]string, len(c.Outputs)+1)}
	maps.Copy(next.Outputs, c.Outputs)
	next.Outputs[callID] = output
	return next
}

// Trim returns the log with only the newest n call ids, and the outputs of
// those.
func (c CallLog) Trim(n int) CallLog {
	if len(c.IDs) <= n {
		return c
	}
	drop := c.IDs[:len(c.IDs)-n]
	next := CallLog{IDs: c.IDs[len(c.IDs)-n:], Outputs: maps.Clone(c.Outputs)}
	for _, id := range drop {
		delete(next.Outputs, id)
	}
	return next
}

// MergeCallIDs resolves the call ids of two sessions of one scope whose
// scoped-state writes conflicted: the stored ones, then those only mine
// applied, the newest n kept.
func MergeCallIDs(stored, mine []string, n int) []string {
	out := slices.Clone(stored)
	for _, id := range mine {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}
