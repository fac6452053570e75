package core

import (
	"context"
	"errors"

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
	Bands      []recordedBand `json:"bands"`
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
	for b, items := range v.bands {
		if len(items) > 0 {
			rec.Bands = append(rec.Bands, recordedBand{Band: Band(b).String(), Tokens: v.Usage.BandTokens[b], Items: items})
		}
	}
	for _, t := range v.Tools {
		rec.Tools = append(rec.Tools, t.Name)
	}
	raw, err := marshalNoEscape(rec)
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
