package cachesim

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// prefixes computes, for every block i, the identity of the prefix
// blocks[0..i] (a hash chain seeded with the model, so caches of different
// models never meet) and its cumulative token length. It reuses the slices'
// storage.
func prefixes(model string, blocks []Block, keys []Hash, cum []int) ([]Hash, []int) {
	keys = keys[:0]
	cum = cum[:0]
	prev := sha256.Sum256([]byte("cachesim/model\x00" + model))
	var buf [2*len(Hash{}) + 8]byte
	total := 0
	for _, b := range blocks {
		copy(buf[:32], prev[:])
		copy(buf[32:64], b.Hash[:])
		// The length is part of the identity: the same hash with another
		// count would be a different tokenisation of the block.
		binary.LittleEndian.PutUint64(buf[64:], uint64(b.Tokens))
		prev = sha256.Sum256(buf[:])
		total += b.Tokens
		keys = append(keys, prev)
		cum = append(cum, total)
	}
	return keys, cum
}

// entry is one cached prefix. It is alive while the request time is not after
// expires; ttl is what a hit extends it by.
type entry struct {
	expires time.Time
	ttl     time.Duration
}

// store holds cached prefixes keyed by prefix identity. Expired entries are
// dropped in sweeps whose cadence depends only on the entry count, so the
// simulator's results never depend on when memory is reclaimed.
type store struct {
	entries map[Hash]entry
	sweepAt int // sweep when len(entries) reaches this
	floor   int // smallest sweepAt, so small caches are not swept on every write
	sweeps  int // sweeps run, for tests
}

const minSweep = 1024

func newStore() store {
	return store{entries: make(map[Hash]entry), sweepAt: minSweep, floor: minSweep}
}

func (s *store) alive(k Hash, at time.Time) (entry, bool) {
	e, ok := s.entries[k]
	if !ok || at.After(e.expires) {
		return entry{}, false
	}
	return e, true
}

// refresh extends a live entry to at+its TTL, never shortening it.
func (s *store) refresh(k Hash, at time.Time) {
	e, ok := s.alive(k, at)
	if !ok {
		return
	}
	if exp := at.Add(e.ttl); exp.After(e.expires) {
		e.expires = exp
		s.entries[k] = e
	}
}

// put writes or extends an entry; a longer remaining lifetime already there
// is kept (a 5m write never shortens a live 1h entry).
func (s *store) put(k Hash, at time.Time, ttl time.Duration) {
	exp := at.Add(ttl)
	if e, ok := s.alive(k, at); ok && !exp.After(e.expires) {
		return
	}
	s.entries[k] = entry{expires: exp, ttl: ttl}
}

// sweep drops entries that expired before at once the map has grown to twice
// its size after the last sweep: amortised O(1) per write. Requests never go
// back in time, so a dropped entry could never have been hit again.
func (s *store) sweep(at time.Time) {
	if len(s.entries) < s.sweepAt {
		return
	}
	for k, e := range s.entries {
		if at.After(e.expires) {
			delete(s.entries, k)
		}
	}
	s.sweepAt = max(2*len(s.entries), s.floor)
	s.sweeps++
}
