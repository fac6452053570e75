package core

import (
	"errors"
	"runtime"
	"slices"
	"sync"
	"weak"
)

// recorders holds what recording keeps of each session between its
// assemblies: the encoded bytes of the log items already recorded, so a
// record encodes only the items new since the previous one. A session's
// entry goes when the session is collected.
type recorders struct {
	mu sync.Mutex
	m  map[weak.Pointer[Session]]*recorder
}

// recorder is one session's cache: enc[k] is the encoding of log item k
// as it was, valid while the log still holds an equal item there.
type recorder struct {
	enc []encodedItem
}

type encodedItem struct {
	item Item
	raw  []byte
}

func (r *recorders) of(s *Session) *recorder {
	wp := weak.Make(s)
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec, ok := r.m[wp]; ok {
		return rec
	}
	if r.m == nil {
		r.m = map[weak.Pointer[Session]]*recorder{}
	}
	rec := &recorder{}
	r.m[wp] = rec
	runtime.AddCleanup(s, func(wp weak.Pointer[Session]) {
		r.mu.Lock()
		delete(r.m, wp)
		r.mu.Unlock()
	}, wp)
	return rec
}

// encode returns the encoding of log item k.
func (c *recorder) encode(log []Item, k int) ([]byte, error) {
	if k < len(c.enc) && c.enc[k].raw != nil && sameItem(c.enc[k].item, log[k]) {
		return c.enc[k].raw, nil
	}
	raw, err := marshalNoEscape(log[k])
	if err != nil {
		return nil, err
	}
	if k >= len(c.enc) {
		c.enc = slices.Grow(c.enc, k+1-len(c.enc))[:k+1]
	}
	c.enc[k] = encodedItem{item: log[k], raw: raw}
	return raw, nil
}

// encodeHistory encodes the history band as marshalNoEscape would, with
// the log items of plan from the cache.
func (c *recorder) encodeHistory(log, band []Item, plan HistoryPlan) ([]byte, error) {
	inline := plan.Inline
	spans := plan.Spans
	if len(spans) == 0 {
		spans = []LogSpan{{}}
	}
	out := make([]byte, 0, 64*len(band))
	out = append(out, '[')
	si, next := 0, -1 // the span and the next log index in it
	for i := range band {
		if i > 0 {
			out = append(out, ',')
		}
		var raw []byte
		var err error
		if len(inline) > 0 && inline[0] == i {
			inline = inline[1:]
			raw, err = marshalNoEscape(band[i])
		} else {
			if next < 0 || next >= spans[si].To {
				if next >= 0 {
					si++
				}
				if si >= len(spans) {
					return nil, errors.New("core: the history plan does not cover the band")
				}
				next = spans[si].From
			}
			raw, err = c.encode(log, next)
			next++
		}
		if err != nil {
			return nil, err
		}
		out = append(out, raw...)
	}
	return append(out, ']'), nil
}
