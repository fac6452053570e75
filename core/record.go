package core

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/stratamem/strata/core/internal/keys"
	"github.com/stratamem/strata/storage"
)

// assemblyRecord is what the runtime keeps of a thread's last assembly
// when Config.RecordAssemblies is on: what the model saw, band by band,
// and the usage report. Package core/inspect reads it back
// (inspect.AssemblyRecord has the same JSON form).
type assemblyRecord struct {
	RunID      string         `json:"run_id"`
	ThreadID   string         `json:"thread_id"`
	ResourceID string         `json:"resource_id,omitempty"`
	Turn       int            `json:"turn"`
	Bands      []recordedBand `json:"bands,omitempty"` // nil for withBands
	Tools      []string       `json:"tools,omitempty"`
	PrefixHash string         `json:"prefix_hash"`
	Usage      *Usage         `json:"usage"`
}

// recordedBand is one band of a recorded view.
type recordedBand struct {
	Band   string `json:"band"`
	Tokens int    `json:"tokens"`
	Items  []Item `json:"items"`
}

// recordAssembly keeps the view as the thread's last assembly. Concurrent
// runs of a thread race for the record: the latest write wins, which is
// what "last" means, so a conflict is retried with the stored revision.
func (s *Session) recordAssembly(ctx context.Context, v *View) {
	if !s.rt.cfg.RecordAssemblies || s.info.ThreadID == "" || s.child {
		return
	}
	rec := assemblyRecord{RunID: s.info.RunID, ThreadID: s.info.ThreadID, ResourceID: s.info.ResourceID, Turn: v.Usage.Turn, PrefixHash: v.PrefixHash, Usage: v.Usage}
	for _, t := range v.Tools {
		rec.Tools = append(rec.Tools, t.Name)
	}
	var raw []byte
	var err error
	if s.rt.cfg.AssemblyRetention == 0 {
		for b, items := range v.bands {
			if len(items) > 0 {
				rec.Bands = append(rec.Bands, recordedBand{Band: Band(b).String(), Tokens: v.Usage.BandTokens[b], Items: items})
			}
		}
		raw, err = marshalNoEscape(rec)
	} else {
		// Both records share the encoding of the bands.
		plan := planHistory(s.items, v.bands[BandHistory], v.Usage)
		var bands []encodedBand
		if bands, err = s.encodeBands(v, plan); err == nil {
			if perr := s.recordPlan(ctx, v, bands, plan); perr != nil {
				s.diagnose("_strata", "record", KindError, fmt.Errorf("record assembly plan: %w", perr))
			}
			raw, err = withBands(rec, bands)
		}
	}
	if err != nil {
		s.diagnose("_strata", "record", KindError, err)
		return
	}
	key := keys.LastAssembly(s.info.ResourceID, s.info.ThreadID)
	for attempt := 0; attempt < 3; attempt++ {
		rev, err := s.rt.store.Put(ctx, key, raw, s.rev(key))
		if err == nil {
			s.setRev(key, rev)
			return
		}
		if !errors.Is(err, storage.ErrConflict) {
			s.diagnose("_strata", "record", KindError, err)
			return
		}
		e, gerr := s.rt.store.Get(ctx, key)
		switch {
		case errors.Is(gerr, storage.ErrNotFound):
			s.setRev(key, 0)
		case gerr != nil:
			s.diagnose("_strata", "record", KindError, gerr)
			return
		default:
			s.setRev(key, e.Revision)
		}
	}
}

// encodedBand is a non-empty band of a view with its items encoded.
type encodedBand struct {
	band   Band
	tokens int
	items  []byte
}

// encodeBands encodes the items of each non-empty band once, for the
// records and the segment hashes to share.
func (s *Session) encodeBands(v *View, plan HistoryPlan) ([]encodedBand, error) {
	var out []encodedBand
	for b, items := range v.bands {
		if len(items) == 0 {
			continue
		}
		var raw []byte
		var err error
		if Band(b) == BandHistory {
			raw, err = s.rt.recorders.of(s).encodeHistory(s.items, items, plan)
		} else {
			raw, err = marshalNoEscape(items)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, encodedBand{Band(b), v.Usage.BandTokens[b], raw})
	}
	return out, nil
}

// withBands encodes rec, a record with no Bands field of its own, and
// adds the encoded bands as its "bands" member (the recordedBand form),
// so the items are not encoded again.
func withBands(rec any, bands []encodedBand) ([]byte, error) {
	head, err := marshalNoEscape(rec)
	if err != nil {
		return nil, err
	}
	if len(head) < 2 || head[len(head)-1] != '}' {
		return nil, fmt.Errorf("core: record encodes as %.20s", head)
	}
	n := len(head) + 16
	for _, b := range bands {
		n += len(b.items) + 48
	}
	out := make([]byte, 0, n)
	out = append(out, head[:len(head)-1]...)
	if len(head) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"bands":[`...)
	for i, b := range bands {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"band":"`...)
		out = append(out, b.band.String()...)
		out = append(out, `","tokens":`...)
		out = strconv.AppendInt(out, int64(b.tokens), 10)
		out = append(out, `,"items":`...)
		out = append(out, b.items...)
		out = append(out, '}')
	}
	return append(out, "]}"...), nil
}
